// The cumulative reductions: cumsum, cumprod, cummax, cummin and cumlogsumexp, running
// along `axis` (from the end when `reverse`) with one shape, sharding and batching rule.
// cumsum is linear (its transpose is the running sum the other way). The others' jvps
// differentiate JAX's associative scan (lax.associative_scan, the parallel prefix JAX's
// _cumulative_jvp_rule runs) pair by pair: each combine carries a value and its tangent, so
// products with zeros, ties of max/min (averaged by lax.max's balanced rule) and infinities
// of logaddexp get JAX's derivatives, and the tangent path binds only linear primitives
// (mul by primal values, add, slice, pad, concatenate, rev).
#include <cmath>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/kernels/cumulative.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace cumulative_impl {

using core::Prim;

Array c(const Array& like, double value) { return constant(value, like.dtype()); }

int64_t axis_of(const Params& params) { return param_int(params, "axis"); }
bool reverse_of(const Params& params) {
  return params.has("reverse") && params.get<bool>("reverse");
}

// JAX's _cumred_shape_rule and _cumred_dtype_rule (cumsum's: _reduce_number_dtype_rule).
// cumlogsumexp takes floats only: JAX accepts integers there and then fails while lowering
// (logaddexp's -inf identity).
template <Prim P>
std::vector<Aval> cumulative_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "operands of " << core::prim_name(P));
  const Aval& x = in[0];
  const int64_t axis = axis_of(params);
  if (axis < 0) throw ValueError("XLA operations do not allow negative axes");
  if (axis >= int64_t(x.shape.size())) {
    throw ValueError("axis " + std::to_string(axis) + " is out of bounds for array of shape " +
                     shape_str(x.shape));
  }
  const std::string name(core::prim_name(P));
  if (x.dtype == DType::bool_) {
    throw TypeError(name + " does not accept dtype bool. Accepted dtypes are subtypes of number.");
  }
  if (P == Prim::cumlogsumexp && !is_floating(x.dtype)) {
    throw TypeError(name + " does not accept dtype " + std::string(dtype_name(x.dtype)) +
                    ". Accepted dtypes are subtypes of floating.");
  }
  return {x};
}

// The scanned dimension must stay whole; the others are independent.
ShardingRule cumulative_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                      const Params& params) {
  const int64_t axis = axis_of(params);
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == axis) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

template <Prim P>
Batched cumulative_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                         const BatchAxis&) {
  Params p = params;
  p.set("axis", batched_dim(axis_of(params), dims[0]));
  return Batched{{core::bind1(P, {in[0]}, p)}, {dims[0]}};
}

// One combine per operand element, as a reduction's.
core::Cost cumulative_cost(std::span<const Aval> in, std::span<const Aval>, const Params&,
                           std::span<const int64_t>) {
  return {.flops = double(in[0].size())};
}

// The adjoint of a running sum is the running sum the other way.
std::vector<Array> cumsum_transpose(std::span<const Array> cts, std::span<const Array>,
                                    std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {core::bind1(Prim::cumsum, {cts[0]},
                      {{"axis", axis_of(params)}, {"reverse", !reverse_of(params)}})};
}

// A value of the scan and its tangent.
struct Dual {
  Array v, t;
};
using Combine = Dual (*)(const Dual& a, const Dual& b);

Dual combine_mul(const Dual& a, const Dual& b) {
  return {lax::mul(a.v, b.v), lax::add(lax::mul(a.t, b.v), lax::mul(a.v, b.t))};
}

// lax.max's and lax.min's jvp: the tangent of the operand that is the result, halved
// between equal operands (_balanced_eq).
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  const Array zeros = zeros_like(z);
  const Array ones = ones_like(z);
  const Array twos = full_like(z, 2);
  return lax::div(lax::select(lax::eq(x, z), ones, zeros), lax::select(lax::eq(y, z), twos, ones));
}
template <bool kMax>
Dual combine_extremum(const Dual& a, const Dual& b) {
  Array z = kMax ? lax::max(a.v, b.v) : lax::min(a.v, b.v);
  Array t =
      lax::add(lax::mul(a.t, balanced_eq(a.v, z, b.v)), lax::mul(b.t, balanced_eq(b.v, z, a.v)));
  return {z, t};
}

// JAX's logaddexp and its custom jvp (_replace_inf keeps exp(inf - inf) out).
Array replace_inf(const Array& x) {
  return lax::select(lax::eq(x, c(x, HUGE_VAL)), zeros_like(x), x);
}
Dual combine_logaddexp(const Dual& a, const Dual& b) {
  Array amax = lax::max(a.v, b.v);
  Array delta = lax::sub(a.v, b.v);
  Array v = lax::select(lax::ne(delta, delta), lax::add(a.v, b.v),
                        lax::add(amax, lax::log1p(lax::exp(lax::neg(lax::abs(delta))))));
  Array r = replace_inf(v);
  Array t = lax::add(lax::mul(a.t, lax::exp(lax::sub(replace_inf(a.v), r))),
                     lax::mul(b.t, lax::exp(lax::sub(replace_inf(b.v), r))));
  return {v, t};
}

// slice_in_dim(x, start, limit, stride, axis).
Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
  std::vector<int64_t> starts(size_t(x.ndim()), 0);
  std::vector<int64_t> limits(x.shape().begin(), x.shape().end());
  std::vector<int64_t> strides(size_t(x.ndim()), 1);
  starts[size_t(axis)] = start;
  limits[size_t(axis)] = limit;
  strides[size_t(axis)] = stride;
  return lax::slice(x, starts, limits, strides);
}

// JAX's _interleave: a's elements at even positions, b's at odd ones, by padding each with
// zeros between its elements and adding.
Array interleave(const Array& a, const Array& b, int64_t axis) {
  const bool same = a.shape()[size_t(axis)] == b.shape()[size_t(axis)];
  std::vector<lax::PadConfig> a_pad(size_t(a.ndim())), b_pad(size_t(b.ndim()));
  a_pad[size_t(axis)] = {0, same ? 1 : 0, 1};
  b_pad[size_t(axis)] = {1, same ? 0 : 1, 1};
  return lax::add(lax::pad(a, c(a, 0), a_pad), lax::pad(b, c(b, 0), b_pad));
}

Dual slice_dual(const Dual& x, int64_t start, int64_t limit, int64_t stride, int64_t axis) {
  return {slice_in_dim(x.v, start, limit, stride, axis),
          slice_in_dim(x.t, start, limit, stride, axis)};
}

// lax.associative_scan's _scan on dual numbers.
Dual associative_scan(Combine combine, const Dual& elems, int64_t axis) {
  const int64_t n = elems.v.shape()[size_t(axis)];
  if (n < 2) return elems;
  Dual reduced = combine(slice_dual(elems, 0, n - 1, 2, axis), slice_dual(elems, 1, n, 2, axis));
  Dual odd = associative_scan(combine, reduced, axis);
  const int64_t m = odd.v.shape()[size_t(axis)];
  Dual rest = slice_dual(elems, 2, n, 2, axis);
  Dual even = n % 2 == 0 ? combine(slice_dual(odd, 0, m - 1, 1, axis), rest) : combine(odd, rest);
  Dual first = slice_dual(elems, 0, 1, 1, axis);
  even = {lax::concatenate({first.v, even.v}, axis), lax::concatenate({first.t, even.t}, axis)};
  return {interleave(even.v, odd.v, axis), interleave(even.t, odd.t, axis)};
}

template <Combine kCombine>
std::vector<Array> cumulative_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                  std::span<const Array> outs, const Params& params) {
  if (!tangents[0].valid() || !has_tangent(outs[0].dtype())) return {Array()};
  const int64_t axis = axis_of(params);
  const bool reverse = reverse_of(params);
  Dual x{primals[0], broadcast_to(tangents[0], primals[0].shape())};
  if (reverse) x = {lax::rev(x.v, {axis}), lax::rev(x.t, {axis})};
  Array t = associative_scan(kCombine, x, axis).t;
  if (reverse) t = lax::rev(t, {axis});
  return {t};
}

template <Prim P, core::KernelFn kKernel, Combine kCombine>
constexpr PrimRules cumulative_rules{.abstract_eval = &cumulative_eval<P>,
                                     .sharding_rule = &cumulative_sharding_rule,
                                     .kernel = kKernel,
                                     .jvp = &cumulative_jvp<kCombine>,
                                     .batch = &cumulative_batch<P>,
                                     .cost = &cumulative_cost};

}  // namespace cumulative_impl
}  // namespace

extern const PrimRules cumsum_rules = {
    .abstract_eval = &cumulative_impl::cumulative_eval<core::Prim::cumsum>,
    .sharding_rule = &cumulative_impl::cumulative_sharding_rule,
    .kernel = kernels::cumsum,
    .jvp = &unary_linear_jvp<core::Prim::cumsum>,
    .transpose = &cumulative_impl::cumsum_transpose,
    .batch = &cumulative_impl::cumulative_batch<core::Prim::cumsum>,
    .cost = &cumulative_impl::cumulative_cost};
extern const PrimRules cumprod_rules =
    cumulative_impl::cumulative_rules<core::Prim::cumprod, kernels::cumprod,
                                      cumulative_impl::combine_mul>;
extern const PrimRules cummax_rules =
    cumulative_impl::cumulative_rules<core::Prim::cummax, kernels::cummax,
                                      cumulative_impl::combine_extremum<true>>;
extern const PrimRules cummin_rules =
    cumulative_impl::cumulative_rules<core::Prim::cummin, kernels::cummin,
                                      cumulative_impl::combine_extremum<false>>;
extern const PrimRules cumlogsumexp_rules =
    cumulative_impl::cumulative_rules<core::Prim::cumlogsumexp, kernels::cumlogsumexp,
                                      cumulative_impl::combine_logaddexp>;

}  // namespace parax::prims
