// reduce_sum, reduce_max, reduce_min, reduce_prod, reduce_and, reduce_or: one row each,
// sharing one kernel (kernels/reduce.cpp). The result drops the dimensions in `axes`.
#include <algorithm>
#include <cmath>
#include <limits>
#include <memory>

#include "prims/batching_util.h"
#include "prims/kernels/reduce.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace reduce_impl {

// ---------------------------------------------------------------------------------------
// Shape, dtype and sharding rules.

const std::vector<int64_t>& reduce_axes(const Params& params) { return param_ints(params, "axes"); }

bool is_reduced(const std::vector<int64_t>& axes, size_t dim) {
  return std::count(axes.begin(), axes.end(), int64_t(dim)) > 0;
}

// JAX's lax._reduce_op_shape_rule.
Shape reduced_shape(const Aval& x, const std::vector<int64_t>& axes) {
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  if (std::adjacent_find(sorted.begin(), sorted.end()) != sorted.end()) {
    throw ValueError("duplicate value in 'axes' of reduction: " + shape_str(axes));
  }
  for (int64_t a : axes) {
    if (a < 0 || a >= int64_t(x.shape.size())) {
      throw ValueError("reduction axes " + shape_str(axes) +
                       " contains out-of-bounds indices for " + x.str() + ".");
    }
  }
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!is_reduced(axes, d)) shape.push_back(x.shape[d]);
  }
  return shape;
}

// Sums and products take numbers (JAX's _reduce_number_dtype_rule).
template <const char* kName>
std::vector<Aval> number_reduce_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  if (x.dtype == DType::bool_) {
    throw TypeError(std::string(kName) + " does not accept dtype bool. Accepted dtypes are " +
                    "subtypes of number.");
  }
  return {Aval{reduced_shape(x, reduce_axes(params)), x.dtype, x.weak_type}};
}

std::vector<Aval> any_reduce_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  return {Aval{reduced_shape(x, reduce_axes(params)), x.dtype, x.weak_type}};
}

// JAX's lax._reduce_logical_shape_rule.
std::vector<Aval> logical_reduce_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  if (x.dtype != DType::bool_ && !is_integer(x.dtype)) {
    throw TypeError("logical reduction requires operand dtype bool or int, got " +
                    std::string(dtype_name(x.dtype)) + ".");
  }
  return {Aval{reduced_shape(x, reduce_axes(params)), x.dtype, x.weak_type}};
}

constexpr char kReduceSum[] = "reduce_sum";
constexpr char kReduceProd[] = "reduce_prod";

// Reduced dimensions are operand-only factors: sharding one leaves partial results that
// combine with the reduction's own op.
template <core::ReduceOp kOp>
ShardingRule reduce_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                  const Params& params) {
  const std::vector<int64_t>& axes = reduce_axes(params);
  ShardingRule rule;
  rule.operands.emplace_back();
  rule.results.emplace_back();
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    const int factor = rule.num_factors();
    rule.factor_sizes.push_back(in[0].shape[d]);
    rule.operands[0].push_back(factor);
    if (!is_reduced(axes, d)) rule.results[0].push_back(factor);
  }
  if (!axes.empty()) rule.reduction = kOp;
  return rule;
}

// Returns the dimensions of a rank-n operand that a reduction over `axes` keeps.
std::vector<int64_t> kept_axes(int64_t n, const std::vector<int64_t>& axes) {
  std::vector<int64_t> kept;
  for (int64_t d = 0; d < n; ++d) {
    if (std::find(axes.begin(), axes.end(), d) == axes.end()) kept.push_back(d);
  }
  return kept;
}

// Every operand element receives the cotangent of the sum it went into.
std::vector<Array> reduce_sum_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                        std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const Shape shape = operand_type(operands, 0, "reduce_sum").shape;
  return {
      lax::broadcast_in_dim(cts[0], shape, kept_axes(int64_t(shape.size()), reduce_axes(params)))};
}

// JAX's _reduce_chooser_jvp_rule: the tangent is the mean of the tangents at the places
// that attain the max (min), so ties share it.
std::vector<Array> reduce_chooser_jvp(std::span<const Array> primals,
                                      std::span<const Array> tangents, std::span<const Array> outs,
                                      const Params& params) {
  const Array& t = tangents[0];
  if (!t.valid()) return {Array()};
  const Array& x = primals[0];
  const std::vector<int64_t>& axes = reduce_axes(params);
  const Array ans = lax::broadcast_in_dim(outs[0], x.shape(), kept_axes(x.ndim(), axes));
  const Array location = convert(lax::eq(x, ans), t.dtype());
  const Array counts = lax::reduce_sum(location, axes);
  return {lax::div(lax::reduce_sum(lax::mul(t, location), axes), counts)};
}

// Returns x[lo:hi] along dimension 0.
Array leading_slice(const Array& x, int64_t lo, int64_t hi) {
  std::vector<int64_t> start(size_t(x.ndim()), 0);
  std::vector<int64_t> limit = x.shape();
  start[0] = lo;
  limit[0] = hi;
  return lax::slice(x, start, limit);
}

// JAX's _reduce_prod_jvp_rule: the jvp of a product tree (halves multiplied pairwise).
// Unlike t * prod / x it is exact where the operand has zeros.
std::vector<Array> reduce_prod_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  const Shape& shape = primals[0].shape();
  const std::vector<int64_t>& axes = reduce_axes(params);
  const std::vector<int64_t> kept = kept_axes(int64_t(shape.size()), axes);
  // Reduced dimensions go first, flattened into one.
  std::vector<int64_t> perm(axes);
  perm.insert(perm.end(), kept.begin(), kept.end());
  Shape flat{1};
  for (int64_t a : axes) flat[0] *= shape[size_t(a)];
  for (int64_t k : kept) flat.push_back(shape[size_t(k)]);
  Array x = lax::reshape(lax::transpose(primals[0], perm), flat);
  Array t = lax::reshape(lax::transpose(tangents[0], perm), flat);
  const DType dtype = x.dtype();
  while (x.shape()[0] > 1) {
    const int64_t n = x.shape()[0];
    const int64_t n1 = (n + 1) / 2;
    Array x1 = leading_slice(x, 0, n1);
    Array x2 = leading_slice(x, n1, n);
    Array t1 = leading_slice(t, 0, n1);
    Array t2 = leading_slice(t, n1, n);
    if (n - n1 != n1) {
      // The odd element out pairs with the product's identity, whose tangent is zero.
      std::vector<lax::PadConfig> config(flat.size());
      config[0].high = 1;
      x2 = lax::pad(x2, constant(1, dtype), config);
      t2 = lax::pad(t2, constant(0, dtype), config);
    }
    t = lax::add(lax::mul(t1, x2), lax::mul(x1, t2));
    x = lax::mul(x1, x2);
  }
  // An empty product is the constant 1.
  if (x.shape()[0] == 0) return {Array()};
  return {lax::squeeze(t, {0})};
}

// The reduced axes move past the batch dimension, which stays.
template <core::Prim P>
Batched reduce_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                     const BatchAxis&) {
  const std::vector<int64_t>& axes = reduce_axes(params);
  Params p = params;
  p.set("axes", batched_dims(axes, dims[0]));
  return Batched{{core::bind1(P, {in[0]}, p)}, {batch_dim_without(dims[0], axes)}};
}

}  // namespace reduce_impl
}  // namespace

extern const core::PrimRules reduce_sum_rules = {
    .abstract_eval = reduce_impl::number_reduce_eval<reduce_impl::kReduceSum>,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::sum>,
    .kernel = kernels::reduce_sum,
    .jvp = unary_linear_jvp<core::Prim::reduce_sum>,
    .transpose = reduce_impl::reduce_sum_transpose,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_sum>,
};

extern const core::PrimRules reduce_prod_rules = {
    .abstract_eval = reduce_impl::number_reduce_eval<reduce_impl::kReduceProd>,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::prod>,
    .kernel = kernels::reduce_prod,
    .jvp = reduce_impl::reduce_prod_jvp,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_prod>,
};

extern const core::PrimRules reduce_max_rules = {
    .abstract_eval = reduce_impl::any_reduce_eval,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::max>,
    .kernel = kernels::reduce_max,
    .jvp = reduce_impl::reduce_chooser_jvp,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_max>,
};

extern const core::PrimRules reduce_min_rules = {
    .abstract_eval = reduce_impl::any_reduce_eval,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::min>,
    .kernel = kernels::reduce_min,
    .jvp = reduce_impl::reduce_chooser_jvp,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_min>,
};

extern const core::PrimRules reduce_and_rules = {
    .abstract_eval = reduce_impl::logical_reduce_eval,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::and_>,
    .kernel = kernels::reduce_and,
    .jvp = zero_jvp,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_and>,
};

extern const core::PrimRules reduce_or_rules = {
    .abstract_eval = reduce_impl::logical_reduce_eval,
    .sharding_rule = reduce_impl::reduce_sharding_rule<core::ReduceOp::or_>,
    .kernel = kernels::reduce_or,
    .jvp = zero_jvp,
    .batch = reduce_impl::reduce_batch<core::Prim::reduce_or>,
};

}  // namespace parax::prims
