// cumsum's kernel: the running sum along `axis`, reversed when `reverse` is set.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void cumsum(const core::KernelCall& call);

}  // namespace parax::prims::kernels
