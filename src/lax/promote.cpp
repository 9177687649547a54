#include "lax/promote.h"

#include <algorithm>
#include <limits>
#include <set>

#include "base/dtype_dispatch.h"
#include "base/sizes.h"
#include "core/backend.h"
#include "core/trace.h"
#include "parax/lax.h"

namespace parax::frontend {
namespace {

template <class V>
Array host_scalar(V value, DType dtype, bool weak) {
  std::vector<uint8_t> bytes(size_t(dtype_itemsize(dtype)));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T v = scalar_cast<T>(value);
    std::memcpy(bytes.data(), &v, sizeof(T));
  });
  return core::backend().from_host(bytes.data(), core::Aval{{}, dtype, weak});
}

std::string shapes_str(std::span<const Shape> shapes, const char* sep) {
  std::string s;
  for (size_t i = 0; i < shapes.size(); ++i) s += (i ? sep : "") + shape_str(shapes[i]);
  return s;
}

std::vector<Array> convert_all(std::vector<Array> xs, TypedDType to) {
  for (Array& x : xs) x = convert(x, to.dtype, to.weak);
  return xs;
}

}  // namespace

std::vector<TypedDType> typed(std::span<const Array> xs) {
  std::vector<TypedDType> out;
  out.reserve(xs.size());
  for (const Array& x : xs) out.push_back(typed(x));
  return out;
}

bool is_literal(const Array& x) {
  return core::tracer_of(x) == nullptr && x.ndim() == 0 && x.weak_type() && !x.is_committed();
}

Array scalar(double value, DType dtype, bool weak) { return host_scalar(value, dtype, weak); }
Array scalar_int(int64_t value, DType dtype, bool weak) { return host_scalar(value, dtype, weak); }

Array constant_like(const Array& x, double value) { return scalar(value, x.dtype()); }

Array convert(const Array& x, DType dtype, bool weak) {
  if (x.dtype() == dtype && x.weak_type() == weak) return x;
  if (is_literal(x)) {
    // Weak literals hold C++ ints (exact in int64) or floats (exact in double).
    if (is_floating(x.dtype())) return scalar(x.item<double>(), dtype, weak);
    check_literal_fits(x, dtype);
    return scalar_int(x.item<int64_t>(), dtype, weak);
  }
  return lax::internal::convert_element_type(x, dtype, weak);
}

void check_literal_fits(const Array& x, DType dtype) {
  // A weak int64 literal with x64 off holds a C++ integer beyond int32 (see
  // detail::scalar_array); JAX cannot even form it, so narrowing it fails as JAX does.
  if (!is_literal(x) || x.dtype() != DType::int64 || !is_integer(dtype) ||
      dtype_itemsize(dtype) >= 8 || base::canonicalize_dtype(DType::int64) != DType::int32) {
    return;
  }
  const int64_t v = x.item<int64_t>();
  if (v < std::numeric_limits<int32_t>::min() || v > std::numeric_limits<int32_t>::max()) {
    // JAX raises OverflowError here; parax has no such kind, and ValueError is closest.
    throw ValueError("Python int " + std::to_string(v) + " too large to convert to int32");
  }
}

std::vector<Array> promote_dtypes(std::vector<Array> xs) {
  if (xs.size() < 2) return xs;
  return convert_all(std::move(xs), base::lattice_result_type(typed(xs)));
}

std::vector<Array> promote_dtypes_inexact(std::vector<Array> xs) {
  TypedDType to = base::lattice_result_type(typed(xs));
  to.dtype = base::to_inexact_dtype(to.dtype);
  return convert_all(std::move(xs), to);
}

std::vector<Array> promote_dtypes_numeric(std::vector<Array> xs) {
  TypedDType to = base::lattice_result_type(typed(xs));
  to.dtype = base::to_numeric_dtype(to.dtype);
  return convert_all(std::move(xs), to);
}

Shape broadcast_shapes(std::string_view lax_name, std::span<const Shape> shapes) {
  size_t rank = 0;
  std::set<size_t> nonscalar_ranks;
  for (const Shape& s : shapes) {
    rank = std::max(rank, s.size());
    if (!s.empty()) nonscalar_ranks.insert(s.size());
  }
  Shape out(rank, 1);
  bool ok = true;
  for (const Shape& s : shapes) {
    const size_t lead = rank - s.size();
    for (size_t d = 0; d < s.size(); ++d) {
      int64_t& o = out[lead + d];
      if (s[d] == o || s[d] == 1) continue;
      if (o == 1) {
        o = s[d];
      } else {
        ok = false;
      }
    }
  }
  if (ok) return out;
  // JAX leaves same-rank operands to the lax primitive, which words the error itself.
  if (!lax_name.empty() && nonscalar_ranks.size() < 2) {
    throw TypeError(std::string(lax_name) +
                    " got incompatible shapes for broadcasting: " + shapes_str(shapes, ", ") + ".");
  }
  throw ValueError("Incompatible shapes for broadcasting: shapes=[" + shapes_str(shapes, ", ") +
                   "]");
}

std::vector<Array> promote_shapes(std::string_view lax_name, std::vector<Array> xs) {
  if (xs.size() < 2) return xs;
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  Shape out = broadcast_shapes(lax_name, shapes);
  for (Array& x : xs) {
    if (x.ndim() != 0 && x.shape() != out) x = broadcast_to(x, out);
  }
  return xs;
}

std::vector<Array> broadcast_arrays(std::vector<Array> xs) {
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  Shape out = broadcast_shapes("", shapes);
  for (Array& x : xs) x = broadcast_to(x, out);
  return xs;
}

Array broadcast_to(const Array& x, const Shape& shape) {
  const Shape& in = x.shape();
  if (in == shape) return x;
  if (shape.size() < in.size()) {
    throw ValueError("Cannot broadcast to shape with fewer dimensions: arr_shape=" + shape_str(in) +
                     " shape=" + shape_str(shape));
  }
  const size_t lead = shape.size() - in.size();
  std::vector<int64_t> dims;
  for (size_t d = 0; d < in.size(); ++d) {
    if (in[d] != 1 && in[d] != shape[lead + d]) {
      throw ValueError("Incompatible shapes for broadcasting: " + shape_str(in) +
                       " and requested shape " + shape_str(shape));
    }
    dims.push_back(int64_t(lead + d));
  }
  return lax::broadcast_in_dim(x, shape, dims);
}

std::vector<Array> promote_args(std::string_view lax_name, std::vector<Array> xs) {
  return promote_shapes(lax_name, promote_dtypes(std::move(xs)));
}

std::vector<Array> promote_args_inexact(std::string_view lax_name, std::vector<Array> xs) {
  return promote_shapes(lax_name, promote_dtypes_inexact(std::move(xs)));
}

std::vector<Array> promote_args_numeric(std::string_view lax_name, std::vector<Array> xs) {
  return promote_shapes(lax_name, promote_dtypes_numeric(std::move(xs)));
}

int64_t canonicalize_axis(int64_t axis, int64_t ndim) {
  if (axis < -ndim || axis >= ndim) {
    throw ValueError("axis " + std::to_string(axis) + " is out of bounds for array of dimension " +
                     std::to_string(ndim));
  }
  return axis < 0 ? axis + ndim : axis;
}

}  // namespace parax::frontend
