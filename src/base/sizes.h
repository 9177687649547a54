// Checked size arithmetic. Element counts, byte counts, strides and padded, tiled or
// repeated extents come from user shapes, so a product that leaves int64 raises
// ValueError naming the shape instead of wrapping (which would allocate too little and
// write out of bounds). Memory requests beyond the machine raise ResourceExhaustedError
// up front instead of thrashing or escaping as std::bad_alloc.
#pragma once

#include <cstdint>
#include <optional>
#include <string_view>

#include "parax/dtype.h"
#include "parax/shape.h"

namespace parax::base {

// Returns a * b, or nothing when the product does not fit in int64.
inline std::optional<int64_t> mul_exact(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_mul_overflow(a, b, &r)) return std::nullopt;
  return r;
}
// Returns a + b, or nothing when the sum does not fit in int64.
inline std::optional<int64_t> add_exact(int64_t a, int64_t b) {
  int64_t r;
  if (__builtin_add_overflow(a, b, &r)) return std::nullopt;
  return r;
}

// Returns a * b. Raises ValueError "[api] <what> overflows ..." when it leaves int64.
int64_t checked_mul(int64_t a, int64_t b, std::string_view api, std::string_view what);

// Raises ValueError unless every dimension is nonnegative and the array's byte count
// (the product of its nonzero dimensions times the itemsize, as numpy counts it, so that
// every stride and partial product of the shape fits too) fits in int64.
void check_array_shape(std::string_view api, const Shape& shape, DType dtype);

// Bytes the machine can back: physical memory plus swap (a cgroup limit when lower).
uint64_t memory_limit_bytes();

// Returns whether `nbytes` more (on top of `live_bytes` already held) fit in memory_limit_bytes.
bool allocation_fits(uint64_t nbytes, uint64_t live_bytes = 0);

// Raises ResourceExhaustedError naming `nbytes` when a request of that many bytes (on top of
// `live_bytes` already held) cannot be backed by the machine's memory.
void check_allocation(std::string_view what, uint64_t nbytes, uint64_t live_bytes = 0);

// Raises ResourceExhaustedError for a failed allocation of `nbytes`.
[[noreturn]] void throw_out_of_memory(std::string_view what, uint64_t nbytes);

}  // namespace parax::base
