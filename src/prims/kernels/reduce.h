// The kernels of reduce_sum, reduce_prod, reduce_max, reduce_min, reduce_and and
// reduce_or: the operand reduced over param `axes`.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void reduce_sum(const core::KernelCall& call);
void reduce_prod(const core::KernelCall& call);
void reduce_max(const core::KernelCall& call);
void reduce_min(const core::KernelCall& call);
void reduce_and(const core::KernelCall& call);
void reduce_or(const core::KernelCall& call);

}  // namespace parax::prims::kernels
