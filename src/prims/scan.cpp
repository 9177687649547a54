// scan: runs `jaxpr` `length` times on (consts, carry, x[i]) -> (carry, y[i]), stacking
// the ys along a new leading dimension (JAX's scan_p). Operands: consts, the initial
// carry, then the xs, each with a leading dimension of `length`.
#include "prims/control_flow.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const ScanShape s(params);
  if (in.size() < size_t(s.num_consts + s.num_carry)) {
    throw TypeError("scan: fewer operands than consts and carry");
  }
  std::vector<Aval> body_in(in.begin(), in.begin() + s.num_consts + s.num_carry);
  for (size_t i = size_t(s.num_consts + s.num_carry); i < in.size(); ++i) {
    if (in[i].shape.empty() || in[i].shape[0] != s.length) {
      throw TypeError("scan: xs operand " + in[i].short_str() + " does not have a leading " +
                      "dimension of the scan's length " + std::to_string(s.length));
    }
    body_in.push_back(unstacked(in[i]));
  }
  check_body_inputs("scan", body_in, program_inputs(*s.body));
  const std::vector<Aval> outs = program_outputs(*s.body);
  if (outs.size() < size_t(s.num_carry)) throw TypeError("scan: the body gives too few results");
  const std::span<const Aval> carry_in = in.subspan(size_t(s.num_consts), size_t(s.num_carry));
  check_body_inputs("scan carry output",
                    std::span<const Aval>(outs).subspan(0, size_t(s.num_carry)), carry_in);
  // The carry results are the body's (JAX's scan_p), weak types included.
  std::vector<Aval> result(carry_in.begin(), carry_in.end());
  for (size_t i = 0; i < result.size(); ++i) result[i].weak_type = outs[i].weak_type;
  for (size_t r = size_t(s.num_carry); r < outs.size(); ++r) {
    result.push_back(stacked(outs[r], s.length));
  }
  return result;
}

}  // namespace

extern const PrimRules scan_rules = {.abstract_eval = shape_rule};

}  // namespace parax::prims
