// argmax and argmin: the index of the largest / smallest element along one axis, as
// `index_dtype`. NaN counts as the extreme (the first NaN wins); ties go to the first
// index. One file for both: they differ in one comparison.
#include "prims/kernels/argmax.h"

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace argmax_impl {

int64_t arg_axis(const Params& params, std::string_view name) {
  const std::vector<int64_t>& axes = param_ints(params, "axes");
  if (axes.size() != 1) {
    throw ValueError("[" + std::string(name) + "] axes: got " + shape_str(axes) +
                     "; expected exactly one axis");
  }
  return axes[0];
}

// JAX's lax._argminmax_shape_rule and _argminmax_dtype_rule.
template <bool kMax>
std::vector<Aval> arg_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  const int64_t axis = arg_axis(params, kMax ? "argmax" : "argmin");
  if (axis < 0 || axis >= int64_t(x.shape.size())) {
    throw ValueError("Invalid axis " + std::to_string(axis) + " for operand shape " +
                     shape_str(x.shape));
  }
  if (x.shape[size_t(axis)] < 1) {
    throw ValueError("argmin and argmax require non-empty reduced dimension. operand.shape=" +
                     shape_str(x.shape) + " axis=" + std::to_string(axis));
  }
  const DType index_dtype =
      params.has("index_dtype") ? params.get<DType>("index_dtype") : DType::int32;
  if (!is_integer(index_dtype)) {
    throw TypeError("index_dtype must be an integer type, but got " +
                    std::string(dtype_name(index_dtype)));
  }
  Shape shape = x.shape;
  shape.erase(shape.begin() + axis);
  return {Aval{shape, index_dtype, false}};
}

// The reduced dimension must stay whole: an index is not a partial result that combines.
ShardingRule arg_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                               const Params& params) {
  const int64_t axis = param_ints(params, "axes")[0];
  ShardingRule rule;
  rule.operands.emplace_back();
  rule.results.emplace_back();
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == axis) {
      rule.operands[0].push_back(ShardingRule::kNone);
      continue;
    }
    rule.operands[0].push_back(rule.num_factors());
    rule.results[0].push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  return rule;
}

template <core::Prim P>
Batched arg_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis&) {
  const std::vector<int64_t>& axes = param_ints(params, "axes");
  Params p = params;
  p.set("axes", batched_dims(axes, dims[0]));
  return Batched{{core::bind1(P, {in[0]}, p)}, {batch_dim_without(dims[0], axes)}};
}

}  // namespace argmax_impl
}  // namespace

extern const core::PrimRules argmax_rules = {
    .abstract_eval = argmax_impl::arg_abstract_eval<true>,
    .sharding_rule = argmax_impl::arg_sharding_rule,
    .kernel = kernels::argmax,
    .jvp = zero_jvp,
    .batch = argmax_impl::arg_batch<core::Prim::argmax>,
};

extern const core::PrimRules argmin_rules = {
    .abstract_eval = argmax_impl::arg_abstract_eval<false>,
    .sharding_rule = argmax_impl::arg_sharding_rule,
    .kernel = kernels::argmin,
    .jvp = zero_jvp,
    .batch = argmax_impl::arg_batch<core::Prim::argmin>,
};

}  // namespace parax::prims
