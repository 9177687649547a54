// shard_map: a per-device program over mesh axes (param `jaxpr`, its inputs are the
// equation's operands). Params: `axis_names` and `axis_sizes` (the manual mesh axes, in
// mesh order), `in_specs` and `out_specs` (how each operand is split into the blocks the
// program sees, and how its results' blocks assemble), and `mesh` (the concrete mesh, or
// None for a pmap nested in another, which runs on its enclosing mesh). The compiler
// inlines it between manual-enter and manual-exit equations (compiler/compile.cpp).
#include <algorithm>

#include "core/autodiff.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace shard_map_impl {

using core::BatchAxis;
using core::Batched;
using core::kNotMapped;
using core::Program;

const Program& body_of(const Params& p) { return *p.get<std::shared_ptr<const Program>>("jaxpr"); }

// Returns the product of the sizes of manual axes `axes`.
int64_t size_of(const Params& params, const std::vector<std::string>& axes) {
  const auto& names = params.get<std::vector<std::string>>("axis_names");
  const auto& sizes = params.get<std::vector<int64_t>>("axis_sizes");
  int64_t n = 1;
  for (const std::string& a : axes) {
    auto it = std::find(names.begin(), names.end(), a);
    PARAX_CHECK(it != names.end(), "shard_map spec names an axis that is not manual: " << a);
    n *= sizes[size_t(it - names.begin())];
  }
  return n;
}

// Returns the number of blocks dimension d is split into by `spec`.
int64_t blocks(const Params& p, const PartitionSpec& spec, size_t d) {
  return d < spec.size() ? size_of(p, spec[d].axes()) : 1;
}

// Returns the global types of the results: blocks assembled as out_specs say.
std::vector<Aval> global_outs(const Params& params) {
  const Program& body = body_of(params);
  const auto& specs = params.get<std::vector<PartitionSpec>>("out_specs");
  std::vector<Aval> out;
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    Aval a = body.aval_of(body.outvars[o]);
    for (size_t d = 0; d < a.shape.size(); ++d) a.shape[d] *= blocks(params, specs[o], d);
    out.push_back(a);
  }
  return out;
}

// Returns the block of operand `a` each device sees under `spec`; throws TypeError naming
// operand i if a dimension does not split evenly.
Aval local_block(const Params& params, const Aval& a, const PartitionSpec& spec, size_t i) {
  Aval local = a;
  for (size_t d = 0; d < local.shape.size(); ++d) {
    const int64_t n = blocks(params, spec, d);
    if (local.shape[d] % n != 0) {
      throw TypeError("[shard_map] operand " + std::to_string(i) + ": dimension " +
                      std::to_string(d) + " of " + a.short_str() + " does not split into " +
                      std::to_string(n) + " blocks");
    }
    local.shape[d] /= n;
  }
  return local;
}

// The body sees each operand's per-device block, so the blocks must match its inputs.
std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const Program& body = body_of(params);
  const auto& specs = params.get<std::vector<PartitionSpec>>("in_specs");
  if (in.size() != body.invars.size() || specs.size() != in.size()) {
    throw TypeError("[shard_map] operands: got " + std::to_string(in.size()) + "; its body takes " +
                    std::to_string(body.invars.size()) + " and in_specs has " +
                    std::to_string(specs.size()));
  }
  for (size_t i = 0; i < in.size(); ++i) {
    const Aval local = local_block(params, in[i], specs[i], i);
    const Aval& want = body.avals[size_t(body.invars[i])];
    if (local.shape == want.shape && local.dtype == want.dtype) continue;
    throw TypeError("[shard_map] operand " + std::to_string(i) +
                    " does not match its body's input: got " + in[i].short_str() + ", " +
                    local.short_str() + " per device; expected " + want.short_str() +
                    " per device");
  }
  return global_outs(params);
}

// Returns `spec` with an unsplit dimension inserted at `at`.
PartitionSpec insert_none(const PartitionSpec& spec, size_t rank, int at) {
  std::vector<SpecEntry> entries;
  for (size_t d = 0; d < rank; ++d) entries.push_back(d < spec.size() ? spec[d] : SpecEntry(None));
  entries.insert(entries.begin() + at, SpecEntry(None));
  return PartitionSpec::from_entries(std::move(entries));
}

// Batching: every device maps its block of the batch, which is not split, so the program
// is vmapped and the batch dimension joins the specs unsplit.
Batched batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
              const BatchAxis& axis) {
  const Program& body = body_of(params);
  auto in_specs = params.get<std::vector<PartitionSpec>>("in_specs");
  auto out_specs = params.get<std::vector<PartitionSpec>>("out_specs");
  std::vector<Array> args;
  std::vector<Aval> local;
  std::vector<int> body_dims;
  for (size_t i = 0; i < in.size(); ++i) {
    Aval a = body.avals[size_t(body.invars[i])];
    if (dims[i] == kNotMapped) {
      args.push_back(in[i]);
      body_dims.push_back(kNotMapped);
    } else {
      args.push_back(core::batch_first(in[i], dims[i], axis.size));
      in_specs[i] = insert_none(in_specs[i], a.shape.size(), 0);
      a.shape.insert(a.shape.begin(), axis.size);
      body_dims.push_back(0);
    }
    local.push_back(a);
  }
  std::vector<int> out_dims;
  // The program's collectives name the region's axes.
  std::vector<std::unique_ptr<core::AxisScope>> scopes;
  const auto& names = params.get<std::vector<std::string>>("axis_names");
  const auto& sizes = params.get<std::vector<int64_t>>("axis_sizes");
  for (size_t a = 0; a < names.size(); ++a) {
    scopes.push_back(std::make_unique<core::AxisScope>(core::AxisFrame{names[a], sizes[a], true}));
  }
  core::ClosedProgram closed = core::trace_to_program(local, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(body, xs, body_dims, BatchAxis{axis.size, axis.name});
    for (size_t o = 0; o < r.outs.size(); ++o) {
      r.outs[o] = core::batch_first(r.outs[o], r.dims[o], axis.size);
    }
    return r.outs;
  });
  for (size_t o = 0; o < out_specs.size(); ++o) {
    const size_t rank = body.aval_of(body.outvars[o]).shape.size();
    out_specs[o] = insert_none(out_specs[o], rank, 0);
  }
  Params p = params;
  // Constants the batched program captured enter as replicated operands.
  args.insert(args.begin(), closed.consts.begin(), closed.consts.end());
  in_specs.insert(in_specs.begin(), closed.consts.size(), PartitionSpec());
  p.set("jaxpr", core::lift_consts(closed));
  p.set("in_specs", in_specs);
  p.set("out_specs", out_specs);
  std::vector<Array> outs = core::bind(core::Prim::shard_map, args, p);
  return core::batched_at_front(std::move(outs));
}

// Binds a shard_map of `closed` (traced per device) on `args`, its captured constants
// entering replicated.
std::vector<Array> bind_traced(const Params& params, const core::ClosedProgram& closed,
                               std::vector<Array> args, std::vector<PartitionSpec> in_specs,
                               std::vector<PartitionSpec> out_specs) {
  args.insert(args.begin(), closed.consts.begin(), closed.consts.end());
  in_specs.insert(in_specs.begin(), closed.consts.size(), PartitionSpec());
  Params p = params;
  p.set("jaxpr", core::lift_consts(closed));
  p.set("in_specs", std::move(in_specs));
  p.set("out_specs", std::move(out_specs));
  return core::bind(core::Prim::shard_map, std::move(args), std::move(p));
}

// The jvp is a shard_map too: each device runs the jvp of its program on its blocks of the
// primals and tangents, which are split alike.
std::vector<Array> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                       std::span<const Array>, const Params& params) {
  const Program& body = body_of(params);
  const auto& in_specs = params.get<std::vector<PartitionSpec>>("in_specs");
  const auto& out_specs = params.get<std::vector<PartitionSpec>>("out_specs");
  std::vector<size_t> with_tangent, float_outs;
  std::vector<Aval> avals;
  for (int v : body.invars) avals.push_back(body.avals[size_t(v)]);
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i].valid()) continue;
    with_tangent.push_back(i);
    Aval t = body.avals[size_t(body.invars[i])];
    t.weak_type = false;
    avals.push_back(t);
  }
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    if (has_tangent(body.aval_of(body.outvars[o]).dtype)) float_outs.push_back(o);
  }
  if (with_tangent.empty() || float_outs.empty()) return std::vector<Array>(body.outvars.size());
  const size_t n = body.invars.size();
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins(xs.begin(), xs.begin() + long(n)), ts(n);
    for (size_t k = 0; k < with_tangent.size(); ++k) ts[with_tangent[k]] = xs[n + k];
    auto [outs, touts] = core::jvp_program(body, ins, ts);
    std::vector<Array> result;
    for (size_t o : float_outs) result.push_back(instantiate(touts[o], core::aval_of(outs[o])));
    return result;
  });
  std::vector<Array> args(primals.begin(), primals.end());
  std::vector<PartitionSpec> specs(in_specs.begin(), in_specs.end());
  for (size_t i : with_tangent) {
    args.push_back(tangents[i]);
    specs.push_back(in_specs[i]);
  }
  std::vector<PartitionSpec> touts_specs;
  for (size_t o : float_outs) touts_specs.push_back(out_specs[o]);
  std::vector<Array> t = bind_traced(params, closed, args, specs, touts_specs);
  std::vector<Array> result(body.outvars.size());
  for (size_t k = 0; k < float_outs.size(); ++k) result[float_outs[k]] = t[k];
  return result;
}

// Returns the manual axes `spec` leaves out: a value with that spec is the same on every
// device along them.
std::vector<std::string> unmentioned(const Params& params, const PartitionSpec& spec) {
  std::vector<std::string> out;
  for (const std::string& a : params.get<std::vector<std::string>>("axis_names")) {
    bool used = false;
    for (size_t d = 0; d < spec.size(); ++d) {
      const auto& axes = spec[d].axes();
      used = used || std::find(axes.begin(), axes.end(), a) != axes.end();
    }
    if (!used) out.push_back(a);
  }
  return out;
}

// The transpose is a shard_map whose devices transpose their own program. Every instance
// of the program counts as computing its output, so a result the devices hold replicated
// (its spec leaves axes out) gets its cotangent divided among them; an operand they held
// replicated gets the sum of their cotangents.
std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params& params) {
  const Program& body = body_of(params);
  const auto& in_specs = params.get<std::vector<PartitionSpec>>("in_specs");
  const auto& out_specs = params.get<std::vector<PartitionSpec>>("out_specs");
  std::vector<Aval> global_out = global_outs(params);
  std::vector<Array> args;
  std::vector<PartitionSpec> specs, result_specs;
  std::vector<Aval> avals;
  std::vector<size_t> lin;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (linear[i]) {
      lin.push_back(i);
      result_specs.push_back(in_specs[i]);
      continue;
    }
    args.push_back(operands[i]);
    specs.push_back(in_specs[i]);
    avals.push_back(body.avals[size_t(body.invars[i])]);
  }
  const size_t num_known = args.size();
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    args.push_back(instantiate(cts[o], global_out[o]));
    specs.push_back(out_specs[o]);
    avals.push_back(body.aval_of(body.outvars[o]));
  }
  core::ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ct;
    for (size_t o = 0; o < body.outvars.size(); ++o) {
      Array c = xs[num_known + o];
      const int64_t copies = size_of(params, unmentioned(params, out_specs[o]));
      if (copies > 1) c = lax::div(c, constant(double(copies), c.dtype()));
      ct.push_back(c);
    }
    std::vector<Aval> lin_avals;
    for (size_t i : lin) lin_avals.push_back(body.avals[size_t(body.invars[i])]);
    core::ClosedProgram f = core::trace_to_program(lin_avals, [&](const std::vector<Array>& ts) {
      std::vector<Array> in(operands.size());
      size_t known = 0, t = 0;
      for (size_t i = 0; i < operands.size(); ++i) in[i] = linear[i] ? ts[t++] : xs[known++];
      return core::bind(core::Prim::pjit, std::move(in),
                        {{"jaxpr", params.get<std::shared_ptr<const Program>>("jaxpr")},
                         {"name", std::string("shard_map")}});
    });
    std::vector<Array> at;
    for (const Aval& a : lin_avals) at.push_back(core::zeros(a));
    std::vector<Array> cts_in = core::transpose(core::linearize(f, at), ct);
    for (size_t k = 0; k < lin.size(); ++k) {
      std::vector<std::string> axes = unmentioned(params, in_specs[lin[k]]);
      if (!axes.empty()) cts_in[k] = core::bind1(core::Prim::psum, {cts_in[k]}, {{"axes", axes}});
    }
    return cts_in;
  });
  std::vector<Array> t = bind_traced(params, closed, args, specs, result_specs);
  std::vector<Array> result(operands.size());
  for (size_t k = 0; k < lin.size(); ++k) result[lin[k]] = t[k];
  return result;
}

// The number of blocks a region boundary splits dimension d into: the product of the sizes
// of the manual axes its spec names there (params `axes`, `axis_sizes`: the region's).
int64_t boundary_blocks(const Params& p, size_t d, std::string_view prim) {
  const PartitionSpec& spec = p.get<std::vector<PartitionSpec>>("spec")[0];
  if (d >= spec.size()) return 1;
  const auto& names = p.get<std::vector<std::string>>("axes");
  const auto& sizes = p.get<std::vector<int64_t>>("axis_sizes");
  int64_t n = 1;
  for (const std::string& a : spec[d].axes()) {
    auto it = std::find(names.begin(), names.end(), a);
    if (it == names.end()) {
      throw TypeError(std::string(prim) + ": spec " + spec.to_ir_string() + " names " + a +
                      ", which is not a manual axis of the region");
    }
    n *= sizes[size_t(it - names.begin())];
  }
  return n;
}

// manual-enter: a global value becomes the block each device of the region sees.
std::vector<Aval> enter_rule(std::span<const Aval> in, const Params& params) {
  Aval out = in[0];
  for (size_t d = 0; d < out.shape.size(); ++d) {
    const int64_t n = boundary_blocks(params, d, "manual-enter");
    if (out.shape[d] % n != 0) {
      throw TypeError("manual-enter: dimension " + std::to_string(d) + " of " + out.short_str() +
                      " does not split into " + std::to_string(n) + " blocks");
    }
    out.shape[d] /= n;
  }
  return {out};
}

// manual-exit: the devices' blocks assemble into the global value.
std::vector<Aval> exit_rule(std::span<const Aval> in, const Params& params) {
  Aval out = in[0];
  for (size_t d = 0; d < out.shape.size(); ++d) {
    out.shape[d] *= boundary_blocks(params, d, "manual-exit");
  }
  return {out};
}

core::ProgramRoles roles(const Params& params, size_t num_operands) {
  return {.programs = {{params.get<std::shared_ptr<const Program>>("jaxpr"),
                        core::ProgramRole::manual, 0, num_operands}}};
}

}  // namespace shard_map_impl
}  // namespace

extern const PrimRules shard_map_rules = {.abstract_eval = shard_map_impl::shape_rule,
                                          .jvp = shard_map_impl::jvp,
                                          .transpose = shard_map_impl::transpose,
                                          .batch = shard_map_impl::batch,
                                          .program_roles = shard_map_impl::roles};
// Compiler-internal: they never reach a kernel (the partitioner maps them to layouts).
extern const PrimRules manual_enter_rules = {.abstract_eval = shard_map_impl::enter_rule};
extern const PrimRules manual_exit_rules = {.abstract_eval = shard_map_impl::exit_rule};

}  // namespace parax::prims
