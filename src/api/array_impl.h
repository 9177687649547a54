// The api layer's helpers over the array value (core/array_value.h): arrays from host
// data, pmap results' shards, and dtype canonicalization.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>
#include <vector>

#include "core/array_value.h"

namespace parax::detail {

// Makes an uncommitted array on the default device from host data of `dtype`.
Array array_from_host(const void* data, const core::Aval& aval);

// Raises ValueError for a shape whose size overflows, ResourceExhaustedError when the
// array (staged on the host as `staging_itemsize`-byte values) cannot fit in memory.
// `api` names the public function.
void check_host_array(std::string_view api, const Shape& shape, DType dtype,
                      int64_t staging_itemsize);

// Makes an uncommitted array on the default device from `n` host values of `src` dtype,
// shaped `shape`, converted to `dtype` (or the canonical form of `src` when absent).
// jnp.array's and device_put's host values both come here.
Array array_from_values(const void* values, int64_t n, DType src, Shape shape,
                        std::optional<DType> dtype);

// Returns device i's shard of a pmap result (dimension 0 mapped) as an uncommitted array
// on that device, without its mapped dimension; nullopt if no device holds exactly [i].
std::optional<Array> pmap_shard(const ArrayImpl& x, int64_t i);

// True if every device of `sharding` belongs to this process.
bool is_fully_addressable(const Sharding& sharding);

// Throws JAX's RuntimeError when this process's devices do not hold every distinct shard
// of x (it spans processes), so that its value cannot be read here.
void require_full_value(const ArrayImpl& x);

// Returns x's global value in its own dtype, row-major. Requires what require_full_value
// checks.
std::vector<uint8_t> host_bytes(const ArrayImpl& x);

// Returns the dtype of an array made of `pieces` (one per addressable device): `dtype`, or
// the first piece's; JAX's ValueErrors when they disagree or there is neither. `fname`
// names the public function.
DType shards_dtype(const std::vector<Array>& pieces, std::optional<DType> dtype, const char* fname);

// Checks every piece against the array's dtype and shard shape `block`, with JAX's
// messages.
void validate_shards(const std::vector<Array>& pieces, const core::Aval& aval,
                     const Sharding& sharding, const Shape& block);

// Returns the dtype an inferred (not explicitly requested) C++ type maps to: 64-bit types
// narrow to 32 bits unless jax_enable_x64 is on, as JAX does for Python and numpy values.
DType canonicalize_dtype(DType t);

}  // namespace parax::detail
