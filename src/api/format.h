// Printing arrays exactly as JAX 0.4.35 prints a jax.Array (numpy 1.26's array2string
// with JAX's repr wrapper; ml_dtypes' scalar repr for bfloat16 elements).
#pragma once

#include <string>

#include "parax/dtype.h"
#include "parax/shape.h"

namespace parax::detail {

// A row-major, contiguous host copy of an array's values.
struct HostArrayView {
  DType dtype;
  Shape shape;
  const void* data;
};

// Returns JAX's repr: `Array([1., 2.], dtype=float32)`, `Array(5, dtype=int32, weak_type=True)`.
std::string array_repr(const HostArrayView& v, bool weak_type);

// Returns JAX's repr of an array whose value this process cannot read (it spans processes):
// `Array(shape=(8, 4), dtype=float32)`.
std::string array_shape_repr(const Shape& shape, DType dtype, bool weak_type);

// Returns JAX's str (numpy's str of the value; numpy scalar str for 0-d): `[1. 2.]`, `1.0`.
std::string array_str(const HostArrayView& v);

}  // namespace parax::detail
