// The strided-copy kernels of pad, concatenate, transpose, rev, dynamic_slice and
// dynamic_update_slice (kernels/copy.cpp).
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void pad(const core::KernelCall& call);
void concatenate(const core::KernelCall& call);
void transpose(const core::KernelCall& call);
void rev(const core::KernelCall& call);
void dynamic_slice(const core::KernelCall& call);
void dynamic_update_slice(const core::KernelCall& call);

}  // namespace parax::prims::kernels
