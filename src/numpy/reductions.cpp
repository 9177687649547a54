// numpy's reductions, sorts, scans (cumsum, cumprod and the NaN-skipping nancumsum and
// nancumprod) and the median over lax, following jax.numpy's reductions.py: the same
// accumulation dtypes (bool and small ints sum in the default int, float16 in float32) and
// the same errors.
#include <cmath>
#include <limits>
#include <set>

#include "core/trace.h"
#include "numpy/numpy_internal.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

using detail::promote_integer_dtype;
using detail::upcast_f16;

enum class Op { sum, prod, max, min, all, any };

struct Reduction {
  const char* name;
  Op op;
  bool has_identity = true;
  bool upcast_f16 = false;
  bool promote_integers = false;
};

Array reduce(Op op, const Array& x, std::vector<int64_t> axes) {
  // bool reduces logically: sum is any, prod and min are all, max is any.
  const bool b = x.dtype() == DType::bool_;
  switch (op) {
    case Op::sum:
      return b ? lax::reduce_or(x, axes) : lax::reduce_sum(x, axes);
    case Op::prod:
      return b ? lax::reduce_and(x, axes) : lax::reduce_prod(x, axes);
    case Op::max:
      return b ? lax::reduce_or(x, axes) : lax::reduce_max(x, axes);
    case Op::min:
      return b ? lax::reduce_and(x, axes) : lax::reduce_min(x, axes);
    case Op::all:
      return lax::reduce_and(x, axes);
    case Op::any:
      return lax::reduce_or(x, axes);
  }
  return x;
}

// jax.numpy's _reduction.
Array reduction(const Reduction& r, Array a, const Axes& axis, bool keepdims,
                std::optional<DType> dtype) {
  if (r.op == Op::sum || r.op == Op::prod) {
    a = frontend::promote_dtypes_numeric({a})[0];
  } else if (r.op == Op::all || r.op == Op::any) {
    a = lax::convert_element_type(a, DType::bool_);
  }
  std::vector<int64_t> dims = frontend::reduction_axes(axis, a.ndim());
  if (!r.has_identity) {
    for (int64_t d : dims) {
      if (a.shape()[size_t(d)] == 0) {
        throw ValueError(std::string("zero-size array to reduction operation ") + r.name +
                         " which has no identity");
      }
    }
  }
  DType result_dtype = dtype ? *dtype : a.dtype();
  // Neither a requested dtype nor the operand's is narrowed with x64 off (README,
  // "dtypes"): sum of int64 is int64; only the default accumulators follow x64.
  if (!dtype && r.promote_integers) result_dtype = promote_integer_dtype(result_dtype);
  DType computation_dtype =
      r.upcast_f16 && is_floating(result_dtype) ? upcast_f16(result_dtype) : result_dtype;
  a = lax::convert_element_type(a, computation_dtype);
  Array result = reduce(r.op, a, dims);
  if (keepdims) result = lax::expand_dims(result, dims);
  return lax::convert_element_type(result, result_dtype);
}

int64_t axes_size(const Array& a, const Axes& axis) {
  int64_t n = 1;
  for (int64_t d : frontend::reduction_axes(axis, a.ndim())) n *= a.shape()[size_t(d)];
  return n;
}

// The flattened array and axis 0 when `axis` is absent, else a and the canonical axis.
std::pair<Array, int64_t> along(const Array& a, std::optional<int64_t> axis) {
  if (!axis) return {ravel(a), 0};
  return {a, frontend::canonicalize_axis(*axis, a.ndim())};
}

Array arg_reduce(const char* name, bool is_max, const Array& a, std::optional<int64_t> axis,
                 bool keepdims) {
  std::vector<int64_t> dims;
  if (axis) {
    dims = {*axis};
  } else {
    for (int64_t d = 0; d < a.ndim(); ++d) dims.push_back(d);
  }
  auto [x, ax] = along(a, axis);
  if (x.shape()[size_t(ax)] == 0) {
    throw ValueError(std::string("attempt to get ") + name + " of an empty sequence");
  }
  DType index = base::default_int_dtype();
  Array result = is_max ? lax::argmax(x, ax, index) : lax::argmin(x, ax, index);
  return keepdims ? lax::expand_dims(result, dims) : result;
}

}  // namespace

Array sum(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  return reduction({"sum", Op::sum, true, true, true}, x.array(), axis, keepdims, dtype);
}

Array prod(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  return reduction({"prod", Op::prod, true, true, true}, x.array(), axis, keepdims, dtype);
}

Array max(const ArrayLike& x, Axes axis, bool keepdims) {
  return reduction({"max", Op::max, false}, x.array(), axis, keepdims, std::nullopt);
}

Array min(const ArrayLike& x, Axes axis, bool keepdims) {
  return reduction({"min", Op::min, false}, x.array(), axis, keepdims, std::nullopt);
}

Array all(const ArrayLike& x, Axes axis, bool keepdims) {
  return reduction({"all", Op::all}, x.array(), axis, keepdims, std::nullopt);
}

Array any(const ArrayLike& x, Axes axis, bool keepdims) {
  return reduction({"any", Op::any}, x.array(), axis, keepdims, std::nullopt);
}

Array mean(const ArrayLike& x, Axes axis, bool keepdims, std::optional<DType> dtype) {
  const Array& a = x.array();
  // int64 gives float64 with x64 off too: its dtype was requested explicitly.
  DType result_dtype = dtype ? *dtype : base::to_inexact_dtype(a.dtype());
  DType computation_dtype = is_floating(result_dtype) ? upcast_f16(result_dtype) : result_dtype;
  Array normalizer = frontend::scalar(double(axes_size(a, axis)), computation_dtype);
  Array total = sum(a, axis, keepdims, computation_dtype);
  return astype(lax::div(total, normalizer), result_dtype);
}

Array var(const ArrayLike& x, Axes axis, int64_t ddof, bool keepdims) {
  Array a = x.array();
  // jax.numpy's _var_promote_types: integers give float32; float16 computes in float32.
  DType dtype = is_floating(a.dtype()) ? a.dtype() : base::to_inexact_dtype(a.dtype());
  DType computation_dtype = upcast_f16(dtype);
  a = astype(a, computation_dtype);
  Array a_mean = mean(a, axis, true, computation_dtype);
  // a_mean keeps unit dimensions, so the subtraction broadcasts (numpy's, as lax's does).
  Array centered = lax::integer_pow(subtract(a, a_mean), 2);
  Array normalizer = frontend::scalar(double(axes_size(a, axis)), computation_dtype);
  normalizer = lax::sub(normalizer, frontend::scalar(double(ddof), computation_dtype));
  Array result = sum(centered, axis, keepdims, computation_dtype);
  result = astype(lax::div(result, normalizer), dtype);
  return where(normalizer > 0, result, std::numeric_limits<double>::quiet_NaN());
}

Array std(const ArrayLike& x, Axes axis, int64_t ddof, bool keepdims) {
  return lax::sqrt(var(x, axis, ddof, keepdims));
}

Array argmax(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_reduce("argmax", true, x.array(), axis, keepdims);
}

Array argmin(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  return arg_reduce("argmin", false, x.array(), axis, keepdims);
}

Array cumsum(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  Array a = x.array();
  if (!axis || a.ndim() == 0) a = lax::reshape(a, Shape{a.size()});
  const int64_t ax = frontend::canonicalize_axis(axis.value_or(0), a.ndim());
  DType result_dtype = dtype ? *dtype : a.dtype();
  // Booleans count in the default integer type (cumsum does not widen other integers).
  if (result_dtype == DType::bool_) result_dtype = promote_integer_dtype(result_dtype);
  if (a.dtype() != DType::bool_ && dtype == DType::bool_) a = astype(a, DType::bool_);
  Array result = lax::cumsum(lax::convert_element_type(a, result_dtype), ax);
  if (dtype == DType::bool_) result = lax::convert_element_type(result, DType::bool_);
  return result;
}

Array sort(const ArrayLike& x, std::optional<int64_t> axis) {
  auto [a, dimension] = along(x.array(), axis);
  return lax::sort(a, dimension, true);
}

Array argsort(const ArrayLike& x, std::optional<int64_t> axis) {
  auto [a, dimension] = along(x.array(), axis);
  const bool wide = a.shape()[size_t(dimension)] >= (int64_t(1) << 31);
  DType index = wide ? DType::int64 : base::default_int_dtype();
  Array iota = lax::broadcasted_iota(index, a.shape(), dimension);
  return lax::sort({a, iota}, dimension, true, 1)[1];
}

namespace {

// jax.numpy's _cumulative_reduction.
Array cumulative(core::Prim prim, const ArrayLike& x, std::optional<int64_t> axis,
                 std::optional<DType> dtype, bool fill_nan, double fill_value) {
  Array a = x.array();
  if (!axis || a.ndim() == 0) a = lax::reshape(a, Shape{a.size()});
  const int64_t ax = frontend::canonicalize_axis(axis.value_or(0), a.ndim());
  if (fill_nan && is_floating(a.dtype())) {
    a = lax::select(isnan(a), lax::broadcast(frontend::constant_like(a, fill_value), a.shape()), a);
  }
  DType result_type;
  DType computation_type;
  if (!dtype) {
    result_type = a.dtype() == DType::bool_ ? promote_integer_dtype(a.dtype()) : a.dtype();
    computation_type = result_type;
  } else if (*dtype == DType::bool_) {
    result_type = DType::bool_;
    if (a.dtype() != DType::bool_) a = lax::ne(a, frontend::constant_like(a, 0));
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
  return cumulative(core::Prim::cumprod, x, axis, dtype, false, 1);
}
Array nancumsum(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumulative(core::Prim::cumsum, x, axis, dtype, true, 0);
}
Array nancumprod(const ArrayLike& x, std::optional<int64_t> axis, std::optional<DType> dtype) {
  return cumulative(core::Prim::cumprod, x, axis, dtype, true, 1);
}

// jnp.median: quantile(a, 0.5, method="midpoint") over the sorted axis, NaN where any
// reduced element is NaN.
Array median(const ArrayLike& x, std::optional<int64_t> axis, bool keepdims) {
  Array a = frontend::promote_dtypes_inexact({x.array()})[0];
  const int64_t ndim = a.ndim();
  Array flat = axis ? a : ravel(a);
  const int64_t ax = axis ? frontend::canonicalize_axis(*axis, ndim) : 0;
  Array sorted = lax::sort(flat, ax, true);
  const int64_t n = flat.shape()[size_t(ax)];
  if (n == 0) throw ValueError("[numpy.median] cannot take the median of an empty axis");
  Array low = detail::slice_in_dim(sorted, (n - 1) / 2, (n - 1) / 2 + 1, ax);
  Array high = detail::slice_in_dim(sorted, n / 2, n / 2 + 1, ax);
  Array result = lax::mul(lax::add(low, high), frontend::constant_like(low, 0.5));
  result = where(any(isnan(flat), Axes(ax), true),
                 detail::filled_like(result, std::numeric_limits<double>::quiet_NaN()), result);
  if (!axis) {
    return keepdims ? lax::reshape(result, Shape(size_t(ndim), 1)) : lax::reshape(result, Shape{});
  }
  return keepdims ? result : lax::squeeze(result, {ax});
}

}  // namespace parax::numpy

namespace parax::frontend {

std::vector<int64_t> reduction_axes(const numpy::Axes& axes, int64_t ndim) {
  std::vector<int64_t> out;
  if (axes.all()) {
    for (int64_t d = 0; d < ndim; ++d) out.push_back(d);
    return out;
  }
  for (int64_t a : axes.list()) out.push_back(canonicalize_axis(a, ndim));
  std::set<int64_t> seen(out.begin(), out.end());
  if (seen.size() != out.size()) {
    throw ValueError("duplicate value in 'axis': " + shape_str(axes.list()));
  }
  return out;
}

}  // namespace parax::frontend
