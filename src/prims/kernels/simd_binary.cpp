// simd::binary, compare, clamp, select and convert, compiled once per Highway target
// (foreach_target.h includes this file again for each). Arithmetic, max/min, comparisons
// and conversions are exact, as in the generic kernels; pow is SLEEF's u10 (1.0 ulp, the
// only variant) and atan2 its u35 (3.5 ulp, 2.6x faster than u10). rem stays scalar:
// SLEEF's fmod returns NaN for huge quotients (fmod(FLT_MAX, denorm_min)).
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "prims/kernels/simd_binary.cpp"
// The same targets as simd_unary.cpp.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/highway.h>

#include <cmath>
#include <limits>

#include "prims/kernels/simd_target.h"

HWY_BEFORE_NAMESPACE();
namespace parax::prims::simd {
namespace HWY_NAMESPACE {
namespace {

template <class D>
using V = hn::Vec<D>;

#define PARAX_BINARY_FN(Name, body)                         \
  struct Name {                                             \
    template <class D>                                      \
    HWY_INLINE V<D> operator()(D d, V<D> a, V<D> b) const { \
      body                                                  \
    }                                                       \
  };

// SLEEF's function `f` (float) or `dbl` (double) for this target and lane type.
#define PARAX_SLEEF_FN(Name, f, dbl)                                                        \
  PARAX_BINARY_FN(                                                                          \
      Name, if constexpr (sizeof(hn::TFromD<D>) == 4) { return Sleef2(d, f, a, b); } else { \
        return Sleef2(d, dbl, a, b);                                                        \
      })

PARAX_BINARY_FN(Add, return hn::Add(a, b);)
PARAX_BINARY_FN(Sub, return hn::Sub(a, b);)
PARAX_BINARY_FN(Mul, return hn::Mul(a, b);)
PARAX_BINARY_FN(Div, return hn::Div(a, b);)
PARAX_BINARY_FN(Max, return NanMax(d, a, b);)
PARAX_BINARY_FN(Min, return NanMin(d, a, b);)
PARAX_SLEEF_FN(SleefPow, PARAX_SLEEF_F(pow, u10), PARAX_SLEEF_D(pow, u10))
PARAX_SLEEF_FN(Atan2, PARAX_SLEEF_F(atan2, u35), PARAX_SLEEF_D(atan2, u35))

// SLEEF's pow overflows just below the largest finite values (pow(DBL_MAX, 1) = inf):
// lanes with an infinite result from finite operands are redone by libm.
PARAX_BINARY_FN(Pow, {
  using T = hn::TFromD<D>;
  const V<D> r = SleefPow{}(d, a, b);
  const V<D> inf = hn::Set(d, std::numeric_limits<T>::infinity());
  const auto finite = hn::And(hn::Lt(hn::Abs(a), inf), hn::Lt(hn::Abs(b), inf));
  if (HWY_LIKELY(hn::AllFalse(d, hn::And(finite, hn::Eq(hn::Abs(r), inf))))) return r;
  HWY_ALIGN T as[HWY_MAX_BYTES / sizeof(T)];
  HWY_ALIGN T bs[HWY_MAX_BYTES / sizeof(T)];
  HWY_ALIGN T rs[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(a, d, as);
  hn::Store(b, d, bs);
  hn::Store(r, d, rs);
  for (size_t i = 0; i < hn::Lanes(d); ++i) {
    if (std::isinf(rs[i]) && std::isfinite(as[i]) && std::isfinite(bs[i])) {
      rs[i] = std::pow(as[i], bs[i]);
    }
  }
  return hn::Load(d, rs);
})

#undef PARAX_SLEEF_FN
#undef PARAX_BINARY_FN

template <class T>
bool RunBinary(BinaryOp op, In<T> a, In<T> b, T* y, int64_t n, Store store) {
  const hn::ScalableTag<T> d;
  const size_t len = size_t(n);
  switch (op) {
#define PARAX_CASE(op, Fn)               \
  case BinaryOp::op:                     \
    MapTo(d, Fn{}, y, len, store, a, b); \
    return true;
    PARAX_CASE(add, Add)
    PARAX_CASE(sub, Sub)
    PARAX_CASE(mul, Mul)
    PARAX_CASE(div, Div)
    PARAX_CASE(max, Max)
    PARAX_CASE(min, Min)
    PARAX_CASE(pow, Pow)
    PARAX_CASE(atan2, Atan2)
#undef PARAX_CASE
    case BinaryOp::none:
      break;
  }
  return false;
}

// Stores a float32 comparison's mask as bytes 0/1.
template <class D, class M>
HWY_INLINE void StoreBools(D d, M m, bool* y, size_t count) {
  const hn::RebindToSigned<D> di;
  const hn::Rebind<uint8_t, D> d8;
  const auto ones = hn::And(hn::BitCast(di, hn::VecFromMask(d, m)), hn::Set(di, 1));
  const auto bytes = hn::DemoteTo(d8, ones);
  uint8_t* out = reinterpret_cast<uint8_t*>(y);
  if (count == hn::Lanes(d)) {
    hn::StoreU(bytes, d8, out);
  } else {
    HWY_ALIGN uint8_t buf[HWY_MAX_BYTES];
    hn::Store(bytes, d8, buf);
    std::memcpy(out, buf, count);
  }
}

template <class D, class Cmp>
HWY_INLINE void CompareLoop(D d, Cmp cmp, In<float> a, In<float> b, bool* y, size_t n) {
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    StoreBools(d, cmp(LoadIn(d, a, i), LoadIn(d, b, i)), y + i, lanes);
  }
  if (i < n) StoreBools(d, cmp(LoadTail(d, a, i, n - i), LoadTail(d, b, i, n - i)), y + i, n - i);
}

bool RunCompare(CompareOp op, In<float> a, In<float> b, bool* y, int64_t n) {
  const hn::ScalableTag<float> d;
  using VF = V<decltype(d)>;
  const size_t len = size_t(n);
  switch (op) {
    case CompareOp::eq:
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Eq(u, v); }, a, b, y, len);
      return true;
    case CompareOp::ne:
      // Not Ne: x86's not-equal predicate is the ordered one, false on NaN.
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Not(hn::Eq(u, v)); }, a, b, y, len);
      return true;
    case CompareOp::lt:
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Lt(u, v); }, a, b, y, len);
      return true;
    case CompareOp::le:
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Le(u, v); }, a, b, y, len);
      return true;
    case CompareOp::gt:
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Gt(u, v); }, a, b, y, len);
      return true;
    case CompareOp::ge:
      CompareLoop(
          d, [](VF u, VF v) HWY_ATTR { return hn::Ge(u, v); }, a, b, y, len);
      return true;
  }
  return false;
}

struct Clamp {
  template <class D>
  HWY_INLINE V<D> operator()(D d, V<D> lo, V<D> x, V<D> hi) const {
    return NanMin(d, NanMax(d, x, lo), hi);
  }
};

template <class T>
bool RunClamp(In<T> lo, const T* x, In<T> hi, T* y, int64_t n) {
  Map(hn::ScalableTag<T>(), Clamp{}, y, size_t(n), lo, In<T>{x, false}, hi);
  return true;
}

// `which` as a mask over lanes of D (bools are bytes 0/1; only 8-byte lanes need a
// two-step widening).
template <class D>
HWY_INLINE auto WhichMask(D d, const uint8_t* which) {
  using T = hn::TFromD<D>;
  if constexpr (sizeof(T) == 1) {
    return hn::Ne(hn::LoadU(d, which), hn::Zero(d));
  } else if constexpr (sizeof(T) == 8) {
    const hn::Rebind<uint32_t, D> d32;
    const auto w = hn::PromoteTo(d32, hn::LoadU(hn::Rebind<uint8_t, D>(), which));
    return hn::Ne(hn::PromoteTo(d, w), hn::Zero(d));
  } else {
    return hn::Ne(hn::PromoteTo(d, hn::LoadU(hn::Rebind<uint8_t, D>(), which)), hn::Zero(d));
  }
}

template <class T>
void SelectLoop(const uint8_t* which, const T* on_false, const T* on_true, T* y, size_t n) {
  const hn::ScalableTag<T> d;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) {
    const auto m = WhichMask(d, which + i);
    hn::StoreU(hn::IfThenElse(m, hn::LoadU(d, on_true + i), hn::LoadU(d, on_false + i)), d, y + i);
  }
  for (; i < n; ++i) y[i] = which[i] ? on_true[i] : on_false[i];
}

bool RunSelect(int bytes, const bool* which, const void* on_false, const void* on_true, void* y,
               int64_t n) {
  const auto* w = reinterpret_cast<const uint8_t*>(which);
  const size_t len = size_t(n);
  switch (bytes) {
    case 1:
      SelectLoop(w, static_cast<const uint8_t*>(on_false), static_cast<const uint8_t*>(on_true),
                 static_cast<uint8_t*>(y), len);
      return true;
    case 2:
      SelectLoop(w, static_cast<const uint16_t*>(on_false), static_cast<const uint16_t*>(on_true),
                 static_cast<uint16_t*>(y), len);
      return true;
    case 4:
      SelectLoop(w, static_cast<const uint32_t*>(on_false), static_cast<const uint32_t*>(on_true),
                 static_cast<uint32_t*>(y), len);
      return true;
    case 8:
      SelectLoop(w, static_cast<const uint64_t*>(on_false), static_cast<const uint64_t*>(on_true),
                 static_cast<uint64_t*>(y), len);
      return true;
  }
  return false;
}

// Runs y[i] = f(x[i]) in vectors of D's lanes, where f maps a vector of From loaded at
// Rebind<From, D> to a vector of D; the tail goes through zero-padded buffers.
template <class D, class From, class To, class F>
HWY_INLINE void ConvertLoop(D d, F f, const From* x, To* y, size_t n) {
  const hn::Rebind<From, D> df;
  const hn::Rebind<To, D> dt;
  const size_t lanes = hn::Lanes(d);
  size_t i = 0;
  for (; i + lanes <= n; i += lanes) hn::StoreU(f(hn::LoadU(df, x + i)), dt, y + i);
  if (i == n) return;
  HWY_ALIGN From in[HWY_MAX_BYTES / sizeof(From)] = {};
  HWY_ALIGN To out[HWY_MAX_BYTES / sizeof(To)];
  std::memcpy(in, x + i, (n - i) * sizeof(From));
  hn::Store(f(hn::Load(df, in)), dt, out);
  std::memcpy(y + i, out, (n - i) * sizeof(To));
}

// float to int32 as the generic kernel: NaN is 0, out-of-range values saturate, the rest
// truncate. Clamping first keeps the instruction's out-of-range result out of the picture.
template <class D>
HWY_INLINE hn::Vec<hn::RebindToSigned<D>> FloatToInt32(D d, V<D> v) {
  const hn::RebindToSigned<D> di;
  const V<D> limit = hn::Set(d, 2147483648.0f);
  const V<D> finite = hn::IfThenZeroElse(hn::IsNaN(v), v);
  const V<D> inside = hn::Min(hn::Max(finite, hn::Neg(limit)), hn::Set(d, 2147483520.0f));
  const auto r = hn::ConvertTo(di, inside);
  return hn::IfThenElse(hn::RebindMask(di, hn::Ge(v, limit)), hn::Set(di, INT32_MAX), r);
}

// float to bfloat16 as bfloat16_t does: round to nearest even, NaN stays a quiet NaN.
template <class D>
HWY_INLINE auto FloatToBf16(D d, V<D> v) {
  const hn::RebindToUnsigned<D> du;
  const hn::RebindToSigned<D> di;
  const auto u = hn::BitCast(du, v);
  const auto lsb = hn::And(hn::ShiftRight<16>(u), hn::Set(du, 1));
  const auto rounded = hn::ShiftRight<16>(hn::Add(hn::Add(u, hn::Set(du, 0x7fff)), lsb));
  const auto nan = hn::Or(hn::ShiftRight<16>(u), hn::Set(du, 0x40));
  const auto bits = hn::IfThenElse(hn::RebindMask(du, hn::IsNaN(v)), nan, rounded);
  return hn::DemoteTo(hn::Rebind<uint16_t, D>(), hn::BitCast(di, bits));
}

bool RunConvert(DType from, DType to, const void* x, void* y, int64_t n) {
  const hn::ScalableTag<float> df;
  const hn::ScalableTag<double> dd;
  const size_t len = size_t(n);
  const auto* xf = static_cast<const float*>(x);
  using VF = V<decltype(df)>;
  if (from == DType::float32 && to == DType::int32) {
    ConvertLoop(
        df, [df](VF v) HWY_ATTR { return FloatToInt32(df, v); }, xf, static_cast<int32_t*>(y), len);
    return true;
  }
  if (from == DType::int32 && to == DType::float32) {
    ConvertLoop(
        df, [df](auto v) HWY_ATTR { return hn::ConvertTo(df, v); }, static_cast<const int32_t*>(x),
        static_cast<float*>(y), len);
    return true;
  }
  if (from == DType::float32 && to == DType::float64) {
    ConvertLoop(
        dd, [dd](auto v) HWY_ATTR { return hn::PromoteTo(dd, v); }, xf, static_cast<double*>(y),
        len);
    return true;
  }
  // The portable target's demotion saturates at FLT_MAX instead of rounding to inf.
  if (from == DType::float64 && to == DType::float32 && !PARAX_SIMD_PORTABLE) {
    const hn::Rebind<float, decltype(dd)> dhalf;
    ConvertLoop(
        dd, [dhalf](auto v) HWY_ATTR { return hn::DemoteTo(dhalf, v); },
        static_cast<const double*>(x), static_cast<float*>(y), len);
    return true;
  }
  if (from == DType::bfloat16 && to == DType::float32) {
    const hn::RebindToUnsigned<decltype(df)> du;
    ConvertLoop(
        df,
        [df, du](auto v)
            HWY_ATTR { return hn::BitCast(df, hn::ShiftLeft<16>(hn::PromoteTo(du, v))); },
        static_cast<const uint16_t*>(x), static_cast<float*>(y), len);
    return true;
  }
  if (from == DType::float32 && to == DType::bfloat16) {
    ConvertLoop(
        df, [df](VF v) HWY_ATTR { return FloatToBf16(df, v); }, xf, static_cast<uint16_t*>(y), len);
    return true;
  }
#if HWY_TARGET == HWY_AVX2 || PARAX_SIMD_AVX512
  // F16C's conversions (and AVX-512's) round to nearest even and keep NaN payloads as
  // float16_t does; Highway's emulation on other targets truncates, so those use the
  // generic kernel.
  if (from == DType::float16 && to == DType::float32) {
    ConvertLoop(
        df, [df](auto v) HWY_ATTR { return hn::PromoteTo(df, v); },
        static_cast<const hwy::float16_t*>(x), static_cast<float*>(y), len);
    return true;
  }
  if (from == DType::float32 && to == DType::float16) {
    const hn::Rebind<hwy::float16_t, decltype(df)> dh;
    ConvertLoop(
        df, [dh](VF v) HWY_ATTR { return hn::DemoteTo(dh, v); }, xf,
        static_cast<hwy::float16_t*>(y), len);
    return true;
  }
#endif
  return false;
}

}  // namespace

bool BinaryF32(BinaryOp op, In<float> a, In<float> b, float* y, int64_t n, Store store) {
  return RunBinary(op, a, b, y, n, store);
}
bool BinaryF64(BinaryOp op, In<double> a, In<double> b, double* y, int64_t n, Store store) {
  return RunBinary(op, a, b, y, n, store);
}
void CopyStreaming(const float* x, float* y, int64_t n) {
  const hn::ScalableTag<float> d;
  MapTo(
      d, [](auto, auto v) HWY_ATTR { return v; }, y, size_t(n), Store::stream, In<float>{x, false});
}
bool CompareF32(CompareOp op, In<float> a, In<float> b, bool* y, int64_t n) {
  return RunCompare(op, a, b, y, n);
}
bool ClampF32(In<float> lo, const float* x, In<float> hi, float* y, int64_t n) {
  return RunClamp(lo, x, hi, y, n);
}
bool ClampF64(In<double> lo, const double* x, In<double> hi, double* y, int64_t n) {
  return RunClamp(lo, x, hi, y, n);
}
bool Select(int bytes, const bool* which, const void* on_false, const void* on_true, void* y,
            int64_t n) {
  return RunSelect(bytes, which, on_false, on_true, y, n);
}
bool Convert(DType from, DType to, const void* x, void* y, int64_t n) {
  return RunConvert(from, to, x, y, n);
}

}  // namespace HWY_NAMESPACE
}  // namespace parax::prims::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parax::prims::simd {

HWY_EXPORT(BinaryF32);
HWY_EXPORT(BinaryF64);
HWY_EXPORT(CopyStreaming);
HWY_EXPORT(CompareF32);
HWY_EXPORT(ClampF32);
HWY_EXPORT(ClampF64);
HWY_EXPORT(Select);
HWY_EXPORT(Convert);

bool binary(BinaryOp op, In<float> a, In<float> b, float* y, int64_t n, Store store) {
  return HWY_DYNAMIC_DISPATCH(BinaryF32)(op, a, b, y, n, store);
}
bool binary(BinaryOp op, In<double> a, In<double> b, double* y, int64_t n, Store store) {
  return HWY_DYNAMIC_DISPATCH(BinaryF64)(op, a, b, y, n, store);
}
void copy_streaming(const float* x, float* y, int64_t n) {
  HWY_DYNAMIC_DISPATCH(CopyStreaming)(x, y, n);
}
bool compare(CompareOp op, In<float> a, In<float> b, bool* y, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(CompareF32)(op, a, b, y, n);
}
bool clamp(In<float> lo, const float* x, In<float> hi, float* y, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ClampF32)(lo, x, hi, y, n);
}
bool clamp(In<double> lo, const double* x, In<double> hi, double* y, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(ClampF64)(lo, x, hi, y, n);
}
bool select(int bytes, const bool* which, const void* on_false, const void* on_true, void* y,
            int64_t n) {
  return HWY_DYNAMIC_DISPATCH(Select)(bytes, which, on_false, on_true, y, n);
}
bool convert(DType from, DType to, const void* x, void* y, int64_t n) {
  return HWY_DYNAMIC_DISPATCH(Convert)(from, to, x, y, n);
}

}  // namespace parax::prims::simd
#endif  // HWY_ONCE
