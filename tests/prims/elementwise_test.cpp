// Elementwise primitives: the values leg of the sweep (each row of prims/prim_table.cpp with
// a reference: its kernel against long double math, or __int128 arithmetic for integers,
// over every dtype it takes), XLA's corner cases as exact tables, conversions between every
// pair of dtypes, rank-0 broadcasting, and each error's type and text.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <limits>
#include <numbers>
#include <optional>

#include "base/dtype_dispatch.h"
#include "core/rules.h"
#include "parax/errors.h"
#include "prims/prim_table.h"
#include "support/kernel_harness.h"

namespace parax {
namespace {

using core::Aval;
using core::Params;
using core::Prim;
using testing::HostBuffer;
using testing::run_kernel;

// Values travel through the tests as long double, which holds every value of every dtype
// exactly (a 64-bit mantissa on x86, quad precision elsewhere).
using Real = long double;
using Reals = std::vector<Real>;
using I128 = __int128;
const Real kNan = std::numeric_limits<Real>::quiet_NaN();
const Real kInf = std::numeric_limits<Real>::infinity();
const Real kPi = std::numbers::pi_v<Real>;
const DType kFloats[] = {DType::float16, DType::bfloat16, DType::float32, DType::float64};
const DType kInts[] = {DType::int8,  DType::int16,  DType::int32,  DType::int64,
                       DType::uint8, DType::uint16, DType::uint32, DType::uint64};

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

// Rounds `v` to T (halves through float, as XLA converts).
template <class T>
T from_real(Real v) {
  if constexpr (kIsHalf<T>) {
    return T(float(v));
  } else {
    return static_cast<T>(v);
  }
}
template <class T>
Real to_real(T v) {
  if constexpr (kIsHalf<T>) {
    return Real(float(v));
  } else {
    return static_cast<Real>(v);
  }
}

// Requires: for integer dtypes, integers in the dtype's range.
HostBuffer make(DType t, const Reals& v, std::optional<Shape> shape = {}, bool weak = false) {
  return dispatch_dtype(t, [&](auto zero) {
    using T = decltype(zero);
    std::vector<T> typed;
    for (Real x : v) typed.push_back(from_real<T>(x));
    return HostBuffer::of<T>(shape.value_or(Shape{int64_t(v.size())}), typed, weak);
  });
}
HostBuffer scalar(DType t, Real v, bool weak = false) { return make(t, {v}, Shape{}, weak); }

Reals values(const HostBuffer& b) {
  return dispatch_dtype(b.aval.dtype, [&](auto zero) {
    using T = decltype(zero);
    Reals out;
    for (T x : b.values<T>()) out.push_back(to_real(x));
    return out;
  });
}

// Returns `v` rounded to dtype t, as a Real.
Real round_to(DType t, Real v) { return values(make(t, {v}))[0]; }

Real epsilon(DType t) {
  switch (t) {
    case DType::float16:
      return 0x1p-10L;
    case DType::bfloat16:
      return 0x1p-7L;
    case DType::float32:
      return 0x1p-23L;
    default:
      return 0x1p-52L;
  }
}
Real min_normal(DType t) {
  return t == DType::float16 ? 0x1p-14L : t == DType::float64 ? 0x1p-1022L : 0x1p-126L;
}

// Equal including the sign of zero, NaN equal to NaN; else within `ulps` of want.
bool close(Real got, Real want, DType t, Real ulps) {
  if (std::isnan(got) || std::isnan(want)) return std::isnan(got) && std::isnan(want);
  if (got == want) return std::signbit(got) == std::signbit(want);
  if (std::isinf(got) || std::isinf(want)) return false;
  return std::abs(got - want) <= ulps * epsilon(t) * std::max(std::abs(want), min_normal(t));
}

Reals run1(Prim p, std::vector<HostBuffer> in, const Params& params = {}) {
  return values(run_kernel(p, in, params).at(0));
}

std::string name(Prim p) { return std::string(core::prim_name(p)); }

Reals linspace(Real lo, Real hi, int n) {
  Reals v;
  for (int i = 0; i < n; ++i) v.push_back(lo + (hi - lo) * i / (n - 1));
  return v;
}

// ---- unary floating functions ---------------------------------------------------------

TEST(ElementwiseUnary, FloatFunctionsMatchReference) {
  for (const prim_table::Case& u : prim_table::cases()) {
    if (!u.has(prim_table::kValues) || u.ref.unary == nullptr) continue;
    for (DType t : kFloats) {
      HostBuffer x = make(t, [&] {
        Reals v = linspace(u.ref.lo, u.ref.hi, 41);
        v.push_back(kNan);
        return v;
      }());
      const Reals in = values(x);
      const Reals got = run1(u.prim, {x}, u.params);
      // Halves compute in float and round once; the rest allow a few ulp of libm error.
      const Real ulps = t == DType::float16 || t == DType::bfloat16 ? 1 : 4;
      for (size_t i = 0; i < in.size(); ++i) {
        EXPECT_TRUE(close(got[i], u.ref.unary(in[i]), t, ulps))
            << name(u.prim) << "(" << double(in[i]) << ") in " << dtype_name(t) << ": got "
            << double(got[i]) << ", want " << double(u.ref.unary(in[i]));
      }
    }
  }
}

// ---- exact cases: integer semantics, signed zeros, NaN, params ------------------------

struct Exact {
  Prim prim;
  std::vector<DType> dtypes;  // operand dtypes (one per operand)
  std::vector<Reals> in;      // per operand; a one-element list on a rank-0 operand
  Reals want;
  Params params = {};
};

const Real i8min = -128, i32min = -2147483648.0L;
const DType f16 = DType::float16, bf16 = DType::bfloat16, f32 = DType::float32,
            f64 = DType::float64, i8 = DType::int8, i16 = DType::int16, i32 = DType::int32,
            i64 = DType::int64, u8 = DType::uint8, u16 = DType::uint16, u32 = DType::uint32,
            u64 = DType::uint64, b1 = DType::bool_;

const Exact kExact[] = {
    {Prim::neg, {i32}, {{i32min, -1, 0, 7}}, {i32min, 1, 0, -7}},
    {Prim::neg, {u8}, {{0, 1, 255}}, {0, 255, 1}},
    {Prim::neg, {bf16}, {{1.5, 0, -kInf}}, {-1.5, -0.0, kInf}},
    {Prim::abs, {i8}, {{i8min, -3, 0, 5}}, {i8min, 3, 0, 5}},
    {Prim::abs, {f16}, {{-2.5, -0.0, -kInf, kNan}}, {2.5, 0, kInf, kNan}},
    {Prim::sign, {i16}, {{-300, 0, 7}}, {-1, 0, 1}},
    {Prim::sign, {u32}, {{0, 5}}, {0, 1}},
    {Prim::sign, {f32}, {{-2, -0.0, 0, kNan, 3, -kInf}}, {-1, -0.0, 0, kNan, 1, -1}},
    {Prim::floor, {f32}, {{-1.5, 1.5, -0.0, -0.5}}, {-2, 1, -0.0, -1}},
    {Prim::ceil, {f16}, {{-1.5, 1.5, -0.5}}, {-1, 2, -0.0}},
    {Prim::round,
     {f32},
     {{0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997L, 8388609}},
     {1, 2, 3, -1, -3, 0, 8388609},
     Params{{"rounding_method", int64_t(0)}}},
    {Prim::round,
     {f32},
     {{0.5, 1.5, 2.5, -0.5, -2.5, 0.49999997L, 8388609}},
     {0, 2, 2, -0.0, -2, 0, 8388609},
     Params{{"rounding_method", int64_t(1)}}},
    {Prim::round, {bf16}, {{2.5, 3.5, -3.5}}, {2, 4, -4}, Params{{"rounding_method", int64_t(1)}}},
    {Prim::round, {f64}, {{2.5, 4503599627370497.0L}}, {3, 4503599627370497.0L}},
    {Prim::is_finite, {f32}, {{1, kInf, -kInf, kNan}}, {1, 0, 0, 0}},
    {Prim::is_finite, {bf16}, {{65504, kInf}}, {1, 0}},
    {Prim::not_, {b1}, {{1, 0}}, {0, 1}},
    {Prim::not_, {i8}, {{0, -1, 5}}, {-1, 0, -6}},
    {Prim::not_, {u16}, {{0, 65535}}, {65535, 0}},
    {Prim::integer_pow, {f32}, {{2, -1.5}}, {8, -3.375}, Params{{"y", int64_t(3)}}},
    {Prim::integer_pow, {f32}, {{2, 0, -0.0}}, {0.25, kInf, kInf}, Params{{"y", int64_t(-2)}}},
    {Prim::integer_pow, {f64}, {{kNan, 5}}, {1, 1}, Params{{"y", int64_t(0)}}},
    {Prim::integer_pow, {f16}, {{3}}, {2188}, Params{{"y", int64_t(7)}}},  // JAX's f16 result
    {Prim::integer_pow, {i32}, {{-4, 1291}}, {-64, -2143282125}, Params{{"y", int64_t(3)}}},
    {Prim::integer_pow, {u8}, {{2, 3}}, {0, 227}, Params{{"y", int64_t(9)}}},
    {Prim::copy, {i64}, {{1, -2, 9223372036854775807.0L}}, {1, -2, 9223372036854775807.0L}},
    {Prim::copy, {b1}, {{1, 0, 1}}, {1, 0, 1}},
    {Prim::sqrt, {f32}, {{-1, -0.0, kInf}}, {kNan, -0.0, kInf}},
    {Prim::log, {f32}, {{0, -1}}, {-kInf, kNan}},
    {Prim::rsqrt, {f64}, {{0, 4}}, {kInf, 0.5}},
    {Prim::logistic, {f32}, {{-100, 100, 0}}, {0, 1, 0.5}},
    {Prim::erf_inv, {f32}, {{1, -1, 2, 0, -0.0}}, {kInf, -kInf, kNan, 0, -0.0}},
    {Prim::cbrt, {f32}, {{-8, 27}}, {-2, 3}},
    {Prim::tanh, {f64}, {{kInf, -kInf}}, {1, -1}},
    // Division and remainder by zero, MIN / -1, truncation towards zero.
    {Prim::div,
     {i32, i32},
     {{5, -5, 0, i32min, 7, -7}, {0, 0, 0, -1, -2, 2}},
     {-1, -1, -1, i32min, -3, -3}},
    {Prim::div, {u32, u32}, {{5, 7}, {0, 2}}, {4294967295.0L, 3}},
    {Prim::rem, {i32, i32}, {{5, -5, i32min, 7, -7}, {0, 0, -1, -2, 2}}, {5, -5, 0, 1, -1}},
    {Prim::rem, {i8, i8}, {{i8min}, {-1}}, {0}},
    {Prim::rem, {f32, f32}, {{5.5, -5.5, 1, kInf}, {2, 2, 0, 1}}, {1.5, -1.5, kNan, kNan}},
    {Prim::div, {f32, f32}, {{1, -1, 0}, {0, 0, 0}}, {kInf, -kInf, kNan}},
    // max/min: NaN wins, -0 < +0.
    {Prim::max, {f32, f32}, {{kNan, 1, 0, -0.0}, {1, kNan, -0.0, 0}}, {kNan, kNan, 0, 0}},
    {Prim::min, {f32, f32}, {{kNan, 1, 0, -0.0}, {1, kNan, -0.0, 0}}, {kNan, kNan, -0.0, -0.0}},
    {Prim::max, {b1, b1}, {{1, 0, 0}, {0, 0, 1}}, {1, 0, 1}},
    {Prim::min, {bf16, bf16}, {{kNan, 2}, {1, 3}}, {kNan, 2}},
    {Prim::max, {i8, i8}, {{1, -3}, {-2, 5}}, {1, 5}},
    // Shifts by the bit width or more (negative amounts count as large).
    {Prim::shift_left, {i32, i32}, {{1, 1, 1, -1}, {31, 32, -1, 4}}, {i32min, 0, 0, -16}},
    {Prim::shift_right_arithmetic, {i32, i32}, {{-8, -8, 8}, {1, 40, -1}}, {-4, -1, 0}},
    {Prim::shift_right_arithmetic,
     {u8, u8},
     {{200, 200, 100, 200}, {1, 8, 9, 200}},
     {228, 255, 0, 255}},
    {Prim::shift_right_logical, {i32, i32}, {{-8, -8}, {1, 32}}, {2147483644, 0}},
    {Prim::shift_left, {u8, u8}, {{1, 3}, {200, 7}}, {0, 128}},
    {Prim::and_, {b1, b1}, {{1, 1, 0}, {1, 0, 0}}, {1, 0, 0}},
    {Prim::or_, {b1, b1}, {{1, 1, 0}, {1, 0, 0}}, {1, 1, 0}},
    {Prim::xor_, {b1, b1}, {{1, 1, 0}, {1, 0, 0}}, {0, 1, 0}},
    // pow: an integer exponent converts to the base's dtype first (70000 is inf in f16).
    {Prim::pow, {f16, i32}, {{2, 2, 2}, {3, 70000, -1}}, {8, kInf, 0.5}},
    {Prim::pow, {f32, i64}, {{-2, 0}, {3, -1}}, {-8, kInf}},
    {Prim::pow, {f32, f32}, {{0, -8, kNan, 1}, {0, 0.5, 0, kNan}}, {1, kNan, 1, 1}},
    {Prim::nextafter,
     {f32, f32},
     {{1, 0, 0, -0.0, kNan}, {2, -1, -0.0, 0, 1}},
     {1 + 0x1p-23L, -0x1p-149L, -0.0, 0, kNan}},
    {Prim::nextafter,
     {f16, f16},
     {{1, 0, 65504, kInf, 1}, {2, -1, kInf, 0, 1}},
     {1 + 0x1p-10L, -0x1p-24L, kInf, 65504, 1}},
    {Prim::nextafter, {bf16, bf16}, {{1, -0.0}, {0, 1}}, {1 - 0x1p-8L, 0x1p-133L}},
    {Prim::atan2, {f64, f64}, {{1, -0.0, 0}, {0, -1, -1}}, {kPi / 2, -kPi, kPi}},
    // Comparisons: NaN is unordered; bool orders false < true.
    {Prim::eq, {f32, f32}, {{kNan, 1, 0}, {kNan, 1, -0.0}}, {0, 1, 1}},
    {Prim::ne, {f32, f32}, {{kNan, 1}, {kNan, 1}}, {1, 0}},
    {Prim::lt, {b1, b1}, {{0, 1, 0}, {1, 0, 0}}, {1, 0, 0}},
    {Prim::ge, {u64, u64}, {{18446744073709551615.0L, 0}, {1, 1}}, {1, 0}},
    // select_n: out-of-range indices clamp; a rank-0 `which` picks whole cases.
    {Prim::select_n,
     {i32, i16, i16, i16},
     {{-1, 0, 1, 2, 5}, {1, 1, 1, 1, 1}, {2, 2, 2, 2, 2}, {3, 3, 3, 3, 3}},
     {1, 1, 2, 3, 3}},
    {Prim::select_n, {b1, f64, f64}, {{1, 0}, {1, 2}, {3, 4}}, {3, 2}},
    {Prim::select_n, {u8, b1, b1}, {{1, 0, 200}, {0, 1, 0}, {1, 0, 1}}, {1, 1, 1}},
    {Prim::select_n, {u64, u32}, {{18446744073709551615.0L}, {7, 8}}, {7, 8}},
    {Prim::select_n, {b1, f16, f16}, {{1}, {1, 2}, {3, 4}}, {3, 4}},
    {Prim::select_n, {i64, i64, i64, i64}, {{-9223372036854775807.0L - 1}, {10}, {20}, {30}}, {10}},
    // clamp: NaN anywhere gives NaN; an empty range [2, 1] gives the upper bound.
    {Prim::clamp, {f32, f32, f32}, {{0}, {kNan, -1, 0.5, 5}, {1}}, {kNan, 0, 0.5, 1}},
    {Prim::clamp, {f32, f32, f32}, {{kNan}, {0.5}, {1}}, {kNan}},
    {Prim::clamp, {f32, f32, f32}, {{0}, {0.5}, {kNan}}, {kNan}},
    {Prim::clamp, {f32, f32, f32}, {{2}, {0.5}, {1}}, {1}},
    {Prim::clamp, {i32, i32, i32}, {{0, -5, 1}, {-3, 3, 9}, {2, 5, 4}}, {0, 3, 4}},
    {Prim::clamp, {u8, u8, u8}, {{10}, {0, 50, 255}, {20}}, {10, 20, 20}},
};

TEST(ElementwiseExact, CornerCases) {
  for (const Exact& e : kExact) {
    // A one-element list is rank 0 unless every operand has one element.
    size_t n = 1;
    for (const Reals& v : e.in) n = std::max(n, v.size());
    std::vector<HostBuffer> in;
    for (size_t k = 0; k < e.in.size(); ++k) {
      in.push_back(e.in[k].size() == 1 && n > 1 ? scalar(e.dtypes[k], e.in[k][0])
                                                : make(e.dtypes[k], e.in[k]));
    }
    const std::vector<HostBuffer> out = run_kernel(e.prim, in, e.params);
    const Reals got = values(out[0]);
    ASSERT_EQ(got.size(), e.want.size()) << name(e.prim);
    for (size_t i = 0; i < got.size(); ++i) {
      const Real want = round_to(out[0].aval.dtype, e.want[i]);
      EXPECT_TRUE(close(got[i], want, out[0].aval.dtype, 0))
          << name(e.prim) << " " << dtype_name(e.dtypes[0]) << " element " << i << ": got "
          << double(got[i]) << ", want " << double(want);
    }
  }
}

// ---- binary floating ops against long double --------------------------------------------

TEST(ElementwiseBinary, FloatOpsMatchReference) {
  const Reals pool = {-3.5, -1, -0.0, 0, 0.1L, 0.5, 1, 2, 3.25, 7, 100, kInf, -kInf, kNan};
  Reals a, b;
  for (Real x : pool) {
    for (Real y : pool) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  for (const prim_table::Case& op : prim_table::cases()) {
    if (!op.has(prim_table::kValues) || op.ref.binary == nullptr) continue;
    for (DType t : kFloats) {
      const HostBuffer x = make(t, a), y = make(t, b);
      const Reals xs = values(x), ys = values(y), got = run1(op.prim, {x, y});
      const Real ulps = op.ref.ulps == 0 ? 0 : t == f16 || t == bf16 ? 1 : op.ref.ulps;
      for (size_t i = 0; i < got.size(); ++i) {
        const Real want = round_to(t, op.ref.binary(xs[i], ys[i]));
        EXPECT_TRUE(close(got[i], want, t, ulps))
            << name(op.prim) << "(" << double(xs[i]) << ", " << double(ys[i]) << ") in "
            << dtype_name(t) << ": got " << double(got[i]) << ", want " << double(want);
      }
    }
  }
}

// ---- binary integer ops against __int128 ----------------------------------------------

using prim_table::bits_of;
using prim_table::wrap;
// True if op's primitive takes operands of dtype t (ElementwiseErrors.AcceptedDtypesFollowJax
// checks which it takes).
bool takes(const prim_table::Case& op, DType t) {
  try {
    core::abstract_eval(op.prim, std::vector<Aval>(op.operands.size(), Aval{{3}, t, false}),
                        op.params);
    return true;
  } catch (const TypeError&) {
    return false;
  }
}

// Unary rows over the pool, binary rows over every pair of it.
TEST(ElementwiseInteger, OpsMatchReference) {
  for (DType t : kInts) {
    const int bits = bits_of(t);
    const bool is_signed = is_signed_integer(t);
    const I128 lo = is_signed ? -(I128(1) << (bits - 1)) : 0;
    const I128 hi = is_signed ? (I128(1) << (bits - 1)) - 1 : (I128(1) << bits) - 1;
    std::vector<I128> pool = {lo, lo + 1, 0, 1, 2, 3, 7, bits - 1, bits, bits + 1, hi - 1, hi};
    if (is_signed) pool.insert(pool.end(), {-1, -2, -7});
    Reals a, b;
    for (I128 x : pool) {
      for (I128 y : pool) {
        a.push_back(Real(x));
        b.push_back(Real(y));
      }
    }
    for (const prim_table::Case& op : prim_table::cases()) {
      if (!op.has(prim_table::kValues) || op.ref.integer == nullptr || !takes(op, t)) continue;
      const bool unary = op.operands.size() == 1;
      const Reals got = unary ? run1(op.prim, {make(t, a)}, op.params)
                              : run1(op.prim, {make(t, a), make(t, b)}, op.params);
      for (size_t i = 0; i < got.size(); ++i) {
        const I128 want = op.ref.integer(t, I128(a[i]), unary ? 0 : I128(b[i]));
        EXPECT_TRUE(I128(got[i]) == want) << name(op.prim) << "(" << double(a[i]) << ", "
                                          << double(b[i]) << ") in " << dtype_name(t);
      }
    }
  }
}

TEST(ElementwiseBinary, ComparisonsOverEveryDtype) {
  for (int d = 0; d < kNumDTypes; ++d) {
    const DType t = DType(d);
    Reals pool = {0, 1};
    if (t != b1) pool.insert(pool.end(), {2, 100});
    if (is_signed_integer(t) || is_floating(t)) pool.insert(pool.end(), {-1, -100});
    if (is_floating(t)) pool.insert(pool.end(), {-0.0, 0.5, kInf, -kInf, kNan});
    Reals a, b;
    for (Real x : pool) {
      for (Real y : pool) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    for (const prim_table::Case& op : prim_table::cases()) {
      if (!op.has(prim_table::kValues) || op.ref.compare == nullptr) continue;
      const Prim prim = op.prim;
      const std::vector<HostBuffer> out = run_kernel(prim, {make(t, a), make(t, b)});
      EXPECT_EQ(out[0].aval.dtype, b1);
      const Reals got = values(out[0]);
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_EQ(got[i], Real(op.ref.compare(a[i], b[i])))
            << name(prim) << "(" << double(a[i]) << ", " << double(b[i]) << ") in "
            << dtype_name(t);
      }
    }
  }
}

// ---- convert_element_type: all 13 x 13 pairs -----------------------------------------

// The naive conversion: floats to ints truncate and saturate (NaN is 0), ints wrap, bool is
// x != 0, halves round through float.
Real convert_ref(Real v, DType from, DType to) {
  if (to == b1) return v != 0;
  if (is_floating(to)) return round_to(to, to == f64 ? v : Real(float(v)));
  if (!is_floating(from)) return Real(wrap(to, I128(v)));
  if (std::isnan(v)) return 0;
  const int bits = bits_of(to);
  const Real lo = is_signed_integer(to) ? -std::ldexp(Real(1), bits - 1) : 0;
  const Real hi =
      is_signed_integer(to) ? std::ldexp(Real(1), bits - 1) - 1 : std::ldexp(Real(1), bits) - 1;
  return std::clamp(std::trunc(v), lo, hi) + 0;  // + 0: -0.0 converts to 0
}

// True if dtype t holds v exactly (ints and bool: an integer in range, and not -0.0).
bool representable(DType t, Real v) {
  if (is_floating(t)) return close(round_to(t, v), v, t, 0);
  if (std::isnan(v) || v != std::trunc(v) || (v == 0 && std::signbit(v))) return false;
  const int bits = t == b1 ? 1 : bits_of(t) - int(is_signed_integer(t));
  const Real lo = is_signed_integer(t) ? -std::ldexp(Real(1), bits) : 0;
  return v >= lo && v <= std::ldexp(Real(1), bits) - 1;
}

TEST(ElementwiseConvert, EveryPairMatchesReference) {
  const Reals pool = {0,           -0.0,        1,        -1,          2.5,     -2.5,     0.1L,
                      127,         128,         255,      256,         -128,    -129,     1000.75,
                      65504,       65520,       70000,    2147483647,  0x1p31L, -0x1p31L, 0x1p32L,
                      0x1p53L + 1, 0x1p63L - 1, -0x1p63L, 0x1p64L - 1, 1e20L,   -1e20L,   1e300L,
                      kInf,        -kInf,       kNan};
  for (int f = 0; f < kNumDTypes; ++f) {
    const DType from = DType(f);
    // Only values the source dtype holds exactly (so every conversion starts exact).
    Reals src;
    for (Real v : pool) {
      if (representable(from, v)) src.push_back(v);
    }
    ASSERT_GE(src.size(), from == b1 ? 2u : 5u) << dtype_name(from);
    for (int t = 0; t < kNumDTypes; ++t) {
      const DType to = DType(t);
      const Params params{{"new_dtype", to}, {"weak_type", false}};
      const Reals got = run1(Prim::convert_element_type, {make(from, src)}, params);
      for (size_t i = 0; i < src.size(); ++i) {
        const Real want = convert_ref(src[i], from, to);
        EXPECT_TRUE(close(got[i], want, is_floating(to) ? to : f64, 0))
            << dtype_name(from) << " " << double(src[i]) << " -> " << dtype_name(to) << ": got "
            << double(got[i]) << ", want " << double(want);
      }
    }
  }
}

TEST(ElementwiseConvert, RoundsLikeXla) {
  // XLA converts to half precision through float32: these double roundings are its results.
  const auto bits16 = [](DType from, Real v, DType to) {
    const Params p{{"new_dtype", to}, {"weak_type", false}};
    const HostBuffer out = run_kernel(Prim::convert_element_type, {make(from, {v})}, p)[0];
    return to == f16 ? out.values<float16_t>()[0].bits : out.values<bfloat16_t>()[0].bits;
  };
  EXPECT_EQ(bits16(i64, 0x1p62L + 0x1p54L + 1, bf16), 0x5E80);
  EXPECT_EQ(bits16(f64, 1 + 0x1p-8L + 0x1p-30L, bf16), 0x3F80);
  EXPECT_EQ(bits16(f64, 1 + 0x1p-11L + 0x1p-40L, f16), 0x3C00);
  EXPECT_EQ(bits16(i32, 65519, f16), 0x7BFF);
  EXPECT_EQ(bits16(i32, 65520, f16), 0x7C00);
  EXPECT_EQ(bits16(f32, 6e-8L, f16), 0x0001);

  const Params weak{{"new_dtype", i32}, {"weak_type", true}};
  const std::vector<Aval> out =
      core::abstract_eval(Prim::convert_element_type, std::vector{Aval{{2, 3}, f32, false}}, weak);
  EXPECT_EQ(out[0], (Aval{{2, 3}, i32, true}));
}

// ---- shapes: rank-0 broadcasting, weak types, big arrays, the sharding rule ---------

TEST(ElementwiseShapes, RankZeroOperandsBroadcast) {
  const HostBuffer x = make(f32, {1, 2, 3, 4, 5, 6}, Shape{2, 3}), s = scalar(f32, 10, true);
  std::vector<HostBuffer> out = run_kernel(Prim::sub, {x, s});
  EXPECT_EQ(out[0].aval, (Aval{{2, 3}, f32, false}));
  EXPECT_EQ(values(out[0]), (Reals{-9, -8, -7, -6, -5, -4}));
  EXPECT_EQ(run1(Prim::sub, {s, x}), (Reals{9, 8, 7, 6, 5, 4}));
  out = run_kernel(Prim::add, {s, s});
  EXPECT_EQ(out[0].aval, (Aval{{}, f32, true}));
  EXPECT_EQ(values(out[0]), Reals{20});
  out = run_kernel(Prim::lt, {x, scalar(f32, 3.5)});
  EXPECT_EQ(out[0].aval, (Aval{{2, 3}, b1, false}));
  EXPECT_EQ(values(out[0]), (Reals{1, 1, 1, 0, 0, 0}));
  // Unary results keep the operand's aval; JAX keeps weak_type on is_finite's bool too.
  EXPECT_EQ(run_kernel(Prim::sin, {scalar(f64, 0, true)})[0].aval, (Aval{{}, f64, true}));
  EXPECT_EQ(run_kernel(Prim::is_finite, {scalar(f64, 0, true)})[0].aval, (Aval{{}, b1, true}));
  const std::vector<Aval> sel = core::abstract_eval(
      Prim::select_n, std::vector{Aval{{}, b1, false}, Aval{{3}, f32, true}, Aval{{3}, f32, true}},
      {});
  EXPECT_EQ(sel[0], (Aval{{3}, f32, true}));
}

TEST(ElementwiseShapes, LargeArraysRunInParallelChunks) {
  const size_t n = 100003;  // several chunks of kElementGrain, and a ragged end
  Reals a(n), b(n);
  for (size_t i = 0; i < n; ++i) {
    a[i] = Real(i % 1000) / 8;
    b[i] = Real((i * 7) % 1013) - 500;
  }
  const HostBuffer x = make(f32, a), y = make(f32, b);
  const Reals dense = run1(Prim::mul, {x, y});
  const Reals bcast = run1(Prim::mul, {x, scalar(f32, -3)});
  const Reals sel = run1(Prim::select_n, {make(b1, b), x, y});
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(dense[i], Real(float(a[i]) * float(b[i]))) << i;
    ASSERT_EQ(bcast[i], -3 * a[i]) << i;
    ASSERT_EQ(sel[i], b[i] != 0 ? b[i] : a[i]) << i;
  }
}

TEST(ElementwiseFma, RoundsOnceLikeHardwareFma) {
  // Products whose low bits a separate multiply would round away: fma keeps them, over
  // every chunk of a large call and with rank-0 operands broadcast.
  const size_t n = 70001;
  Reals a(n), b(n), c(n);
  std::vector<float> fa(n), fb(n), fc(n);
  for (size_t i = 0; i < n; ++i) {
    fa[i] = 1.0f + float(i % 4096) * 0x1p-23f;
    fb[i] = 1.0f - float((i * 7) % 4096) * 0x1p-23f;
    fc[i] = -1.0f - float((i * 13) % 97) * 0x1p-20f;
    a[i] = fa[i], b[i] = fb[i], c[i] = fc[i];
  }
  const Reals got = run1(Prim::fma, {make(f32, a), make(f32, b), make(f32, c)});
  size_t differs = 0;
  for (size_t i = 0; i < n; ++i) {
    ASSERT_EQ(got[i], Real(std::fma(fa[i], fb[i], fc[i]))) << i;
    differs += float(fa[i] * fb[i] + fc[i]) != std::fma(fa[i], fb[i], fc[i]);
  }
  EXPECT_GT(differs, n / 10) << "the inputs should tell fma from multiply-then-add";
  const Reals bcast = run1(Prim::fma, {scalar(f64, 3), make(f64, {1, 2, 3}), scalar(f64, 0.5)});
  EXPECT_EQ(bcast, (Reals{3.5, 6.5, 9.5}));
  EXPECT_THROW(run_kernel(Prim::fma, {scalar(b1, 1), scalar(b1, 1), scalar(b1, 1)}), TypeError);
}

TEST(ElementwiseShapes, ShardingRuleSharesFactorsAndSkipsScalars) {
  const std::vector<Aval> in = {Aval{{4, 2}, f32, false}, Aval{{}, f32, false}};
  const std::vector<Aval> out = core::abstract_eval(Prim::add, in, {});
  EXPECT_EQ(core::sharding_rule(Prim::add, in, out, {}).str(), "([i, j], []) -> ([i, j])");
  const std::vector<Aval> clamp_in = {Aval{{}, f32, false}, Aval{{5}, f32, false},
                                      Aval{{5}, f32, false}};
  EXPECT_EQ(core::sharding_rule(Prim::clamp, clamp_in, std::vector{clamp_in[1]}, {}).str(),
            "([], [i], [i]) -> ([i])");
}

// ---- errors --------------------------------------------------------------------------

enum class Kind { type, value };
struct ErrorCase {
  Prim prim;
  std::vector<Aval> in;
  Params params;
  Kind kind;
  std::string message;
};

Aval A(DType t, Shape shape = {3}) { return Aval{std::move(shape), t, false}; }

const ErrorCase kErrors[] = {
    {Prim::sin,
     {A(i32)},
     {},
     Kind::type,
     "sin does not accept dtype int32. Accepted dtypes are subtypes of floating, complexfloating."},
    {Prim::abs,
     {A(u32)},
     {},
     Kind::type,
     "abs does not accept dtype uint32. Accepted dtypes are subtypes of floating, "
     "complexfloating, signedinteger."},
    {Prim::neg,
     {A(b1)},
     {},
     Kind::type,
     "neg does not accept dtype bool. Accepted dtypes are subtypes of integer, complexfloating, "
     "floating."},
    {Prim::floor,
     {A(i32)},
     {},
     Kind::type,
     "floor does not accept dtype int32. Accepted dtypes are subtypes of floating."},
    {Prim::is_finite,
     {A(u8)},
     {},
     Kind::type,
     "is_finite does not accept dtype uint8. Accepted dtypes are subtypes of floating."},
    {Prim::not_,
     {A(f32)},
     {},
     Kind::type,
     "not does not accept dtype float32. Accepted dtypes are subtypes of integer, bool_."},
    {Prim::erf_inv,
     {A(i8)},
     {},
     Kind::type,
     "erf_inv does not accept dtype int8. Accepted dtypes are subtypes of floating."},
    {Prim::integer_pow,
     {A(b1)},
     Params{{"y", int64_t(2)}},
     Kind::type,
     "integer_pow does not accept dtype bool. Accepted dtypes are subtypes of integer, "
     "complexfloating, floating."},
    {Prim::integer_pow,
     {A(i32, {1})},
     Params{{"y", int64_t(-1)}},
     Kind::type,
     "Integers cannot be raised to negative powers, got integer_pow(ShapedArray(int32[1]), -1)"},
    {Prim::round,
     {A(f32)},
     Params{{"rounding_method", int64_t(2)}},
     Kind::value,
     "[round] rounding_method must be 0 (AWAY_FROM_ZERO) or 1 (TO_NEAREST_EVEN), got 2."},
    {Prim::add,
     {A(b1), A(b1)},
     {},
     Kind::type,
     "add does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes "
     "of integer, complexfloating, floating."},
    {Prim::add,
     {A(f32), A(b1)},
     {},
     Kind::type,
     "add does not accept dtype bool at position 1. Accepted dtypes at position 1 are subtypes "
     "of integer, complexfloating, floating."},
    {Prim::add,
     {A(f32), A(i32)},
     {},
     Kind::type,
     "lax.add requires arguments to have the same dtypes, got float32, int32."},
    {Prim::add,
     {A(f32), A(f32, {4})},
     {},
     Kind::type,
     "add got incompatible shapes for broadcasting: (3,), (4,)."},
    {Prim::rem,
     {A(b1), A(b1)},
     {},
     Kind::type,
     "rem does not accept dtype bool at position 0. Accepted dtypes at position 0 are subtypes "
     "of integer, floating."},
    {Prim::pow,
     {A(i32), A(i32)},
     {},
     Kind::type,
     "pow does not accept dtype int32 at position 0. Accepted dtypes at position 0 are subtypes "
     "of floating, complexfloating."},
    {Prim::pow,
     {A(f32), A(b1)},
     {},
     Kind::type,
     "pow does not accept dtype bool at position 1. Accepted dtypes at position 1 are subtypes "
     "of integer, complexfloating, floating."},
    {Prim::pow,
     {A(f32), A(f64)},
     {},
     Kind::type,
     "the first argument to pow must have an inexact dtype (float or complex), and the second "
     "argument must have an inexact or integer dtype, and two inexact dtypes must match, but "
     "got float32 and float64 respectively."},
    {Prim::atan2,
     {A(i32), A(i32)},
     {},
     Kind::type,
     "atan2 does not accept dtype int32 at position 0. Accepted dtypes at position 0 are "
     "subtypes of floating, complexfloating."},
    {Prim::nextafter,
     {A(f32), A(u8)},
     {},
     Kind::type,
     "nextafter does not accept dtype uint8 at position 1. Accepted dtypes at position 1 are "
     "subtypes of floating."},
    {Prim::and_,
     {A(f32), A(f32)},
     {},
     Kind::type,
     "and does not accept dtype float32 at position 0. Accepted dtypes at position 0 are "
     "subtypes of integer, bool_."},
    {Prim::shift_left,
     {A(b1), A(b1)},
     {},
     Kind::type,
     "shift_left does not accept dtype bool at position 0. Accepted dtypes at position 0 are "
     "subtypes of integer."},
    {Prim::lt,
     {A(f32), A(f64)},
     {},
     Kind::type,
     "lax.lt requires arguments to have the same dtypes, got float32, float64."},
    {Prim::eq,
     {A(f32, {2}), A(f32)},
     {},
     Kind::type,
     "eq got incompatible shapes for broadcasting: (2,), (3,)."},
    {Prim::clamp,
     {A(f32, {2}), A(f32), A(f32, {})},
     {},
     Kind::type,
     "clamp requires min.shape == operand.shape or min.shape == (), got min.shape=(2,), "
     "operand.shape=(3,)."},
    {Prim::clamp,
     {A(f32, {}), A(f32), A(f32, {2})},
     {},
     Kind::type,
     "clamp requires max.shape == operand.shape or max.shape == (), got max.shape=(2,), "
     "operand.shape=(3,)."},
    {Prim::clamp,
     {A(f64, {}), A(f32), A(f32, {})},
     {},
     Kind::type,
     "lax.clamp requires arguments to have the same dtypes, got float64, float32, float32."},
    {Prim::select_n, {A(b1)}, {}, Kind::type, "select must have at least one case"},
    {Prim::select_n,
     {A(b1), A(f32), A(f32, {2})},
     {},
     Kind::type,
     "select cases must have the same shapes, got [(3,), (2,)]."},
    {Prim::select_n,
     {A(b1, {2}), A(f32), A(f32)},
     {},
     Kind::type,
     "select `which` must be scalar or have the same shape as cases, got `which` shape (2,) "
     "but case shape (3,)."},
    {Prim::select_n,
     {A(b1), A(f32), A(f64)},
     {},
     Kind::type,
     "lax.select requires arguments to have the same dtypes, got float32, float64. (Tip: "
     "jnp.where is a similar function that does automatic type promotion on inputs)."},
    {Prim::select_n,
     {A(f32), A(f32), A(f32)},
     {},
     Kind::type,
     "select `which` must be boolean or integer type, got float32."},
    {Prim::select_n,
     {A(b1), A(f32), A(f32), A(f32)},
     {},
     Kind::type,
     "select with boolean `which` cannot have > 2 cases."},
};

TEST(ElementwiseErrors, TypesAndMessagesMatchJax) {
  for (const ErrorCase& e : kErrors) {
    try {
      core::abstract_eval(e.prim, e.in, e.params);
      ADD_FAILURE() << name(e.prim) << ": no error for " << e.message;
    } catch (const Error& err) {
      EXPECT_EQ(err.what(), e.message);
      const bool right_kind = e.kind == Kind::type
                                  ? dynamic_cast<const TypeError*>(&err) != nullptr
                                  : dynamic_cast<const ValueError*>(&err) != nullptr;
      EXPECT_TRUE(right_kind) << e.message;
    }
  }
}

TEST(ElementwiseErrors, AcceptedDtypesFollowJax) {
  // Which dtype kinds each primitive takes, as one string per primitive: b(ool), s(igned),
  // u(nsigned), f(loat).
  const std::pair<Prim, std::string> accepted[] = {
      {Prim::neg, "suf"},  {Prim::abs, "sf"},    {Prim::sign, "suf"},      {Prim::exp, "f"},
      {Prim::not_, "bsu"}, {Prim::copy, "bsuf"}, {Prim::add, "suf"},       {Prim::rem, "suf"},
      {Prim::max, "bsuf"}, {Prim::and_, "bsu"},  {Prim::shift_left, "su"}, {Prim::eq, "bsuf"},
      {Prim::lt, "bsuf"},  {Prim::atan2, "f"},   {Prim::pow, "f"},         {Prim::clamp, "bsuf"},
  };
  for (const auto& [prim, kinds] : accepted) {
    for (DType t : {b1, i16, u32, bf16}) {
      const char kind = t == b1 ? 'b' : t == i16 ? 's' : t == u32 ? 'u' : 'f';
      const size_t arity = prim == Prim::clamp ? 3 : core::has_trait(prim, core::kUnary) ? 1 : 2;
      const std::vector<Aval> in(arity, A(t));
      const bool ok = kinds.find(kind) != std::string::npos;
      if (ok) {
        EXPECT_NO_THROW(core::abstract_eval(prim, in, {})) << name(prim) << " " << dtype_name(t);
      } else {
        EXPECT_THROW(core::abstract_eval(prim, in, {}), TypeError)
            << name(prim) << " " << dtype_name(t);
      }
    }
  }
}

}  // namespace
}  // namespace parax
