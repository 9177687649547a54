// numpy's own helpers, on top of lax/promote.h: broadcasting binaries staged as one program,
// numpy's axis and reshape arguments, and what several of jax.numpy's files share (JAX
// keeps these in jax/_src/numpy/util.py and lax): reductions' accumulation dtypes, slicing
// along one axis, NaN-filled results that batch like their operand. Internal to the front
// ends.
#pragma once

#include <cstdint>
#include <vector>

#include "base/promotion.h"
#include "core/trace.h"
#include "lax/promote.h"
#include "parax/array.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::frontend {

// Runs a numpy binary function whose operands broadcast against each other as one staged
// program, as JAX's jitted jnp functions do, so sharding propagation sees the broadcast
// and the operation together (a broadcast operand then yields to the other's layout).
// Inside a trace, or without broadcasting, it just calls f.
template <class F>
Array staged_binary(const char* name, const ArrayLike& x, const ArrayLike& y, F f) {
  const Array& a = x.array();
  const Array& b = y.array();
  const bool broadcasts = a.ndim() != 0 && b.ndim() != 0 && a.shape() != b.shape();
  if (!broadcasts || core::current_trace() != nullptr || core::tracer_of(a) != nullptr ||
      core::tracer_of(b) != nullptr) {
    return f(x, y);
  }
  static const auto jitted =
      jit([f](const Array& p, const Array& q) { return f(p, q); }, JitOptions{.name = name});
  return jitted(a, b);
}

// Returns the reduction axes of `axes` for a rank-`ndim` operand, canonical and in the
// given order; throws ValueError for duplicates.
std::vector<int64_t> reduction_axes(const numpy::Axes& axes, int64_t ndim);

// Returns `shape` with its -1 (at most one) resolved for reshaping `a`; throws JAX's
// TypeError when the sizes do not match.
Shape compute_newshape(const Array& a, Shape shape);

}  // namespace parax::frontend

namespace parax::numpy::detail {

// jax.numpy's _promote_integer_dtype: narrow integers (and bool) accumulate in the default
// ones.
inline DType promote_integer_dtype(DType t) {
  if (t == DType::bool_) return base::default_int_dtype();
  if (is_unsigned_integer(t) && dtype_itemsize(t) < dtype_itemsize(base::default_uint_dtype())) {
    return base::default_uint_dtype();
  }
  if (is_signed_integer(t) && dtype_itemsize(t) < dtype_itemsize(base::default_int_dtype())) {
    return base::default_int_dtype();
  }
  return t;
}

// jax.numpy's _upcast_f16: half floats accumulate in float32.
inline DType upcast_f16(DType t) {
  return t == DType::float16 || t == DType::bfloat16 ? DType::float32 : t;
}

// lax.slice_in_dim(x, start, limit, axis=axis), negative bounds counted from the end.
inline Array slice_in_dim(const Array& x, int64_t start, int64_t limit, int64_t axis) {
  const int64_t n = x.shape()[size_t(axis)];
  if (start < 0) start += n;
  if (limit < 0) limit += n;
  std::vector<int64_t> starts(size_t(x.ndim()), 0);
  std::vector<int64_t> limits(x.shape().begin(), x.shape().end());
  starts[size_t(axis)] = start;
  limits[size_t(axis)] = limit;
  return lax::slice(x, starts, limits);
}

// x's shape and dtype filled with `value` (NaN, or an integer), computed from x so that
// under vmap it is batched like x: select_n's batching rule takes no unbatched rank-0
// case beside batched ones.
inline Array filled_like(const Array& x, double value) {
  return lax::add(lax::mul(x, frontend::constant_like(x, 0)), frontend::constant_like(x, value));
}

}  // namespace parax::numpy::detail
