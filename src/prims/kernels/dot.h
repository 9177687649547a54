// dot_general's kernel: batched matrix products over gemm.h (floats) or a blocked loop
// (integers, bool).
#pragma once

#include <cstdint>
#include <vector>

#include "core/rules.h"

namespace parax::prims::kernels {

// The operands' dimensions of a dot_general split by role; `free` lists are in
// increasing order.
struct DotDims {
  std::vector<int64_t> lhs_contract, rhs_contract, lhs_batch, rhs_batch;
  std::vector<int64_t> lhs_free, rhs_free;
};

// Writes the dot_general of call's two operands, their dimensions split as `dims`, to its
// result (dimensions batch, lhs free, rhs free).
void dot(const core::KernelCall& call, const DotDims& dims);

}  // namespace parax::prims::kernels
