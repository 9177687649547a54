// remat2 (jax.checkpoint): a call of its program (param `jaxpr`) that differentiates by
// saving only what its `policy` allows and recomputing the rest in the backward pass.
// Elsewhere it is a call: the compiler inlines it.
#include "prims/control_flow.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const core::Program& p = *params.get<ProgramRef>("jaxpr");
  check_body_inputs("checkpoint", in, program_inputs(p));
  return program_outputs(p);
}

}  // namespace

extern const PrimRules checkpoint_rules = {.abstract_eval = shape_rule, .batch = checkpoint_batch};

}  // namespace parax::prims
