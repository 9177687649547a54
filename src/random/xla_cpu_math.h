// XLA:CPU's float32 arithmetic reproduced with lax ops. JAX's samplers are bit-exact only if
// parax rounds where XLA:CPU rounds: XLA:CPU contracts a multiply feeding an add into one
// FMA (it sets LLVM's AllowFPOpFusion = Fast), has its own erf, log, log1p and erf_inv, and
// vectorizes reduce-window loops with reassociation. Internal to src/random.
#pragma once

#include "parax/array.h"

namespace parax::random::xla_cpu {

// Returns fma(a, b, c) of float32 operands, rounded once as XLA:CPU's contracted
// multiply-add.
Array fma_f32(const Array& a, const Array& b, const Array& c);
// XLA:CPU's float32 erf, log and log1p, bit for bit (log1p for m in (-1, 0], erf_inv's
// argument range).
Array erf_f32(const Array& x);
Array log_f32(const Array& x);
Array log1p_f32(const Array& m);
// XLA's float32 erf_inv as XLA:CPU runs it, as one jitted program per shape.
Array erf_inv_f32(const Array& x);
// jnp.cumsum of a float32 or float64 vector as XLA:CPU computes it.
Array cumsum(const Array& x);

}  // namespace parax::random::xla_cpu
