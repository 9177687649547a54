// grad, vjp and jvp over flat leaves: trace the function into a program, then run
// core::jvp_program or core::linearize + core::transpose on it. Both bind primitives, so
// under jit the forward and backward passes are staged into the jitted program and
// partitioned like any other code.
#include "parax/grad.h"

#include "api/array_impl.h"
#include "core/autodiff.h"

namespace parax::detail {

struct LinearState : core::Linearized {};

namespace {

void check_grad_output(const core::Aval& a);

core::ClosedProgram trace_flat(const std::vector<Array>& leaves, const FlatFn& fn,
                               TreeDef* out_def) {
  std::vector<core::Aval> avals;
  for (const Array& x : leaves) avals.push_back(core::aval_of(x));
  return core::trace_to_program(avals, [&](const std::vector<Array>& args) {
    return fn(args, out_def);
  });
}

}  // namespace

FlatVjp vjp_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                 const FlatFn& fn, TreeDef* out_def, bool scalar_first) {
  core::ClosedProgram closed = trace_flat(leaves, fn, out_def);
  if (scalar_first && !closed.program->outvars.empty()) {
    check_grad_output(closed.program->aval_of(closed.program->outvars[0]));
  }
  auto state = std::make_shared<LinearState>();
  static_cast<core::Linearized&>(*state) = core::linearize(closed, leaves);
  return FlatVjp{state->outs, state};
}

std::vector<Array> vjp_apply(const FlatVjp& v, const std::vector<Array>& cts) {
  if (cts.size() != v.outs.size()) {
    throw ValueError("[vjp] the cotangent has " + std::to_string(cts.size()) +
                     " leaves; expected one per output leaf (" + std::to_string(v.outs.size()) +
                     ")");
  }
  for (size_t i = 0; i < cts.size(); ++i) {
    if (!cts[i].valid()) continue;
    if (cts[i].shape() != v.outs[i].shape()) {
      throw ValueError("[vjp] cotangent " + std::to_string(i) + " has shape " +
                       shape_str(cts[i].shape()) + "; expected the output's shape " +
                       shape_str(v.outs[i].shape()));
    }
  }
  return core::transpose(*v.state, cts);
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const std::vector<Array>& leaves,
                                                           const std::vector<Array>& tangents,
                                                           const std::vector<TreeDef>& defs,
                                                           const FlatFn& fn, TreeDef* out_def) {
  core::ClosedProgram closed = trace_flat(leaves, fn, out_def);
  std::vector<Array> inputs(closed.consts);
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  std::vector<Array> tans(closed.consts.size());
  tans.insert(tans.end(), tangents.begin(), tangents.end());
  auto [outs, touts] = core::jvp_program(*closed.program, inputs, tans);
  for (size_t o = 0; o < touts.size(); ++o) {
    if (!touts[o].valid()) touts[o] = core::zeros(core::aval_of(outs[o]));
  }
  return {outs, touts};
}

namespace {
void check_grad_output(const core::Aval& a) {
  if (!a.shape.empty()) {
    throw TypeError("Gradient only defined for scalar-output functions. Output had shape: " +
                    shape_str(a.shape) + ".");
  }
  if (!is_floating(a.dtype)) {
    throw TypeError("grad requires real-valued outputs (output dtype that is a sub-dtype of "
                    "np.floating), but got " + std::string(dtype_name(a.dtype)) + ".");
  }
}

}  // namespace

Array grad_seed(const Array& out) {
  const core::Aval& a = core::aval_of(out);
  check_grad_output(a);
  core::Aval one = a;
  one.weak_type = false;
  return core::ones(one);
}

void check_grad_has_output(size_t leaves, const TreeDef& out_def) {
  if (leaves > 0) return;
  throw TypeError("Gradient only defined for scalar-output functions. Output was a pytree "
                  "with no arrays: " + out_def.to_string() + ".");
}

Array stop_gradient(const Array& x) { return core::bind1(core::Prim::stop_gradient, {x}); }

}  // namespace parax::detail
