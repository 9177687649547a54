// The api layer's helpers over the array value (core/array_value.h): arrays from host
// data, pmap results' shards, and dtype canonicalization.
#pragma once

#include <optional>

#include "core/array_value.h"

namespace parax::detail {

// Makes an uncommitted array on the default device from host data of `dtype`.
Array array_from_host(const void* data, const core::Aval& aval);

// Returns device i's shard of a pmap result (dimension 0 mapped) as an uncommitted array
// on that device, without its mapped dimension; nullopt if no device holds exactly [i].
std::optional<Array> pmap_shard(const ArrayImpl& x, int64_t i);

// Returns the dtype an inferred (not explicitly requested) C++ type maps to: 64-bit types
// narrow to 32 bits unless jax_enable_x64 is on, as JAX does for Python and numpy values.
DType canonicalize_dtype(DType t);

}  // namespace parax::detail
