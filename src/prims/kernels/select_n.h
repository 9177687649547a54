// select_n's kernel: each element taken from the case its `which` value names.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void select_n(const core::KernelCall& call);

}  // namespace parax::prims::kernels
