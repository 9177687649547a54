// transpose: result dimension i is operand dimension permutation[i].
#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace transpose_impl {

std::vector<Aval> transpose_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "transpose got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& perm = param_ints(params, "permutation");
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  bool is_permutation = sorted.size() == x.shape.size();
  for (size_t i = 0; is_permutation && i < sorted.size(); ++i) {
    is_permutation = sorted[i] == int64_t(i);
  }
  if (!is_permutation) {
    throw TypeError(
        "transpose permutation isn't a permutation of operand dimensions, got "
        "permutation " +
        shape_str(perm) + " for operand shape " + shape_str(x.shape) + ".");
  }
  Shape shape;
  for (int64_t p : perm) shape.push_back(x.shape[size_t(p)]);
  return {Aval{shape, x.dtype, x.weak_type}};
}

ShardingRule transpose_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                     const Params& params) {
  ShardingRule rule;
  std::vector<int> operand;
  for (int64_t size : in[0].shape) operand.push_back(add_factor(rule, size));
  std::vector<int> result;
  for (int64_t p : param_ints(params, "permutation")) result.push_back(operand[size_t(p)]);
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

// The cotangent moves back by the inverse permutation.
std::vector<Array> transpose_transpose(std::span<const Array> cts, std::span<const Array>,
                                       std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const std::vector<int64_t>& perm = param_ints(params, "permutation");
  std::vector<int64_t> inverse(perm.size());
  for (size_t i = 0; i < perm.size(); ++i) inverse[size_t(perm[i])] = int64_t(i);
  return {lax::transpose(cts[0], inverse)};
}

// The batch dimension keeps its place; the element's dimensions permute around it.
Batched transpose_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                        const BatchAxis&) {
  const int d = dims[0];
  std::vector<int64_t> perm = batched_dims(param_ints(params, "permutation"), d);
  perm.insert(perm.begin() + d, d);
  return Batched{{core::bind1(core::Prim::transpose, {in[0]}, {{"permutation", perm}})}, {d}};
}

}  // namespace transpose_impl
}  // namespace

extern const core::PrimRules transpose_rules = {
    .abstract_eval = transpose_impl::transpose_abstract_eval,
    .sharding_rule = transpose_impl::transpose_sharding_rule,
    .kernel = kernels::transpose,
    .jvp = unary_linear_jvp<core::Prim::transpose>,
    .transpose = transpose_impl::transpose_transpose,
    .batch = transpose_impl::transpose_batch,
};

}  // namespace parax::prims
