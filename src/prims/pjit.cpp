// pjit: a call of a jitted program (param `jaxpr`, inputs = its constants then its
// arguments). The compiler inlines it; eagerly it runs as one cached executable.
//
// Its transformation rules call a transformed program in turn (JAX's _pjit_jvp,
// _pjit_partial_eval, _pjit_transpose, _pjit_batcher), so eager grad(jit(f)) and
// vmap(jit(f)) stay compiled calls: the jvp calls the jvp of the program, linearize splits
// that call into a call of its primal part and one of its linear part, the transpose calls
// the transposed linear part, and batching calls the batched program.
#include <algorithm>

#include "core/autodiff.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/autodiff_util.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace pjit_impl {

using core::BatchAxis;
using core::Batched;
using core::Program;
using ProgramRef = std::shared_ptr<const Program>;

const ProgramRef& body_of(const Params& params) { return params.get<ProgramRef>("jaxpr"); }

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const Program& p = *body_of(params);
  std::vector<Aval> inputs;
  for (int v : p.constvars) inputs.push_back(p.avals[size_t(v)]);
  for (int v : p.invars) inputs.push_back(p.avals[size_t(v)]);
  check_body_inputs("pjit", in, inputs);
  std::vector<Aval> out;
  for (const core::Atom& a : p.outvars) out.push_back(p.aval_of(a));
  return out;
}

// A transformed program and how to call it: the constants its trace captured go first.
struct Call {
  ProgramRef program;
  std::vector<Array> consts;
  std::vector<bool> out_mask;  // jvp: results with a tangent
  std::vector<int> out_dims;   // batching: each result's batch dimension
};

Call call_of(const core::ClosedProgram& closed) {
  return Call{core::lift_consts(closed), closed.consts, {}, {}};
}

std::vector<Aval> input_avals(const Program& p) {
  std::vector<Aval> out;
  for (int v : p.constvars) out.push_back(p.avals[size_t(v)]);
  for (int v : p.invars) out.push_back(p.avals[size_t(v)]);
  return out;
}

std::vector<Array> bind_call(const Call& call, std::vector<Array> args, const Params& params) {
  args.insert(args.begin(), call.consts.begin(), call.consts.end());
  Params p = params;
  p.set("jaxpr", call.program);
  return core::bind(core::Prim::pjit, std::move(args), std::move(p));
}

// jvp: primals and the nonzero tangents in; results, then their nonzero tangents, out.
Call trace_jvp(const Program& body, const std::vector<bool>& nonzero) {
  std::vector<Aval> avals = input_avals(body);
  const size_t n = avals.size();
  for (size_t i = 0; i < n; ++i) {
    if (nonzero[i]) avals.push_back(tangent_aval(avals[i]));
  }
  std::vector<bool> out_mask;
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins(xs.begin(), xs.begin() + long(n)), ts(n);
    size_t k = n;
    for (size_t i = 0; i < n; ++i) {
      if (nonzero[i]) ts[i] = xs[k++];
    }
    auto [outs, touts] = core::jvp_program(body, ins, ts);
    for (const Array& t : touts) {
      out_mask.push_back(t.valid());
      if (t.valid()) outs.push_back(t);
    }
    return outs;
  });
  Call call = call_of(closed);
  call.out_mask = std::move(out_mask);
  return call;
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(std::span<const Array> primals,
                                                      std::span<const Array> tangents,
                                                      const Params& params) {
  static auto& cache = *new DerivedCache<Call>;  // never destroyed: it holds arrays
  const ProgramRef& body = body_of(params);
  const std::vector<Aval> in = input_avals(*body);
  std::vector<bool> nonzero;
  for (size_t i = 0; i < in.size(); ++i) {
    nonzero.push_back(tangents[i].valid() && has_tangent(in[i].dtype));
  }
  auto call =
      cache.get(body, mask_key(nonzero) + axes_key(), [&] { return trace_jvp(*body, nonzero); });
  std::vector<Array> args(primals.begin(), primals.end());
  for (size_t i = 0; i < nonzero.size(); ++i) {
    if (nonzero[i]) args.push_back(tangents[i]);
  }
  return split_tangents(bind_call(*call, std::move(args), params), call->out_mask);
}

// Partial evaluation: the known part is a call of the known program, the rest a call of
// the unknown one.
std::optional<core::PartialEval> partial_eval(std::span<const bool> unknown, const Params& params) {
  static auto& cache = *new DerivedCache<core::ProgramSplit>;  // never destroyed, as above
  const ProgramRef& body = body_of(params);
  const std::vector<bool> mask(unknown.begin(), unknown.end());
  auto split =
      cache.get(body, mask_key(mask), [&] { return core::partial_eval_program(*body, unknown); });
  const auto& out = split->out_unknown;
  const bool all_unknown = std::find(out.begin(), out.end(), false) == out.end();
  if (split->known->eqns.empty() && all_unknown) return std::nullopt;
  core::PartialEval pe;
  pe.known = params;
  pe.unknown = params;
  pe.out_unknown = split->out_unknown;
  pe.forwarded = split->forwarded;
  pe.known.set("jaxpr", split->known);
  pe.unknown.set("jaxpr", split->unknown);
  return pe;
}

// transpose: the operands that are not linear and the nonzero cotangents in; the
// cotangents of the linear operands out.
Call trace_transpose(const Program& body, const std::vector<bool>& linear,
                     const std::vector<bool>& ct_nonzero) {
  const std::vector<Aval> in = input_avals(body);
  std::vector<Aval> avals, linear_avals;
  for (size_t i = 0; i < in.size(); ++i) {
    (linear[i] ? linear_avals : avals).push_back(in[i]);
  }
  const size_t num_values = avals.size();
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    if (ct_nonzero[o]) avals.push_back(tangent_aval(body.aval_of(body.outvars[o])));
  }
  const std::unique_ptr<bool[]> is_linear = bool_array(linear);
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> cts(body.outvars.size());
    size_t k = num_values;
    for (size_t o = 0; o < cts.size(); ++o) {
      if (ct_nonzero[o]) cts[o] = xs[k++];
    }
    std::vector<Array> values(xs.begin(), xs.begin() + long(num_values));
    std::vector<Array> out = core::transpose_program(
        body, std::span<const bool>(is_linear.get(), linear.size()), values, cts);
    for (size_t j = 0; j < out.size(); ++j) out[j] = instantiate(out[j], linear_avals[j]);
    return out;
  });
  return call_of(closed);
}

std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params& params) {
  static auto& cache = *new DerivedCache<Call>;  // never destroyed: it holds arrays
  const ProgramRef& body = body_of(params);
  const std::vector<bool> lin(linear.begin(), linear.end());
  std::vector<bool> ct_nonzero;
  for (const Array& c : cts) ct_nonzero.push_back(c.valid());
  auto call = cache.get(body, mask_key(lin) + "|" + mask_key(ct_nonzero) + axes_key(),
                        [&] { return trace_transpose(*body, lin, ct_nonzero); });
  std::vector<Array> args;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (!linear[i]) args.push_back(operands[i]);
  }
  for (const Array& c : cts) {
    if (c.valid()) args.push_back(c);
  }
  std::vector<Array> cts_in = bind_call(*call, std::move(args), params);
  std::vector<Array> result(operands.size());
  size_t k = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (linear[i]) result[i] = cts_in[k++];
  }
  return result;
}

// Batching: the operands keep their batch dimensions, which the batched program takes
// where they are.
Call trace_batch(const Program& body, const std::vector<int>& dims, const BatchAxis& axis) {
  std::vector<Aval> avals = input_avals(body);
  for (size_t i = 0; i < avals.size(); ++i) {
    if (dims[i] != core::kNotMapped) {
      avals[i].shape.insert(avals[i].shape.begin() + dims[i], axis.size);
    }
  }
  std::vector<int> out_dims;
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(body, xs, dims, axis);
    out_dims = std::move(r.dims);
    return r.outs;
  });
  Call call = call_of(closed);
  call.out_dims = std::move(out_dims);
  return call;
}

Batched batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
              const BatchAxis& axis) {
  static auto& cache = *new DerivedCache<Call>;  // never destroyed: it holds arrays
  const ProgramRef& body = body_of(params);
  const std::vector<int> ds(dims.begin(), dims.end());
  std::string key = std::to_string(axis.size) + ":" + axis.name + "|";
  for (int d : ds) key += std::to_string(d) + ",";
  auto call = cache.get(body, key + axes_key(), [&] { return trace_batch(*body, ds, axis); });
  std::vector<Array> outs = bind_call(*call, std::vector<Array>(in.begin(), in.end()), params);
  return Batched{std::move(outs), call->out_dims};
}

core::ProgramRoles roles(const Params& params, size_t num_operands) {
  return {.programs = {{body_of(params), core::ProgramRole::call, 0, num_operands}}};
}

}  // namespace pjit_impl
}  // namespace

extern const PrimRules pjit_rules = {.abstract_eval = pjit_impl::shape_rule,
                                     .transpose = pjit_impl::transpose,
                                     .batch = pjit_impl::batch,
                                     .joint_jvp = pjit_impl::jvp,
                                     .partial_eval = pjit_impl::partial_eval,
                                     .program_roles = pjit_impl::roles};

}  // namespace parax::prims
