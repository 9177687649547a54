// The kernels of gather and the scatters (kernels/gather.cpp): windows copied (gather) or
// combined into a copy of the operand (scatter) at starts read from the index array.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void gather(const core::KernelCall& call);

// How a scatter combines an update with the value it lands on.
enum class Combine { replace, add, mul, min, max };
void scatter(const core::KernelCall& call, Combine combine);

}  // namespace parax::prims::kernels
