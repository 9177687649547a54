// shard_map: a per-device program over mesh axes (param `jaxpr`, its inputs are the
// equation's operands). Params: `axis_names` and `axis_sizes` (the manual mesh axes, in
// mesh order), `in_specs` and `out_specs` (how each operand is split into the blocks the
// program sees, and how its results' blocks assemble), and `mesh` (the concrete mesh, or
// None for a pmap nested in another, which runs on its enclosing mesh). The compiler
// inlines it between manual-enter and manual-exit equations (compiler/compile.cpp).
#include <algorithm>

#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

using core::Batched;
using core::BatchAxis;
using core::kNotMapped;
using core::Program;

const Program& body_of(const Params& p) {
  return *p.get<std::shared_ptr<const Program>>("jaxpr");
}

// Returns the number of blocks dimension d is split into by `spec`.
int64_t blocks(const Params& p, const PartitionSpec& spec, size_t d) {
  if (d >= spec.size()) return 1;
  const auto& names = p.get<std::vector<std::string>>("axis_names");
  const auto& sizes = p.get<std::vector<int64_t>>("axis_sizes");
  int64_t n = 1;
  for (const std::string& a : spec[d].axes()) {
    auto it = std::find(names.begin(), names.end(), a);
    PARAX_CHECK(it != names.end(), "shard_map spec names an axis that is not manual: " << a);
    n *= sizes[size_t(it - names.begin())];
  }
  return n;
}

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const Program& body = body_of(params);
  const auto& specs = params.get<std::vector<PartitionSpec>>("out_specs");
  PARAX_CHECK(in.size() == body.invars.size(), "shard_map arity");
  std::vector<Aval> out;
  for (size_t o = 0; o < body.outvars.size(); ++o) {
    Aval a = body.aval_of(body.outvars[o]);
    for (size_t d = 0; d < a.shape.size(); ++d) a.shape[d] *= blocks(params, specs[o], d);
    out.push_back(a);
  }
  return out;
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

}  // namespace

extern const PrimRules shard_map_rules = {.abstract_eval = shape_rule, .batch = batch};
// Compiler-internal: they never reach a kernel (the partitioner maps them to layouts).
extern const PrimRules manual_enter_rules = {};
extern const PrimRules manual_exit_rules = {};

}  // namespace parax::prims
