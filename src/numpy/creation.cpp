#include <algorithm>
#include <cmath>

#include "api/array_impl.h"
#include "numpy/numpy_internal.h"
#include "parax/device_put.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace detail {

// Host values become arrays in the api layer (device_put builds arrays from them too).
void check_host_array(std::string_view api, const Shape& shape, DType dtype,
                      int64_t staging_itemsize) {
  parax::detail::check_host_array(api, shape, dtype, staging_itemsize);
}

Array array_from_values(const void* values, int64_t n, DType src, Shape shape,
                        std::optional<DType> dtype) {
  return parax::detail::array_from_values(values, n, src, std::move(shape), dtype);
}

Array place(const Array& x, const Sharding& sharding) { return device_put(x, sharding); }

Array arange_impl(double start, double stop, double step, DType dtype, bool inferred) {
  if (inferred) dtype = base::canonicalize_dtype(dtype);
  if (step == 0) throw ValueError("[arange] step must not be zero");
  const double length = std::ceil((stop - start) / step);
  if (std::isnan(length)) {
    throw ValueError("[arange] cannot compute length from start " + std::to_string(start) +
                     ", stop " + std::to_string(stop) + ", step " + std::to_string(step));
  }
  if (length >= 0x1p63) {
    throw ValueError("[arange] array is too big: " + std::to_string(length) +
                     " elements overflow a 64-bit size");
  }
  const int64_t n = std::max<int64_t>(0, int64_t(length));
  check_host_array("arange", Shape{n}, dtype, sizeof(double));
  std::vector<double> values(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) values[size_t(i)] = start + double(i) * step;
  return array_from_values(values.data(), n, DType::float64, Shape{n}, dtype);
}

Array broadcast_scalar(const Array& scalar, Shape shape) {
  return lax::broadcast_in_dim(scalar, std::move(shape), {});
}

}  // namespace detail

Array zeros(Shape shape, std::optional<DType> dtype) {
  const DType t = dtype.value_or(base::default_float_dtype());
  detail::check_host_array("zeros", shape, t, sizeof(int));
  return full(std::move(shape), 0, t);
}
Array ones(Shape shape, std::optional<DType> dtype) {
  const DType t = dtype.value_or(base::default_float_dtype());
  detail::check_host_array("ones", shape, t, sizeof(int));
  return full(std::move(shape), 1, t);
}

Array linspace(double start, double stop, int64_t num, bool endpoint,
               std::optional<DType> requested) {
  const DType dtype = requested.value_or(base::default_float_dtype());
  if (num < 0)
    throw ValueError("Number of samples, " + std::to_string(num) + ", must be non-negative.");
  // JAX interpolates start*(1-t) + stop*t with t = i/div in the computation dtype, and
  // puts `stop` itself last; do the same so values match bit for bit.
  const bool wide = dtype == DType::float64;
  detail::check_host_array("linspace", Shape{num}, dtype, sizeof(double));
  std::vector<double> values(static_cast<size_t>(num));
  const int64_t div = endpoint ? num - 1 : num;
  for (int64_t i = 0; i < num; ++i) {
    if (endpoint && i == num - 1 && num > 1) {
      values[size_t(i)] = stop;
    } else if (num == 1) {
      values[size_t(i)] = start;
    } else if (wide) {
      double t = double(i) / double(div);
      values[size_t(i)] = start * (1 - t) + stop * t;
    } else {
      float t = float(i) / float(div);
      float a = float(start) * (1.0f - t);
      float b = float(stop) * t;
      values[size_t(i)] = double(a + b);
    }
  }
  if (is_integer(dtype) || dtype == DType::bool_) {
    for (double& v : values) v = std::floor(v);
  }
  return detail::array_from_values(values.data(), num, DType::float64, Shape{num}, dtype);
}

Array eye(int64_t n, std::optional<int64_t> m, int64_t k, std::optional<DType> requested) {
  const DType dtype = requested.value_or(base::default_float_dtype());
  int64_t cols = m.value_or(n);
  if (n < 0 || cols < 0) throw ValueError("[eye] negative dimensions are not allowed");
  detail::check_host_array("eye", Shape{n, cols}, dtype, 1);
  std::vector<uint8_t> ones(size_t(n * cols), 0);
  // Only the rows the diagonal crosses (in 128 bits, as k may be anything): an empty
  // eye(2^45, 0) must not loop 2^45 times.
  const __int128 first = std::max<__int128>(0, -__int128(k));
  const __int128 last = std::min<__int128>(n, __int128(cols) - k);
  for (__int128 i = first; i < last; ++i) ones[size_t(i * cols + i + k)] = 1;
  return detail::array_from_values(ones.data(), n * cols, DType::uint8, Shape{n, cols}, dtype);
}

Array reshape(const ArrayLike& x, Shape shape) {
  return lax::reshape(x, frontend::compute_newshape(x.array(), std::move(shape)));
}

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

}  // namespace parax::numpy
