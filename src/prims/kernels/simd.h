// Vectorized loops of the elementwise kernels over dense float buffers, compiled for
// several instruction sets (AVX-512 as Highway's AVX3 and AVX3_DL, AVX2, SSE4, portable C++)
// and chosen at run time by Highway, so
// one binary runs on any x86-64. Transcendentals come from Highway's contrib/math or SLEEF;
// the ulp bounds relied on are listed in simd_unary.cpp. Each function runs serially on
// [0, n) for any n, writes nothing when it returns false (no vector loop for that op and
// type), and allows the output to alias an input. Internal to src/prims.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "parax/dtype.h"

namespace parax::prims::simd {

enum class UnaryOp : uint8_t {
  neg,
  abs,
  sign,
  floor,
  ceil,
  round_away,
  round_even,
  exp,
  exp2,
  log,
  log1p,
  expm1,
  sin,
  cos,
  tan,
  asin,
  acos,
  atan,
  sinh,
  cosh,
  tanh,
  sqrt,
  rsqrt,
  cbrt,
  logistic,
  erf,
  none,
};
enum class BinaryOp : uint8_t { add, sub, mul, div, max, min, pow, atan2, none };
enum class CompareOp : uint8_t { eq, ne, lt, le, gt, ge };

// An input of a binary loop: n values, or one value every element reads (rank 0).
template <class T>
struct In {
  const T* p;
  bool scalar;
};

// How a loop writes its results. `stream` stores around the caches (non-temporal stores,
// visible to other threads once the loop returns): for outputs too large to be read back
// from the caches, it saves reading each output line before overwriting it.
enum class Store : uint8_t { cached, stream };

// Returns false if `op` has no vector loop for T.
bool unary(UnaryOp op, const float* x, float* y, int64_t n, Store store = Store::cached);
bool unary(UnaryOp op, const double* x, double* y, int64_t n, Store store = Store::cached);

bool binary(BinaryOp op, In<float> a, In<float> b, float* y, int64_t n,
            Store store = Store::cached);
bool binary(BinaryOp op, In<double> a, In<double> b, double* y, int64_t n,
            Store store = Store::cached);

// Copies n floats from x to y with `stream` stores where y allows them (simd.h's Store).
void copy_streaming(const float* x, float* y, int64_t n);

// Writes y[i] = a[i] op b[i] as bytes 0/1 (IEEE: every comparison with NaN is false but ne).
bool compare(CompareOp op, In<float> a, In<float> b, bool* y, int64_t n);

// y = min(max(x, lo), hi) with XLA's NaN-propagating max and min.
bool clamp(In<float> lo, const float* x, In<float> hi, float* y, int64_t n);
bool clamp(In<double> lo, const double* x, In<double> hi, double* y, int64_t n);

// y[i] = which[i] ? on_true[i] : on_false[i] for elements of `bytes` bytes (1, 2, 4 or 8).
bool select(int bytes, const bool* which, const void* on_false, const void* on_true, void* y,
            int64_t n);

// convert_element_type between float32 and int32, float64, bfloat16 or float16, either way,
// with the semantics of the generic kernel (float to int truncates, saturates, NaN is 0;
// halves round to nearest even). Requires: y does not alias x.
bool convert(DType from, DType to, const void* x, void* y, int64_t n);

// For tests: restricts dispatch to one compiled target by name ("AVX3_DL", "AVX3", "AVX2",
// "SSE4", and the portable "SCALAR" or "EMU128"), or restores the best one for the machine
// when `name` is empty. Returns false if that target is not compiled in or the CPU lacks it.
bool use_target_for_test(const char* name);
// For tests: returns the names of the compiled targets this CPU runs, best first.
std::vector<std::string> targets_for_test();
// Returns the name of the target the next call will run on.
const char* target_name();

}  // namespace parax::prims::simd
