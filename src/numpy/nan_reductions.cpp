// numpy's reductions that skip NaNs (nansum, nanprod, nanmax, nanmin, nanmean, nanvar,
// nanstd, nanargmax, nanargmin), following jax.numpy's reductions.py: NaNs replaced by the
// reduction's identity, and an all-NaN slice giving NaN (or -1 for the arg reductions).
#include <limits>

#include "numpy/numpy_internal.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

using detail::filled_like;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

// jax.numpy's _nan_reduction: NaNs replaced by the reduction's identity.
template <class F>
Array nan_reduction(const Array& a, double init, bool nan_if_all_nan, const Axes& axis,
                    bool keepdims, F reduce) {
  if (!is_floating(a.dtype())) return reduce(a);
  Array out = reduce(where(isnan(a), frontend::scalar(init, a.dtype()), a));
  if (!nan_if_all_nan) return out;
  return where(all(isnan(a), axis, keepdims), filled_like(out, kNan), out);
}

Array nan_arg(bool is_max, const Array& a, std::optional<int64_t> axis, bool keepdims) {
  if (!is_floating(a.dtype())) {
    return is_max ? argmax(a, axis, keepdims) : argmin(a, axis, keepdims);
  }
  Array nan_mask = isnan(a);
  Array filled = where(nan_mask, is_max ? -kInf : kInf, a);
  Array res = is_max ? argmax(filled, axis, keepdims) : argmin(filled, axis, keepdims);
  Axes axes = axis ? Axes(*axis) : Axes();
  return where(all(nan_mask, axes, keepdims), filled_like(res, -1), res);
}

}  // namespace

Array nansum(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  return nan_reduction(x.array(), 0, false, axis, keepdims,
                       [&](const Array& a) { return sum(a, axis, keepdims, dtype); });
}

Array nanprod(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  return nan_reduction(x.array(), 1, false, axis, keepdims,
                       [&](const Array& a) { return prod(a, axis, keepdims, dtype); });
}

Array nanmax(const ArrayLike& x, Axes axis, bool keepdims) {
  return nan_reduction(x.array(), -kInf, true, axis, keepdims,
                       [&](const Array& a) { return max(a, axis, keepdims); });
}

Array nanmin(const ArrayLike& x, Axes axis, bool keepdims) {
  return nan_reduction(x.array(), kInf, true, axis, keepdims,
                       [&](const Array& a) { return min(a, axis, keepdims); });
}

Array nanmean(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  const Array& a = x.array();
  if (!is_floating(a.dtype())) return mean(a, axis, keepdims, dtype);
  const DType t = dtype ? *dtype : base::to_inexact_dtype(a.dtype());
  Array normalizer = sum(lax::bitwise_not(isnan(a)), axis, keepdims, t);
  return lax::div(nansum(a, axis, keepdims, t), normalizer);
}

Array nanvar(const ArrayLike& x, Axes axis, int64_t ddof, bool keepdims,
             std::optional<DType> dtype) {
  Array a = x.array();
  // jax.numpy's _var_promote_types.
  DType result_dtype;
  DType computation_dtype;
  if (dtype) {
    result_dtype = *dtype;
    computation_dtype = detail::upcast_f16(*dtype);
  } else if (!is_floating(a.dtype())) {
    result_dtype = base::to_inexact_dtype(a.dtype());
    computation_dtype = result_dtype;
  } else {
    result_dtype = a.dtype();
    computation_dtype = detail::upcast_f16(a.dtype());
  }
  a = astype(a, computation_dtype);
  Array a_mean = nanmean(a, axis, true, computation_dtype);
  Array centered = where(isnan(a), 0, subtract(a, a_mean));
  centered = lax::integer_pow(centered, 2);
  Array normalizer = sum(lax::bitwise_not(isnan(a)), axis, keepdims);
  normalizer = subtract(normalizer, ddof);
  Array normalizer_mask = lax::le(normalizer, frontend::constant_like(normalizer, 0));
  Array result = sum(centered, axis, keepdims);
  result = where(normalizer_mask, kNan, result);
  Array divisor = where(normalizer_mask, 1, normalizer);
  result = lax::div(result, lax::convert_element_type(divisor, result.dtype()));
  return lax::convert_element_type(result, result_dtype);
}

Array nanstd(const ArrayLike& x, Axes axis, int64_t ddof, bool keepdims,
             std::optional<DType> dtype) {
  return lax::sqrt(nanvar(x, axis, ddof, keepdims, dtype));
}

Array nanargmax(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  return nan_arg(true, x.array(), axis, keepdims);
}

Array nanargmin(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  return nan_arg(false, x.array(), axis, keepdims);
}
}  // namespace parax::numpy
