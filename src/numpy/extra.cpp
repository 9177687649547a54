// numpy's extra functions over lax, following jax.numpy's code step by step (ufuncs.py,
// reductions.py, lax_numpy.py) so that values, dtypes and weak types match JAX's. The
// inverse hyperbolics and the cumulative reductions bind primitives of prims/numpy_extra.
#include <algorithm>
#include <cmath>
#include <limits>
#include <numbers>

#include "core/trace.h"
#include "numpy/numpy_internal.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

using core::Prim;
using frontend::constant_like;
using Ints = std::vector<int64_t>;

constexpr double kNan = std::numeric_limits<double>::quiet_NaN();
constexpr double kInf = std::numeric_limits<double>::infinity();

Array inexact(const ArrayLike& x) { return frontend::promote_dtypes_inexact({x.array()})[0]; }

bool is_inexact(DType t) { return is_floating(t); }

// jax.numpy's _promote_integer_dtype.
DType promote_integer_dtype(DType t) {
  if (t == DType::bool_) return base::default_int_dtype();
  if (is_unsigned_integer(t) && dtype_itemsize(t) < dtype_itemsize(base::default_uint_dtype())) {
    return base::default_uint_dtype();
  }
  if (is_signed_integer(t) && dtype_itemsize(t) < dtype_itemsize(base::default_int_dtype())) {
    return base::default_int_dtype();
  }
  return t;
}

DType upcast_f16(DType t) {
  return t == DType::float16 || t == DType::bfloat16 ? DType::float32 : t;
}

// lax.slice_in_dim(x, start, limit, axis=axis), negative bounds counted from the end.
Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t axis) {
  const int64_t n = x.shape()[size_t(axis)];
  if (start < 0) start += n;
  if (limit < 0) limit += n;
  Ints starts(size_t(x.ndim()), 0);
  Ints limits(x.shape().begin(), x.shape().end());
  starts[size_t(axis)] = start;
  limits[size_t(axis)] = limit;
  return lax::slice(x, starts, limits);
}

Array isnan_(const Array& x) { return lax::ne(x, x); }

// x's shape and dtype filled with `value` (NaN, or an integer), computed from x so that
// under vmap it is batched like x: select_n's batching rule takes no unbatched rank-0
// case beside batched ones.
Array filled_like(const Array& x, double value) {
  return lax::add(lax::mul(x, constant_like(x, 0)), constant_like(x, value));
}

}  // namespace

// ---- elementwise -----------------------------------------------------------------------------

Array arcsinh(const ArrayLike& x) { return core::bind1(Prim::asinh, {inexact(x)}); }
Array arccosh(const ArrayLike& x) { return core::bind1(Prim::acosh, {inexact(x)}); }
Array arctanh(const ArrayLike& x) { return core::bind1(Prim::atanh, {inexact(x)}); }

namespace {

// JAX's logaddexp (lax/other.py) with the larger and smaller operands chosen by select
// instead of max and abs: the values are the same operations, and the ordinary
// derivative is then JAX's custom one (exp(x - out)) at ties too, where max's and abs's
// derivative conventions would not add up to it.
Array logaddexp_impl(const ArrayLike& x, const ArrayLike& y, bool base2) {
  std::vector<Array> xs =
      frontend::promote_args_inexact(base2 ? "logaddexp2" : "logaddexp", {x.array(), y.array()});
  xs = frontend::broadcast_arrays(std::move(xs));
  const Array& a = xs[0];
  const Array& b = xs[1];
  Array ge = lax::ge(a, b);
  Array big = lax::select(ge, a, b);
  Array small = lax::select(ge, b, a);
  Array delta = lax::sub(a, b);
  Array term = base2 ? lax::mul(constant_like(a, 1 / std::numbers::ln2),
                                lax::log1p(lax::exp2(lax::sub(small, big))))
                     : lax::log1p(lax::exp(lax::sub(small, big)));
  // NaNs, or infinities of one sign, add.
  return lax::select(isnan_(delta), lax::add(a, b), lax::add(big, term));
}

}  // namespace

Array logaddexp(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logaddexp", x, y, [](const ArrayLike& x, const ArrayLike& y) {
    return logaddexp_impl(x, y, false);
  });
}

Array logaddexp2(const ArrayLike& x, const ArrayLike& y) {
  return frontend::staged_binary("logaddexp2", x, y, [](const ArrayLike& x, const ArrayLike& y) {
    return logaddexp_impl(x, y, true);
  });
}

// ---- cumulative reductions -----------------------------------------------------------------

namespace {

// jax.numpy's _cumulative_reduction.
Array cumulative(Prim prim, const ArrayLike& x, std::optional<int64_t> axis,
                 std::optional<DType> dtype, bool fill_nan, double fill_value) {
  Array a = x.array();
  if (!axis || a.ndim() == 0) a = lax::reshape(a, Shape{a.size()});
  const int64_t ax = frontend::canonicalize_axis(axis.value_or(0), a.ndim());
  if (fill_nan && is_inexact(a.dtype())) {
    a = lax::select(isnan_(a), lax::broadcast(constant_like(a, fill_value), a.shape()), a);
  }
  DType result_type;
  DType computation_type;
  if (!dtype) {
    result_type = a.dtype() == DType::bool_ ? promote_integer_dtype(a.dtype()) : a.dtype();
    computation_type = result_type;
  } else if (*dtype == DType::bool_) {
    result_type = DType::bool_;
    if (a.dtype() != DType::bool_) a = lax::ne(a, constant_like(a, 0));
    computation_type = promote_integer_dtype(result_type);
  } else {
    result_type = *dtype;
    computation_type = result_type;
  }
  a = lax::convert_element_type(a, computation_type);
  Array result = core::bind1(prim, {a}, {{"axis", ax}, {"reverse", false}});
  return lax::convert_element_type(result, result_type);
}

}  // namespace

Array cumprod(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumulative(Prim::cumprod, x, axis, dtype, false, 1);
}
Array nancumsum(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumulative(Prim::cumsum, x, axis, dtype, true, 0);
}
Array nancumprod(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumulative(Prim::cumprod, x, axis, dtype, true, 1);
}

// ---- reductions ignoring NaNs ----------------------------------------------------------------

namespace {

// jax.numpy's _nan_reduction: NaNs replaced by the reduction's identity.
template <class F>
Array nan_reduction(const Array& a, double init, bool nan_if_all_nan, const Axes& axis,
                    bool keepdims, F reduce) {
  if (!is_inexact(a.dtype())) return reduce(a);
  Array out = reduce(where(isnan_(a), frontend::scalar(init, a.dtype()), a));
  if (!nan_if_all_nan) return out;
  return where(all(isnan_(a), axis, keepdims), filled_like(out, kNan), out);
}

Array nan_arg(bool is_max, const Array& a, std::optional<int64_t> axis, bool keepdims) {
  if (!is_inexact(a.dtype())) {
    return is_max ? argmax(a, axis, keepdims) : argmin(a, axis, keepdims);
  }
  Array nan_mask = isnan_(a);
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
  if (!is_inexact(a.dtype())) return mean(a, axis, keepdims, dtype);
  const DType t = dtype ? *dtype : base::to_inexact_dtype(a.dtype());
  Array normalizer = sum(lax::bitwise_not(isnan_(a)), axis, keepdims, t);
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
    computation_dtype = upcast_f16(*dtype);
  } else if (!is_inexact(a.dtype())) {
    result_dtype = base::to_inexact_dtype(a.dtype());
    computation_dtype = result_dtype;
  } else {
    result_dtype = a.dtype();
    computation_dtype = upcast_f16(a.dtype());
  }
  a = astype(a, computation_dtype);
  Array a_mean = nanmean(a, axis, true, computation_dtype);
  Array centered = where(isnan_(a), 0, subtract(a, a_mean));
  centered = lax::integer_pow(centered, 2);
  Array normalizer = sum(lax::bitwise_not(isnan_(a)), axis, keepdims);
  normalizer = subtract(normalizer, ddof);
  Array normalizer_mask = lax::le(normalizer, constant_like(normalizer, 0));
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

// jnp.median: quantile(a, 0.5, method="midpoint") over the sorted axis, NaN where any
// reduced element is NaN.
Array median(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  Array a = inexact(x);
  const int64_t ndim = a.ndim();
  Array flat = axis ? a : ravel(a);
  const int64_t ax = axis ? frontend::canonicalize_axis(*axis, ndim) : 0;
  Array sorted = lax::sort(flat, ax, true);
  const int64_t n = flat.shape()[size_t(ax)];
  if (n == 0) throw ValueError("[numpy.median] cannot take the median of an empty axis");
  Array low = slice_in_dim(sorted, (n - 1) / 2, (n - 1) / 2 + 1, ax);
  Array high = slice_in_dim(sorted, n / 2, n / 2 + 1, ax);
  Array result = lax::mul(lax::add(low, high), constant_like(low, 0.5));
  result = where(any(isnan_(flat), Axes(ax), true), filled_like(result, kNan), result);
  if (!axis) {
    return keepdims ? lax::reshape(result, Shape(size_t(ndim), 1)) : lax::reshape(result, Shape{});
  }
  return keepdims ? result : lax::squeeze(result, {ax});
}

// ---- pad -------------------------------------------------------------------------------------

std::vector<PadWidth::Pair> PadWidth::pairs(int64_t ndim, const char* name) const {
  if (broadcast_) return std::vector<Pair>(size_t(ndim), pairs_[0]);
  if (int64_t(pairs_.size()) != ndim) {
    const std::string n = std::to_string(ndim);
    throw ValueError("jnp.pad: " + std::string(name) + " with nd=" + n +
                     " has unsupported shape (" + std::to_string(pairs_.size()) +
                     ", 2). Valid shapes are (" + n + ", 2), (1, 2), (2,), (1,), or ().");
  }
  return pairs_;
}

namespace {

using Pairs = std::vector<PadWidth::Pair>;

void check_no_padding(const PadWidth::Pair& p, std::string_view mode) {
  if (p.first > 0 || p.second > 0) {
    throw ValueError("Cannot apply '" + std::string(mode) + "' padding to empty axis");
  }
}

// A pad value converted as JAX's _pad_constant does: to the array's dtype, keeping its
// weak type.
Array pad_value(const Array& a, const Array& v) {
  return frontend::convert(v, a.dtype(), a.weak_type());
}

Array pad_constant(Array a, const Pairs& pw, const PadValues& values) {
  const size_t nd = size_t(a.ndim());
  if (values.value()) {
    Array v = pad_value(a, *values.value());
    if (v.ndim() == 1 && v.shape()[0] == 1) v = lax::reshape(v, Shape{});
    if (v.ndim() == 0) {
      std::vector<lax::PadConfig> widths;
      for (const auto& [lo, hi] : pw) widths.push_back({lo, hi, 0});
      return lax::pad(a, v, widths);
    }
    if (v.ndim() > 2 || v.shape().back() != 2) {
      throw ValueError("jnp.pad: constant_values has unsupported shape " + shape_str(v.shape()) +
                       ". If the shape is 1D or 2D, the last dimension must be of size 1 or 2.");
    }
    // (before, after) values per axis, possibly traced: one pad per side.
    v = broadcast_to(v, Shape{int64_t(nd), 2});
    for (size_t i = 0; i < nd; ++i) {
      for (int side = 0; side < 2; ++side) {
        const int64_t width = side == 0 ? pw[i].first : pw[i].second;
        if (width == 0) continue;
        Array value =
            lax::reshape(lax::slice(v, {int64_t(i), side}, {int64_t(i) + 1, side + 1}), Shape{});
        std::vector<lax::PadConfig> widths(nd);
        widths[i] = side == 0 ? lax::PadConfig{width, 0, 0} : lax::PadConfig{0, width, 0};
        a = lax::pad(a, value, widths);
      }
    }
    return a;
  }
  std::vector<PadValues::Pair> vals = values.pairs();
  if (vals.size() == 1) vals.assign(nd, vals[0]);
  if (vals.size() != nd) {
    throw ValueError("Expected constant_values to have shape (" + std::to_string(nd) +
                     ", 2); got (" + std::to_string(vals.size()) + ", 2).");
  }
  for (size_t i = 0; i < nd; ++i) {
    std::vector<lax::PadConfig> widths(nd);
    if (pw[i].first != 0) {
      widths[i] = {pw[i].first, 0, 0};
      a = lax::pad(a, pad_value(a, ArrayLike(vals[i].first).array()), widths);
    }
    if (pw[i].second != 0) {
      widths[i] = {0, pw[i].second, 0};
      a = lax::pad(a, pad_value(a, ArrayLike(vals[i].second).array()), widths);
    }
  }
  return a;
}

Array pad_wrap(Array a, const Pairs& pw) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t size = a.shape()[size_t(i)];
    if (size == 0) {
      check_no_padding(pw[size_t(i)], "wrap");
      continue;
    }
    const auto [before, after] = pw[size_t(i)];
    const int64_t total = before / size + after / size + 1;
    std::vector<Array> parts;
    if (before % size > 0) parts.push_back(slice_in_dim(a, size - before % size, size, i));
    for (int64_t k = 0; k < total; ++k) parts.push_back(a);
    if (after % size > 0) parts.push_back(slice_in_dim(a, 0, after % size, i));
    a = lax::concatenate(parts, i);
  }
  return a;
}

Array pad_symmetric_or_reflect(Array a, const Pairs& pw, std::string_view mode,
                               std::string_view reflect_type) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t axis_size = a.shape()[size_t(i)];
    if (axis_size == 0) {
      check_no_padding(pw[size_t(i)], mode);
      continue;
    }
    if (pw[size_t(i)].first == 0 && pw[size_t(i)].second == 0) continue;
    const int64_t offset = mode == "reflect" && axis_size > 1 ? 1 : 0;
    auto build = [&](Array array, int64_t padding, bool before) {
      const int64_t n0 = array.shape()[size_t(i)];
      Array edge = before ? slice_in_dim(array, 0, 1, i) : slice_in_dim(array, n0 - 1, n0, i);
      while (padding > 0) {
        const int64_t curr = std::min(padding, axis_size - offset);
        padding -= curr;
        const int64_t n = array.shape()[size_t(i)];
        Array x;
        if (before) {
          x = slice_in_dim(array, offset, offset + curr, i);
        } else {
          const bool to_end = mode == "symmetric" || axis_size == 1;
          x = slice_in_dim(array, n - (curr + offset), to_end ? n : n - 1, i);
        }
        x = lax::rev(x, {i});
        if (reflect_type == "odd") {
          x = subtract(multiply(2, edge), x);
          if (axis_size > 1) {
            const int64_t m = x.shape()[size_t(i)];
            edge = before ? slice_in_dim(x, 0, 1, i) : slice_in_dim(x, m - 1, m, i);
          }
        }
        array = before ? lax::concatenate({x, array}, i) : lax::concatenate({array, x}, i);
      }
      return array;
    };
    a = build(a, pw[size_t(i)].first, true);
    a = build(a, pw[size_t(i)].second, false);
  }
  return a;
}

Array pad_edge(Array a, const Pairs& pw) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t n = a.shape()[size_t(i)];
    if (n == 0) {
      check_no_padding(pw[size_t(i)], "edge");
      continue;
    }
    Array before = repeat(slice_in_dim(a, 0, 1, i), pw[size_t(i)].first, i);
    Array after = repeat(slice_in_dim(a, n - 1, n, i), pw[size_t(i)].second, i);
    a = lax::concatenate({before, a, after}, i);
  }
  return a;
}

// jax.numpy's _linspace(start, stop, num, endpoint=False, dtype, axis) for a scalar start
// and an array stop (the edge the ramp runs to).
Array ramp(double start_value, const Array& stop_in, int64_t num, DType dtype, int64_t axis) {
  const DType ct = base::to_inexact_dtype(dtype);
  Array stop = astype(stop_in, ct);
  Array start = lax::broadcast(frontend::scalar(start_value, ct), stop.shape());
  Shape bounds = stop.shape();
  bounds.insert(bounds.begin() + axis, 1);
  Array out;
  if (num > 1) {
    Shape iota_shape(bounds.size(), 1);
    iota_shape[size_t(axis)] = num;
    Array step =
        lax::div(lax::reshape(lax::iota(ct, num), iota_shape), frontend::scalar(double(num), ct));
    out = add(multiply(lax::reshape(start, bounds), subtract(1, step)),
              multiply(lax::reshape(stop, bounds), step));
  } else if (num == 1) {
    out = lax::reshape(start, bounds);
  } else {
    Shape empty = stop.shape();
    empty.insert(empty.begin() + axis, 0);
    out = zeros(empty, dtype);
  }
  if (is_integer(dtype) && !is_integer(out.dtype())) out = lax::floor(out);
  return lax::convert_element_type(out, dtype);
}

Array pad_linear_ramp(Array a, const Pairs& pw, const PadValues& end_values) {
  const size_t nd = size_t(a.ndim());
  std::vector<PadValues::Pair> ends;
  if (end_values.value()) {
    const double v = end_values.value()->item<double>();
    ends.assign(nd, {v, v});
  } else {
    ends = end_values.pairs();
    if (ends.size() == 1) ends.assign(nd, ends[0]);
    if (ends.size() != nd) {
      throw ValueError("Expected end_values to have shape (" + std::to_string(nd) + ", 2); got (" +
                       std::to_string(ends.size()) + ", 2).");
    }
  }
  for (int64_t axis = 0; axis < a.ndim(); ++axis) {
    const int64_t n = a.shape()[size_t(axis)];
    Array edge_before = lax::squeeze(slice_in_dim(a, 0, 1, axis), {axis});
    Array edge_after = lax::squeeze(slice_in_dim(a, n - 1, n, axis), {axis});
    Array before =
        ramp(ends[size_t(axis)].first, edge_before, pw[size_t(axis)].first, a.dtype(), axis);
    Array after =
        ramp(ends[size_t(axis)].second, edge_after, pw[size_t(axis)].second, a.dtype(), axis);
    before = frontend::convert(before, a.dtype(), a.weak_type());
    after = frontend::convert(lax::rev(after, {axis}), a.dtype(), a.weak_type());
    a = lax::concatenate({before, a, after}, axis);
  }
  return a;
}

Array pad_stats(Array a, const Pairs& pw, const std::optional<Pairs>& stat_length,
                std::string_view mode) {
  auto stat = [&](const Array& x, int64_t axis) -> Array {
    if (mode == "maximum") return max(x, Axes(axis), true);
    if (mode == "minimum") return min(x, Axes(axis), true);
    if (mode == "mean") return mean(x, Axes(axis), true);
    return median(x, axis, true);
  };
  for (int64_t i = 0; i < a.ndim(); ++i) {
    Array before, after;
    if (!stat_length) {
      before = stat(a, i);
      after = before;
    } else {
      const int64_t n = a.shape()[size_t(i)];
      auto [lb, la] = (*stat_length)[size_t(i)];
      if (lb == 0 || la == 0) throw ValueError("stat_length of 0 yields no value for padding");
      lb = std::min(lb, n);
      la = std::min(la, n);
      before = stat(slice_in_dim(a, 0, lb, i), i);
      after = stat(slice_in_dim(a, n - la, n, i), i);
    }
    if (is_integer(a.dtype())) {
      before = round(before);
      after = round(after);
    }
    before = frontend::convert(before, a.dtype(), a.weak_type());
    after = frontend::convert(after, a.dtype(), a.weak_type());
    before = repeat(before, pw[size_t(i)].first, i);
    after = repeat(after, pw[size_t(i)].second, i);
    a = lax::concatenate({before, a, after}, i);
  }
  return a;
}

// JAX's empty_like is zeros.
Array pad_empty(const Array& a, const Pairs& pw) {
  std::vector<lax::PadConfig> widths;
  for (const auto& [lo, hi] : pw) widths.push_back({lo, hi, 0});
  return lax::pad(a, constant_like(a, 0), widths);
}

}  // namespace

Array pad(const ArrayLike& x, const PadWidth& pad_width, std::string_view mode,
          const PadValues& constant_values, const PadValues& end_values,
          std::string_view reflect_type, std::optional<PadWidth> stat_length) {
  static const char* const kModes[] = {"constant",  "edge",   "linear_ramp", "maximum",
                                       "mean",      "median", "minimum",     "reflect",
                                       "symmetric", "wrap",   "empty"};
  if (std::find(std::begin(kModes), std::end(kModes), mode) == std::end(kModes)) {
    throw NotImplementedError("Unimplemented padding mode '" + std::string(mode) + "' for np.pad.");
  }
  if (reflect_type != "even" && reflect_type != "odd") {
    throw ValueError("[numpy.pad] reflect_type is '" + std::string(reflect_type) +
                     "'; expected 'even' or 'odd'");
  }
  Array a = x.array();
  const int64_t nd = a.ndim();
  if (nd == 0) return a;
  const Pairs pw = pad_width.pairs(nd);
  for (const auto& [lo, hi] : pw) {
    if (lo < 0 || hi < 0) throw ValueError("index can't contain negative values");
  }
  if (mode == "constant") return pad_constant(a, pw, constant_values);
  if (mode == "wrap") return pad_wrap(a, pw);
  if (mode == "symmetric" || mode == "reflect") {
    return pad_symmetric_or_reflect(a, pw, mode, reflect_type);
  }
  if (mode == "edge") return pad_edge(a, pw);
  if (mode == "linear_ramp") return pad_linear_ramp(a, pw, end_values);
  if (mode == "empty") return pad_empty(a, pw);
  std::optional<Pairs> lengths;
  if (stat_length) lengths = stat_length->pairs(nd, "stat_length");
  return pad_stats(a, pw, lengths, mode);
}

// ---- splitting, rolling, diagonals -------------------------------------------------------------

std::vector<Array> array_split(const ArrayLike& x, int64_t sections, int64_t axis) {
  const Array& a = x.array();
  axis = frontend::canonicalize_axis(axis, a.ndim());
  if (sections <= 0) {
    throw ValueError("[numpy.array_split] number sections must be larger than 0: " +
                     std::to_string(sections) + "; expected a positive count");
  }
  const int64_t size = a.shape()[size_t(axis)];
  const int64_t part = size / sections;
  const int64_t r = size % sections;
  Ints indices;
  int64_t at = 0;
  for (int64_t i = 0; i + 1 < sections; ++i) {
    at += part + (i < r ? 1 : 0);
    indices.push_back(at);
  }
  return split(a, indices, axis);
}

std::vector<Array> array_split(const ArrayLike& x, const std::vector<int64_t>& indices,
                               int64_t axis) {
  const Array& a = x.array();
  axis = frontend::canonicalize_axis(axis, a.ndim());
  // JAX's _split: the parts' sizes are the differences of [0, indices..., size], and none
  // may be negative (numpy would clip; JAX raises).
  Ints bounds = {0};
  bounds.insert(bounds.end(), indices.begin(), indices.end());
  bounds.push_back(a.shape()[size_t(axis)]);
  std::string sizes;
  bool negative = false;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    const int64_t size = bounds[i + 1] - bounds[i];
    negative = negative || size < 0;
    sizes += (i ? ", " : "") + std::to_string(size);
  }
  if (negative) throw ValueError("Sizes passed to split must be nonnegative, got [" + sizes + "]");
  return split(a, indices, axis);
}

namespace {

// jax.numpy's _roll_static: each axis rotated by two slices and a concatenation.
Array roll_axis(const Array& a, int64_t shift, int64_t ax) {
  const int64_t n = a.shape()[size_t(ax)];
  if (n == 0) return a;
  const int64_t i = ((-shift) % n + n) % n;
  return lax::concatenate({slice_in_dim(a, i, n, ax), slice_in_dim(a, 0, i, ax)}, ax);
}

}  // namespace

Array roll(const ArrayLike& x, int64_t shift, std::optional<int64_t> axis) {
  const Array& a = x.array();
  if (!axis) return lax::reshape(roll_axis(ravel(a), shift, 0), a.shape());
  return roll_axis(a, shift, frontend::canonicalize_axis(*axis, a.ndim()));
}

Array roll(const ArrayLike& x, const std::vector<int64_t>& shifts,
           const std::vector<int64_t>& axes) {
  Array a = x.array();
  const size_t n = std::max(shifts.size(), axes.size());
  if ((shifts.size() != n && shifts.size() != 1) || (axes.size() != n && axes.size() != 1)) {
    throw ValueError(
        "shape mismatch: objects cannot be broadcast to a single shape.  Mismatch is "
        "between arg 0 with shape (" +
        std::to_string(axes.size()) + ",) and arg 1 with shape (" + std::to_string(shifts.size()) +
        ",).");
  }
  for (size_t k = 0; k < n; ++k) {
    const int64_t ax = frontend::canonicalize_axis(axes[axes.size() == 1 ? 0 : k], a.ndim());
    a = roll_axis(a, shifts[shifts.size() == 1 ? 0 : k], ax);
  }
  return a;
}

Array diagonal(const ArrayLike& x, int64_t offset, int64_t axis1, int64_t axis2) {
  Array a = x.array();
  if (a.ndim() < 2) throw ValueError("diagonal requires an array of at least two dimensions.");
  const int64_t a1 = frontend::canonicalize_axis(axis1, a.ndim());
  const int64_t a2 = frontend::canonicalize_axis(axis2, a.ndim());
  if (a1 == a2) throw ValueError("axis1 and axis2 must not be equal");
  // The two axes last, then the planes flattened: element (i, i + offset) of an n x m
  // plane sits at i * (m + 1) + offset, so the diagonal is one strided slice.
  Ints perm;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (d != a1 && d != a2) perm.push_back(d);
  }
  perm.push_back(a1);
  perm.push_back(a2);
  a = lax::transpose(a, perm);
  Shape lead(a.shape().begin(), a.shape().end() - 2);
  const int64_t n = a.shape()[size_t(a.ndim() - 2)];
  const int64_t m = a.shape()[size_t(a.ndim() - 1)];
  const int64_t len =
      std::max<int64_t>(0, offset >= 0 ? std::min(n, m - offset) : std::min(n + offset, m));
  Shape out_shape = lead;
  out_shape.push_back(len);
  if (len == 0) return zeros(out_shape, a.dtype()).astype(a.dtype());
  Shape flat_shape = lead;
  flat_shape.push_back(n * m);
  Array flat = lax::reshape(a, flat_shape);
  const int64_t start = offset >= 0 ? offset : -offset * m;
  Ints starts(lead.size() + 1, 0);
  Ints limits(flat_shape.begin(), flat_shape.end());
  Ints strides(lead.size() + 1, 1);
  starts.back() = start;
  limits.back() = start + (len - 1) * (m + 1) + 1;
  strides.back() = m + 1;
  return lax::slice(flat, starts, limits, strides);
}

Array diag(const ArrayLike& v, int64_t k) {
  const Array& a = v.array();
  if (a.ndim() == 2) return diagonal(a, k);
  if (a.ndim() != 1) throw ValueError("diag input must be 1d or 2d");
  // JAX's _diag: v padded to the matrix's width, kept where the mask is true.
  const int64_t n = a.shape()[0] + std::abs(k);
  Array padded =
      lax::pad(a, constant_like(a, 0), {{std::max<int64_t>(0, k), std::max<int64_t>(0, -k), 0}});
  return where(eye(n, n, k, DType::bool_), padded, zeros_like(padded));
}

Array trace(const ArrayLike& x, int64_t offset, int64_t axis1, int64_t axis2,
            std::optional<DType> dtype) {
  const Array& a = x.array();
  if (a.ndim() < 2) throw ValueError("diagonal requires an array of at least two dimensions.");
  return sum(diagonal(a, offset, axis1, axis2), Axes(-1), false, dtype);
}

// ---- meshgrid, searchsorted, products
// ------------------------------------------------------------

std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing) {
  if (indexing != "xy" && indexing != "ij") {
    throw ValueError("Valid values for indexing are 'xy' and 'ij', got " + std::string(indexing));
  }
  std::vector<Array> args = xs;
  for (const Array& a : args) {
    if (a.ndim() != 1) {
      std::string shapes;
      for (const Array& b : args) shapes += (shapes.empty() ? "" : ", ") + shape_str(b.shape());
      throw ValueError("Arguments to jax.numpy.meshgrid must be 1D, got shapes [" + shapes + "]");
    }
  }
  const bool xy = indexing == "xy" && args.size() >= 2;
  if (xy) std::swap(args[0], args[1]);
  Shape shape;
  for (const Array& a : args) shape.push_back(a.shape()[0]);
  std::vector<Array> out;
  for (size_t i = 0; i < args.size(); ++i) {
    out.push_back(lax::broadcast_in_dim(args[i], shape, {int64_t(i)}));
  }
  if (xy) std::swap(out[0], out[1]);
  return out;
}

namespace {

// x < y in sort's total order: NaN after everything, -0 equal to +0.
Array sort_lt(const Array& x, const Array& y) {
  if (!is_floating(x.dtype())) return lax::lt(x, y);
  Array x_nan = isnan_(x);
  Array y_nan = isnan_(y);
  return lax::bitwise_or(lax::bitwise_and(lax::bitwise_not(x_nan), y_nan), lax::lt(x, y));
}

}  // namespace

// jax.numpy's method="compare_all": counts the elements of a that sort before each v. The
// count does not depend on a's order, so `sorter` changes nothing once a[sorter] is sorted.
Array searchsorted(const ArrayLike& a, const ArrayLike& v, std::string_view side,
                   std::optional<ArrayLike> sorter) {
  if (side != "left" && side != "right") {
    throw ValueError("invalid argument side='" + std::string(side) +
                     "', expected 'left' or 'right'");
  }
  std::vector<Array> av = frontend::promote_dtypes({a.array(), v.array()});
  Array sorted = av[0];
  Array query = av[1];
  if (sorted.ndim() != 1) {
    throw ValueError("a should be 1-dimensional, got shape " + shape_str(sorted.shape()));
  }
  if (sorter && sorter->array().shape() != sorted.shape()) {
    throw ValueError("[numpy.searchsorted] sorter has shape " + shape_str(sorter->array().shape()) +
                     "; expected the shape of a, " + shape_str(sorted.shape()));
  }
  const DType index = base::default_int_dtype();
  const int64_t n = sorted.shape()[0];
  // [..., n]: every query against every element.
  Shape shape = query.shape();
  shape.push_back(n);
  Ints qdims;
  for (int64_t d = 0; d < query.ndim(); ++d) qdims.push_back(d);
  Array q = lax::broadcast_in_dim(query, shape, qdims);
  Array s = lax::broadcast_in_dim(sorted, shape, {query.ndim()});
  // left: elements < v; right: elements <= v, that is, not v < element.
  Array before = side == "left" ? sort_lt(s, q) : lax::bitwise_not(sort_lt(q, s));
  return lax::reduce_sum(lax::convert_element_type(before, index), {query.ndim()});
}

Array tensordot(const ArrayLike& a, const ArrayLike& b, int64_t axes) {
  const Array& x = a.array();
  const Array& y = b.array();
  if (axes < 0 || axes > std::min(x.ndim(), y.ndim())) {
    throw TypeError("Number of tensordot axes (axes " + std::to_string(axes) +
                    ") exceeds input ranks (" + shape_str(x.shape()) + " and " +
                    shape_str(y.shape()) + ")");
  }
  Ints ca, cb;
  for (int64_t k = 0; k < axes; ++k) {
    ca.push_back(x.ndim() - axes + k);
    cb.push_back(k);
  }
  return tensordot(x, y, {ca, cb});
}

Array tensordot(const ArrayLike& a, const ArrayLike& b,
                const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes) {
  std::vector<Array> xy = frontend::promote_dtypes({a.array(), b.array()});
  const Array& x = xy[0];
  const Array& y = xy[1];
  if (axes.first.size() != axes.second.size()) {
    throw TypeError("tensordot requires axes lists to have equal length, got " +
                    std::to_string(axes.first.size()) + " and " +
                    std::to_string(axes.second.size()) + ".");
  }
  Ints ca, cb;
  for (int64_t d : axes.first) ca.push_back(frontend::canonicalize_axis(d, x.ndim()));
  for (int64_t d : axes.second) cb.push_back(frontend::canonicalize_axis(d, y.ndim()));
  return lax::dot_general(x, y, {.lhs_contracting = ca, .rhs_contracting = cb});
}

Array kron(const ArrayLike& a, const ArrayLike& b) {
  std::vector<Array> xy = frontend::promote_dtypes({a.array(), b.array()});
  Array x = xy[0];
  Array y = xy[1];
  auto lead = [](const Array& z, int64_t k) {
    Ints dims;
    for (int64_t d = 0; d < k; ++d) dims.push_back(d);
    return k > 0 ? lax::expand_dims(z, dims) : z;
  };
  if (x.ndim() < y.ndim()) x = lead(x, y.ndim() - x.ndim());
  if (y.ndim() < x.ndim()) y = lead(y, x.ndim() - y.ndim());
  Ints odd, even;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    odd.push_back(2 * d + 1);
    even.push_back(2 * d);
  }
  Shape out_shape;
  for (int64_t d = 0; d < x.ndim(); ++d)
    out_shape.push_back(x.shape()[size_t(d)] * y.shape()[size_t(d)]);
  Array xr = x.ndim() ? lax::expand_dims(x, odd) : x;
  Array yr = y.ndim() ? lax::expand_dims(y, even) : y;
  return reshape(multiply(xr, yr), out_shape);
}

}  // namespace parax::numpy
