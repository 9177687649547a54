// The LAPACK kernels of the linear-algebra primitives (OpenBLAS's LAPACK, float32 and
// float64): each loops over the leading batch dimensions in parallel, one matrix per task,
// copying it to LAPACK's column-major layout and back.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void cholesky(const core::KernelCall& call);
void lu(const core::KernelCall& call);
void lu_pivots_to_permutation(const core::KernelCall& call);
void qr(const core::KernelCall& call);
void svd(const core::KernelCall& call);
void eigh(const core::KernelCall& call);
void triangular_solve(const core::KernelCall& call);

}  // namespace parax::prims::kernels
