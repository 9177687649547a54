// Helpers shared by the primitives' batching (vmap) rules, and the one rule every
// elementwise primitive uses. Like the autodiff helpers they bind primitives, so the rules
// run eagerly and under tracing alike. Internal to src/prims.
#pragma once

#include <algorithm>
#include <span>
#include <utility>
#include <vector>

#include "core/batching.h"
#include "core/trace.h"

namespace parax::prims {

using core::BatchAxis;
using core::Batched;
using core::kNotMapped;

// Returns where dimension `d` of an element lands in the array whose batch dimension is
// `bdim` (kNotMapped: an unbatched array, the element itself).
inline int64_t batched_dim(int64_t d, int bdim) {
  return bdim != kNotMapped && d >= bdim ? d + 1 : d;
}

// Returns `dims` (dimensions of an element) as dimensions of the batched array.
inline std::vector<int64_t> batched_dims(const std::vector<int64_t>& dims, int bdim) {
  std::vector<int64_t> out;
  for (int64_t d : dims) out.push_back(batched_dim(d, bdim));
  return out;
}

// Returns where the batch dimension `bdim` lands once the element dimensions `removed`
// are dropped (by a reduction or a squeeze).
inline int batch_dim_without(int bdim, const std::vector<int64_t>& removed) {
  return bdim -
         int(std::count_if(removed.begin(), removed.end(), [&](int64_t d) { return d < bdim; }));
}

// Batched start indices (dynamic_slice, dynamic_update_slice) move windows by a binary
// shifter: one static shift per bit of the start, chosen per batch element by a select,
// so only bytes move and results are exact.
//
// Returns a batch of start indices ([B], an integer dtype) clamped into [0, limit] as
// XLA clamps starts, and the largest value it may then hold (below `limit` when the
// dtype cannot hold it).
std::pair<Array, int64_t> clamp_starts(const Array& starts, int64_t limit);
// Returns whether each start has the bit of value `bit` set (bool[B]).
Array start_bit(const Array& starts, int64_t bit);
// Returns the largest power of two <= n (n >= 1).
int64_t top_bit(int64_t n);

// The batching rule of elementwise primitives (JAX's broadcast_batcher): the batch
// dimensions are brought to one place, that of the first batched operand that is not a
// batch of scalars, so the common case moves nothing. Rank-0 operands that are not
// batched stay rank 0 (lax's elementwise ops broadcast them); unbatched arrays and
// batches of scalars among arrays are broadcast, as lax's equal-shape rule requires.
Batched batch_elementwise(core::Prim prim, std::span<const Array> in, std::span<const int> dims,
                          const core::Params& params, const BatchAxis& axis);

// batch_elementwise as a rule-table entry for primitive P.
template <core::Prim P>
Batched elementwise_batch(std::span<const Array> in, std::span<const int> dims,
                          const core::Params& params, const BatchAxis& axis) {
  return batch_elementwise(P, in, dims, params, axis);
}

}  // namespace parax::prims
