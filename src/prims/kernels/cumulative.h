// Kernels of cumsum, cumprod, cummax, cummin and cumlogsumexp: running reductions along
// `axis`, from the end when `reverse`.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void cumsum(const core::KernelCall& call);
void cumprod(const core::KernelCall& call);
void cummax(const core::KernelCall& call);
void cummin(const core::KernelCall& call);
void cumlogsumexp(const core::KernelCall& call);

}  // namespace parax::prims::kernels
