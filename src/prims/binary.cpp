// The binary arithmetic and bitwise primitives: one row per primitive, with XLA's CPU
// semantics for the integer corner cases (wraparound, division by zero, shifts by the
// bit width or more).
#include <cmath>
#include <functional>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

template <class C, class F>
C wrapping(C a, C b, F op) {
  if constexpr (std::is_floating_point_v<C>) {
    return op(a, b);
  } else {
    return C(op(wrap_t<C>(a), wrap_t<C>(b)));
  }
}

// XLA defines what C++ leaves undefined: x / 0 is -1 (all bits set) and MIN / -1 is MIN.
template <class C>
C divide(C a, C b) {
  if constexpr (std::is_integral_v<C>) {
    if (b == 0) return C(-1);
    if constexpr (std::is_signed_v<C>) {
      if (a == std::numeric_limits<C>::min() && b == -1) return a;
    }
  }
  return C(a / b);
}

// Likewise x % 0 is x and MIN % -1 is 0; the result has the dividend's sign (C's fmod).
template <class C>
C remainder(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    return std::fmod(a, b);
  } else {
    if (b == 0) return a;
    if constexpr (std::is_signed_v<C>) {
      if (b == -1) return 0;
    }
    return C(a % b);
  }
}

// Steps a half-precision value by one ulp in its own format (stepping the float it
// computes in would round straight back).
template <class T, class C>
C next_after(C a, C b) {
  if constexpr (std::is_same_v<T, C>) {
    return std::nextafter(a, b);
  } else {
    if (std::isnan(a) || std::isnan(b)) return a + b;
    if (a == b) return b;
    const T tb(b);
    if (a == 0) return C(T::from_bits(uint16_t((tb.bits & 0x8000u) | 1u)));
    const bool away_from_zero = (a < b) == (a > 0);
    return C(T::from_bits(uint16_t(T(a).bits + (away_from_zero ? 1 : -1))));
  }
}

// Shift amounts are read as unsigned, so negative ones count as too large: those give 0,
// or the sign fill for the arithmetic shift (of the bit pattern, for unsigned types too).
template <class C>
bool shift_in_range(C b) {
  return std::make_unsigned_t<C>(b) < sizeof(C) * 8;
}
template <class C>
C shift_left(C a, C b) {
  return shift_in_range(b) ? C(wrap_t<C>(a) << b) : C(0);
}
template <class C>
C shift_right_logical(C a, C b) {
  return shift_in_range(b) ? C(std::make_unsigned_t<C>(a) >> b) : C(0);
}
template <class C>
C shift_right_arithmetic(C a, C b) {
  using S = std::make_signed_t<C>;
  return C(S(a) >> (shift_in_range(b) ? int(b) : int(sizeof(C) * 8 - 1)));
}

// Partial derivatives as JAX's lax.py defines them: the result's tangent due to one
// operand's tangent t (never a symbolic zero here), given the operands x, y and the result
// z. Each is linear in t. A rank-0 operand's term broadcasts in the ops that use it.
Array c(const Array& like, double value) { return constant(value, like.dtype()); }
Array sq(const Array& x) { return lax::mul(x, x); }
Array full_like(const Array& like, double value) {
  return broadcast_to(c(like, value), like.shape());
}
// JAX's _replace_zero: x with its zeros replaced by ones.
Array replace_zero(const Array& x) { return lax::select(lax::eq(x, c(x, 0)), full_like(x, 1), x); }

Array d_same(const Array& t, const Array&, const Array&, const Array&) { return t; }
Array d_negated(const Array& t, const Array&, const Array&, const Array&) { return lax::neg(t); }
Array d_mul_x(const Array& t, const Array&, const Array& y, const Array&) { return lax::mul(t, y); }
Array d_mul_y(const Array& t, const Array& x, const Array&, const Array&) { return lax::mul(x, t); }
Array d_div_x(const Array& t, const Array&, const Array& y, const Array&) { return lax::div(t, y); }
Array d_div_y(const Array& t, const Array& x, const Array& y, const Array&) {
  return lax::mul(lax::mul(lax::neg(t), x), lax::integer_pow(y, -2));
}
// rem(x, y) = x - y * trunc(x / y).
Array d_rem_y(const Array& t, const Array& x, const Array& y, const Array&) {
  const Array q = lax::div(x, y);
  return lax::mul(lax::neg(t), lax::mul(lax::sign(q), lax::floor(lax::abs(q))));
}
// y x^(y-1); an integer exponent is converted to x's dtype first, and where it is 0 the
// jacobian is 0, not 0 * x^-1 (NaN at x = 0).
Array d_pow_x(const Array& t, const Array& x_in, const Array& y_in, const Array& z) {
  Array x = broadcast_to(x_in, z.shape());
  Array y = broadcast_to(y_in, z.shape());
  if (x.dtype() == y.dtype()) {
    return lax::mul(t, lax::mul(y, lax::pow(x, lax::sub(y, c(y, 1)))));
  }
  y = lax::convert_element_type(y, x.dtype());
  const Array jac = lax::select(lax::eq(y, c(y, 0)), full_like(y, 0),
                                lax::mul(replace_zero(y), lax::pow(x, lax::sub(y, c(y, 1)))));
  return lax::mul(t, jac);
}
// log(x) x^y, taking log(0) as 0 (so 0^y has a zero derivative in y, as in JAX).
Array d_pow_y(const Array& t, const Array& x, const Array&, const Array& z) {
  return lax::mul(t, lax::mul(lax::log(replace_zero(x)), z));
}
// JAX's _balanced_eq: 1 where x attains the extremum z, halved where y ties with it.
Array balanced_eq(const Array& x, const Array& z, const Array& y) {
  const Array one = full_like(z, 1);
  return lax::div(lax::select(lax::eq(x, z), one, full_like(z, 0)),
                  lax::select(lax::eq(y, z), full_like(z, 2), one));
}
Array d_extremum_x(const Array& t, const Array& x, const Array& y, const Array& z) {
  return lax::mul(t, balanced_eq(x, z, y));
}
Array d_extremum_y(const Array& t, const Array& x, const Array& y, const Array& z) {
  return lax::mul(t, balanced_eq(y, z, x));
}
Array d_atan2_x(const Array& t, const Array& x, const Array& y, const Array&) {
  return lax::mul(t, lax::div(y, lax::add(sq(x), sq(y))));
}
Array d_atan2_y(const Array& t, const Array& x, const Array& y, const Array&) {
  return lax::div(lax::mul(t, lax::neg(x)), lax::add(sq(x), sq(y)));
}

using Partial = Array (*)(const Array& t, const Array& x, const Array& y, const Array& z);

// Sums the partials' terms; operands without tangents (symbolic zeros, integers) add
// nothing. The sum is broadcast to the result's shape in case only a rank-0 operand had one.
template <Partial Dx, Partial Dy>
std::vector<Array> binary_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                              std::span<const Array> outs, const Params&) {
  if (!has_tangent(outs[0].dtype())) return {Array()};
  const Array &x = primals[0], &y = primals[1], &z = outs[0];
  Array t;
  if (tangents[0].valid() && has_tangent(x.dtype())) t = Dx(tangents[0], x, y, z);
  if (tangents[1].valid() && has_tangent(y.dtype())) {
    t = add_tangents(t, Dy(tangents[1], x, y, z));
  }
  return {broadcast_to(t, z.shape())};
}

// Transposes of the linear ones. A rank-0 operand broadcast in the forward op receives the
// sum of the cotangent (unbroadcast).
core::Aval linear_aval(std::span<const Array> cts, std::span<const Array> operands, size_t i) {
  return operand_aval(operands, i, core::aval_of(cts[0]));
}

std::vector<Array> add_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                 std::span<const bool> linear, const Params&) {
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  for (size_t i = 0; i < 2; ++i) {
    if (linear[i]) out[i] = unbroadcast(cts[0], linear_aval(cts, operands, i));
  }
  return out;
}

std::vector<Array> sub_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                 std::span<const bool> linear, const Params&) {
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  if (linear[0]) out[0] = unbroadcast(cts[0], linear_aval(cts, operands, 0));
  if (linear[1]) out[1] = unbroadcast(lax::neg(cts[0]), linear_aval(cts, operands, 1));
  return out;
}

// mul is linear in one operand at a time (a product of two tangents is not linear).
std::vector<Array> mul_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                 std::span<const bool> linear, const Params&) {
  PARAX_CHECK(linear[0] != linear[1], "mul transposed in exactly one operand");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  const size_t i = linear[0] ? 0 : 1;
  const Array product = i == 0 ? lax::mul(cts[0], operands[1]) : lax::mul(operands[0], cts[0]);
  out[i] = unbroadcast(product, linear_aval(cts, operands, i));
  return out;
}

// div is linear in its numerator only.
std::vector<Array> div_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                 std::span<const bool> linear, const Params&) {
  PARAX_CHECK(linear[0] && !linear[1], "div transposed in its numerator only");
  std::vector<Array> out(2);
  if (!cts[0].valid()) return out;
  out[0] = unbroadcast(lax::div(cts[0], operands[1]), linear_aval(cts, operands, 0));
  return out;
}

// clang-format off
// The vector-loop column names the loop in simd.h (BinaryOp::none: the generic loop only);
// the last two are the jvp rule and the transpose rule (linear primitives only).
#define PARAX_BINARY_ROWS(X)                                                           \
  X(add, kNumber, false, wrapping(a, b, std::plus<>{}), BinaryOp::add,                 \
    (binary_jvp<d_same, d_same>), &add_transpose)                                      \
  X(sub, kNumber, false, wrapping(a, b, std::minus<>{}), BinaryOp::sub,                \
    (binary_jvp<d_same, d_negated>), &sub_transpose)                                   \
  X(mul, kNumber, false, wrapping(a, b, std::multiplies<>{}), BinaryOp::mul,           \
    (binary_jvp<d_mul_x, d_mul_y>), &mul_transpose)                                    \
  X(div, kNumber, false, divide(a, b), BinaryOp::div,                                  \
    (binary_jvp<d_div_x, d_div_y>), &div_transpose)                                    \
  X(rem, kIntOrFloat, false, remainder(a, b), BinaryOp::none,                          \
    (binary_jvp<d_same, d_rem_y>), nullptr)                                            \
  X(max, kAnyDtype, false, nan_max(a, b), BinaryOp::max,                               \
    (binary_jvp<d_extremum_x, d_extremum_y>), nullptr)                                 \
  X(min, kAnyDtype, false, nan_min(a, b), BinaryOp::min,                               \
    (binary_jvp<d_extremum_x, d_extremum_y>), nullptr)                                 \
  X(atan2, kInexact, false, std::atan2(a, b), BinaryOp::atan2,                         \
    (binary_jvp<d_atan2_x, d_atan2_y>), nullptr)                                       \
  X(nextafter, kFloating, false, (next_after<T, C>(a, b)), BinaryOp::none,             \
    zero_jvp, nullptr)                                                                 \
  X(and_, kBoolOrInt, false, C(a & b), BinaryOp::none, zero_jvp, nullptr)              \
  X(or_, kBoolOrInt, false, C(a | b), BinaryOp::none, zero_jvp, nullptr)               \
  X(xor_, kBoolOrInt, false, C(a ^ b), BinaryOp::none, zero_jvp, nullptr)              \
  X(shift_left, kInteger, false, shift_left(a, b), BinaryOp::none, zero_jvp, nullptr)  \
  X(shift_right_logical, kInteger, false, shift_right_logical(a, b), BinaryOp::none,   \
    zero_jvp, nullptr)                                                                 \
  X(shift_right_arithmetic, kInteger, false, shift_right_arithmetic(a, b),             \
    BinaryOp::none, zero_jvp, nullptr)
// clang-format on

PARAX_BINARY_ROWS(PARAX_BINARY_OP)

// pow takes a floating base and an exponent of the same dtype or any integer dtype,
// which XLA converts to the base's dtype first.
std::vector<Aval> pow_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 2, "pow takes 2 operands");
  Shape shape = elementwise_shape("pow", in);
  check_accepts("pow", in[0], kInexact, 0);
  check_accepts("pow", in[1], kNumber, 1);
  if (in[0].dtype != in[1].dtype && !is_integer(in[1].dtype)) {
    throw TypeError(
        "the first argument to pow must have an inexact dtype (float or complex), and the "
        "second argument must have an inexact or integer dtype, and two inexact dtypes must "
        "match, but got " +
        std::string(dtype_name(in[0].dtype)) + " and " + std::string(dtype_name(in[1].dtype)) +
        " respectively.");
  }
  return {Aval{std::move(shape), in[0].dtype, all_weak(in)}};
}

void pow_kernel(const KernelCall& c) {
  if (run_simd(simd::BinaryOp::pow, c)) return;  // same-dtype operands only
  dispatch_kinds<kFloatKind>(c.in_avals[0].dtype, [&](auto x) {
    using T = decltype(x);
    using C = compute_t<T>;
    dispatch_kinds<kIntKinds | kFloatKind>(c.in_avals[1].dtype, [&](auto y) {
      using E = decltype(y);
      if constexpr (std::is_integral_v<E> || std::is_same_v<E, T>) {
        map_elements<T, T, E>(c, [](T a, E b) { return T(std::pow(C(a), C(scalar_cast<T>(b)))); });
      } else {
        PARAX_UNREACHABLE();
      }
    });
  });
}

}  // namespace

#define PARAX_BINARY_RULES(prim, accepts, predicate, expr, simd_op, jvp, transpose) \
  extern const PrimRules prim##_rules = with_autodiff(binary_rules<prim##_op>, &jvp, transpose);
PARAX_BINARY_ROWS(PARAX_BINARY_RULES)
#undef PARAX_BINARY_RULES

extern const PrimRules pow_rules = {.abstract_eval = &pow_eval,
                                    .sharding_rule = &elementwise_sharding_rule,
                                    .kernel = &pow_kernel,
                                    .jvp = &binary_jvp<d_pow_x, d_pow_y>,
                                    .batch = &elementwise_batch<core::Prim::pow>};

}  // namespace parax::prims
