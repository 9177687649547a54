// convert_element_type's kernel, with XLA's CPU semantics for each pair.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void convert_element_type(const core::KernelCall& call);

}  // namespace parax::prims::kernels
