// numpy's shape functions over lax (reshaping, transposing, splitting, rolling, tiling,
// triangles and diagonals), following jax.numpy's lax_numpy.py.
#include <algorithm>
#include <numeric>
#include <optional>

#include "base/sizes.h"
#include "core/trace.h"
#include "numpy/numpy_internal.h"
#include "parax/device_put.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

// numpy's array(x, ndmin=n): leading unit dimensions up to rank n.
Array at_least(const Array& x, int64_t ndmin) {
  if (x.ndim() >= ndmin) return x;
  std::vector<int64_t> dims(size_t(ndmin - x.ndim()));
  std::iota(dims.begin(), dims.end(), 0);
  return lax::expand_dims(x, dims);
}

// lax's _tri: true where row + k >= column.
Array tri_mask(int64_t n, int64_t m, int64_t k) {
  Shape shape{n, m};
  Array rows = lax::broadcasted_iota(DType::int32, shape, 0);
  Array cols = lax::broadcasted_iota(DType::int32, shape, 1);
  return lax::ge(lax::add(rows, frontend::scalar_int(k, DType::int32)), cols);
}

Array triangle(const char* name, const ArrayLike& m, int64_t k, bool lower) {
  const Array& a = m.array();
  if (a.ndim() < 2) {
    throw ValueError(std::string("Argument to jax.numpy.") + name + " must be at least 2D");
  }
  const Shape& s = a.shape();
  Array mask = tri_mask(s[s.size() - 2], s.back(), lower ? k : k - 1);
  mask = lax::broadcast(mask, Shape(s.begin(), s.end() - 2));
  return lower ? lax::select(mask, a, zeros_like(a)) : lax::select(mask, zeros_like(a), a);
}

}  // namespace

Array copy(const ArrayLike& x) { return lax::copy(x); }

Array ones_like(const ArrayLike& x, std::optional<DType> dtype) { return full_like(x, 1, dtype); }
Array zeros_like(const ArrayLike& x, std::optional<DType> dtype) { return full_like(x, 0, dtype); }

Array full_like(const ArrayLike& x, const ArrayLike& fill_value, std::optional<DType> dtype) {
  const Array& a = x.array();
  const Array& fill = fill_value.array();
  if (fill.ndim() != 0) {
    DType t = dtype ? *dtype : base::result_type(std::vector{frontend::typed(a)}).dtype;
    return frontend::broadcast_to(asarray(fill, t), a.shape());
  }
  // lax.full_like: weak only when the dtype comes from a weak x.
  const bool weak = !dtype && a.weak_type();
  const DType t = dtype ? *dtype : a.dtype();
  Array out = lax::broadcast(frontend::convert(fill, t, weak), a.shape());
  // Like JAX (lax.full's device_put), a committed x gives a result committed to x's layout.
  const bool keep_sharding = core::tracer_of(a) == nullptr && a.is_committed() && !weak;
  return keep_sharding ? device_put(out, a.sharding()) : out;
}

Array transpose(const ArrayLike& x, OptionalAxes axes) {
  const Array& a = x.array();
  std::vector<int64_t> perm;
  if (axes) {
    for (int64_t d : *axes) perm.push_back(frontend::canonicalize_axis(d, a.ndim()));
  } else {
    for (int64_t d = a.ndim() - 1; d >= 0; --d) perm.push_back(d);
  }
  return lax::transpose(a, std::move(perm));
}

Array swapaxes(const ArrayLike& x, int64_t axis1, int64_t axis2) {
  const Array& a = x.array();
  std::vector<int64_t> perm(size_t(a.ndim()));
  std::iota(perm.begin(), perm.end(), 0);
  std::swap(perm[size_t(frontend::canonicalize_axis(axis1, a.ndim()))],
            perm[size_t(frontend::canonicalize_axis(axis2, a.ndim()))]);
  return lax::transpose(a, std::move(perm));
}

Array moveaxis(const ArrayLike& x, int64_t source, int64_t destination) {
  const Array& a = x.array();
  const int64_t src = frontend::canonicalize_axis(source, a.ndim());
  const int64_t dst = frontend::canonicalize_axis(destination, a.ndim());
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < a.ndim(); ++d) {
    if (d != src) perm.push_back(d);
  }
  perm.insert(perm.begin() + dst, src);
  return lax::transpose(a, std::move(perm));
}

Array ravel(const ArrayLike& x) { return reshape(x, Shape{x.array().size()}); }

Array squeeze(const ArrayLike& x, Axes axis) {
  const Array& a = x.array();
  std::vector<int64_t> dims;
  if (axis.all()) {
    for (int64_t d = 0; d < a.ndim(); ++d) {
      if (a.shape()[size_t(d)] == 1) dims.push_back(d);
    }
  } else {
    dims = axis.list();
  }
  return lax::squeeze(a, std::move(dims));
}

Array expand_dims(const ArrayLike& x, Axes axis) {
  if (axis.all()) {
    throw TypeError("[numpy.expand_dims] axis is None; expected one axis or a list of axes");
  }
  return lax::expand_dims(x, axis.list());
}

Array broadcast_to(const ArrayLike& x, Shape shape) {
  return frontend::broadcast_to(x.array(), shape);
}

Array concatenate(const std::vector<Array>& arrays, int64_t axis) {
  if (arrays.empty()) throw ValueError("Need at least one array to concatenate.");
  if (arrays[0].ndim() == 0) throw ValueError("Zero-dimensional arrays cannot be concatenated.");
  axis = frontend::canonicalize_axis(axis, arrays[0].ndim());
  std::vector<Array> out = frontend::promote_dtypes(arrays);
  // Wide concatenations compile slowly, so JAX concatenates in groups of 16.
  constexpr size_t kGroup = 16;
  while (out.size() > 1) {
    std::vector<Array> next;
    for (size_t i = 0; i < out.size(); i += kGroup) {
      std::vector<Array> group(out.begin() + i, out.begin() + std::min(out.size(), i + kGroup));
      next.push_back(lax::concatenate(group, axis));
    }
    out = std::move(next);
  }
  return out[0];
}

Array stack(const std::vector<Array>& arrays, int64_t axis) {
  if (arrays.empty()) throw ValueError("Need at least one array to stack.");
  const Shape& shape0 = arrays[0].shape();
  axis = frontend::canonicalize_axis(axis, int64_t(shape0.size()) + 1);
  std::vector<Array> expanded;
  for (const Array& a : arrays) {
    if (a.shape() != shape0) throw ValueError("All input arrays must have the same shape.");
    expanded.push_back(lax::expand_dims(a, {axis}));
  }
  return concatenate(expanded, axis);
}

Array vstack(const std::vector<Array>& arrays) {
  std::vector<Array> arrs;
  for (const Array& a : arrays) arrs.push_back(at_least(a, 2));
  return concatenate(arrs, 0);
}

Array hstack(const std::vector<Array>& arrays) {
  std::vector<Array> arrs;
  for (const Array& a : arrays) arrs.push_back(at_least(a, 1));
  return concatenate(arrs, !arrs.empty() && arrs[0].ndim() == 1 ? 0 : 1);
}

std::vector<Array> split(const ArrayLike& x, int64_t sections, int64_t axis) {
  const Array& a = x.array();
  axis = frontend::canonicalize_axis(axis, a.ndim());
  if (sections <= 0) {
    throw ValueError("[numpy.split] number sections must be larger than 0: " +
                     std::to_string(sections) + "; expected a positive count");
  }
  const int64_t size = a.shape()[size_t(axis)];
  if (size % sections != 0) {
    throw ValueError("array split does not result in an equal division: rest is " +
                     std::to_string(size % sections));
  }
  std::vector<int64_t> indices;
  for (int64_t i = 1; i < sections; ++i) indices.push_back(i * (size / sections));
  return split(a, indices, axis);
}

std::vector<Array> split(const ArrayLike& x, const std::vector<int64_t>& indices, int64_t axis) {
  const Array& a = x.array();
  axis = frontend::canonicalize_axis(axis, a.ndim());
  std::vector<int64_t> bounds = {0};
  bounds.insert(bounds.end(), indices.begin(), indices.end());
  bounds.push_back(a.shape()[size_t(axis)]);
  std::vector<Array> out;
  for (size_t i = 0; i + 1 < bounds.size(); ++i) {
    std::vector<int64_t> start(size_t(a.ndim()), 0);
    std::vector<int64_t> limit = a.shape();
    start[size_t(axis)] = bounds[i];
    limit[size_t(axis)] = bounds[i + 1];
    out.push_back(lax::slice(a, start, limit));
  }
  return out;
}

Array flip(const ArrayLike& x, Axes axis) {
  const Array& a = x.array();
  std::vector<int64_t> dims;
  if (axis.all()) {
    for (int64_t d = 0; d < a.ndim(); ++d) dims.push_back(d);
  } else {
    for (int64_t d : axis.list()) dims.push_back(frontend::canonicalize_axis(d, a.ndim()));
  }
  return lax::rev(a, std::move(dims));
}

Array tile(const ArrayLike& x, Shape reps) {
  const Array& a = x.array();
  Shape a_shape = a.shape();
  if (reps.size() > a_shape.size()) {
    a_shape.insert(a_shape.begin(), reps.size() - a_shape.size(), 1);
  }
  if (a_shape.size() > reps.size()) reps.insert(reps.begin(), a_shape.size() - reps.size(), 1);
  // Interleave a unit axis before each dimension, broadcast it to the repeat count, merge.
  Shape interleaved;
  Shape broadcast;
  Shape result;
  for (size_t d = 0; d < a_shape.size(); ++d) {
    interleaved.insert(interleaved.end(), {1, a_shape[d]});
    broadcast.insert(broadcast.end(), {reps[d], a_shape[d]});
    const std::optional<int64_t> n = base::mul_exact(reps[d], a_shape[d]);
    if (!n) {
      throw ValueError("[tile] array is too big: tiling shape " + shape_str(a.shape()) +
                       " by reps " + shape_str(reps) + " overflows a 64-bit size");
    }
    result.push_back(*n);
  }
  return reshape(broadcast_to(reshape(a, interleaved), broadcast), result);
}

Array repeat(const ArrayLike& x, int64_t repeats, std::optional<int64_t> axis) {
  Array a = axis ? x.array() : ravel(x);
  if (a.ndim() == 0) return lax::broadcast(a, Shape{repeats});
  const int64_t ax = frontend::canonicalize_axis(axis.value_or(0), a.ndim());
  // Broadcast along a new axis after `ax`, then merge the two.
  Shape aux = a.shape();
  aux.insert(aux.begin() + ax + 1, repeats);
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < int64_t(aux.size()); ++d) {
    if (d != ax + 1) dims.push_back(d);
  }
  Shape result = a.shape();
  const std::optional<int64_t> n = base::mul_exact(result[size_t(ax)], repeats);
  if (!n) {
    throw ValueError("[repeat] array is too big: repeating axis " + std::to_string(ax) +
                     " of shape " + shape_str(a.shape()) + " " + std::to_string(repeats) +
                     " times overflows a 64-bit size");
  }
  result[size_t(ax)] = *n;
  return reshape(lax::broadcast_in_dim(a, aux, dims), result);
}

Array tril(const ArrayLike& x, int64_t k) { return triangle("tril", x, k, true); }
Array triu(const ArrayLike& x, int64_t k) { return triangle("triu", x, k, false); }

// ---- splitting, rolling, diagonals --------------------------------------------------------

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
  std::vector<int64_t> indices;
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
  std::vector<int64_t> bounds = {0};
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
  return lax::concatenate({detail::slice_in_dim(a, i, n, ax), detail::slice_in_dim(a, 0, i, ax)},
                          ax);
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
  std::vector<int64_t> perm;
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
  std::vector<int64_t> starts(lead.size() + 1, 0);
  std::vector<int64_t> limits(flat_shape.begin(), flat_shape.end());
  std::vector<int64_t> strides(lead.size() + 1, 1);
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
  Array padded = lax::pad(a, frontend::constant_like(a, 0),
                          {{std::max<int64_t>(0, k), std::max<int64_t>(0, -k), 0}});
  return where(eye(n, n, k, DType::bool_), padded, zeros_like(padded));
}

Array trace(const ArrayLike& x, int64_t offset, int64_t axis1, int64_t axis2,
            std::optional<DType> dtype) {
  const Array& a = x.array();
  if (a.ndim() < 2) throw ValueError("diagonal requires an array of at least two dimensions.");
  return sum(diagonal(a, offset, axis1, axis2), Axes(-1), false, dtype);
}

}  // namespace parax::numpy

namespace parax::frontend {

Shape compute_newshape(const Array& a, Shape shape) {
  const int64_t size = a.size();
  std::vector<size_t> unknown;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1) unknown.push_back(d);
  }
  if (unknown.size() > 1) {
    throw TypeError("can only specify one unknown axis size with a `-1` value, got " +
                    shape_str(shape));
  }
  // The product of the given sizes, or nothing when it overflows (then it cannot match).
  auto product = [&](std::optional<size_t> skip) {
    std::optional<int64_t> n = 1;
    for (size_t d = 0; d < shape.size() && n; ++d) {
      if (d != skip) n = base::mul_exact(*n, shape[d]);
    }
    return n;
  };
  if (!unknown.empty()) {
    const std::optional<int64_t> known = product(unknown[0]);
    if (!known) {
      throw TypeError("cannot reshape array of shape " + shape_str(a.shape()) + " (size " +
                      std::to_string(size) + ") into shape " + shape_str(shape) +
                      " because the product of specified axis sizes overflows a 64-bit size");
    }
    const int64_t others = *known;
    if (others == 0 || size % others != 0) {
      throw TypeError("cannot reshape array of shape " + shape_str(a.shape()) + " (size " +
                      std::to_string(size) + ") into shape " + shape_str(shape) +
                      " because the product of specified axis sizes (" + std::to_string(others) +
                      ") does not evenly divide " + std::to_string(size));
    }
    shape[unknown[0]] = size / others;
  } else if (const auto n = product(std::nullopt); n != size) {
    throw TypeError("cannot reshape array of shape " + shape_str(a.shape()) + " (size " +
                    std::to_string(size) + ") into shape " + shape_str(shape) + " (size " +
                    (n ? std::to_string(*n) : std::string("beyond 2^63 - 1")) + ")");
  }
  return shape;
}

}  // namespace parax::frontend
