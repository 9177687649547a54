// The unary elementwise primitives: one row per primitive (name, accepted dtypes, bool
// result?, scalar function, vector loop), plus round, integer_pow and copy, which read
// params or move bytes, and asinh, acosh, atanh and erfc, which run SLEEF's loops at every
// floating dtype. The scalar functions are the C++ library's in the compute type; floating
// dtypes run the vector loops of simd.h where a row names one.
#include <cstring>
#include <numbers>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"
#include "prims/kernels/simd_sleef.h"

namespace parax::prims {
namespace {

template <class C>
C negate(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return -x;
  } else {
    return C(wrap_t<C>(0) - wrap_t<C>(x));  // -MIN wraps to MIN, as in XLA
  }
}

template <class C>
C absolute(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::abs(x);
  } else {
    return x < 0 ? negate(x) : x;
  }
}

// sign keeps NaN and the sign of zero; unsigned values are 0 or 1.
template <class C>
C signum(C x) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::isnan(x) || x == 0 ? x : std::copysign(C(1), x);
  } else if constexpr (std::is_signed_v<C>) {
    return C((x > 0) - (x < 0));
  } else {
    return C(x != 0);
  }
}

template <class C>
C bit_not(C x) {
  if constexpr (std::is_same_v<C, bool>) {
    return !x;
  } else {
    return C(~x);
  }
}

// Giles' single-precision approximation ("Approximating the erfinv function", 2010) as a
// start, then Newton steps in double: on erf near 0, and on log(erfc) towards ±1, where
// erf has lost the digits of 1 - |y| and erfc decays too fast for plain Newton.
double erf_inv(double y) {
  const double a = std::abs(y);
  if (a == 1) return std::copysign(HUGE_VAL, y);
  if (!(a < 1)) return std::numeric_limits<double>::quiet_NaN();
  if (a == 0) return y;
  double w = -std::log((1 - a) * (1 + a));
  double p;
  if (w < 5) {
    w -= 2.5;
    p = 2.81022636e-08;
    for (double k : {3.43273939e-07, -3.5233877e-06, -4.39150654e-06, 0.00021858087, -0.00125372503,
                     -0.00417768164, 0.246640727, 1.50140941}) {
      p = k + p * w;
    }
  } else {
    w = std::sqrt(w) - 3;
    p = -0.000200214257;
    for (double k : {0.000100950558, 0.00134934322, -0.00367342844, 0.00573950773, -0.0076224613,
                     0.00943887047, 1.00167406, 2.83297682}) {
      p = k + p * w;
    }
  }
  double x = p * a;
  const double two_over_sqrt_pi = 1.1283791670955126;
  for (int i = 0; i < 8; ++i) {
    const double slope = two_over_sqrt_pi * std::exp(-x * x);
    double step;
    if (a < 0.5) {
      step = (std::erf(x) - a) / slope;
    } else {
      const double c = std::erfc(x);
      step = (std::log1p(-a) - std::log(c)) * c / slope;
    }
    x -= step;
    if (std::abs(step) <= 1e-16 * x) break;
  }
  return std::copysign(x, y);
}

// Derivatives as JAX's lax.py defines them: the tangent of the result given the operand's
// tangent t (never a symbolic zero here), the operand x and the result y. Each is linear in
// t: t only ever meets mul by primal values, neg, add and select.
Array c(const Array& like, double value) { return constant(value, like.dtype()); }
Array sq(const Array& x) { return lax::mul(x, x); }

Array d_neg(const Array& t, const Array&, const Array&) { return lax::neg(t); }
Array d_abs(const Array& t, const Array& x, const Array&) {
  return lax::select(lax::ge(x, c(x, 0)), t, lax::neg(t));
}
Array d_exp(const Array& t, const Array&, const Array& y) { return lax::mul(t, y); }
Array d_exp2(const Array& t, const Array& x, const Array& y) {
  return lax::mul(c(x, std::numbers::ln2), lax::mul(t, y));
}
Array d_log(const Array& t, const Array& x, const Array&) { return lax::div(t, x); }
Array d_log1p(const Array& t, const Array& x, const Array&) {
  return lax::div(t, lax::add(x, c(x, 1)));
}
Array d_expm1(const Array& t, const Array&, const Array& y) {
  return lax::mul(t, lax::add(y, c(y, 1)));
}
Array d_sin(const Array& t, const Array& x, const Array&) { return lax::mul(t, lax::cos(x)); }
Array d_cos(const Array& t, const Array& x, const Array&) {
  return lax::neg(lax::mul(t, lax::sin(x)));
}
Array d_tan(const Array& t, const Array& x, const Array& y) {
  return lax::mul(t, lax::add(c(x, 1), sq(y)));
}
Array d_asin(const Array& t, const Array& x, const Array&) {
  return lax::mul(t, lax::rsqrt(lax::sub(c(x, 1), sq(x))));
}
Array d_acos(const Array& t, const Array& x, const Array&) {
  return lax::mul(t, lax::neg(lax::rsqrt(lax::sub(c(x, 1), sq(x)))));
}
Array d_atan(const Array& t, const Array& x, const Array&) {
  return lax::div(t, lax::add(c(x, 1), sq(x)));
}
Array d_sinh(const Array& t, const Array& x, const Array&) { return lax::mul(t, lax::cosh(x)); }
Array d_cosh(const Array& t, const Array& x, const Array&) { return lax::mul(t, lax::sinh(x)); }
Array d_tanh(const Array& t, const Array& x, const Array& y) {
  return lax::mul(lax::add(t, lax::mul(t, y)), lax::sub(c(x, 1), y));
}
Array d_sqrt(const Array& t, const Array& x, const Array& y) {
  return lax::mul(t, lax::div(c(x, 0.5), y));
}
Array d_rsqrt(const Array& t, const Array& x, const Array& y) {
  return lax::mul(t, lax::mul(c(x, -0.5), lax::div(y, x)));
}
Array d_cbrt(const Array& t, const Array& x, const Array& y) {
  return lax::mul(t, lax::mul(c(x, 1.0 / 3.0), lax::integer_pow(y, -2)));
}
Array d_logistic(const Array& t, const Array&, const Array& y) {
  return lax::mul(t, lax::mul(y, lax::sub(c(y, 1), y)));
}
Array d_erf(const Array& t, const Array& x, const Array&) {
  return lax::mul(c(x, std::numbers::inv_sqrtpi * 2), lax::mul(t, lax::exp(lax::neg(sq(x)))));
}
Array d_erf_inv(const Array& t, const Array& x, const Array& y) {
  return lax::mul(t, lax::mul(c(x, 0.5 / std::numbers::inv_sqrtpi), lax::exp(sq(y))));
}
Array d_asinh(const Array& t, const Array& x, const Array&) {
  return lax::mul(t, lax::rsqrt(lax::add(sq(x), c(x, 1))));
}
Array d_acosh(const Array& t, const Array& x, const Array&) {
  return lax::mul(t, lax::rsqrt(lax::sub(sq(x), c(x, 1))));
}
Array d_atanh(const Array& t, const Array& x, const Array&) {
  return lax::mul(lax::integer_pow(lax::add(c(x, 1), x), -1), lax::div(t, lax::sub(c(x, 1), x)));
}
Array d_erfc(const Array& t, const Array& x, const Array&) {
  return lax::mul(c(x, -2.0 * std::numbers::inv_sqrtpi), lax::mul(t, lax::exp(lax::neg(sq(x)))));
}

using Derivative = Array (*)(const Array& t, const Array& x, const Array& y);

// Integer and bool results, and symbolic-zero tangents, give symbolic zeros.
template <Derivative D>
std::vector<Array> unary_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                             std::span<const Array> outs, const Params&) {
  if (!tangents[0].valid() || !has_tangent(outs[0].dtype())) return {Array()};
  return {D(tangents[0], primals[0], outs[0])};
}

// A unary elementwise primitive as data; f takes and returns compute values, and kSimd
// names its vector loop in simd.h (none: the generic loop only).
#define PARAX_UNARY_OP(prim, accepts, predicate, expr, simd_op, jvp) \
  struct prim##_op {                                                 \
    static constexpr core::Prim kPrim = core::Prim::prim;            \
    static constexpr Accepts kAccepts = accepts;                     \
    static constexpr bool kPredicate = predicate;                    \
    static constexpr simd::UnaryOp kSimd = simd::UnaryOp::simd_op;   \
    template <class C>                                               \
    static auto f(C x) {                                             \
      return expr;                                                   \
    }                                                                \
  };

// The last column is the jvp rule: unary_jvp of a derivative above, or zero_jvp where the
// function is piecewise constant (or its values are not differentiable).
#define PARAX_UNARY_ROWS(X)                                                                   \
  X(neg, kNumber, false, negate(x), neg, unary_jvp<d_neg>)                                    \
  X(abs, kSignedNumber, false, absolute(x), abs, unary_jvp<d_abs>)                            \
  X(sign, kNumber, false, signum(x), sign, zero_jvp)                                          \
  X(floor, kFloating, false, std::floor(x), floor, zero_jvp)                                  \
  X(ceil, kFloating, false, std::ceil(x), ceil, zero_jvp)                                     \
  X(exp, kInexact, false, std::exp(x), exp, unary_jvp<d_exp>)                                 \
  X(exp2, kInexact, false, std::exp2(x), exp2, unary_jvp<d_exp2>)                             \
  X(log, kInexact, false, std::log(x), log, unary_jvp<d_log>)                                 \
  X(log1p, kInexact, false, std::log1p(x), log1p, unary_jvp<d_log1p>)                         \
  X(expm1, kInexact, false, std::expm1(x), expm1, unary_jvp<d_expm1>)                         \
  X(sin, kInexact, false, std::sin(x), sin, unary_jvp<d_sin>)                                 \
  X(cos, kInexact, false, std::cos(x), cos, unary_jvp<d_cos>)                                 \
  X(tan, kInexact, false, std::tan(x), tan, unary_jvp<d_tan>)                                 \
  X(asin, kInexact, false, std::asin(x), asin, unary_jvp<d_asin>)                             \
  X(acos, kInexact, false, std::acos(x), acos, unary_jvp<d_acos>)                             \
  X(atan, kInexact, false, std::atan(x), atan, unary_jvp<d_atan>)                             \
  X(sinh, kInexact, false, std::sinh(x), sinh, unary_jvp<d_sinh>)                             \
  X(cosh, kInexact, false, std::cosh(x), cosh, unary_jvp<d_cosh>)                             \
  X(tanh, kInexact, false, std::tanh(x), tanh, unary_jvp<d_tanh>)                             \
  X(sqrt, kInexact, false, std::sqrt(x), sqrt, unary_jvp<d_sqrt>)                             \
  X(rsqrt, kInexact, false, C(1) / std::sqrt(x), rsqrt, unary_jvp<d_rsqrt>)                   \
  X(cbrt, kFloating, false, std::cbrt(x), cbrt, unary_jvp<d_cbrt>)                            \
  X(logistic, kInexact, false, C(1) / (C(1) + std::exp(-x)), logistic, unary_jvp<d_logistic>) \
  X(erf, kFloating, false, std::erf(x), erf, unary_jvp<d_erf>)                                \
  X(erf_inv, kFloating, false, C(erf_inv(double(x))), none, unary_jvp<d_erf_inv>)             \
  X(is_finite, kFloating, true, std::isfinite(x), none, zero_jvp)                             \
  X(not_, kBoolOrInt, false, bit_not(x), none, zero_jvp)

PARAX_UNARY_ROWS(PARAX_UNARY_OP)

// The result keeps the operand's type (a predicate's is bool, still weak if it was: JAX
// keeps weak_type there too).
template <class Op>
std::vector<Aval> unary_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 1, "operands of " << core::prim_name(Op::kPrim));
  check_accepts(core::prim_name(Op::kPrim), in[0], Op::kAccepts);
  Aval out = in[0];
  if (Op::kPredicate) out.dtype = DType::bool_;
  return {out};
}

template <class Op>
void unary_kernel(const KernelCall& c) {
  if (run_simd(Op::kSimd, c)) return;
  dispatch_kinds<Op::kAccepts.kinds>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    using Out = std::conditional_t<Op::kPredicate, bool, T>;
    map_elements<Out, T>(c, [](T x) { return Out(Op::f(C(x))); });
  });
}

template <class Op>
constexpr PrimRules unary_rules{.abstract_eval = &unary_eval<Op>,
                                .sharding_rule = &elementwise_sharding_rule,
                                .kernel = &unary_kernel<Op>,
                                .batch = &elementwise_batch<Op::kPrim>};

// asinh, acosh, atanh and erfc: SLEEF's vector loops (kernels/simd_sleef.h) serve every
// floating dtype, halves through float32 tiles, so they have no scalar form.
template <core::Prim P, simd::SleefOp kOp, Derivative D>
struct SleefUnary {
  static std::vector<Aval> eval(std::span<const Aval> in, const Params&) {
    PARAX_CHECK(in.size() == 1, "operands of " << core::prim_name(P));
    check_accepts(core::prim_name(P), in[0], P == core::Prim::erfc ? kFloating : kInexact);
    return {in[0]};
  }
  static void kernel(const KernelCall& call) { simd::run_sleef(kOp, call); }
  static constexpr PrimRules rules{.abstract_eval = &eval,
                                   .sharding_rule = &elementwise_sharding_rule,
                                   .kernel = &kernel,
                                   .jvp = &unary_jvp<D>,
                                   .batch = &elementwise_batch<P>};
};

// round: 0 rounds halves away from zero, 1 to even (lax.RoundingMethod).
int64_t rounding_method(const Params& params) {
  const int64_t m = params.has("rounding_method") ? params.get<int64_t>("rounding_method") : 0;
  if (m != 0 && m != 1) {
    const std::string msg =
        "[round] rounding_method must be 0 (AWAY_FROM_ZERO) or 1 (TO_NEAREST_EVEN), got ";
    throw ValueError(msg + std::to_string(m) + ".");
  }
  return m;
}

// Independent of the floating-point environment's rounding mode, unlike nearbyint.
template <class C>
C round_half_even(C x) {
  if (std::abs(x - std::trunc(x)) != C(0.5)) return std::round(x);
  return C(2) * std::round(x / C(2));
}

std::vector<Aval> round_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "operands of round");
  check_accepts("round", in[0], kFloating);
  rounding_method(params);
  return {in[0]};
}

void round_kernel(const KernelCall& c) {
  const bool to_even = rounding_method(c.params) == 1;
  if (run_simd(to_even ? simd::UnaryOp::round_even : simd::UnaryOp::round_away, c)) return;
  dispatch_kinds<kFloatKind>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    if (to_even) {
      map_elements<T, T>(c, [](T x) { return T(round_half_even(C(x))); });
    } else {
      map_elements<T, T>(c, [](T x) { return T(std::round(C(x))); });
    }
  });
}

// integer_pow multiplies by repeated squaring as JAX's lowering does, rounding every
// product to T, so half-precision results match XLA's bit for bit.
template <class T>
T integer_power(T x, int64_t y) {
  using C = compute_t<T>;
  auto mul = [](T a, T b) {
    if constexpr (std::is_integral_v<T>) {
      return T(wrap_t<T>(a) * wrap_t<T>(b));
    } else {
      return T(C(a) * C(b));
    }
  };
  uint64_t n = y < 0 ? 0 - uint64_t(y) : uint64_t(y);
  T acc = T(C(1));
  for (T base = x; n != 0; n >>= 1) {
    if (n & 1) acc = mul(acc, base);
    if (n > 1) base = mul(base, base);
  }
  if constexpr (std::is_integral_v<T>) {
    return acc;
  } else {
    return y < 0 ? T(C(1) / C(acc)) : acc;
  }
}

std::vector<Aval> integer_pow_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "operands of integer_pow");
  check_accepts("integer_pow", in[0], kNumber);
  const int64_t y = params.get<int64_t>("y");
  if (y < 0 && is_integer(in[0].dtype)) {
    throw TypeError("Integers cannot be raised to negative powers, got integer_pow(ShapedArray(" +
                    in[0].str() + (in[0].weak_type ? ", weak_type=True" : "") + "), " +
                    std::to_string(y) + ")");
  }
  return {in[0]};
}

void integer_pow_kernel(const KernelCall& c) {
  const int64_t y = c.params.get<int64_t>("y");
  dispatch_kinds<kNumber.kinds>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    map_elements<T, T>(c, [y](T x) { return integer_power(x, y); });
  });
}

std::vector<Aval> copy_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 1, "operands of copy");
  return {in[0]};
}

void copy_kernel(const KernelCall& c) {
  const auto* src = static_cast<const uint8_t*>(c.inputs[0]);
  auto* dst = static_cast<uint8_t*>(c.outputs[0]);
  parallel_chunks(int64_t(c.out_avals[0].nbytes()), 8 * kElementGrain,
                  [&](int64_t begin, int64_t end) {
                    std::memcpy(dst + begin, src + begin, size_t(end - begin));
                  });
}

// neg and copy are linear: their transposes apply themselves to the cotangent.
std::vector<Array> neg_transpose(std::span<const Array> cts, std::span<const Array>,
                                 std::span<const bool>, const Params&) {
  return {cts[0].valid() ? lax::neg(cts[0]) : Array()};
}

std::vector<Array> copy_jvp(std::span<const Array>, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params&) {
  if (!tangents[0].valid() || !has_tangent(outs[0].dtype())) return {Array()};
  return {lax::copy(tangents[0])};
}

std::vector<Array> copy_transpose(std::span<const Array> cts, std::span<const Array>,
                                  std::span<const bool>, const Params&) {
  return {cts[0].valid() ? lax::copy(cts[0]) : Array()};
}

constexpr core::TransposeFn unary_transpose(core::Prim p) {
  return p == core::Prim::neg ? &neg_transpose : nullptr;
}

// y x^(y-1) t, as JAX; x^0 is constant, so y == 0 has a zero tangent.
std::vector<Array> integer_pow_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array> outs, const Params& params) {
  const int64_t y = params.get<int64_t>("y");
  if (!tangents[0].valid() || !has_tangent(outs[0].dtype()) || y == 0) return {Array()};
  const Array& x = primals[0];
  return {lax::mul(tangents[0], lax::mul(c(x, double(y)), lax::integer_pow(x, y - 1)))};
}

}  // namespace

#define PARAX_UNARY_RULES(prim, accepts, predicate, expr, simd_op, jvp) \
  extern const PrimRules prim##_rules =                                 \
      with_autodiff(unary_rules<prim##_op>, &jvp, unary_transpose(core::Prim::prim));
PARAX_UNARY_ROWS(PARAX_UNARY_RULES)
#undef PARAX_UNARY_RULES

extern const PrimRules asinh_rules =
    SleefUnary<core::Prim::asinh, simd::SleefOp::asinh, d_asinh>::rules;
extern const PrimRules acosh_rules =
    SleefUnary<core::Prim::acosh, simd::SleefOp::acosh, d_acosh>::rules;
extern const PrimRules atanh_rules =
    SleefUnary<core::Prim::atanh, simd::SleefOp::atanh, d_atanh>::rules;
extern const PrimRules erfc_rules =
    SleefUnary<core::Prim::erfc, simd::SleefOp::erfc, d_erfc>::rules;
extern const PrimRules round_rules = {.abstract_eval = &round_eval,
                                      .sharding_rule = &elementwise_sharding_rule,
                                      .kernel = &round_kernel,
                                      .jvp = &zero_jvp,
                                      .batch = &elementwise_batch<core::Prim::round>};
extern const PrimRules integer_pow_rules = {.abstract_eval = &integer_pow_eval,
                                            .sharding_rule = &elementwise_sharding_rule,
                                            .kernel = &integer_pow_kernel,
                                            .jvp = &integer_pow_jvp,
                                            .batch = &elementwise_batch<core::Prim::integer_pow>};
extern const PrimRules copy_rules = {.abstract_eval = &copy_eval,
                                     .sharding_rule = &elementwise_sharding_rule,
                                     .kernel = &copy_kernel,
                                     .jvp = &copy_jvp,
                                     .transpose = &copy_transpose,
                                     .batch = &elementwise_batch<core::Prim::copy>};

}  // namespace parax::prims
