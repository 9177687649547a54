// simd::unary for float32 and float64, compiled once per Highway target: foreach_target.h
// includes this file again for each. Where each function comes from, with the max error
// the tests hold it to (ulp of the result's type, any input; see simd_test.cpp):
//   exact: neg, abs, sign, floor, ceil, round (either method), sqrt;
//   rsqrt = 1/sqrt(x), as the generic kernel: two correct roundings, < 1.5 ulp (the
//     approximate rsqrt instruction is off by ~1e-3 and would need Newton steps);
//   Highway contrib/math, within its documented bound: exp 1, expm1 4, log 4, sin/cos 3
//     (for |x| <= 39000), acos 2, atan 3, tanh 4;
//   logistic = 1/(1 + exp(-x)) with Highway's exp, as the generic kernel: 3 (exp's 1 ulp
//     carried through two more roundings; measured 2.4);
//   SLEEF 3.5.1: u35 variants (3.5 ulp) for tan, asin, sinh, cosh, cbrt; u10 (1.0 ulp) for
//     exp2, log1p, erf (no u35 exists, or exp2's u10 already runs at memory speed),
//     and for sin/cos beyond Highway's range (documented to 1e28 in float32; tested to
//     FLT_MAX), which keeps those within 3.
// The policy is speed within a few ulp, as XLA's CPU kernels: u35 runs 2.1-2.7x faster than
// u10 here (AVX2, in cache, ns per element: tan 0.54 vs 1.48, asin 0.45 vs 0.94, sinh 0.77
// vs 1.76, cbrt 0.88 vs 2.06). Highway's asin and log1p measured 2.3-2.5 ulp against their
// documented 2, so SLEEF serves those.
// Fix-ups: Highway's functions get NaN passed through and the special values their
// polynomials miss (±0, ±inf, log(0), exp overflow); lanes near overflow where SLEEF's
// log1p, sinh, cosh and pow return inf for finite results go to libm.
#undef HWY_TARGET_INCLUDE
#define HWY_TARGET_INCLUDE "prims/kernels/simd_unary.cpp"
// AVX-512 machines get their whole width (AVX3, and AVX3_DL, which Highway leaves out unless
// asked); SSSE3 machines are served by the portable target, which saves compile time.
#ifndef HWY_DISABLED_TARGETS
#define HWY_DISABLED_TARGETS HWY_SSSE3
#endif
#ifndef HWY_WANT_AVX3_DL
#define HWY_WANT_AVX3_DL
#endif
#include <hwy/foreach_target.h>  // IWYU pragma: keep

#include <hwy/contrib/math/math-inl.h>
#include <hwy/highway.h>

#include <cmath>
#include <limits>

#include "prims/kernels/simd_target.h"

HWY_BEFORE_NAMESPACE();
namespace parax::prims::simd {
namespace HWY_NAMESPACE {
namespace {

// Beyond this |x|, Highway's sin and cos lose accuracy (documented range; garbage from ~3e8).
constexpr double kTrigLimit = 39000;

template <class D>
using V = hn::Vec<D>;

template <class D>
HWY_INLINE V<D> PosInf(D d) {
  return hn::Set(d, std::numeric_limits<hn::TFromD<D>>::infinity());
}

// Lanes where x is NaN return x (Highway's exp returns 0 there, its log 89).
template <class D>
HWY_INLINE V<D> KeepNaN(D, V<D> x, V<D> y) {
  return hn::IfThenElse(hn::IsNaN(x), x, y);
}

// An odd function's value at ±0 is x itself; Highway's sin returns +0 for -0.
template <class D>
HWY_INLINE V<D> KeepZero(D d, V<D> x, V<D> y) {
  return hn::IfThenElse(hn::Eq(x, hn::Zero(d)), x, y);
}

// y[i] = f(x[i], y[i]) lane by lane, for the rare vectors holding a lane some vector
// function does not cover.
template <class D, class F>
HWY_INLINE V<D> PerLane(D d, V<D> x, V<D> y, F f) {
  using T = hn::TFromD<D>;
  HWY_ALIGN T xs[HWY_MAX_BYTES / sizeof(T)];
  HWY_ALIGN T ys[HWY_MAX_BYTES / sizeof(T)];
  hn::Store(x, d, xs);
  hn::Store(y, d, ys);
  for (size_t i = 0; i < hn::Lanes(d); ++i) ys[i] = f(xs[i], ys[i]);
  return hn::Load(d, ys);
}

#define PARAX_UNARY_FN(Name, body)                  \
  struct Name {                                     \
    template <class D>                              \
    HWY_INLINE V<D> operator()(D d, V<D> x) const { \
      using T = hn::TFromD<D>;                      \
      (void)sizeof(T);                              \
      body                                          \
    }                                               \
  };

// SLEEF's function `fn` with accuracy suffix `acc`, for this target and lane type.
#define PARAX_SLEEF_FN(Name, fn, acc)                                                             \
  PARAX_UNARY_FN(                                                                                 \
      Name, if constexpr (sizeof(T) == 4) { return Sleef1(d, PARAX_SLEEF_F(fn, acc), x); } else { \
        return Sleef1(d, PARAX_SLEEF_D(fn, acc), x);                                              \
      })

PARAX_UNARY_FN(Neg, return hn::Neg(x);)
PARAX_UNARY_FN(Abs, return hn::Abs(x);)
PARAX_UNARY_FN(Sign, {
  const auto keep = hn::Or(hn::IsNaN(x), hn::Eq(x, hn::Zero(d)));
  return hn::IfThenElse(keep, x, hn::CopySign(hn::Set(d, T(1)), x));
})
PARAX_UNARY_FN(Floor, return hn::Floor(x);)
PARAX_UNARY_FN(Ceil, return hn::Ceil(x);)
// x - trunc(x) is exact, so comparing it with 1/2 finds the halfway cases exactly.
PARAX_UNARY_FN(RoundAway, {
  const V<D> t = hn::Trunc(x);
  const auto up = hn::Ge(hn::Abs(hn::Sub(x, t)), hn::Set(d, T(0.5)));
  return hn::IfThenElse(up, hn::Add(t, hn::CopySign(hn::Set(d, T(1)), x)), t);
})
PARAX_UNARY_FN(RoundEven, return hn::Round(x);)
PARAX_UNARY_FN(Sqrt, return hn::Sqrt(x);)
PARAX_UNARY_FN(Rsqrt, return hn::Div(hn::Set(d, T(1)), hn::Sqrt(x));)

// Highway's exp wraps around past log(max) (exp(200) = 0 in float32) instead of
// overflowing to inf.
template <class D>
HWY_INLINE V<D> ExpFixed(D d, V<D> x) {
  using T = hn::TFromD<D>;
  const T overflow = sizeof(T) == 4 ? T(88.72283935546875) : T(709.782712893384);
  const V<D> y = hn::IfThenElse(hn::Gt(x, hn::Set(d, overflow)), PosInf(d), hn::Exp(d, x));
  return KeepNaN(d, x, y);
}
PARAX_UNARY_FN(Exp, return ExpFixed(d, x);)
// Highway's expm1 wraps past log(max) as its exp does, and returns +0 for -0.
PARAX_UNARY_FN(Expm1, {
  const T overflow = sizeof(T) == 4 ? T(88.72283935546875) : T(709.782712893384);
  const V<D> y = hn::IfThenElse(hn::Gt(x, hn::Set(d, overflow)), PosInf(d), hn::Expm1(d, x));
  return KeepZero(d, x, KeepNaN(d, x, y));
})
// 1/(1 + e^-x) as the generic kernel and XLA compute it: below log(min normal) the result
// flushes to 0 when e^-x overflows.
PARAX_UNARY_FN(Logistic, {
  const V<D> one = hn::Set(d, T(1));
  return hn::Div(one, hn::Add(one, ExpFixed(d, hn::Neg(x))));
})
// Highway's log has no special cases (log(0) = -105, log(-1) = 177, log(inf) = 88.7 in
// float32): log(±0) = -inf, log(inf) = inf, log(x < 0) = NaN.
PARAX_UNARY_FN(Log, {
  const V<D> inf = PosInf(d);
  V<D> y = hn::IfThenElse(hn::Eq(x, hn::Zero(d)), hn::Neg(inf), hn::Log(d, x));
  y = hn::IfThenElse(hn::Eq(x, inf), inf, y);
  y = hn::IfThenElse(hn::Lt(x, hn::Zero(d)), hn::Set(d, std::numeric_limits<T>::quiet_NaN()), y);
  return KeepNaN(d, x, y);
})
PARAX_UNARY_FN(Acos, return hn::Acos(d, x);)
PARAX_UNARY_FN(Atan, return hn::Atan(d, x);)
PARAX_UNARY_FN(Tanh, return hn::Tanh(d, x);)

PARAX_SLEEF_FN(SleefSin, sin, u10)
PARAX_SLEEF_FN(SleefCos, cos, u10)
PARAX_SLEEF_FN(Exp2, exp2, u10)
PARAX_SLEEF_FN(SleefLog1p, log1p, u10)
PARAX_SLEEF_FN(Erf, erf, u10)
PARAX_SLEEF_FN(Tan, tan, u35)
PARAX_SLEEF_FN(Asin, asin, u35)
PARAX_SLEEF_FN(SleefSinh, sinh, u35)
PARAX_SLEEF_FN(SleefCosh, cosh, u35)
PARAX_SLEEF_FN(Cbrt, cbrt, u35)

// Highway's sin/cos, or SLEEF's for a vector holding a lane outside Highway's range (rare
// in practice, so the branch costs one test per vector).
template <class D, class Fast, class Full>
HWY_INLINE V<D> Trig(D d, V<D> x, Fast fast, Full full) {
  using T = hn::TFromD<D>;
  const auto far = hn::Not(hn::Le(hn::Abs(x), hn::Set(d, T(kTrigLimit))));
  if (HWY_UNLIKELY(!hn::AllFalse(d, far))) return full(d, x);
  return fast(d, x);
}
PARAX_UNARY_FN(Sin, {
  return Trig(
      d, x, [](D d, V<D> v) HWY_ATTR { return KeepZero(d, v, hn::Sin(d, v)); }, SleefSin{});
})
PARAX_UNARY_FN(Cos, return Trig(
                        d, x, [](D d, V<D> v) HWY_ATTR { return hn::Cos(d, v); }, SleefCos{});)

// SLEEF's sinh and cosh overflow to inf early (from |x| ~ 88.7 in float, ~709.8 in double,
// where the results are still finite): lanes past these limits use long double libm.
template <class D, class Vector>
HWY_INLINE V<D> Hyperbolic(D d, V<D> x, Vector vector, long double (*scalar)(long double)) {
  using T = hn::TFromD<D>;
  const T limit = sizeof(T) == 4 ? T(88) : T(709);
  const V<D> y = vector(d, x);
  if (HWY_LIKELY(hn::AllFalse(d, hn::Gt(hn::Abs(x), hn::Set(d, limit))))) return y;
  return PerLane(d, x, y, [limit, scalar](T v, T r) {
    return std::abs(v) > limit ? T(scalar(static_cast<long double>(v))) : r;
  });
}
// SLEEF's log1p overflows for x near the largest finite values (log1p(FLT_MAX) = inf), so
// huge lanes use libm, which is accurate there.
PARAX_UNARY_FN(Log1p, {
  const V<D> y = SleefLog1p{}(d, x);
  const T huge = sizeof(T) == 4 ? T(1e30) : T(1e300);
  if (HWY_LIKELY(hn::AllFalse(d, hn::Gt(x, hn::Set(d, huge))))) return y;
  return PerLane(d, x, y, [huge](T v, T r) { return v > huge ? std::log1p(v) : r; });
})
PARAX_UNARY_FN(Sinh, return Hyperbolic(d, x, SleefSinh{}, [](long double v) { return sinhl(v); });)
PARAX_UNARY_FN(Cosh, return Hyperbolic(d, x, SleefCosh{}, [](long double v) { return coshl(v); });)

template <class T>
bool Run(UnaryOp op, const T* x, T* y, int64_t n, Store store) {
  const hn::ScalableTag<T> d;
  const In<T> in{x, false};
  const size_t len = size_t(n);
#if PARAX_SIMD_PORTABLE
  // The portable target's floor, ceil, trunc and round lose the sign of -0 (and its round
  // takes 0.49999997 to 1): the generic kernel does these.
  const bool rounding = op == UnaryOp::floor || op == UnaryOp::ceil || op == UnaryOp::round_away ||
                        op == UnaryOp::round_even;
  if (rounding) return false;
#endif
  switch (op) {
#define PARAX_CASE(op, Fn)             \
  case UnaryOp::op:                    \
    MapTo(d, Fn{}, y, len, store, in); \
    return true;
    PARAX_CASE(neg, Neg)
    PARAX_CASE(abs, Abs)
    PARAX_CASE(sign, Sign)
    PARAX_CASE(floor, Floor)
    PARAX_CASE(ceil, Ceil)
    PARAX_CASE(round_away, RoundAway)
    PARAX_CASE(round_even, RoundEven)
    PARAX_CASE(exp, Exp)
    PARAX_CASE(exp2, Exp2)
    PARAX_CASE(log, Log)
    PARAX_CASE(log1p, Log1p)
    PARAX_CASE(expm1, Expm1)
    PARAX_CASE(sin, Sin)
    PARAX_CASE(cos, Cos)
    PARAX_CASE(tan, Tan)
    PARAX_CASE(asin, Asin)
    PARAX_CASE(acos, Acos)
    PARAX_CASE(atan, Atan)
    PARAX_CASE(sinh, Sinh)
    PARAX_CASE(cosh, Cosh)
    PARAX_CASE(tanh, Tanh)
    PARAX_CASE(sqrt, Sqrt)
    PARAX_CASE(rsqrt, Rsqrt)
    PARAX_CASE(cbrt, Cbrt)
    PARAX_CASE(logistic, Logistic)
    PARAX_CASE(erf, Erf)
#undef PARAX_CASE
    case UnaryOp::none:
      break;
  }
  return false;
}

#undef PARAX_UNARY_FN
#undef PARAX_SLEEF_FN

}  // namespace

bool UnaryF32(UnaryOp op, const float* x, float* y, int64_t n, Store store) {
  return Run(op, x, y, n, store);
}
bool UnaryF64(UnaryOp op, const double* x, double* y, int64_t n, Store store) {
  return Run(op, x, y, n, store);
}

}  // namespace HWY_NAMESPACE
}  // namespace parax::prims::simd
HWY_AFTER_NAMESPACE();

#if HWY_ONCE
namespace parax::prims::simd {

HWY_EXPORT(UnaryF32);
HWY_EXPORT(UnaryF64);

bool unary(UnaryOp op, const float* x, float* y, int64_t n, Store store) {
  return HWY_DYNAMIC_DISPATCH(UnaryF32)(op, x, y, n, store);
}
bool unary(UnaryOp op, const double* x, double* y, int64_t n, Store store) {
  return HWY_DYNAMIC_DISPATCH(UnaryF64)(op, x, y, n, store);
}

bool use_target_for_test(const char* name) {
  if (name == nullptr || *name == '\0') {
    hwy::SetSupportedTargetsForTest(0);
    return true;
  }
  hwy::SetSupportedTargetsForTest(0);
  const int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  for (int64_t t = available; t != 0; t &= t - 1) {
    const int64_t target = t & -t;
    if (std::strcmp(hwy::TargetName(target), name) == 0) {
      hwy::SetSupportedTargetsForTest(target);
      return true;
    }
  }
  return false;
}

std::vector<std::string> targets_for_test() {
  hwy::SetSupportedTargetsForTest(0);
  std::vector<std::string> names;
  // Highway's bits run from the best target (lowest bit) to the portable one.
  for (int64_t t = hwy::SupportedTargets() & HWY_TARGETS; t != 0; t &= t - 1) {
    names.push_back(hwy::TargetName(t & -t));
  }
  return names;
}

const char* target_name() {
  const int64_t available = hwy::SupportedTargets() & HWY_TARGETS;
  return hwy::TargetName(available & -available);
}

}  // namespace parax::prims::simd
#endif  // HWY_ONCE
