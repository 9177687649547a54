// sort's kernel: the operands sorted along `dimension` by their first `num_keys`.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void sort(const core::KernelCall& call);

}  // namespace parax::prims::kernels
