// conv_general_dilated's float32 kernel on oneDNN (Debian's libdnnl): forward convolutions,
// and the input- and weight-gradient forms JAX's transpose rules produce, mapped onto
// oneDNN's forward, backward-data and backward-weights primitives. The only file that
// includes oneDNN's headers is conv_dnnl.cpp.
#pragma once

#include <cstdint>

#include "core/rules.h"
#include "prims/kernels/conv.h"

namespace parax::prims::kernels {

// Runs the float32 convolution of `call` on oneDNN and returns true, or returns false
// (nothing written) when oneDNN cannot run it: other dtypes, no or more than three
// spatial dimensions, a form with no oneDNN primitive, a shape oneDNN rejects, or (unless
// `any_impl`) a shape for which oneDNN offers only its reference or GEMM code.
bool conv_onednn(const core::KernelCall& call, const ConvParams& p, bool any_impl);

// How many convolutions each path has run in this process (tests check which path ran).
struct ConvPathCounts {
  int64_t forward = 0, backward_data = 0, backward_weights = 0;  // on oneDNN
  int64_t im2col = 0;
};
ConvPathCounts conv_path_counts();
// Counts one convolution run by im2col + BLAS.
void count_im2col_conv();

}  // namespace parax::prims::kernels
