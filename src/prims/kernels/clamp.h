// clamp's kernel: x held between the bounds lo and hi.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void clamp(const core::KernelCall& call);

}  // namespace parax::prims::kernels
