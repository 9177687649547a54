// conv_general_dilated's kernel: oneDNN for float32 where it has a JIT kernel
// (conv_dnnl.h), else im2col panels multiplied by the packed kernel with OpenBLAS
// (floating results), a direct loop for integer and bool results.
#pragma once

#include <cstdint>
#include <vector>

#include "core/rules.h"

namespace parax::prims::kernels {

// A convolution's parameters read from its params: per spatial dimension (in the rhs
// spec's order) strides, (lo, hi) padding and dilations; the three specs list operand
// dimensions as (batch or out feature, feature or in feature, spatial...).
struct ConvParams {
  std::vector<int64_t> strides, pad_lo, pad_hi, lhs_dilation, rhs_dilation;
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  int64_t feature_group_count = 1;
  int64_t batch_group_count = 1;
};

// Reads the params of a conv_general_dilated equation.
ConvParams conv_params(const core::Params& params);

// Writes the convolution of call's two operands to its result.
void conv(const core::KernelCall& call);

}  // namespace parax::prims::kernels
