// cond: runs one of its branches (param `branches`, programs over the same operands)
// chosen by an int32 index, clamped into range as JAX's lax.switch clamps it. Operands:
// the index, then the branches' operands.
#include "prims/control_flow.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& branches = params.get<core::ProgramList>("branches");
  if (branches.empty()) throw ValueError("cond: no branches");
  if (in.empty() || !in[0].shape.empty() || in[0].dtype != DType::int32) {
    throw TypeError("cond: the index must be a scalar int32, got " +
                    (in.empty() ? std::string("nothing") : in[0].str()));
  }
  std::vector<Aval> out;
  for (size_t b = 0; b < branches.size(); ++b) {
    check_body_inputs("cond", in.subspan(1), program_inputs(*branches[b]));
    std::vector<Aval> outs = program_outputs(*branches[b]);
    if (b == 0) {
      out = outs;
      continue;
    }
    if (outs.size() != out.size()) {
      throw TypeError("cond: branch " + std::to_string(b) + " gives " +
                      std::to_string(outs.size()) + " results, branch 0 gives " +
                      std::to_string(out.size()));
    }
    for (size_t r = 0; r < outs.size(); ++r) {
      if (outs[r].shape != out[r].shape || outs[r].dtype != out[r].dtype) {
        throw TypeError("cond: branch " + std::to_string(b) + " gives " + outs[r].short_str() +
                        " as result " + std::to_string(r) + ", branch 0 gives " +
                        out[r].short_str());
      }
      out[r].weak_type = out[r].weak_type && outs[r].weak_type;
    }
  }
  return out;
}

}  // namespace

extern const PrimRules cond_rules = {
    .abstract_eval = shape_rule, .batch = cond_batch, .vma = cond_vma};

}  // namespace parax::prims
