// parax::numpy: JAX's jax.numpy. Creation functions make uncommitted arrays on the
// default device; dtypes inferred from C++ values follow JAX's defaults (double ->
// float32, int64 -> int32 unless jax_enable_x64); an explicit dtype is always honoured.
#pragma once

#include <initializer_list>
#include <optional>
#include <string_view>
#include <type_traits>
#include <vector>

#include "parax/array.h"
#include "parax/sharding.h"

namespace parax::numpy {
namespace detail {
// Builds an array from `n` host values of `src` dtype, shaped `shape`, converted to
// `dtype` (or the canonical form of `src` when absent).
Array array_from_values(const void* values, int64_t n, DType src, Shape shape,
                        std::optional<DType> dtype);
// `inferred`: dtype is the default of its kind, canonicalized as JAX's int_ and float_ are.
Array arange_impl(double start, double stop, double step, DType dtype, bool inferred);
// Raises ValueError for a shape whose size overflows, ResourceExhaustedError when the
// array (staged on the host as `staging_itemsize`-byte values) cannot fit in memory.
void check_host_array(std::string_view api, const Shape& shape, DType dtype,
                      int64_t staging_itemsize);
// Returns the 0-d `scalar` broadcast to `shape` (jnp.full: one value, no host copy of the
// whole array).
Array broadcast_scalar(const Array& scalar, Shape shape);
}  // namespace detail

// Returns an array of `values` with `shape` (default: 1-D).
// Requires: the shape holds values.size() elements.
template <class T>
requires is_scalar_type_v<T> Array array(const std::vector<T>& values,
                                         OptionalShape shape = std::nullopt,
                                         std::optional<DType> dtype = std::nullopt) {
  Shape s = shape ? *shape : Shape{int64_t(values.size())};
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return detail::array_from_values(bytes.data(), int64_t(bytes.size()), DType::bool_, s, dtype);
  } else {
    return detail::array_from_values(values.data(), int64_t(values.size()), dtype_of<T>(), s,
                                     dtype);
  }
}

template <class T>
requires is_scalar_type_v<T> Array array(std::initializer_list<T> values,
                                         OptionalShape shape = std::nullopt,
                                         std::optional<DType> dtype = std::nullopt) {
  return array(std::vector<T>(values), std::move(shape), dtype);
}

// Returns a 2-D array from nested braces: array({{1.f, 2.f}, {3.f, 4.f}}).
template <class T>
requires is_scalar_type_v<T> Array array(std::initializer_list<std::initializer_list<T>> rows,
                                         std::optional<DType> dtype = std::nullopt) {
  std::vector<T> flat;
  int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& row : rows) {
    if (int64_t(row.size()) != cols) {
      throw ValueError("[array] rows have different lengths (" + std::to_string(cols) + " and " +
                       std::to_string(row.size()) + "); expected a rectangular nested list");
    }
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return array(flat, Shape{int64_t(rows.size()), cols}, dtype);
}

// Returns a 0-d array holding `value`.
template <class T>
requires is_scalar_type_v<T> Array array(T value, std::optional<DType> dtype = std::nullopt) {
  return array(std::vector<T>{value}, Shape{}, dtype);
}

namespace detail {
// device_put(x, sharding), for the array overloads below.
Array place(const Array& x, const Sharding& sharding);
}  // namespace detail

// Returns array(values, shape, dtype) laid out as `sharding` (committed), as
// jax.device_put(jnp.array(values), sharding) is.
template <class T>
requires is_scalar_type_v<T> Array array(const std::vector<T>& values, const Sharding& sharding,
                                         OptionalShape shape = std::nullopt,
                                         std::optional<DType> dtype = std::nullopt) {
  return detail::place(array(values, std::move(shape), dtype), sharding);
}
template <class T>
requires is_scalar_type_v<T> Array array(std::initializer_list<T> values, const Sharding& sharding,
                                         OptionalShape shape = std::nullopt,
                                         std::optional<DType> dtype = std::nullopt) {
  return detail::place(array(std::vector<T>(values), std::move(shape), dtype), sharding);
}
template <class T>
requires is_scalar_type_v<T> Array array(std::initializer_list<std::initializer_list<T>> rows,
                                         const Sharding& sharding,
                                         std::optional<DType> dtype = std::nullopt) {
  return detail::place(array(rows, dtype), sharding);
}

// Without a dtype: float32, or float64 with jax_enable_x64 (JAX's float_).
Array zeros(Shape shape, std::optional<DType> dtype = std::nullopt);
Array ones(Shape shape, std::optional<DType> dtype = std::nullopt);

// Returns an array of `shape` filled with `value` (dtype inferred from T unless given).
template <class T>
requires is_scalar_type_v<T> Array full(Shape shape, T value,
                                        std::optional<DType> dtype = std::nullopt) {
  detail::check_host_array("full", shape, dtype.value_or(dtype_of<T>()), sizeof(T));
  return detail::broadcast_scalar(array(value, dtype), std::move(shape));
}

// Returns [start, stop) in steps of `step`: int32 for integer arguments, float32 for
// floating ones, their 64-bit types with jax_enable_x64 (unless `dtype` says otherwise).
template <class T>
requires std::is_arithmetic_v<T> Array arange(T stop, std::optional<DType> dtype = std::nullopt) {
  DType t = dtype ? *dtype : (std::is_floating_point_v<T> ? DType::float64 : DType::int64);
  return detail::arange_impl(0.0, double(stop), 1.0, t, !dtype);
}
template <class A, class B, class C = int>
requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C> Array
arange(A start, B stop, C step = 1, std::optional<DType> dtype = std::nullopt) {
  constexpr bool kFloat =
      std::is_floating_point_v<A> || std::is_floating_point_v<B> || std::is_floating_point_v<C>;
  DType t = dtype ? *dtype : (kFloat ? DType::float64 : DType::int64);
  return detail::arange_impl(double(start), double(stop), double(step), t, !dtype);
}

// Returns `num` evenly spaced values from start to stop (inclusive when `endpoint`).
// Without a dtype: float32, or float64 with jax_enable_x64.
Array linspace(double start, double stop, int64_t num = 50, bool endpoint = true,
               std::optional<DType> dtype = std::nullopt);

// Returns an n x m array with ones on the k-th diagonal.
Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0,
          std::optional<DType> dtype = std::nullopt);

// Returns x with a new shape holding the same elements (one dimension may be -1).
Array reshape(const ArrayLike& x, Shape shape);

// The axes a reduction runs over: all (the default, or parax::None), one, or several.
// Negative axes count from the end.
class Axes {
 public:
  Axes() = default;
  Axes(None_t) {}
  Axes(std::nullopt_t) {}
  Axes(int axis) : axes_(std::vector<int64_t>{axis}) {}
  Axes(int64_t axis) : axes_(std::vector<int64_t>{axis}) {}
  Axes(std::vector<int64_t> axes) : axes_(std::move(axes)) {}
  Axes(std::initializer_list<int64_t> axes) : axes_(std::vector<int64_t>(axes)) {}
  bool all() const { return !axes_.has_value(); }
  const std::vector<int64_t>& list() const { return *axes_; }

 private:
  std::optional<std::vector<int64_t>> axes_;
};

// Type promotion (JAX's lattice, with weak types): the dtype of `x op y`.
DType result_type(const ArrayLike& x, const ArrayLike& y);
// Returns x converted to `dtype`.
Array asarray(const ArrayLike& x, std::optional<DType> dtype = std::nullopt);
Array astype(const ArrayLike& x, DType dtype);

// Elementwise math (integer inputs of floating functions promote to float32).
Array negative(const ArrayLike& x);
Array positive(const ArrayLike& x);
Array abs(const ArrayLike& x);
Array absolute(const ArrayLike& x);
Array sign(const ArrayLike& x);
Array floor(const ArrayLike& x);
Array ceil(const ArrayLike& x);
Array round(const ArrayLike& x, int decimals = 0);
Array trunc(const ArrayLike& x);
Array exp(const ArrayLike& x);
Array exp2(const ArrayLike& x);
Array expm1(const ArrayLike& x);
Array log(const ArrayLike& x);
Array log1p(const ArrayLike& x);
Array log2(const ArrayLike& x);
Array log10(const ArrayLike& x);
Array sin(const ArrayLike& x);
Array cos(const ArrayLike& x);
Array tan(const ArrayLike& x);
Array arcsin(const ArrayLike& x);
Array arccos(const ArrayLike& x);
Array arctan(const ArrayLike& x);
Array sinh(const ArrayLike& x);
Array cosh(const ArrayLike& x);
Array tanh(const ArrayLike& x);
Array sqrt(const ArrayLike& x);
Array cbrt(const ArrayLike& x);
Array square(const ArrayLike& x);
Array reciprocal(const ArrayLike& x);
Array isfinite(const ArrayLike& x);
Array isnan(const ArrayLike& x);
Array isinf(const ArrayLike& x);
Array logical_not(const ArrayLike& x);
Array invert(const ArrayLike& x);

// Elementwise with numpy broadcasting.
Array add(const ArrayLike& x, const ArrayLike& y);
Array subtract(const ArrayLike& x, const ArrayLike& y);
Array multiply(const ArrayLike& x, const ArrayLike& y);
Array divide(const ArrayLike& x, const ArrayLike& y);
Array true_divide(const ArrayLike& x, const ArrayLike& y);
Array floor_divide(const ArrayLike& x, const ArrayLike& y);
Array remainder(const ArrayLike& x, const ArrayLike& y);
Array mod(const ArrayLike& x, const ArrayLike& y);
Array fmod(const ArrayLike& x, const ArrayLike& y);
Array power(const ArrayLike& x, const ArrayLike& y);
Array maximum(const ArrayLike& x, const ArrayLike& y);
Array minimum(const ArrayLike& x, const ArrayLike& y);
Array arctan2(const ArrayLike& x, const ArrayLike& y);
Array nextafter(const ArrayLike& x, const ArrayLike& y);
Array bitwise_and(const ArrayLike& x, const ArrayLike& y);
Array bitwise_or(const ArrayLike& x, const ArrayLike& y);
Array bitwise_xor(const ArrayLike& x, const ArrayLike& y);
Array left_shift(const ArrayLike& x, const ArrayLike& y);
Array right_shift(const ArrayLike& x, const ArrayLike& y);
Array logical_and(const ArrayLike& x, const ArrayLike& y);
Array logical_or(const ArrayLike& x, const ArrayLike& y);
Array logical_xor(const ArrayLike& x, const ArrayLike& y);
Array equal(const ArrayLike& x, const ArrayLike& y);
Array not_equal(const ArrayLike& x, const ArrayLike& y);
Array less(const ArrayLike& x, const ArrayLike& y);
Array less_equal(const ArrayLike& x, const ArrayLike& y);
Array greater(const ArrayLike& x, const ArrayLike& y);
Array greater_equal(const ArrayLike& x, const ArrayLike& y);
Array where(const ArrayLike& condition, const ArrayLike& x, const ArrayLike& y);
Array clip(const ArrayLike& x, std::optional<ArrayLike> min, std::optional<ArrayLike> max);
// |a - b| <= atol + rtol * |b| elementwise (NaNs unequal unless equal_nan).
Array isclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
              bool equal_nan = false);
// Returns a 0-d bool array: all(isclose(a, b)).
Array allclose(const ArrayLike& a, const ArrayLike& b, double rtol = 1e-05, double atol = 1e-08,
               bool equal_nan = false);
Array array_equal(const ArrayLike& a, const ArrayLike& b);

// Products.
Array dot(const ArrayLike& a, const ArrayLike& b);
Array matmul(const ArrayLike& a, const ArrayLike& b);
Array vdot(const ArrayLike& a, const ArrayLike& b);
Array outer(const ArrayLike& a, const ArrayLike& b);
Array inner(const ArrayLike& a, const ArrayLike& b);
// Two-operand einsum, e.g. einsum("bij,bjk->bik", a, b); implicit output when no "->".
Array einsum(const std::string& subscripts, const ArrayLike& a, const ArrayLike& b);
// One-operand einsum (transposes, traces of distinct indices, sums).
Array einsum(const std::string& subscripts, const ArrayLike& a);

// Reductions. `dtype` overrides the accumulation/result dtype.
Array sum(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
          std::optional<DType> dtype = std::nullopt);
Array prod(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
           std::optional<DType> dtype = std::nullopt);
Array mean(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
           std::optional<DType> dtype = std::nullopt);
Array var(const ArrayLike& x, Axes axis = {}, int64_t ddof = 0, bool keepdims = false);
Array std(const ArrayLike& x, Axes axis = {}, int64_t ddof = 0, bool keepdims = false);
Array max(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
Array min(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
Array all(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
Array any(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
// Index of the largest element along `axis` (of the flattened array when absent).
Array argmax(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array argmin(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);
Array cumsum(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
             std::optional<DType> dtype = std::nullopt);
Array sort(const ArrayLike& x, std::optional<int64_t> axis = -1);
Array argsort(const ArrayLike& x, std::optional<int64_t> axis = -1);

// Shapes.
Array copy(const ArrayLike& x);
Array ones_like(const ArrayLike& x, std::optional<DType> dtype = std::nullopt);
Array zeros_like(const ArrayLike& x, std::optional<DType> dtype = std::nullopt);
template <class T>
requires is_scalar_type_v<T> Array full_like(const ArrayLike& x, T fill_value,
                                             std::optional<DType> dtype = std::nullopt);
Array full_like(const ArrayLike& x, const ArrayLike& fill_value,
                std::optional<DType> dtype = std::nullopt);
// Reverses the dimensions, or permutes them by `axes`.
Array transpose(const ArrayLike& x, OptionalAxes axes = std::nullopt);
Array swapaxes(const ArrayLike& x, int64_t axis1, int64_t axis2);
Array moveaxis(const ArrayLike& x, int64_t source, int64_t destination);
Array ravel(const ArrayLike& x);
Array squeeze(const ArrayLike& x, Axes axis = {});
Array expand_dims(const ArrayLike& x, Axes axis);
Array broadcast_to(const ArrayLike& x, Shape shape);
Array concatenate(const std::vector<Array>& arrays, int64_t axis = 0);
Array stack(const std::vector<Array>& arrays, int64_t axis = 0);
Array vstack(const std::vector<Array>& arrays);
Array hstack(const std::vector<Array>& arrays);
// Splits into `sections` equal parts along `axis` (ValueError when they are not equal).
std::vector<Array> split(const ArrayLike& x, int64_t sections, int64_t axis = 0);
// Splits at the given indices along `axis`.
std::vector<Array> split(const ArrayLike& x, const std::vector<int64_t>& indices, int64_t axis = 0);
Array flip(const ArrayLike& x, Axes axis = {});
Array tile(const ArrayLike& x, Shape reps);
Array repeat(const ArrayLike& x, int64_t repeats, std::optional<int64_t> axis = std::nullopt);
Array tril(const ArrayLike& x, int64_t k = 0);
Array triu(const ArrayLike& x, int64_t k = 0);

namespace linalg {
// The Frobenius / 2-norm of the flattened array, or vector norms along `axis`
// (ord: 2 by default; 1, inf (as HUGE_VAL) and -inf supported for vectors).
Array norm(const ArrayLike& x, std::optional<double> ord = std::nullopt, Axes axis = {},
           bool keepdims = false);
}  // namespace linalg

template <class T>
requires is_scalar_type_v<T> Array full_like(const ArrayLike& x, T fill_value,
                                             std::optional<DType> dtype) {
  return full_like(x, ArrayLike(fill_value), dtype);
}

}  // namespace parax::numpy

// ---- inverse hyperbolics, logaddexp, scans, NaN-skipping reductions, pad, splitting,
// rolling, diagonals, meshgrid, searchsorted and tensor products ------------------------------
namespace parax::numpy {

// Inverse hyperbolic functions (integers promote to float32).
Array arcsinh(const ArrayLike& x);
Array arccosh(const ArrayLike& x);
Array arctanh(const ArrayLike& x);
// log(exp(x) + exp(y)) and log2(exp2(x) + exp2(y)) without overflow; derivatives as JAX's.
Array logaddexp(const ArrayLike& x, const ArrayLike& y);
Array logaddexp2(const ArrayLike& x, const ArrayLike& y);

// Running products (of the flattened array when `axis` is absent).
Array cumprod(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
              std::optional<DType> dtype = std::nullopt);
// cumsum and cumprod with NaNs taken as 0 and 1.
Array nancumsum(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
                std::optional<DType> dtype = std::nullopt);
Array nancumprod(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
                 std::optional<DType> dtype = std::nullopt);

// Reductions ignoring NaNs; an all-NaN slice gives NaN (nanmax, nanmin, nanmean, nanvar),
// or -1 (nanargmax, nanargmin), as JAX's.
Array nansum(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
             std::optional<DType> dtype = std::nullopt);
Array nanprod(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
              std::optional<DType> dtype = std::nullopt);
Array nanmax(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
Array nanmin(const ArrayLike& x, Axes axis = {}, bool keepdims = false);
Array nanmean(const ArrayLike& x, Axes axis = {}, bool keepdims = false,
              std::optional<DType> dtype = std::nullopt);
Array nanvar(const ArrayLike& x, Axes axis = {}, int64_t ddof = 0, bool keepdims = false,
             std::optional<DType> dtype = std::nullopt);
Array nanstd(const ArrayLike& x, Axes axis = {}, int64_t ddof = 0, bool keepdims = false,
             std::optional<DType> dtype = std::nullopt);
Array nanargmax(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
                bool keepdims = false);
Array nanargmin(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt,
                bool keepdims = false);
// The median (of the flattened array when `axis` is absent); NaN where a NaN is reduced.
Array median(const ArrayLike& x, std::optional<int64_t> axis = std::nullopt, bool keepdims = false);

// numpy's pad widths: one int for every side, one (before, after) pair for every axis, or
// a pair per axis: pad(x, 2), pad(x, {1, 2}), pad(x, {{1, 2}, {0, 3}}).
class PadWidth {
 public:
  using Pair = std::pair<int64_t, int64_t>;
  template <class T>
  requires std::is_integral_v<T> PadWidth(T n)
      : pairs_{{int64_t(n), int64_t(n)}}, broadcast_(true) {}
  PadWidth(int64_t before, int64_t after) : pairs_{{before, after}}, broadcast_(true) {}
  PadWidth(Pair p) : pairs_{p}, broadcast_(true) {}
  PadWidth(std::vector<Pair> pairs) : pairs_(std::move(pairs)), broadcast_(pairs_.size() == 1) {}
  PadWidth(std::initializer_list<Pair> pairs) : PadWidth(std::vector<Pair>(pairs)) {}
  // Returns one pair per axis of a rank-`ndim` array; throws JAX's ValueError otherwise.
  std::vector<Pair> pairs(int64_t ndim, const char* name = "pad_width") const;

 private:
  std::vector<Pair> pairs_;
  bool broadcast_;
};

// numpy's pad values (constant_values, end_values): one value, a (before, after) pair, or
// a pair per axis.
class PadValues {
 public:
  using Pair = std::pair<double, double>;
  PadValues(const ArrayLike& v) : value_(v.array()) {}
  PadValues(const Array& v) : value_(v) {}
  template <class T>
  requires is_scalar_type_v<T> PadValues(T v) : value_(ArrayLike(v).array()) {}
  PadValues(double before, double after) : pairs_{{before, after}} {}
  PadValues(std::vector<Pair> pairs) : pairs_(std::move(pairs)) {}
  PadValues(std::initializer_list<Pair> pairs) : pairs_(pairs) {}
  const std::optional<Array>& value() const { return value_; }
  const std::vector<Pair>& pairs() const { return pairs_; }

 private:
  std::optional<Array> value_;
  std::vector<Pair> pairs_;
};

// numpy.pad with every mode of jnp.pad: "constant" (constant_values), "edge", "linear_ramp"
// (end_values), "maximum", "mean", "median", "minimum" (stat_length: the elements at each
// end they reduce, all when absent), "reflect", "symmetric" (reflect_type "even" or
// "odd"), "wrap" and "empty" (zeros here).
Array pad(const ArrayLike& x, const PadWidth& pad_width, std::string_view mode = "constant",
          const PadValues& constant_values = 0, const PadValues& end_values = 0,
          std::string_view reflect_type = "even",
          std::optional<PadWidth> stat_length = std::nullopt);

// Splits into `sections` parts along `axis`, the first (size % sections) one longer.
std::vector<Array> array_split(const ArrayLike& x, int64_t sections, int64_t axis = 0);
// Splits at the given indices (as split does).
std::vector<Array> array_split(const ArrayLike& x, const std::vector<int64_t>& indices,
                               int64_t axis = 0);

// Rolls elements by `shift` along `axis` (the flattened array when absent), or by each
// shift along each axis (a shift or axis list of one broadcasts against the other).
Array roll(const ArrayLike& x, int64_t shift, std::optional<int64_t> axis = std::nullopt);
Array roll(const ArrayLike& x, const std::vector<int64_t>& shifts,
           const std::vector<int64_t>& axes);

// A 1-D v as the k-th diagonal of a square matrix, or the k-th diagonal of a 2-D v.
Array diag(const ArrayLike& v, int64_t k = 0);
// The diagonal at `offset` of the planes (axis1, axis2), as a new last axis.
Array diagonal(const ArrayLike& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1);
// Sums of those diagonals (in sum's accumulation dtype unless `dtype` is given).
Array trace(const ArrayLike& x, int64_t offset = 0, int64_t axis1 = 0, int64_t axis2 = 1,
            std::optional<DType> dtype = std::nullopt);

// Coordinate arrays from 1-D vectors: indexing "xy" (Cartesian, numpy's default) swaps the
// first two result axes; "ij" keeps matrix order.
std::vector<Array> meshgrid(const std::vector<Array>& xs, std::string_view indexing = "xy");

// Where v's elements would be inserted into the sorted 1-D a (before equal elements when
// side is "left", after them when "right"); with `sorter`, a[sorter] is the sorted order.
// NaNs sort last, as JAX's sort does.
Array searchsorted(const ArrayLike& a, const ArrayLike& v, std::string_view side = "left",
                   std::optional<ArrayLike> sorter = std::nullopt);

// Contracts the last `axes` dimensions of a with the first ones of b.
Array tensordot(const ArrayLike& a, const ArrayLike& b, int64_t axes = 2);
// Contracts a's dimensions axes.first with b's axes.second, pairwise.
Array tensordot(const ArrayLike& a, const ArrayLike& b,
                const std::pair<std::vector<int64_t>, std::vector<int64_t>>& axes);
// The Kronecker product.
Array kron(const ArrayLike& a, const ArrayLike& b);

}  // namespace parax::numpy
