// Shared by simd_unary.cpp and simd_binary.cpp, and included once per Highway target
// (hence no include guard, and the guard below that flips with HWY_TARGET): loops over
// dense buffers with a scalar tail, and calls into SLEEF at this target's vector width.
// Internal to src/prims.
#if defined(PARAX_SIMD_TARGET_H_) == defined(HWY_TARGET_TOGGLE)
#ifdef PARAX_SIMD_TARGET_H_
#undef PARAX_SIMD_TARGET_H_
#else
#define PARAX_SIMD_TARGET_H_
#endif

#include <hwy/cache_control.h>
#include <hwy/highway.h>

#include <algorithm>
#include <cstdint>
#include <cstring>
#include <limits>

#include "prims/kernels/simd.h"

#ifndef PARAX_SIMD_SLEEF_AVX2_
#define PARAX_SIMD_SLEEF_AVX2_
#include <immintrin.h>
#include <sleef.h>
// sleef.h declares its AVX2 and AVX-512 entry points only when the file is compiled with
// -mavx or -mavx512f, which would let the compiler use them anywhere; Highway enables them
// per function instead. The declarations are sleef.h's.
#define PARAX_SLEEF_AVX2_1(fn, acc)              \
  __m256 Sleef_##fn##f8_##acc##avx2(__m256);     \
  __m256d Sleef_##fn##d4_##acc##avx2(__m256d);   \
  __m512 Sleef_##fn##f16_##acc##avx512f(__m512); \
  __m512d Sleef_##fn##d8_##acc##avx512f(__m512d);
#define PARAX_SLEEF_AVX2_2(fn, acc)                      \
  __m256 Sleef_##fn##f8_##acc##avx2(__m256, __m256);     \
  __m256d Sleef_##fn##d4_##acc##avx2(__m256d, __m256d);  \
  __m512 Sleef_##fn##f16_##acc##avx512f(__m512, __m512); \
  __m512d Sleef_##fn##d8_##acc##avx512f(__m512d, __m512d);
extern "C" {
PARAX_SLEEF_AVX2_1(sin, u10)
PARAX_SLEEF_AVX2_1(cos, u10)
PARAX_SLEEF_AVX2_1(exp2, u10)
PARAX_SLEEF_AVX2_1(log1p, u10)
PARAX_SLEEF_AVX2_1(erf, u10)
PARAX_SLEEF_AVX2_1(tan, u35)
PARAX_SLEEF_AVX2_1(asin, u35)
PARAX_SLEEF_AVX2_1(sinh, u35)
PARAX_SLEEF_AVX2_1(cosh, u35)
PARAX_SLEEF_AVX2_1(cbrt, u35)
PARAX_SLEEF_AVX2_2(pow, u10)
PARAX_SLEEF_AVX2_2(atan2, u35)
}
#undef PARAX_SLEEF_AVX2_1
#undef PARAX_SLEEF_AVX2_2
#endif  // PARAX_SIMD_SLEEF_AVX2_

// SLEEF's entry point of function `fn` (accuracy suffix `acc`, e.g. u10) for float (F) or
// double (D) vectors of this target (AVX3 and AVX3_DL both take SLEEF's AVX-512F ones). The
// portable target (HWY_SCALAR with GCC < 12.3, else HWY_EMU128) calls the scalar entry point
// per lane.
#undef PARAX_SLEEF_F
#undef PARAX_SLEEF_D
#undef PARAX_SIMD_PORTABLE
#undef PARAX_SIMD_AVX512
#define PARAX_SIMD_AVX512 (HWY_TARGET == HWY_AVX3 || HWY_TARGET == HWY_AVX3_DL)
#define PARAX_SIMD_PORTABLE (HWY_TARGET != HWY_AVX2 && HWY_TARGET != HWY_SSE4 && !PARAX_SIMD_AVX512)
#if PARAX_SIMD_AVX512
#define PARAX_SLEEF_F(fn, acc) Sleef_##fn##f16_##acc##avx512f
#define PARAX_SLEEF_D(fn, acc) Sleef_##fn##d8_##acc##avx512f
#elif HWY_TARGET == HWY_AVX2
#define PARAX_SLEEF_F(fn, acc) Sleef_##fn##f8_##acc##avx2
#define PARAX_SLEEF_D(fn, acc) Sleef_##fn##d4_##acc##avx2
#elif HWY_TARGET == HWY_SSE4
#define PARAX_SLEEF_F(fn, acc) Sleef_##fn##f4_##acc##sse4
#define PARAX_SLEEF_D(fn, acc) Sleef_##fn##d2_##acc##sse4
#else
#define PARAX_SLEEF_F(fn, acc) Sleef_##fn##f_##acc
#define PARAX_SLEEF_D(fn, acc) Sleef_##fn##_##acc
#endif

HWY_BEFORE_NAMESPACE();
namespace parax::prims::simd {
namespace HWY_NAMESPACE {
namespace hn = hwy::HWY_NAMESPACE;

// Applies SLEEF's function `f` to whole vectors: one call per vector where SLEEF takes this
// target's native vectors, else one scalar call per lane.
template <class D, class F>
HWY_INLINE hn::Vec<D> Sleef1(D d, F f, hn::Vec<D> x) {
#if !PARAX_SIMD_PORTABLE
  return hn::Vec<D>{f(x.raw)};
#else
  using T = hn::TFromD<D>;
  HWY_ALIGN T lanes[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(x, d, lanes);
  for (size_t i = 0; i < hn::Lanes(d); ++i) lanes[i] = f(lanes[i]);
  return hn::Load(d, lanes);
#endif
}
template <class D, class F>
HWY_INLINE hn::Vec<D> Sleef2(D d, F f, hn::Vec<D> a, hn::Vec<D> b) {
#if !PARAX_SIMD_PORTABLE
  return hn::Vec<D>{f(a.raw, b.raw)};
#else
  using T = hn::TFromD<D>;
  HWY_ALIGN T la[HWY_MAX_BYTES / sizeof(T)];
  HWY_ALIGN T lb[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(a, d, la);
  hn::Store(b, d, lb);
  for (size_t i = 0; i < hn::Lanes(d); ++i) la[i] = f(la[i], lb[i]);
  return hn::Load(d, la);
#endif
}

// Reads input `a` at element i: a vector of n elements, or its one value everywhere.
template <class D>
HWY_INLINE hn::Vec<D> LoadIn(D d, In<hn::TFromD<D>> a, size_t i) {
  return a.scalar ? hn::Set(d, a.p[0]) : hn::LoadU(d, a.p + i);
}

// `count` (fewer than a vector's) elements of `a` from element i, padded with zeros, so the
// loop never reads or writes past the buffers; the padding lanes are discarded.
template <class D>
HWY_INLINE hn::Vec<D> LoadTail(D d, In<hn::TFromD<D>> a, size_t i, size_t count) {
  using T = hn::TFromD<D>;
  if (a.scalar) return hn::Set(d, a.p[0]);
  HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)] = {};
  std::memcpy(buf, a.p + i, count * sizeof(T));
  return hn::Load(d, buf);
}

template <class D, class V>
HWY_INLINE void StoreTail(D d, V v, hn::TFromD<D>* y, size_t count) {
  using T = hn::TFromD<D>;
  HWY_ALIGN T buf[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(v, d, buf);
  std::memcpy(y, buf, count * sizeof(T));
}

// Asks for input `a`'s element i on its way to L1.
template <class T>
HWY_INLINE void PrefetchIn(In<T> a, size_t i) {
  if (!a.scalar) __builtin_prefetch(a.p + i, 0, 3);
}

// y[i] = f(d, a[i], b[i], ...) for vectors of D's lanes; inputs are In<T>; `store` says how
// the results are written (simd.h).
//
// Loops over more than L1 holds fetch their operands' lines kPrefetchBytes ahead in
// software, and their output's too unless they stream it: with the hardware prefetchers
// alone, a loop with a few dozen cycles of work per vector barely overlaps its memory
// traffic with its work (a probe with 24 FMAs per vector over 256 MiB took longer than
// its compute time and its copy time added up; prefetched, 40 % less).
template <class D, class F, class... A>
HWY_INLINE void MapTo(D d, F f, hn::TFromD<D>* y, size_t n, Store store, A... a) {
  using T = hn::TFromD<D>;
  constexpr size_t kPrefetchBytes = 4096;
  constexpr size_t kAhead = kPrefetchBytes / sizeof(T);
  const size_t lanes = hn::Lanes(d);
  // Whole cache lines per step, so that each line is asked for once.
  const size_t step = lanes * std::max<size_t>(1, 64 / (lanes * sizeof(T)));
  size_t i = 0;
  if (store == Store::stream) {
    // Stream needs aligned vectors: the unaligned head is stored as a short tail.
    const size_t misaligned = reinterpret_cast<uintptr_t>(y) % (lanes * sizeof(T));
    if (misaligned % sizeof(T) == 0 && misaligned != 0 && n > 0) {
      i = std::min(n, (lanes * sizeof(T) - misaligned) / sizeof(T));
      StoreTail(d, f(d, LoadTail(d, a, 0, i)...), y, i);
    }
    if (misaligned % sizeof(T) == 0) {
      for (; i + step <= n; i += step) {
        (PrefetchIn(a, i + kAhead), ...);
        for (size_t k = 0; k < step; k += lanes) {
          hn::Stream(f(d, LoadIn(d, a, i + k)...), d, y + i + k);
        }
      }
      hwy::FlushStream();
    }
  } else if (n * sizeof(T) > 4 * kPrefetchBytes) {
    for (; i + step <= n; i += step) {
      (PrefetchIn(a, i + kAhead), ...);
      __builtin_prefetch(y + i + kAhead, 1, 3);
      for (size_t k = 0; k < step; k += lanes) {
        hn::StoreU(f(d, LoadIn(d, a, i + k)...), d, y + i + k);
      }
    }
  }
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(d, LoadIn(d, a, i)...), d, y + i);
  if (i < n) StoreTail(d, f(d, LoadTail(d, a, i, n - i)...), y + i, n - i);
}

template <class D, class F, class... A>
HWY_INLINE void Map(D d, F f, hn::TFromD<D>* y, size_t n, A... a) {
  MapTo(d, f, y, n, Store::cached, a...);
}

// max and min as XLA computes them: NaN wins (as the default quiet NaN), and -0 < +0. On
// equal operands the bitwise and/or picks +0/-0 from a pair of zeros and is a no-op else.
template <class D, class V>
HWY_INLINE V NanMax(D d, V a, V b) {
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::And(a, b), hn::IfThenElse(hn::Gt(a, b), a, b));
  const auto nan = hn::Or(hn::IsNaN(a), hn::IsNaN(b));
  return hn::IfThenElse(nan, hn::Set(d, std::numeric_limits<hn::TFromD<D>>::quiet_NaN()), r);
}
template <class D, class V>
HWY_INLINE V NanMin(D d, V a, V b) {
  const V r = hn::IfThenElse(hn::Eq(a, b), hn::Or(a, b), hn::IfThenElse(hn::Lt(a, b), a, b));
  const auto nan = hn::Or(hn::IsNaN(a), hn::IsNaN(b));
  return hn::IfThenElse(nan, hn::Set(d, std::numeric_limits<hn::TFromD<D>>::quiet_NaN()), r);
}

}  // namespace HWY_NAMESPACE
}  // namespace parax::prims::simd
HWY_AFTER_NAMESPACE();

#endif  // PARAX_SIMD_TARGET_H_
