// The binary arithmetic and bitwise primitives: one row per primitive, with XLA's CPU
// semantics for the integer corner cases (wraparound, division by zero, shifts by the
// bit width or more).
#include <cmath>
#include <functional>

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

// clang-format off
// The last column names the vector loop in simd.h (BinaryOp::none: the generic loop only).
#define PARAX_BINARY_ROWS(X)                                                           \
  X(add, kNumber, false, wrapping(a, b, std::plus<>{}), BinaryOp::add)                 \
  X(sub, kNumber, false, wrapping(a, b, std::minus<>{}), BinaryOp::sub)                \
  X(mul, kNumber, false, wrapping(a, b, std::multiplies<>{}), BinaryOp::mul)           \
  X(div, kNumber, false, divide(a, b), BinaryOp::div)                                  \
  X(rem, kIntOrFloat, false, remainder(a, b), BinaryOp::none)                          \
  X(max, kAnyDtype, false, nan_max(a, b), BinaryOp::max)                               \
  X(min, kAnyDtype, false, nan_min(a, b), BinaryOp::min)                               \
  X(atan2, kInexact, false, std::atan2(a, b), BinaryOp::atan2)                         \
  X(nextafter, kFloating, false, (next_after<T, C>(a, b)), BinaryOp::none)             \
  X(and_, kBoolOrInt, false, C(a & b), BinaryOp::none)                                 \
  X(or_, kBoolOrInt, false, C(a | b), BinaryOp::none)                                  \
  X(xor_, kBoolOrInt, false, C(a ^ b), BinaryOp::none)                                 \
  X(shift_left, kInteger, false, shift_left(a, b), BinaryOp::none)                     \
  X(shift_right_logical, kInteger, false, shift_right_logical(a, b), BinaryOp::none)   \
  X(shift_right_arithmetic, kInteger, false, shift_right_arithmetic(a, b), BinaryOp::none)
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

#define PARAX_BINARY_RULES(prim, accepts, predicate, expr, simd_op) \
  extern const PrimRules prim##_rules = binary_rules<prim##_op>;
PARAX_BINARY_ROWS(PARAX_BINARY_RULES)
#undef PARAX_BINARY_RULES

extern const PrimRules pow_rules = {&pow_eval, &elementwise_sharding_rule, &pow_kernel};

}  // namespace parax::prims
