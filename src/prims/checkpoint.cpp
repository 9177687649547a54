// remat2 (jax.checkpoint): a call of its program (param `jaxpr`) that differentiates by
// saving only what its `policy` allows and recomputing the rest in the backward pass.
// Elsewhere it is a call: the compiler inlines it.
//
// Its rules are JAX's (ad_checkpoint.py): the jvp calls remat2 on the jvp of the program;
// partial evaluation splits that into a known call computing the primal results and the
// residuals the policy saves, and an unknown call that recomputes the rest from them
// before its linear part; the transpose is a remat2 call of the transposed unknown
// program, so the recomputation runs in the backward pass, where the cotangents arrive.
#include <algorithm>

#include "core/autodiff.h"
#include "core/program_trace.h"
#include "prims/autodiff_util.h"
#include "prims/control_flow.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace checkpoint_impl {

using core::Program;

const ProgramRef& body_of(const Params& params) { return params.get<ProgramRef>("jaxpr"); }

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const core::Program& p = *body_of(params);
  check_body_inputs("checkpoint", in, program_inputs(p));
  return program_outputs(p);
}

// Binds remat2 on the program `closed` traced (its captured constants go first), with the
// params of the remat2 it derives from: a derived call has been differentiated.
std::vector<Array> bind_derived(const core::ClosedProgram& closed, std::vector<Array> args,
                                const Params& params) {
  args.insert(args.begin(), closed.consts.begin(), closed.consts.end());
  Params p = params;
  p.set("jaxpr", core::lift_consts(closed));
  p.set("differentiated", true);
  return core::bind(core::Prim::checkpoint, std::move(args), std::move(p));
}

Aval tangent_aval(Aval a) {
  a.weak_type = false;
  return a;
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(std::span<const Array> primals,
                                                      std::span<const Array> tangents,
                                                      const Params& params) {
  const Program& body = *body_of(params);
  std::vector<Aval> avals = program_inputs(body);
  const size_t n = avals.size();
  std::vector<bool> nonzero;
  std::vector<Array> args(primals.begin(), primals.end());
  for (size_t i = 0; i < n; ++i) {
    nonzero.push_back(tangents[i].valid() && has_tangent(avals[i].dtype));
    if (!nonzero[i]) continue;
    avals.push_back(tangent_aval(avals[i]));
    args.push_back(tangents[i]);
  }
  std::vector<bool> out_nonzero;
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins(xs.begin(), xs.begin() + long(n)), ts(n);
    for (size_t i = 0, k = n; i < n; ++i) {
      if (nonzero[i]) ts[i] = xs[k++];
    }
    auto [outs, touts] = core::jvp_program(body, ins, ts);
    for (const Array& t : touts) {
      out_nonzero.push_back(t.valid());
      if (t.valid()) outs.push_back(t);
    }
    return outs;
  });
  return split_tangents(bind_derived(closed, std::move(args), params), out_nonzero);
}

bool has_batch_dims(const core::Eqn& e) {
  return !param_ints(e.params, "lhs_batch_dimensions").empty();
}

// The policy's saveable predicate (jax.checkpoint_policies), by the name the param holds.
core::Saveable saveable_of(const std::string& policy) {
  if (policy == "everything_saveable") return [](const core::Eqn&) { return true; };
  if (policy == "DotsSaveable(only_if_no_batch_dims=False)") {
    return [](const core::Eqn& e) { return e.prim == core::Prim::dot_general; };
  }
  if (policy == "DotsSaveable(only_if_no_batch_dims=True)") {
    return
        [](const core::Eqn& e) { return e.prim == core::Prim::dot_general && !has_batch_dims(e); };
  }
  return [](const core::Eqn&) { return false; };  // None, nothing_saveable
}

// The known call computes the primal results and the residuals the policy saves; the
// unknown one recomputes the rest from those and the forwarded inputs.
std::optional<core::PartialEval> partial_eval(std::span<const bool> unknown, const Params& params) {
  const Program& body = *body_of(params);
  const core::ProgramSplit split =
      core::partial_eval_program(body, unknown, saveable_of(params.get<std::string>("policy")));
  const auto& out = split.out_unknown;
  const bool all_unknown = std::find(out.begin(), out.end(), false) == out.end();
  if (split.known->eqns.empty() && all_unknown) return std::nullopt;
  core::PartialEval pe;
  pe.known = params;
  pe.unknown = params;
  pe.out_unknown = split.out_unknown;
  pe.forwarded = split.forwarded;
  pe.known.set("jaxpr", split.known);
  pe.unknown.set("jaxpr", split.unknown);
  pe.inline_known = true;  // as JAX's remat_partial_eval: the forward pass is plain code
  pe.known.set("differentiated", true);
  pe.unknown.set("differentiated", true);
  return pe;
}

// The operands that are not linear and the nonzero cotangents in; the cotangents of the
// linear operands out. core::transpose_program runs the equations that are not linear
// (the recomputation) forward first, inside the transposed call.
std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params& params) {
  const Program& body = *body_of(params);
  const std::vector<Aval> in = program_inputs(body);
  std::vector<Aval> avals, linear_avals;
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    if (linear[i]) {
      linear_avals.push_back(in[i]);
    } else {
      avals.push_back(in[i]);
      args.push_back(operands[i]);
    }
  }
  const size_t num_values = avals.size();
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    if (!cts[o].valid()) continue;
    avals.push_back(tangent_aval(body.aval_of(body.outvars[o])));
    args.push_back(cts[o]);
  }
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> out_cts(body.outvars.size());
    for (size_t o = 0, k = num_values; o < out_cts.size(); ++o) {
      if (cts[o].valid()) out_cts[o] = xs[k++];
    }
    const std::vector<Array> values(xs.begin(), xs.begin() + long(num_values));
    std::vector<Array> out = core::transpose_program(body, linear, values, out_cts);
    for (size_t j = 0; j < out.size(); ++j) out[j] = instantiate(out[j], linear_avals[j]);
    return out;
  });
  std::vector<Array> cts_in = bind_derived(closed, std::move(args), params);
  std::vector<Array> result(operands.size());
  for (size_t i = 0, k = 0; i < operands.size(); ++i) {
    if (linear[i]) result[i] = cts_in[k++];
  }
  return result;
}

core::ProgramRoles roles(const Params& params, size_t num_operands) {
  return {.programs = {{body_of(params), core::ProgramRole::call, 0, num_operands}}};
}

}  // namespace checkpoint_impl
}  // namespace

extern const PrimRules checkpoint_rules = {.abstract_eval = checkpoint_impl::shape_rule,
                                           .transpose = checkpoint_impl::transpose,
                                           .batch = checkpoint_batch,
                                           .joint_jvp = checkpoint_impl::jvp,
                                           .partial_eval = checkpoint_impl::partial_eval,
                                           .program_roles = checkpoint_impl::roles};

}  // namespace parax::prims
