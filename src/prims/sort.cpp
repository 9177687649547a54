// sort: sorts n operands of one shape along `dimension` by the first `num_keys` of them,
// lexicographically and ascending, in JAX's total order: -0.0 equals 0.0 and every NaN
// sorts last (lax._float_to_int_for_sort), so a stable sort keeps their input order.
#include "prims/kernels/sort.h"

#include <algorithm>

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace sort_impl {

std::vector<Aval> sort_abstract_eval(std::span<const Aval> in, const Params& params) {
  if (in.empty()) throw TypeError("[sort] operands: got none; expected at least one");
  for (const Aval& a : in) {
    if (a.shape == in[0].shape) continue;
    std::string shapes;
    for (const Aval& b : in) shapes += (shapes.empty() ? "" : " ") + shape_str(b.shape);
    throw TypeError("Arguments to sort must have equal shapes, got: " + shapes);
  }
  const int64_t rank = int64_t(in[0].shape.size());
  const int64_t dimension = param_int(params, "dimension");
  if (dimension < 0 || dimension >= rank) {
    throw ValueError("[sort] dimension: got " + std::to_string(dimension) +
                     " for operands of rank " + std::to_string(rank) +
                     "; expected 0 <= dimension < " + std::to_string(rank));
  }
  const int64_t num_keys = param_int(params, "num_keys");
  if (num_keys < 1 || num_keys > int64_t(in.size())) {
    throw ValueError("num_keys=" + std::to_string(num_keys) +
                     " must be between 1 and len(operand)=" + std::to_string(in.size()));
  }
  return {in.begin(), in.end()};
}

// The sorted dimension must stay whole; every operand and result shares the others.
ShardingRule sort_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                const Params& params) {
  const int64_t dimension = param_int(params, "dimension");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == dimension) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  rule.operands.assign(in.size(), dims);
  rule.results.assign(in.size(), dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

// Sorting permutes every operand the same way, so the tangents ride along as extra
// (non-key) operands of one sort keyed by the primal keys: linear in them, and its
// transpose (below) is the inverse permutation.
std::vector<Array> sort_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params& params) {
  std::vector<Array> in(primals.begin(), primals.end());
  std::vector<size_t> which;
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i].valid()) continue;
    in.push_back(tangents[i]);
    which.push_back(i);
  }
  std::vector<Array> result(outs.size());
  if (which.empty()) return result;
  const std::vector<Array> sorted = core::bind(core::Prim::sort, std::move(in), params);
  for (size_t k = 0; k < which.size(); ++k) result[which[k]] = sorted[primals.size() + k];
  return result;
}

// Transpose of a sort in its non-key operands (the keys are known): recover the
// permutation p (result j came from position p[j]) by sorting an iota with the keys, then
// send cotangent j back to p[j] by sorting the cotangents keyed by p.
std::vector<Array> sort_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                  std::span<const bool> linear, const Params& params) {
  const int64_t num_keys = param_int(params, "num_keys");
  const int64_t dimension = param_int(params, "dimension");
  for (int64_t k = 0; k < num_keys; ++k) {
    PARAX_CHECK(!linear[size_t(k)], "sort is linear only in its non-key operands");
  }
  std::vector<Array> out(operands.size());
  std::vector<Array> in(operands.begin(), operands.begin() + num_keys);
  in.push_back(lax::broadcasted_iota(DType::int32, operands[0].shape(), dimension));
  const Array perm = core::bind(core::Prim::sort, std::move(in), params).back();
  std::vector<Array> back{perm};
  std::vector<size_t> which;
  for (size_t i = size_t(num_keys); i < operands.size(); ++i) {
    if (!linear[i] || !cts[i].valid()) continue;
    back.push_back(cts[i]);
    which.push_back(i);
  }
  if (which.empty()) return out;
  Params by_perm = params;
  by_perm.set("num_keys", int64_t{1});
  const std::vector<Array> sorted = core::bind(core::Prim::sort, std::move(back), by_perm);
  for (size_t k = 0; k < which.size(); ++k) out[which[k]] = sorted[k + 1];
  return out;
}

// The operands meet at the first batched one's batch dimension; unbatched ones are
// broadcast, as sort's operands share one shape.
Batched sort_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis& axis) {
  const int to = *std::find_if(dims.begin(), dims.end(), [](int d) { return d != kNotMapped; });
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    args.push_back(core::move_batch_dim(in[i], dims[i], to, axis.size));
  }
  Params p = params;
  p.set("dimension", batched_dim(param_int(params, "dimension"), to));
  std::vector<Array> outs = core::bind(core::Prim::sort, std::move(args), p);
  return Batched{std::move(outs), std::vector<int>(in.size(), to)};
}

}  // namespace sort_impl
}  // namespace

extern const core::PrimRules sort_rules = {
    .abstract_eval = sort_impl::sort_abstract_eval,
    .sharding_rule = sort_impl::sort_sharding_rule,
    .kernel = kernels::sort,
    .jvp = sort_impl::sort_jvp,
    .transpose = sort_impl::sort_transpose,
    .batch = sort_impl::sort_batch,
};

}  // namespace parax::prims
