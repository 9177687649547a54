// The kernels of argmax and argmin: the index of the extreme along param `axes`.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void argmax(const core::KernelCall& call);
void argmin(const core::KernelCall& call);

}  // namespace parax::prims::kernels
