// What random_distributions.cpp shares with random.cpp: the key check, the threefry mode,
// and XLA:CPU's float32 arithmetic reproduced with lax ops. Internal to src/api.
#pragma once

#include <vector>

#include "parax/random.h"

namespace parax::random::detail {

// The config flag jax_threefry_partitionable, read now.
bool partitionable();
// The key's words; throws JAX's ValueError for a key array that is not a single key.
const Array& single_key(const Key& key, const char* fun);
// Throws JAX's _check_shape ValueError unless the params broadcast to `shape` exactly.
void check_shape(const char* name, const Shape& shape, const std::vector<Shape>& params);
// fma of float32 arrays, rounded once, as XLA:CPU contracts a multiply feeding an add.
Array fma_f32(const Array& a, const Array& b, const Array& c);
// XLA:CPU's float32 log and log1p, bit for bit.
Array log_f32(const Array& x);
Array log1p_f32(const Array& x);
// erf_inv of normal's float32 uniforms: normal(key, shape) is sqrt(2) times this.
Array normal_erf_inv_f32(const Key& key, const Shape& shape);
// numpy's finfo(t).tiny.
double finfo_tiny(DType t);

}  // namespace parax::random::detail
