// fma's kernel: a * b + c with one rounding (float32, float64).
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void fma(const core::KernelCall& call);

}  // namespace parax::prims::kernels
