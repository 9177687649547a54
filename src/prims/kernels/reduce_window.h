// Kernels of the windowed reductions (pooling) and the selections of their gradients.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

// reduce_window_{sum,max,min}: params window_dimensions, window_strides, padding (flat lo,
// hi pairs), base_dilation, window_dilation.
void reduce_window_sum(const core::KernelCall& call);
void reduce_window_max(const core::KernelCall& call);
void reduce_window_min(const core::KernelCall& call);
// select_and_gather_add(tangents, operand): per window, the tangent at the first element
// that wins the selection (`select_prim` "ge": max, "le": min).
void select_and_gather_add(const core::KernelCall& call);
// select_and_scatter_add(source, operand): each source element added at the first element
// of its window that wins the selection.
void select_and_scatter_add(const core::KernelCall& call);

}  // namespace parax::prims::kernels
