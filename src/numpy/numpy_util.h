// What several of jax.numpy's files share (JAX keeps these in jax/_src/numpy/util.py and
// lax): the accumulation dtypes of reductions, slicing along one axis, and NaN-filled
// results that batch like their operand. Internal to src/numpy.
#pragma once

#include <cstdint>
#include <vector>

#include "base/promotion.h"
#include "lax/promote.h"
#include "parax/lax.h"

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
