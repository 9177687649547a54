// What keys.cpp, samplers.cpp and distributions.cpp share: the threefry mode, random_bits,
// the key check, the shape check and normal's float32 draws (XLA:CPU's arithmetic:
// xla_cpu_math.h). Internal to src/random.
#pragma once

#include <cstdint>
#include <vector>

#include "parax/random.h"

namespace parax::random::detail {

// The config flag jax_threefry_partitionable, read now.
bool partitionable();
// Binds random_bits: the flag is a param, so it is part of every program and cache key.
Array random_bits(const Array& key, int64_t bit_width, const Shape& shape, bool partitionable);
// The key's words; throws JAX's ValueError for a key array that is not a single key.
const Array& single_key(const Key& key, const char* fun);
// Throws JAX's _check_shape ValueError unless the params broadcast to `shape` exactly.
void check_shape(const char* name, const Shape& shape, const std::vector<Shape>& params);
// erf_inv of normal's float32 uniforms: normal(key, shape) is sqrt(2) times this.
Array normal_erf_inv_f32(const Key& key, const Shape& shape);
// numpy's finfo(t).tiny.
double finfo_tiny(DType t);

}  // namespace parax::random::detail
