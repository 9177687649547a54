// random_bits' kernel: threefry2x32 draws, in the original or partitionable layout.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void random_bits(const core::KernelCall& call);

}  // namespace parax::prims::kernels
