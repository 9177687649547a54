// The unary loops that come from SLEEF alone (asinh, acosh, atanh, erfc: Highway has none
// of them) over dense float buffers, through Highway's runtime dispatch as simd.h's loops,
// and the kernel entry that runs a KernelCall through them (halves in float32 tiles), so
// their primitives need no scalar form. Internal to src/prims.
#pragma once

#include <cstdint>

#include "core/rules.h"

namespace parax::prims::simd {

enum class SleefOp : uint8_t { asinh, acosh, atanh, erfc };

// y[i] = op(x[i]) for i in [0, n); y may alias x. SLEEF's u10 (asinh, acosh, atanh) and
// u15 (erfc) variants: within 1.0 and 1.5 ulp; lanes where SLEEF overflows early or
// flushes tiny values go to libm.
void sleef_unary(SleefOp op, const float* x, float* y, int64_t n);
void sleef_unary(SleefOp op, const double* x, double* y, int64_t n);

// Runs a unary call of a floating dtype (float16 and bfloat16 compute in float32 tiles) in
// parallel chunks.
void run_sleef(SleefOp op, const core::KernelCall& c);

}  // namespace parax::prims::simd
