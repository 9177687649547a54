// Vector loops of numpy's extra elementwise primitives (asinh, acosh, atanh, erfc) over
// dense float buffers, from SLEEF through Highway's runtime dispatch as simd.h's loops, and
// the kernel entry that runs a KernelCall through them (halves in float32 tiles). Kept
// apart from simd.h so that adding these touches none of the other elementwise files.
// Internal to src/prims.
#pragma once

#include <cstdint>

#include "core/rules.h"

namespace parax::prims::simd {

enum class ExtraOp : uint8_t { asinh, acosh, atanh, erfc };

// y[i] = op(x[i]) for i in [0, n); y may alias x. SLEEF's u10 (asinh, acosh, atanh) and
// u15 (erfc) variants: within 1.0 and 1.5 ulp; lanes where SLEEF overflows early or
// flushes tiny values go to libm.
void extra(ExtraOp op, const float* x, float* y, int64_t n);
void extra(ExtraOp op, const double* x, double* y, int64_t n);

// Runs a unary call of a floating dtype (float16 and bfloat16 compute in float32 tiles) in
// parallel chunks.
void run_extra(ExtraOp op, const core::KernelCall& c);

}  // namespace parax::prims::simd
