// custom_jvp_call and custom_vjp_call: a call of the user's function (param `jaxpr`, JAX's
// call_jaxpr, as it prints, over all operands: the constants the traces captured, `num_consts` of
// them, then the arguments) whose derivative is the user's rule, held as a traced program (where
// JAX holds a function, printed by its name, `jvp`, `fwd`, `bwd`):
//   custom_jvp_call's `jvp_jaxpr_fun`: (operands, tangents of the arguments) -> (results,
//   tangents);
//   custom_vjp_call's `fwd_jaxpr_thunk`: operands -> (results, residuals), and
//   `bwd_jaxpr_fun`: (constants, residuals, cotangents of the results) -> cotangents of the
//   arguments.
// With symbolic_zeros, the jvp traces the rule kept with the call (SymbolicZerosRules) for
// the zero tangents it has.
// Elsewhere they are calls: the compiler inlines `jaxpr`, eagerly it runs op by op.
//
// Their rules are JAX's (custom_derivatives.py, ad.py): the jvp of custom_jvp_call
// evaluates the rule's program, so linearize and transpose see its equations; the jvp of
// custom_vjp_call evaluates `fwd` and binds custom_lin on the residuals and tangents, a
// linear equation whose transpose evaluates `bwd` (and whose evaluation, in forward mode,
// is JAX's TypeError). Batching batches every program the call holds.
//
// A rule whose output does not fit (JAX checks it when it runs the rule) holds its error
// in param `jvp_error` / `fwd_error` / `bwd_error`, raised where JAX raises it.
#include <algorithm>
#include <cctype>

#include "core/autodiff.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/autodiff_util.h"
#include "prims/control_flow.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace custom_derivatives_impl {

using core::avals_of;
using core::BatchAxis;
using core::Batched;
using core::Program;

const ProgramRef& prog(const Params& params, std::string_view name) {
  return params.get<ProgramRef>(name);
}
size_t num_consts(const Params& params) { return size_t(params.get<int64_t>("num_consts")); }

std::vector<Aval> call_shape_rule(std::span<const Aval> in, const Params& params) {
  const Program& p = *prog(params, "jaxpr");
  check_body_inputs(params.get<std::string>("name"), in, program_inputs(p));
  return program_outputs(p);
}

// Raises the error a rule's output left in `params` (as "TypeError: ...", "ValueError: ..."
// or "NotImplementedError: ...").
void raise_rule_error(const Params& params, std::string_view name) {
  if (!params.has(name)) return;
  const std::string& text = params.get<std::string>(name);
  const std::string value = "ValueError: ";
  if (text.rfind(value, 0) == 0) throw ValueError(text.substr(value.size()));
  const std::string not_implemented = "NotImplementedError: ";
  if (text.starts_with(not_implemented)) {
    throw NotImplementedError(text.substr(not_implemented.size()));
  }
  throw TypeError(text.substr(std::string("TypeError: ").size()));
}

[[noreturn]] void raise_jvp_of_vjp() {
  throw TypeError("can't apply forward-mode autodiff (jvp) to a custom_vjp function.");
}

// A value the function or its rules captured (an operand among the first num_consts)
// has a tangent: the rule does not say how to differentiate with respect to it. JAX
// raises this for custom_vjp (ad.CustomVJPException) and an UnexpectedTracerError for
// custom_jvp.
[[noreturn]] void raise_closed_over(const std::string& kind) {
  std::string lower = kind;
  for (char& ch : lower) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  throw TypeError("Detected differentiation of a custom_" + lower +
                  " function with respect to a closed-over value. That isn't supported because "
                  "the custom " +
                  kind + " rule only specifies how to differentiate the custom_" + lower +
                  " function with respect to explicit input parameters. Try passing the "
                  "closed-over value into the custom_" +
                  lower + " function as an argument, and adapting the custom_" + lower +
                  (kind == "VJP" ? " fwd and bwd rules." : " rule."));
}

bool any_tangent(std::span<const Array> tangents, std::span<const Array> primals, size_t from) {
  for (size_t i = from; i < tangents.size(); ++i) {
    if (tangents[i].valid() && has_tangent(primals[i].dtype())) return true;
  }
  return false;
}

// The tangents of the arguments, zeros where symbolic (JAX instantiates them unless the
// rule asks for symbolic zeros); an integer argument's stands for JAX's float0.
std::vector<Array> arg_tangents(std::span<const Array> primals, std::span<const Array> tangents,
                                size_t from) {
  std::vector<Array> out;
  for (size_t i = from; i < primals.size(); ++i) {
    const bool nonzero = tangents[i].valid() && has_tangent(primals[i].dtype());
    out.push_back(nonzero ? tangents[i] : zeros_like_aval(tangent_aval(core::aval_of(primals[i]))));
  }
  return out;
}

// Results of integer dtype have no tangents (symbolic zeros).
std::vector<Array> drop_integer_tangents(std::vector<Array> touts, std::span<const Array> outs) {
  for (size_t o = 0; o < touts.size(); ++o) {
    if (!has_tangent(outs[o].dtype())) touts[o] = Array();
  }
  return touts;
}

// ---- custom_jvp_call ----

std::vector<Array> jvp_call_eager(std::span<const Array> in, const Params& params) {
  return eval_program(*prog(params, "jaxpr"), in);
}

// The rule traced for the tangents that are zero (invalid, or of an integer argument)
// given as JAX's SymbolicZero; its zero results' tangents stay symbolic.
std::pair<std::vector<Array>, std::vector<Array>> symbolic_zeros_jvp(
    const ProgramRef& key, const ZeroPatternTracer& tracer, std::span<const Array> primals,
    std::span<const Array> tangents, size_t nc) {
  std::vector<bool> zero;
  std::vector<Array> args(primals.begin() + long(nc), primals.end());
  for (size_t i = nc; i < primals.size(); ++i) {
    zero.push_back(!tangents[i].valid() || !has_tangent(primals[i].dtype()));
    if (!zero.back()) args.push_back(tangents[i]);
  }
  const std::shared_ptr<const ZeroPatternRule> r = SymbolicZerosRules::trace(key, tracer, zero);
  args.insert(args.begin(), r->consts.begin(), r->consts.end());
  std::vector<Array> all = eval_program(*r->program, args);
  const size_t n_out = r->out_zero.size();
  std::vector<Array> outs(all.begin(), all.begin() + long(n_out));
  std::vector<Array> touts;
  size_t next = n_out;
  for (bool z : r->out_zero) touts.push_back(z ? Array() : all[next++]);
  return {outs, drop_integer_tangents(std::move(touts), outs)};
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_call_jvp(std::span<const Array> primals,
                                                               std::span<const Array> tangents,
                                                               const Params& params) {
  const size_t nc = num_consts(params);
  // As JAX: with no argument perturbed, the call stays a call and its tangents are zero.
  if (any_tangent(tangents.first(nc), primals.first(nc), 0)) {
    // A rule that raised NotImplementedError means there is no derivative at all
    // (scatter_apply's): that is the error, whatever is differentiated.
    if (params.has("jvp_error") &&
        params.get<std::string>("jvp_error").starts_with("NotImplementedError: ")) {
      raise_rule_error(params, "jvp_error");
    }
    raise_closed_over("JVP");
  }
  if (!any_tangent(tangents, primals, nc)) {
    std::vector<Array> outs =
        core::bind(core::Prim::custom_jvp_call, {primals.begin(), primals.end()}, params);
    return {outs, std::vector<Array>(outs.size())};
  }
  raise_rule_error(params, "jvp_error");
  if (params.get<bool>("symbolic_zeros")) {
    const ProgramRef& key = prog(params, "jvp_jaxpr_fun");
    if (auto tracer = SymbolicZerosRules::find(key)) {
      return symbolic_zeros_jvp(key, *tracer, primals, tangents, nc);
    }
  }
  std::vector<Array> args(primals.begin(), primals.end());
  const std::vector<Array> ts = arg_tangents(primals, tangents, nc);
  args.insert(args.end(), ts.begin(), ts.end());
  std::vector<Array> all = eval_program(*prog(params, "jvp_jaxpr_fun"), args);
  const size_t n_out = prog(params, "jaxpr")->outvars.size();
  std::vector<Array> outs(all.begin(), all.begin() + long(n_out));
  std::vector<Array> touts(all.begin() + long(n_out), all.end());
  return {outs, drop_integer_tangents(std::move(touts), outs)};
}

// A traced program whose captured constants become operands: the call's operands are the
// constants of each program traced for it, in order, then the old operands; each program
// takes them all (those of the others unused).

// The operands with their batch dimensions moved to the front (where vmap_program sees them).
std::vector<Array> batched_front(std::span<const Array> in, std::span<const int> dims,
                                 std::vector<int>& front, std::vector<Aval>& avals) {
  std::vector<Array> out;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool mapped = dims[i] != core::kNotMapped;
    out.push_back(mapped ? core::move_batch_dim(in[i], dims[i], 0, 0) : in[i]);
    front.push_back(mapped ? 0 : core::kNotMapped);
    avals.push_back(core::aval_of(out.back()));
  }
  return out;
}

// Traces `p` batched: its inputs carry batch dimensions `dims` (0 or not mapped); result o
// is batched at want[o] (every one at 0 when `want` is empty), or, where that is
// kNotMapped, summed over the batch.
core::ClosedProgram trace_batched(const Program& p, const std::vector<Aval>& avals,
                                  const std::vector<int>& dims, const BatchAxis& axis,
                                  const std::vector<int>& want = {}) {
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(p, xs, dims, axis);
    std::vector<Array> outs;
    for (size_t o = 0; o < r.outs.size(); ++o) {
      const int to = want.empty() ? 0 : want[o];
      if (to == core::kNotMapped) {
        // An operand shared by the batch: its cotangent sums the batch's.
        outs.push_back(r.dims[o] == core::kNotMapped
                           ? r.outs[o]
                           : core::bind1(core::Prim::reduce_sum, {r.outs[o]},
                                         {{"axes", std::vector<int64_t>{r.dims[o]}}}));
      } else {
        outs.push_back(core::move_batch_dim(r.outs[o], r.dims[o], to, axis.size));
      }
    }
    return outs;
  });
}

// The batch dimension of each result of `p` batched as `dims` says (a trace made to see them).
std::vector<int> result_dims(const Program& p, const std::vector<Aval>& avals,
                             const std::vector<int>& dims, const BatchAxis& axis) {
  std::vector<int> out;
  core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(p, xs, dims, axis);
    out = r.dims;
    return r.outs;
  });
  return out;
}

// A result is batched (at 0) where f's or the rule's is (JAX batches both and forces them
// to agree); where neither is, it stays unbatched (a psum over the vmapped axis).
std::vector<int> agreed_dims(size_t n_out, const std::vector<std::vector<int>>& per_program) {
  std::vector<int> want(n_out, core::kNotMapped);
  for (const std::vector<int>& dims : per_program) {
    for (size_t k = 0; k < dims.size(); ++k) {
      if (dims[k] != core::kNotMapped) want[k % n_out] = 0;
    }
  }
  return want;
}

// A symbolic_zeros rule batched as its call is (JAX's batch_jvp_jaxpr_thunk): kept with
// the batched call's rule program `batched`, it traces the rule for a pattern, then batches
// that program as the call's operands are.
void keep_batched_rule(const Params& params, const ProgramRef& batched,
                       const std::vector<Aval>& avals, const std::vector<int>& front, size_t nc,
                       const std::vector<int>& want, const BatchAxis& axis) {
  if (!params.get<bool>("symbolic_zeros")) return;
  const ProgramRef& key = prog(params, "jvp_jaxpr_fun");
  std::shared_ptr<const ZeroPatternTracer> tracer = SymbolicZerosRules::find(key);
  if (!tracer) return;
  SymbolicZerosRules::add(batched, [=](const std::vector<bool>& zero) {
    const std::shared_ptr<const ZeroPatternRule> r = SymbolicZerosRules::trace(key, *tracer, zero);
    std::vector<Aval> in;
    std::vector<int> dims;
    for (const Array& c : r->consts) {
      in.push_back(core::aval_of(c));
      dims.push_back(core::kNotMapped);
    }
    for (size_t i = nc; i < avals.size(); ++i) {
      in.push_back(avals[i]);
      dims.push_back(front[i]);
    }
    for (size_t i = nc; i < avals.size(); ++i) {
      if (zero[i - nc]) continue;
      in.push_back(tangent_aval(avals[i]));
      dims.push_back(front[i]);
    }
    std::vector<int> out_want = want;
    for (size_t o = 0; o < r->out_zero.size(); ++o) {
      if (!r->out_zero[o]) out_want.push_back(want[o]);
    }
    core::ClosedProgram b = trace_batched(*r->program, in, dims, axis, out_want);
    std::vector<Array> consts = b.consts;
    consts.insert(consts.end(), r->consts.begin(), r->consts.end());
    return ZeroPatternRule{core::lift_consts(b), std::move(consts), r->out_zero};
  });
}

Batched jvp_call_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                       const BatchAxis& axis) {
  const size_t nc = num_consts(params);
  std::vector<int> front;
  std::vector<Aval> avals;
  std::vector<Array> operands = batched_front(in, dims, front, avals);
  // The rule's tangents are batched as their primals are.
  std::vector<Aval> jvp_avals = avals;
  std::vector<int> jvp_dims = front;
  for (size_t i = nc; i < avals.size(); ++i) {
    jvp_avals.push_back(tangent_aval(avals[i]));
    jvp_dims.push_back(front[i]);
  }
  const Program& fp = *prog(params, "jaxpr");
  const Program& jp = *prog(params, "jvp_jaxpr_fun");
  const std::vector<int> want = agreed_dims(
      fp.outvars.size(),
      {result_dims(fp, avals, front, axis), result_dims(jp, jvp_avals, jvp_dims, axis)});
  std::vector<int> jvp_want = want;
  jvp_want.insert(jvp_want.end(), want.begin(), want.end());
  core::ClosedProgram f = trace_batched(fp, avals, front, axis, want);
  core::ClosedProgram j = trace_batched(jp, jvp_avals, jvp_dims, axis, jvp_want);
  SharedConsts a = share_consts({f, j});
  operands.insert(operands.begin(), a.consts.begin(), a.consts.end());
  Params p = params;
  p.set("jaxpr", a.programs[0]);
  p.set("jvp_jaxpr_fun", a.programs[1]);
  p.set("num_consts", int64_t(nc + a.consts.size()));
  keep_batched_rule(params, a.programs[1], avals, front, nc, want, axis);
  std::vector<Array> outs = core::bind(core::Prim::custom_jvp_call, std::move(operands), p);
  return Batched{std::move(outs), want};
}

// ---- custom_vjp_call ----

std::pair<std::vector<Array>, std::vector<Array>> vjp_call_jvp(std::span<const Array> primals,
                                                               std::span<const Array> tangents,
                                                               const Params& params) {
  const size_t nc = num_consts(params);
  if (any_tangent(tangents.first(nc), primals.first(nc), 0)) raise_closed_over("VJP");
  if (!any_tangent(tangents, primals, nc)) {
    std::vector<Array> outs =
        core::bind(core::Prim::custom_vjp_call, {primals.begin(), primals.end()}, params);
    return {outs, std::vector<Array>(outs.size())};
  }
  raise_rule_error(params, "fwd_error");
  std::vector<Array> all = eval_program(*prog(params, "fwd_jaxpr_thunk"), primals);
  const size_t n_out = prog(params, "jaxpr")->outvars.size();
  std::vector<Array> outs(all.begin(), all.begin() + long(n_out));
  // custom_lin: the constants and residuals (what bwd reads), then the arguments' tangents.
  std::vector<Array> lin(primals.begin(), primals.begin() + long(nc));
  lin.insert(lin.end(), all.begin() + long(n_out), all.end());
  Params lp{{"bwd", prog(params, "bwd_jaxpr_fun")},
            {"name", params.get<std::string>("name")},
            {"num_res", int64_t(lin.size())},
            {"symbolic_zeros", false}};
  if (params.has("bwd_error")) lp.set("bwd_error", params.get<std::string>("bwd_error"));
  const std::vector<Array> ts = arg_tangents(primals, tangents, nc);
  lin.insert(lin.end(), ts.begin(), ts.end());
  std::vector<Array> touts = core::bind(core::Prim::custom_lin, std::move(lin), std::move(lp));
  return {outs, drop_integer_tangents(std::move(touts), outs)};
}

Batched vjp_call_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                       const BatchAxis& axis) {
  const size_t nc = num_consts(params);
  std::vector<int> front;
  std::vector<Aval> avals;
  std::vector<Array> operands = batched_front(in, dims, front, avals);
  const Program& fp = *prog(params, "jaxpr");
  const Program& wp = *prog(params, "fwd_jaxpr_thunk");
  const size_t n_out = fp.outvars.size();
  std::vector<int> fwd_dims = result_dims(wp, avals, front, axis);
  fwd_dims.resize(n_out);  // the residuals are batched at 0 regardless
  const std::vector<int> want = agreed_dims(n_out, {result_dims(fp, avals, front, axis), fwd_dims});
  std::vector<int> fwd_want = want;
  fwd_want.resize(wp.outvars.size(), 0);
  core::ClosedProgram f = trace_batched(fp, avals, front, axis, want);
  core::ClosedProgram w = trace_batched(wp, avals, front, axis, fwd_want);
  // bwd: the constants as batched above, then the residuals (batched at 0) and the
  // cotangents of the results (batched as the results are); each argument's cotangent is
  // batched as the argument is (summed over the batch where it is not).
  const std::vector<Aval> fwd_out = program_outputs(*w.program);
  std::vector<Aval> bwd_avals(avals.begin(), avals.begin() + long(nc));
  std::vector<int> bwd_dims(front.begin(), front.begin() + long(nc));
  bwd_avals.insert(bwd_avals.end(), fwd_out.begin() + long(n_out), fwd_out.end());
  bwd_dims.resize(bwd_avals.size(), 0);
  for (size_t o = 0; o < n_out; ++o) {
    bwd_avals.push_back(tangent_aval(fwd_out[o]));
    bwd_dims.push_back(want[o]);
  }
  std::vector<int> arg_want(front.begin() + long(nc), front.end());
  core::ClosedProgram b =
      trace_batched(*prog(params, "bwd_jaxpr_fun"), bwd_avals, bwd_dims, axis, arg_want);
  SharedConsts a = share_consts({f, w, b});
  operands.insert(operands.begin(), a.consts.begin(), a.consts.end());
  Params p = params;
  p.set("jaxpr", a.programs[0]);
  p.set("fwd_jaxpr_thunk", a.programs[1]);
  p.set("bwd_jaxpr_fun", a.programs[2]);
  p.set("num_consts", int64_t(nc + a.consts.size()));
  std::vector<Array> outs = core::bind(core::Prim::custom_vjp_call, std::move(operands), p);
  return Batched{std::move(outs), want};
}

// ---- custom_lin ----

std::vector<Aval> lin_shape_rule(std::span<const Aval> in, const Params& params) {
  const Program& bwd = *prog(params, "bwd");
  const size_t num_res = size_t(params.get<int64_t>("num_res"));
  const std::vector<Aval> bwd_in = program_inputs(bwd);
  const std::vector<Aval> bwd_out = program_outputs(bwd);
  std::vector<Aval> expected(bwd_in.begin(), bwd_in.begin() + long(num_res));
  expected.insert(expected.end(), bwd_out.begin(), bwd_out.end());
  check_body_inputs("custom_lin", in, expected);
  return {bwd_in.begin() + long(num_res), bwd_in.end()};
}

std::vector<Array> lin_eager(std::span<const Array>, const Params&) { raise_jvp_of_vjp(); }

// Under jit, evaluating it forward is the same error, raised when the program compiles
// (JAX's lowering rule).
ShardingRule lin_sharding_rule(std::span<const Aval>, std::span<const Aval>, const Params&) {
  raise_jvp_of_vjp();
}

Batched lin_batch(std::span<const Array>, std::span<const int>, const Params&, const BatchAxis&) {
  raise_jvp_of_vjp();
}

// custom_lin is linear in its tangent operands, so its jvp along them is itself; a
// residual's tangent has no rule (bwd is all that is known). Its primal value is never
// computable (evaluating it forward is the error above); a linear program is
// differentiated only to be transposed (shard_map's transpose linearizes its body at
// zero), where that value is zero and unused.
std::pair<std::vector<Array>, std::vector<Array>> lin_jvp(std::span<const Array> primals,
                                                          std::span<const Array> tangents,
                                                          const Params& params) {
  const size_t num_res = size_t(params.get<int64_t>("num_res"));
  for (size_t i = 0; i < num_res; ++i) {
    if (tangents[i].valid()) raise_jvp_of_vjp();
  }
  std::vector<Array> args(primals.begin(), primals.begin() + long(num_res));
  for (size_t i = num_res; i < primals.size(); ++i) {
    args.push_back(instantiate(tangents[i], tangent_aval(core::aval_of(primals[i]))));
  }
  std::vector<Array> outs;
  for (const Aval& a : lin_shape_rule(avals_of(primals), params))
    outs.push_back(zeros_like_aval(a));
  return {outs, core::bind(core::Prim::custom_lin, std::move(args), params)};
}

std::vector<Array> lin_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                 std::span<const bool> linear, const Params& params) {
  raise_rule_error(params, "bwd_error");
  const Program& bwd = *prog(params, "bwd");
  const size_t num_res = size_t(params.get<int64_t>("num_res"));
  std::vector<Array> args;
  for (size_t i = 0; i < num_res; ++i) {
    PARAX_CHECK(!linear[i], "custom_lin: a residual is linear");
    args.push_back(operands[i]);
  }
  const std::vector<Aval> bwd_in = program_inputs(bwd);
  for (size_t o = 0; o < cts.size(); ++o) args.push_back(instantiate(cts[o], bwd_in[num_res + o]));
  std::vector<Array> arg_cts = eval_program(bwd, args);
  std::vector<Array> out(num_res);
  for (size_t i = 0; i < arg_cts.size(); ++i) {
    out.push_back(has_tangent(arg_cts[i].dtype()) ? arg_cts[i] : Array());
  }
  return out;
}

// The user's function runs where the call stands; its derivative rules only under autodiff.
core::ProgramRoles jvp_call_roles(const Params& params, size_t num_operands) {
  return {.programs = {{prog(params, "jaxpr"), core::ProgramRole::call, 0, num_operands},
                       {prog(params, "jvp_jaxpr_fun"), core::ProgramRole::rule}}};
}

core::ProgramRoles vjp_call_roles(const Params& params, size_t num_operands) {
  return {.programs = {{prog(params, "bwd_jaxpr_fun"), core::ProgramRole::rule},
                       {prog(params, "fwd_jaxpr_thunk"), core::ProgramRole::rule},
                       {prog(params, "jaxpr"), core::ProgramRole::call, 0, num_operands}}};
}

core::ProgramRoles lin_roles(const Params& params, size_t) {
  return {.programs = {{prog(params, "bwd"), core::ProgramRole::rule}}};
}

}  // namespace custom_derivatives_impl
}  // namespace

extern const PrimRules custom_jvp_call_rules = {
    .abstract_eval = custom_derivatives_impl::call_shape_rule,
    .eager = custom_derivatives_impl::jvp_call_eager,
    .batch = custom_derivatives_impl::jvp_call_batch,
    .joint_jvp = custom_derivatives_impl::jvp_call_jvp,
    .program_roles = custom_derivatives_impl::jvp_call_roles};
extern const PrimRules custom_vjp_call_rules = {
    .abstract_eval = custom_derivatives_impl::call_shape_rule,
    .eager = custom_derivatives_impl::jvp_call_eager,
    .batch = custom_derivatives_impl::vjp_call_batch,
    .joint_jvp = custom_derivatives_impl::vjp_call_jvp,
    .program_roles = custom_derivatives_impl::vjp_call_roles};
extern const PrimRules custom_lin_rules = {
    .abstract_eval = custom_derivatives_impl::lin_shape_rule,
    .sharding_rule = custom_derivatives_impl::lin_sharding_rule,
    .eager = custom_derivatives_impl::lin_eager,
    .transpose = custom_derivatives_impl::lin_transpose,
    .batch = custom_derivatives_impl::lin_batch,
    .joint_jvp = custom_derivatives_impl::lin_jvp,
    .program_roles = custom_derivatives_impl::lin_roles};

}  // namespace parax::prims
