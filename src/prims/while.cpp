// while: runs `body_jaxpr` on the carry while `cond_jaxpr` gives true. Operands: the
// cond's constants, the body's constants, then the carry (JAX's while_p).
#include "prims/control_flow.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const WhileShape w(params);
  const size_t consts = size_t(w.cond_nconsts + w.body_nconsts);
  if (in.size() < consts) throw TypeError("while: fewer operands than constants");
  const std::span<const Aval> carry = in.subspan(consts);
  std::vector<Aval> cond_in(in.begin(), in.begin() + w.cond_nconsts);
  cond_in.insert(cond_in.end(), carry.begin(), carry.end());
  check_body_inputs("while cond", cond_in, program_inputs(*w.cond));
  const std::vector<Aval> pred = program_outputs(*w.cond);
  if (pred.size() != 1 || !pred[0].shape.empty() || pred[0].dtype != DType::bool_) {
    throw TypeError("while: cond_jaxpr must give one scalar bool, got " +
                    (pred.empty() ? std::string("nothing") : pred[0].str()));
  }
  std::vector<Aval> body_in(in.begin() + w.cond_nconsts, in.end());
  check_body_inputs("while body", body_in, program_inputs(*w.body));
  const std::vector<Aval> out = program_outputs(*w.body);
  check_body_inputs("while body output", out, std::vector<Aval>(carry.begin(), carry.end()));
  // The results are the body's (JAX's while_p): a weak initial carry the body makes
  // strong comes out strong.
  std::vector<Aval> result(carry.begin(), carry.end());
  for (size_t i = 0; i < result.size(); ++i) result[i].weak_type = out[i].weak_type;
  return result;
}

// A while loop's trip count is known only when it runs, so its steps cannot be replayed
// backward: reverse mode is JAX's error (forward mode works: see jvp).
std::vector<Array> transpose(std::span<const Array>, std::span<const Array>, std::span<const bool>,
                             const Params&) {
  throw ValueError(
      "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
      "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
      "start/stop.");
}

}  // namespace

extern const PrimRules while__rules = {.abstract_eval = shape_rule, .transpose = transpose};

}  // namespace parax::prims
