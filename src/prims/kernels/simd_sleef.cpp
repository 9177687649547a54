// simd::sleef_unary for float32 and float64, compiled once per Highway target as simd_unary.cpp
// is (foreach_target.h includes this file again for each). SLEEF 3.5.1's asinh and acosh
// overflow to inf from |x| ~ 1.8e19 (float) and ~1.3e154 (double), where the results are
// still small, and flush asinh of subnormals to 0: such lanes take libm's value.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "prims/kernels/simd_sleef.cpp"
// The same targets as simd_unary.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <algorithm>
#include <cmath>

#include "prims/kernels/simd_sleef.h"
#include "prims/kernels/simd_target.h"

#ifndef PARAX_SIMD_SLEEF_UNARY_AVX2_
#define PARAX_SIMD_SLEEF_UNARY_AVX2_
// As simd_target.h: sleef.h declares its AVX2 and AVX-512 entry points only under -mavx
// and -mavx512f.
extern "C" {
__m256 Sleef_asinhf8_u10avx2(__m256);
__m256d Sleef_asinhd4_u10avx2(__m256d);
__m256 Sleef_acoshf8_u10avx2(__m256);
__m256d Sleef_acoshd4_u10avx2(__m256d);
__m256 Sleef_atanhf8_u10avx2(__m256);
__m256d Sleef_atanhd4_u10avx2(__m256d);
__m256 Sleef_erfcf8_u15avx2(__m256);
__m256d Sleef_erfcd4_u15avx2(__m256d);
__m512 Sleef_asinhf16_u10avx512f(__m512);
__m512d Sleef_asinhd8_u10avx512f(__m512d);
__m512 Sleef_acoshf16_u10avx512f(__m512);
__m512d Sleef_acoshd8_u10avx512f(__m512d);
__m512 Sleef_atanhf16_u10avx512f(__m512);
__m512d Sleef_atanhd8_u10avx512f(__m512d);
__m512 Sleef_erfcf16_u15avx512f(__m512);
__m512d Sleef_erfcd8_u15avx512f(__m512d);
}
#endif

HWY_BEFORE_NAMESPACE();
namespace parax::prims::simd {
namespace HWY_NAMESPACE {
namespace {

template <class D>
using V = hn::Vec<D>;

#define PARAX_SLEEF_UNARY_FN(Name, fn, acc)          \
  struct Name {                                      \
    template <class D>                               \
    HWY_INLINE V<D> operator()(D d, V<D> x) const {  \
      if constexpr (sizeof(hn::TFromD<D>) == 4) {    \
        return Sleef1(d, PARAX_SLEEF_F(fn, acc), x); \
      } else {                                       \
        return Sleef1(d, PARAX_SLEEF_D(fn, acc), x); \
      }                                              \
    }                                                \
  };
PARAX_SLEEF_UNARY_FN(SleefAsinh, asinh, u10)
PARAX_SLEEF_UNARY_FN(SleefAcosh, acosh, u10)
PARAX_SLEEF_UNARY_FN(Atanh, atanh, u10)
PARAX_SLEEF_UNARY_FN(Erfc, erfc, u15)
#undef PARAX_SLEEF_UNARY_FN

// Lanes outside [tiny, huge] in magnitude (NaN is neither) take libm's value.
template <class D, class Vector>
HWY_INLINE V<D> WithLibm(D d, V<D> x, Vector vector, double (*scalar)(double)) {
  using T = hn::TFromD<D>;
  const T huge = sizeof(T) == 4 ? T(1e18) : T(1e150);
  const T tiny = sizeof(T) == 4 ? T(1e-30) : T(1e-300);
  const V<D> y = vector(d, x);
  const V<D> a = hn::Abs(x);
  const auto odd = hn::Or(hn::Gt(a, hn::Set(d, huge)), hn::Lt(a, hn::Set(d, tiny)));
  if (HWY_LIKELY(hn::AllFalse(d, odd))) return y;
  HWY_ALIGN T xs[HWY_MAX_BYTES / sizeof(T)];
  HWY_ALIGN T ys[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    const T v = std::abs(xs[i]);
    if (v > huge || v < tiny) ys[i] = T(scalar(double(xs[i])));
  }
  return hn::Load(d, ys);
}

struct Asinh {
  template <class D>
  HWY_INLINE V<D> operator()(D d, V<D> x) const {
    return WithLibm(d, x, SleefAsinh{}, [](double v) { return std::asinh(v); });
  }
};
struct Acosh {
  template <class D>
  HWY_INLINE V<D> operator()(D d, V<D> x) const {
    return WithLibm(d, x, SleefAcosh{}, [](double v) { return std::acosh(v); });
  }
};

template <class T>
void Run(SleefOp op, const T* x, T* y, int64_t n) {
  const hn::ScalableTag<T> d;
  const In<T> in{x, false};
  const size_t len = size_t(n);
  switch (op) {
    case SleefOp::asinh:
      Map(d, Asinh{}, y, len, in);
      return;
    case SleefOp::acosh:
      Map(d, Acosh{}, y, len, in);
      return;
    case SleefOp::atanh:
      Map(d, Atanh{}, y, len, in);
      return;
    case SleefOp::erfc:
      Map(d, Erfc{}, y, len, in);
      return;
  }
}

}  // namespace

void SleefF32(SleefOp op, const float* x, float* y, int64_t n) { Run(op, x, y, n); }
void SleefF64(SleefOp op, const double* x, double* y, int64_t n) { Run(op, x, y, n); }

}  // namespace HWY_NAMESPACE
}  // namespace parax::prims::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
#include "prims/prim_util.h"

namespace parax::prims::simd {

HWY_EXPORT(SleefF32);
HWY_EXPORT(SleefF64);

void sleef_unary(SleefOp op, const float* x, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SleefF32)(op, x, y, n);
}
void sleef_unary(SleefOp op, const double* x, double* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(SleefF64)(op, x, y, n);
}

namespace {

template <class T>
void run_typed(SleefOp op, const core::KernelCall& c) {
  const T* x = in_ptr<T>(c, 0);
  T* y = out_ptr<T>(c, 0);
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    sleef_unary(op, x + begin, y + begin, end - begin);
  });
}

// Halves compute in float32 tiles on the stack and round once, as the other kernels do.
template <class H>
void run_half(SleefOp op, const core::KernelCall& c) {
  constexpr int64_t kTile = 1024;
  const H* x = in_ptr<H>(c, 0);
  H* y = out_ptr<H>(c, 0);
  parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
    float buf[kTile];
    for (int64_t t = begin; t < end; t += kTile) {
      const int64_t len = std::min(kTile, end - t);
      for (int64_t i = 0; i < len; ++i) buf[i] = static_cast<float>(x[t + i]);
      sleef_unary(op, buf, buf, len);
      for (int64_t i = 0; i < len; ++i) y[t + i] = H(buf[i]);
    }
  });
}

}  // namespace

void run_sleef(SleefOp op, const core::KernelCall& c) {
  switch (c.in_avals[0].dtype) {
    case DType::float32:
      return run_typed<float>(op, c);
    case DType::float64:
      return run_typed<double>(op, c);
    case DType::float16:
      return run_half<float16_t>(op, c);
    case DType::bfloat16:
      return run_half<bfloat16_t>(op, c);
    default:
      PARAX_UNREACHABLE();
  }
}

}  // namespace parax::prims::simd
#endif  // HWY_ONCE
