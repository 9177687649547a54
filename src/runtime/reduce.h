// The element-wise reductions of the collectives, one definition for in-process combining
// and for the engines' own reduction callbacks.
#pragma once

#include <cstdint>
#include <string_view>

#include "runtime/engine.h"

namespace parax::runtime {

// out[i] = op(a[i], b[i]) for n elements of `dtype` (out may alias a or b). max and min
// propagate NaN; and/or apply to bool and integer operands.
void combine(void* out, const void* a, const void* b, int64_t n, DType dtype, ReduceOp op);

// Parses a collective's "op" param ("sum", "prod", "max", "min", "and", "or").
ReduceOp reduce_op_of(std::string_view name);

}  // namespace parax::runtime
