#include "prims/prim_table.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <numeric>
#include <optional>

#include "base/dtype_dispatch.h"
#include "parax/numpy.h"
#include "parax/sharding.h"

namespace parax::prim_table {
namespace {

using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;
using I128 = __int128;

const Real kNan = std::numeric_limits<Real>::quiet_NaN();

// ---- references --------------------------------------------------------------------

// The inverse of erfl by bisection: slow, obviously right.
Real erf_inv_ref(Real y) {
  if (std::isnan(y) || std::abs(y) > 1) return kNan;
  if (std::abs(y) == 1 || y == 0) {
    return y == 0 ? y : std::copysign(std::numeric_limits<Real>::infinity(), y);
  }
  Real lo = -7, hi = 7;
  for (int i = 0; i < 200; ++i) {
    const Real mid = (lo + hi) / 2;
    (std::erf(mid) < y ? lo : hi) = mid;
  }
  return (lo + hi) / 2;
}

I128 shift_amount(DType t, I128 b) { return b < 0 || b >= bits_of(t) ? -1 : b; }

Real max_ref(Real a, Real b) {
  if (std::isnan(a) || std::isnan(b)) return kNan;
  return a == b ? (std::signbit(a) ? b : a) : std::max(a, b);
}
Real min_ref(Real a, Real b) {
  if (std::isnan(a) || std::isnan(b)) return kNan;
  return a == b ? (std::signbit(a) ? a : b) : std::min(a, b);
}

// Naive references of the rows that have no simpler kind (defined at the end).
using Naive = std::vector<double>(const Case& c, const std::vector<std::vector<double>>& in,
                                  const std::vector<core::Aval>& out, std::vector<double>& scale);
Naive naive_dot, naive_select, naive_clamp, naive_fma, naive_nextafter, naive_reduce, naive_arg,
    naive_cumsum, naive_sort;

I128 int_neg(DType t, I128 a, I128) { return wrap(t, -a); }
I128 int_abs(DType t, I128 a, I128) { return wrap(t, a < 0 ? -a : a); }
I128 int_sign(DType, I128 a, I128) { return I128(a > 0) - I128(a < 0); }
I128 int_same(DType, I128 a, I128) { return a; }
Real sign_ref(Real x) { return x > 0 ? 1 : x < 0 ? -1 : x; }  // keeps -0 and NaN

// ---- building rows --------------------------------------------------------------------

Operand f32(Shape s, double lo = -2, double hi = 2) {
  return {std::move(s), DType::float32, lo, hi};
}
Operand i32(Shape s, double lo = -9, double hi = 9) { return {std::move(s), DType::int32, lo, hi}; }
Operand boolean(Shape s) { return {std::move(s), DType::bool_, 0, 1}; }
// A fixed int32 scalar (a start index).
Operand index(int64_t v) { return {{}, DType::int32, 0, 0, {double(v)}}; }
// Fixed values.
Operand given(std::vector<double> v) {
  const int64_t n = int64_t(v.size());
  return {{n}, DType::float32, 0, 0, std::move(v)};
}

constexpr uint32_t kGrad = kJvp | kVjp;
// Every leg of an elementwise primitive but the reference and the transpose.
constexpr uint32_t kAll = kShape | kGrad | kBatch | kShard | kFuse;

class Rows {
 public:
  Case& add(std::string name, Prim p, std::vector<Operand> ops, Params params, uint32_t legs) {
    rows_.push_back({std::move(name), p, std::move(ops), std::move(params), legs | kShape});
    return rows_.back();
  }
  std::vector<Case> take() { return std::move(rows_); }

 private:
  std::vector<Case> rows_;
};

std::string name_of(Prim p) { return std::string(core::prim_name(p)); }
std::string axes_str(const Ints& axes) {
  std::string s;
  for (int64_t a : axes) s += (s.empty() ? "" : ",") + std::to_string(a);
  return "(" + s + ")";
}

Params dot_params(Ints lc, Ints rc, Ints lb = {}, Ints rb = {}) {
  return {{"lhs_contracting_dimensions", lc},
          {"rhs_contracting_dimensions", rc},
          {"lhs_batch_dimensions", lb},
          {"rhs_batch_dimensions", rb}};
}
Params slice_params(Ints start, Ints limit, Ints strides = {}) {
  return {{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}};
}
Params sort_params(int64_t dimension, int64_t num_keys) {
  return {{"dimension", dimension}, {"is_stable", true}, {"num_keys", num_keys}};
}
Params convert_to(DType t) { return {{"new_dtype", t}, {"weak_type", false}}; }

// A layout one device can hold: P('a', None) on a one-device mesh.
Params on_one_device() {
  return {{"sharding",
           std::make_shared<const Sharding>(NamedSharding(make_mesh({1}, {"a"}), P("a", None)))}};
}

// ---- elementwise ----------------------------------------------------------------------

void unary_rows(Rows& r) {
  struct Unary {
    Prim prim;
    double lo, hi;  // where values are drawn (inside the domain, for finite differences)
    Real (*ref)(Real) = nullptr;
    Real ref_lo = 0, ref_hi = 0;
    bool zero_tangent = false;
    I128 (*integer)(DType, I128, I128) = nullptr;
  };
  const Unary unary[] = {
      {Prim::neg, -2, 2, [](Real x) { return -x; }, -10, 10, false, int_neg},
      {Prim::abs, -2, 2, [](Real x) { return std::abs(x); }, -10, 10, false, int_abs},
      {Prim::sign, -2, 2, sign_ref, -3, 3, true, int_sign},
      {Prim::floor, -3, 3, [](Real x) { return std::floor(x); }, -3, 3, true},
      {Prim::ceil, -3, 3, [](Real x) { return std::ceil(x); }, -3, 3, true},
      {Prim::exp, -2, 2, [](Real x) { return std::exp(x); }, -10, 10},
      {Prim::exp2, -2, 2, [](Real x) { return std::exp2(x); }, -10, 10},
      {Prim::log, 0.1, 3, [](Real x) { return std::log(x); }, 0.01L, 100},
      {Prim::log1p, -0.5, 2, [](Real x) { return std::log1p(x); }, -0.9L, 10},
      {Prim::expm1, -2, 2, [](Real x) { return std::expm1(x); }, -5, 5},
      {Prim::sin, -3, 3, [](Real x) { return std::sin(x); }, -5, 5},
      {Prim::cos, -3, 3, [](Real x) { return std::cos(x); }, -5, 5},
      {Prim::tan, -1, 1, [](Real x) { return std::tan(x); }, -1.5L, 1.5L},
      {Prim::asin, -0.9, 0.9, [](Real x) { return std::asin(x); }, -1, 1},
      {Prim::acos, -0.9, 0.9, [](Real x) { return std::acos(x); }, -1, 1},
      {Prim::atan, -3, 3, [](Real x) { return std::atan(x); }, -10, 10},
      {Prim::sinh, -2, 2, [](Real x) { return std::sinh(x); }, -5, 5},
      {Prim::cosh, -2, 2, [](Real x) { return std::cosh(x); }, -5, 5},
      {Prim::tanh, -2, 2, [](Real x) { return std::tanh(x); }, -5, 5},
      {Prim::sqrt, 0.1, 4, [](Real x) { return std::sqrt(x); }, 0, 100},
      {Prim::rsqrt, 0.1, 4, [](Real x) { return 1 / std::sqrt(x); }, 0.01L, 100},
      {Prim::cbrt, 0.2, 4, [](Real x) { return std::cbrt(x); }, -100, 100},
      {Prim::logistic, -4, 4, [](Real x) { return 1 / (1 + std::exp(-x)); }, -10, 10},
      {Prim::erf, -2, 2, [](Real x) { return std::erf(x); }, -3, 3},
      {Prim::erf_inv, -0.9, 0.9, erf_inv_ref, -0.999L, 0.999L},
      {Prim::is_finite, -2, 2, [](Real x) { return Real(std::isfinite(x)); }, -10, 10, true},
      {Prim::copy, -2, 2, [](Real x) { return x; }, -10, 10, false, int_same},
  };
  for (const Unary& u : unary) {
    Case& c = r.add(name_of(u.prim), u.prim, {f32({3, 4}, u.lo, u.hi)}, {}, kAll);
    c.zero_tangent = u.zero_tangent;
    if (u.ref != nullptr) {
      c.legs |= kValues;
      c.ref.unary = u.ref;
      c.ref.lo = u.ref_lo;
      c.ref.hi = u.ref_hi;
      c.ref.integer = u.integer;
    }
    r.add(name_of(u.prim) + " of a scalar", u.prim, {f32({}, u.lo, u.hi)}, {}, kBatch);
  }
  // cbrt's derivative is singular at 0: draws for finite differences stay away from it,
  // and the batching leg sees negative values too.
  r.add("cbrt of negatives", Prim::cbrt, {f32({3, 4}, -4, -0.2)}, {}, kGrad | kBatch);
  Case& sg = r.add("stop_gradient", Prim::stop_gradient, {f32({3, 4})}, {}, kAll | kValues);
  sg.zero_tangent = true;
  sg.ref = {.unary = [](Real x) { return x; }, .lo = -10, .hi = 10, .integer = int_same};
  r.add("stop_gradient of a scalar", Prim::stop_gradient, {f32({})}, {}, kBatch);
  r.add("neg of a scalar", Prim::neg, {f32({})}, {}, kGrad);
  r.add("neg", Prim::neg, {f32({4})}, {}, kTranspose).blank = true;
  r.add("copy", Prim::copy, {f32({4})}, {}, kTranspose);

  // The default rounding mode rounds halves to even.
  Case& even = r.add("round", Prim::round, {f32({3, 4}, -3, 3)}, {{"rounding_method", int64_t{1}}},
                     kAll | kValues);
  even.zero_tangent = true;
  even.ref = {.unary = [](Real x) { return std::nearbyint(x); }, .lo = -3, .hi = 3};
  r.add("round away from zero", Prim::round, {f32({3, 4})}, {{"rounding_method", int64_t{0}}},
        kValues)
      .ref = {.unary = [](Real x) { return std::round(x); }, .lo = -3, .hi = 3};
  r.add("not", Prim::not_, {i32({5})}, {}, kShape | kBatch | kShard | kFuse | kValues).ref.integer =
      [](DType t, I128 a, I128) { return wrap(t, ~a); };
  r.add("not bool", Prim::not_, {boolean({2, 3})}, {}, kBatch);
  r.add("integer_pow", Prim::integer_pow, {f32({3, 4})}, {{"y", int64_t{3}}}, kAll | kValues)
      .ref = {.unary = [](Real x) { return x * x * x; },
              .lo = -4,
              .hi = 4,
              .integer =
                  [](DType t, I128 a, I128) {
                    const auto u = static_cast<unsigned __int128>(a);
                    return wrap(t, I128(u * u * u));
                  }};
  for (int64_t y : {1, 2, -2}) {
    r.add("integer_pow y=" + std::to_string(y), Prim::integer_pow, {f32({4}, 0.3, 2)}, {{"y", y}},
          kGrad);
  }
  r.add("integer_pow y=0", Prim::integer_pow, {f32({3})}, {{"y", int64_t{0}}}, kGrad).zero_tangent =
      true;
  r.add("integer_pow int", Prim::integer_pow, {i32({4})}, {{"y", int64_t{2}}}, kBatch);
  // To int32: floats truncate (NaN is 0), integers wrap. The conversions between every pair
  // of dtypes: ElementwiseConvert.EveryPairMatchesReference.
  Case& to_int = r.add("convert_element_type", Prim::convert_element_type, {f32({3, 4}, -9, 9)},
                       convert_to(DType::int32), kAll | kValues);
  to_int.zero_tangent = true;
  to_int.ref = {.unary = [](Real x) { return std::isnan(x) ? 0 : std::trunc(x) + 0; },
                .lo = -9,
                .hi = 9,
                .integer = [](DType, I128 a, I128) { return wrap(DType::int32, a); }};
  r.add("convert_element_type to bfloat16", Prim::convert_element_type, {i32({3, 4}, 0, 6)},
        convert_to(DType::bfloat16), kFuse);
  r.add("convert_element_type float64", Prim::convert_element_type, {f32({4})},
        convert_to(DType::float64), kGrad);
  for (auto [from, to] :
       {std::pair{DType::float32, DType::float64}, std::pair{DType::float64, DType::float32}}) {
    Case& c = r.add("convert_element_type " + std::string(dtype_name(from)) + " to " +
                        std::string(dtype_name(to)),
                    Prim::convert_element_type, {{{3}, from}}, convert_to(to), kTranspose);
    c.keep_dtypes = true;
  }
}

Real add_ref(Real a, Real b) { return a + b; }
Real sub_ref(Real a, Real b) { return a - b; }
Real mul_ref(Real a, Real b) { return a * b; }
Real div_ref(Real a, Real b) { return a / b; }
Real rem_ref(Real a, Real b) { return std::fmod(a, b); }
Real pow_ref(Real a, Real b) { return std::pow(a, b); }
Real atan2_ref(Real a, Real b) { return std::atan2(a, b); }

I128 int_add(DType t, I128 a, I128 b) { return wrap(t, a + b); }
I128 int_sub(DType t, I128 a, I128 b) { return wrap(t, a - b); }
I128 int_mul(DType t, I128 a, I128 b) {
  return wrap(t, I128(static_cast<unsigned __int128>(a) * static_cast<unsigned __int128>(b)));
}
I128 int_div(DType t, I128 a, I128 b) { return b == 0 ? wrap(t, -1) : wrap(t, a / b); }
I128 int_rem(DType, I128 a, I128 b) { return b == 0 ? a : a % b; }
I128 int_max(DType, I128 a, I128 b) { return std::max(a, b); }
I128 int_min(DType, I128 a, I128 b) { return std::min(a, b); }

// The binary floating primitives: one row of every leg, rows with a rank-0 operand on
// either side (broadcast), and the transposes of the linear ones.
void float_binary_rows(Rows& r) {
  struct Binary {
    Prim prim;
    Operand x, y;
    Real (*ref)(Real, Real);
    Real ulps;
    I128 (*integer)(DType, I128, I128);
  };
  const Binary binary[] = {
      {Prim::add, f32({3, 4}), f32({3, 4}), add_ref, 0, int_add},
      {Prim::sub, f32({3, 4}), f32({3, 4}), sub_ref, 0, int_sub},
      {Prim::mul, f32({3, 4}), f32({3, 4}), mul_ref, 0, int_mul},
      {Prim::div, f32({3, 4}), f32({3, 4}, 0.5, 2), div_ref, 0, int_div},
      {Prim::max, f32({3, 4}), f32({3, 4}), max_ref, 0, int_max},
      {Prim::min, f32({3, 4}), f32({3, 4}), min_ref, 0, int_min},
      {Prim::atan2, f32({3, 4}), f32({3, 4}), atan2_ref, 4, nullptr},
      {Prim::pow, f32({3, 4}, 0.1, 2), f32({3, 4}), pow_ref, 4, nullptr},
  };
  for (const Binary& b : binary) {
    const std::string name = name_of(b.prim);
    Case& c = r.add(name, b.prim, {b.x, b.y}, {}, kAll | kValues);
    c.ref.binary = b.ref;
    c.ref.ulps = b.ulps;
    c.ref.integer = b.integer;
    Operand sx = b.x, sy = b.y;
    sx.shape = {};
    sy.shape = {};
    r.add(name + " by a scalar", b.prim, {b.x, sy}, {}, kGrad | kFuse);
    r.add(name + " of a scalar", b.prim, {sx, b.y}, {}, kGrad);
  }
  r.add("sub by a scalar (batched)", Prim::sub, {f32({3, 4}), f32({})}, {}, kBatch);
  r.add("mul of a scalar (batched)", Prim::mul, {f32({}), f32({2, 3})}, {}, kBatch);
  r.add("min int", Prim::min, {i32({5}), i32({5})}, {}, kBatch);

  Case& rem = r.add("rem", Prim::rem, {f32({3, 4}), f32({3, 4}, 0.5, 2)}, {},
                    kShape | kGrad | kBatch | kValues);
  rem.ref.binary = rem_ref;
  rem.ref.integer = int_rem;
  r.add("rem of a scalar", Prim::rem, {f32({}, 2, 6), f32({4}, 0.5, 2)}, {}, kGrad);
  r.add("rem int", Prim::rem, {i32({3, 4}), i32({3, 4})}, {}, kShard | kFuse);
  r.add("pow by int", Prim::pow, {f32({4}, 0.3, 2), i32({4}, -1, 3)}, {}, kGrad);
  r.add("pow of a scalar by int", Prim::pow, {f32({}, 0.5, 2), i32({4}, -1, 3)}, {}, kGrad);

  // Transposes: add and sub are linear in both operands together, mul and div in one.
  for (Prim p : {Prim::add, Prim::sub}) {
    Case& c = r.add(name_of(p), p, {f32({4}), f32({4})}, {}, kTranspose);
    c.linear = {{true, true}, {false, true}};
    c.fixed = Fixed::zero;
    c.blank = true;
    for (auto ops : {std::vector{f32({}), f32({4})}, std::vector{f32({4}), f32({})}}) {
      Case& s = r.add(name_of(p) + " with a scalar", p, ops, {}, kTranspose);
      s.linear = {{true, true}, {false, true}};
      s.fixed = Fixed::zero;
    }
  }
  Case& mul = r.add("mul", Prim::mul, {f32({4}), f32({4})}, {}, kTranspose);
  mul.linear = {{true, false}, {false, true}};
  mul.blank = true;
  for (auto ops : {std::vector{f32({}), f32({4})}, std::vector{f32({4}), f32({})}}) {
    r.add("mul with a scalar", Prim::mul, ops, {}, kTranspose).linear = {{true, false},
                                                                         {false, true}};
  }
  for (auto ops : {std::vector{f32({4}), f32({4}, 0.5, 2)}, std::vector{f32({}), f32({4}, 0.5, 2)},
                   std::vector{f32({4}), f32({}, 0.5, 2)}}) {
    r.add("div", Prim::div, ops, {}, kTranspose).linear = {{true, false}};
  }
}

// Piecewise constant, or not over floats: a zero tangent, and integer references.
void discrete_binary_rows(Rows& r) {
  Case& next = r.add("nextafter", Prim::nextafter, {f32({4}), f32({4})}, {}, kAll | kValues);
  next.zero_tangent = true;
  next.ref.naive = naive_nextafter;
  next.ref.dtypes = {DType::float64};
  r.add("nextafter by a scalar", Prim::nextafter, {f32({3, 4}), f32({})}, {}, kFuse);
  struct Compare {
    Prim prim;
    bool (*ref)(Real, Real);
    I128 (*integer)(DType, I128, I128);
  };
  const Compare compares[] = {
      {Prim::eq, [](Real a, Real b) { return a == b; },
       [](DType, I128 a, I128 b) { return I128(a == b); }},
      {Prim::ne, [](Real a, Real b) { return a != b; },
       [](DType, I128 a, I128 b) { return I128(a != b); }},
      {Prim::lt, [](Real a, Real b) { return a < b; },
       [](DType, I128 a, I128 b) { return I128(a < b); }},
      {Prim::le, [](Real a, Real b) { return a <= b; },
       [](DType, I128 a, I128 b) { return I128(a <= b); }},
      {Prim::gt, [](Real a, Real b) { return a > b; },
       [](DType, I128 a, I128 b) { return I128(a > b); }},
      {Prim::ge, [](Real a, Real b) { return a >= b; },
       [](DType, I128 a, I128 b) { return I128(a >= b); }},
  };
  for (const Compare& c : compares) {
    const uint32_t batch = c.prim == Prim::lt ? uint32_t{kBatch} : 0u;
    Case& row = r.add(name_of(c.prim), c.prim, {f32({3, 4}), f32({3, 4})}, {},
                      kShape | kGrad | kShard | kFuse | kValues | batch);
    row.zero_tangent = true;
    row.ref.compare = c.ref;
    row.ref.integer = c.integer;
    r.add(name_of(c.prim) + " by a scalar", c.prim, {f32({3, 4}), f32({})}, {}, kFuse);
  }
  r.add("eq int", Prim::eq, {i32({3, 4}, 0, 2), i32({3, 4}, 0, 2)}, {}, kBatch);
  r.add("ne by a scalar (batched)", Prim::ne, {f32({3, 4}), f32({})}, {}, kBatch);
  r.add("le int", Prim::le, {i32({4}), i32({4})}, {}, kBatch);
  r.add("gt of scalars", Prim::gt, {f32({}), f32({})}, {}, kBatch);
  r.add("ge 3-d", Prim::ge, {f32({2, 3, 2}), f32({2, 3, 2})}, {}, kBatch);

  struct Bits {
    Prim prim;
    Operand x, y;
    I128 (*integer)(DType, I128, I128);
  };
  const Bits bits[] = {
      {Prim::and_, i32({5}), i32({5}), [](DType t, I128 a, I128 b) { return wrap(t, a & b); }},
      {Prim::or_, i32({5}), i32({5}), [](DType t, I128 a, I128 b) { return wrap(t, a | b); }},
      {Prim::xor_, i32({2, 3}), i32({2, 3}),
       [](DType t, I128 a, I128 b) { return wrap(t, a ^ b); }},
      {Prim::shift_left, i32({5}), i32({5}, 0, 31),
       [](DType t, I128 a, I128 b) { return shift_amount(t, b) < 0 ? 0 : wrap(t, a << int(b)); }},
      {Prim::shift_right_logical, i32({5}), i32({5}, 0, 31),
       [](DType t, I128 a, I128 b) {
         const I128 u = a < 0 ? a + (I128(1) << bits_of(t)) : a;
         return shift_amount(t, b) < 0 ? 0 : wrap(t, u >> int(b));
       }},
      {Prim::shift_right_arithmetic, i32({5}), i32({5}, 0, 31),
       [](DType t, I128 a, I128 b) {
         // the same-width signed dtype
         const I128 s = wrap(is_signed_integer(t) ? t : DType(int(t) - 4), a);
         const I128 n = shift_amount(t, b) < 0 ? bits_of(t) - 1 : b;
         return wrap(t, s >> int(n));
       }},
  };
  for (const Bits& b : bits) {
    Case& c = r.add(name_of(b.prim), b.prim, {b.x, b.y}, {}, kBatch | kShard | kFuse | kValues);
    c.ref.integer = b.integer;
  }
  r.add("or bool", Prim::or_, {boolean({5}), boolean({5})}, {}, kBatch);
  r.add("xor by a scalar", Prim::xor_, {i32({2, 3}), i32({})}, {}, kBatch);
}

void other_elementwise_rows(Rows& r) {
  Case& sel = r.add("select_n", Prim::select_n, {boolean({3, 4}), f32({3, 4}), f32({3, 4})}, {},
                    kAll | kTranspose | kValues);
  sel.linear = {{false, true, true}, {false, false, true}};
  sel.fixed = Fixed::zero;
  sel.ref.naive = naive_select;
  r.add("select_n by a scalar", Prim::select_n, {boolean({}), f32({2, 3}), f32({2, 3})}, {},
        kBatch);
  r.add("select_n of three", Prim::select_n, {i32({4}, 0, 2), i32({4}), i32({4}), i32({4})}, {},
        kBatch);
  // Out-of-range indices clamp.
  Case& three =
      r.add("select_n of three floats", Prim::select_n,
            {i32({4}, -1, 5), f32({4}), f32({4}), f32({4})}, {}, kGrad | kTranspose | kValues);
  three.fixed = Fixed::zero;
  three.ref.naive = naive_select;
  Case& by = r.add("select_n of three by a scalar", Prim::select_n,
                   {i32({}, 0, 2), f32({4}), f32({4}), f32({4})}, {}, kGrad | kTranspose);
  by.linear = {{false, true, false, true}};
  by.fixed = Fixed::zero;
  r.add("select_n of one", Prim::select_n, {i32({}, 0, 0), f32({4})}, {}, kTranspose);

  Case& clamp = r.add("clamp", Prim::clamp, {f32({3, 4}, -2, 0), f32({3, 4}), f32({3, 4}, 0, 2)},
                      {}, kGrad | kBatch | kValues);
  clamp.ref.naive = naive_clamp;
  clamp.ref.dtypes = {DType::float64, DType::bfloat16, DType::int32, DType::uint8};
  Case& clamps = r.add("clamp by scalars", Prim::clamp,
                       {f32({}, -1, 0), f32({3, 4}), f32({}, 0, 1)}, {}, kAll | kValues);
  clamps.ref.naive = naive_clamp;
  Case& fma = r.add("fma", Prim::fma, {f32({3, 4}), f32({3, 4}), f32({3, 4})}, {}, kAll | kValues);
  fma.ref.naive = naive_fma;
  fma.ref.dtypes = {DType::float64};
  r.add("fma by scalars", Prim::fma, {f32({}), f32({3, 4}), f32({})}, {}, kGrad | kBatch);
  r.add("fma of a scalar", Prim::fma, {f32({}), f32({4}), f32({4})}, {}, kGrad);
}

// ---- structure ------------------------------------------------------------------------

// Rows of the sharded sweep are on 8 x 8 arrays, which every mesh of 8 devices divides,
// with values in [0.1, 0.9], where sums of 64 of them keep their relative accuracy.
Operand m8(Shape s = {8, 8}) { return f32(std::move(s), 0.1, 0.9); }

void structural_rows(Rows& r) {
  const uint32_t linear = kGrad | kTranspose;
  r.add("broadcast_in_dim", Prim::broadcast_in_dim, {f32({3})},
        {{"shape", Ints{2, 3, 4}}, {"broadcast_dimensions", Ints{1}}}, linear | kBatch);
  r.add("broadcast_in_dim size-1 dim", Prim::broadcast_in_dim, {f32({1, 3})},
        {{"shape", Ints{2, 5, 3}}, {"broadcast_dimensions", Ints{1, 2}}}, linear);
  r.add("broadcast_in_dim of size 1", Prim::broadcast_in_dim, {f32({3, 1})},
        {{"shape", Ints{3, 5}}, {"broadcast_dimensions", Ints{0, 1}}}, kBatch);
  r.add("broadcast_in_dim of a scalar", Prim::broadcast_in_dim, {f32({})},
        {{"shape", Ints{2, 3}}, {"broadcast_dimensions", Ints{}}}, linear | kBatch);
  r.add("broadcast_in_dim 8x8", Prim::broadcast_in_dim, {m8({8})},
        {{"shape", Ints{8, 8}}, {"broadcast_dimensions", Ints{0}}}, kShard);

  r.add("reshape", Prim::reshape, {f32({2, 3, 4})}, {{"new_sizes", Ints{6, 4}}}, linear | kBatch);
  r.add("reshape split", Prim::reshape, {f32({4, 3})}, {{"new_sizes", Ints{2, 2, 3}}}, linear);
  r.add("reshape split int", Prim::reshape, {i32({6})}, {{"new_sizes", Ints{2, 3}}}, kBatch);
  r.add("reshape of a scalar", Prim::reshape, {f32({})}, {{"new_sizes", Ints{1, 1}}}, kBatch);
  r.add("reshape merge 8x8", Prim::reshape, {m8()}, {{"new_sizes", Ints{64}}}, kShard);
  r.add("reshape split 8x8", Prim::reshape, {m8()}, {{"new_sizes", Ints{2, 4, 8}}}, kShard);

  r.add("transpose", Prim::transpose, {f32({2, 3, 4})}, {{"permutation", Ints{2, 0, 1}}},
        linear | kBatch)
      .blank = true;
  r.add("transpose 2-d", Prim::transpose, {i32({2, 3})}, {{"permutation", Ints{1, 0}}}, kBatch);
  r.add("transpose 8x8", Prim::transpose, {m8()}, {{"permutation", Ints{1, 0}}}, kShard);

  r.add("squeeze", Prim::squeeze, {f32({2, 1, 3, 1})}, {{"dimensions", Ints{1, 3}}},
        linear | kBatch)
      .blank = true;
  r.add("squeeze to a scalar", Prim::squeeze, {f32({1})}, {{"dimensions", Ints{0}}}, kBatch);
  r.add("squeeze 8x1x8", Prim::squeeze, {m8({8, 1, 8})}, {{"dimensions", Ints{1}}}, kShard);

  r.add("expand_dims", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{0, 2}}},
        linear | kBatch)
      .blank = true;
  r.add("expand_dims last", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{2}}}, kBatch);
  r.add("expand_dims of a scalar", Prim::expand_dims, {i32({})}, {{"dimensions", Ints{0, 1}}},
        kBatch);
  r.add("expand_dims 8x8", Prim::expand_dims, {m8()}, {{"dimensions", Ints{1}}}, kShard);

  r.add("slice", Prim::slice, {f32({5, 7})}, slice_params({1, 2}, {4, 7}), linear);
  r.add("slice strided", Prim::slice, {f32({5, 7})}, slice_params({0, 1}, {5, 7}, {2, 3}), linear);
  r.add("slice stride short of limit", Prim::slice, {f32({6})}, slice_params({1}, {6}, {2}),
        linear);
  r.add("slice empty", Prim::slice, {f32({4, 3})}, slice_params({2, 0}, {2, 3}), linear);
  r.add("slice rows", Prim::slice, {f32({5, 6})}, slice_params({1, 0}, {4, 6}), kBatch);
  r.add("slice with strides", Prim::slice, {i32({5, 6})}, slice_params({0, 1}, {5, 6}, {2, 3}),
        kBatch);
  r.add("slice 8x8", Prim::slice, {m8()}, slice_params({2, 0}, {6, 8}), kShard);

  // Starts from below 0 to past the end: XLA clamps them so the window fits.
  const uint32_t dyn = kGrad | kTranspose;
  r.add("dynamic_slice", Prim::dynamic_slice, {f32({5, 6}), index(1), index(2)},
        {{"slice_sizes", Ints{3, 2}}}, dyn);
  r.add("dynamic_slice clamped", Prim::dynamic_slice, {f32({5, 6}), index(4), index(-3)},
        {{"slice_sizes", Ints{3, 4}}}, dyn);
  r.add("dynamic_slice drawn starts", Prim::dynamic_slice,
        {f32({5, 6}), i32({}, -2, 6), i32({}, -2, 6)}, {{"slice_sizes", Ints{2, 3}}}, kBatch);
  r.add("dynamic_slice 1-d", Prim::dynamic_slice, {i32({9}), i32({}, -1, 9)},
        {{"slice_sizes", Ints{3}}}, kBatch);
  r.add("dynamic_slice whole and unit", Prim::dynamic_slice,
        {f32({4, 5}), i32({}, 0, 4), i32({}, -1, 5)}, {{"slice_sizes", Ints{4, 1}}}, kBatch);
  r.add("dynamic_slice uint8 starts", Prim::dynamic_slice, {f32({7}), {{}, DType::uint8, 0, 255}},
        {{"slice_sizes", Ints{2}}}, kBatch);
  r.add("dynamic_slice 8x8", Prim::dynamic_slice, {m8(), index(2), index(0)},
        {{"slice_sizes", Ints{4, 8}}}, kShard);

  Case& dus = r.add("dynamic_update_slice", Prim::dynamic_update_slice,
                    {f32({5, 6}), f32({2, 3}), index(1), index(4)}, {}, dyn);
  dus.linear = {
      {true, true, false, false}, {false, true, false, false}, {true, false, false, false}};
  dus.fixed = Fixed::zero;
  Case& far = r.add("dynamic_update_slice clamped", Prim::dynamic_update_slice,
                    {f32({5, 6}), f32({2, 3}), index(9), index(0)}, {}, dyn);
  far.diff = {false, true, false, false};
  far.fixed = Fixed::zero;
  r.add("dynamic_update_slice drawn starts", Prim::dynamic_update_slice,
        {f32({5, 6}), f32({2, 3}), i32({}, -2, 6), i32({}, -2, 6)}, {}, kBatch);
  r.add("dynamic_update_slice 1-d", Prim::dynamic_update_slice,
        {i32({9}), i32({3}), i32({}, -1, 9)}, {}, kBatch);
  r.add("dynamic_update_slice whole and unit", Prim::dynamic_update_slice,
        {f32({4, 5}), f32({4, 1}), i32({}, 0, 4), i32({}, -1, 5)}, {}, kBatch);
  r.add("dynamic_update_slice 8x8", Prim::dynamic_update_slice,
        {m8(), m8({2, 8}), index(2), index(0)}, {}, kShard);

  Case& cat = r.add("concatenate", Prim::concatenate, {f32({2, 3}), f32({4, 3}), f32({1, 3})},
                    {{"dimension", int64_t{0}}}, linear);
  cat.fixed = Fixed::zero;
  Case& some = r.add("concatenate some linear", Prim::concatenate,
                     {f32({2, 1}), f32({2, 3}), f32({2, 2})}, {{"dimension", int64_t{1}}}, linear);
  some.diff = {true, false, true};
  some.fixed = Fixed::zero;
  r.add("concatenate two", Prim::concatenate, {f32({2, 3}), f32({4, 3})},
        {{"dimension", int64_t{0}}}, kBatch);
  r.add("concatenate three", Prim::concatenate, {i32({2, 3}), i32({2, 1}), i32({2, 2})},
        {{"dimension", int64_t{1}}}, kBatch);
  r.add("concatenate 8x8", Prim::concatenate, {m8(), m8()}, {{"dimension", int64_t{0}}}, kShard);

  auto pad = [&](std::string name, Operand x, Ints config, uint32_t legs) -> Case& {
    Case& c = r.add(std::move(name), Prim::pad, {std::move(x), f32({})},
                    {{"padding_config", config}}, legs);
    c.fixed = Fixed::zero;
    c.blank = true;
    return c;
  };
  pad("pad", f32({3, 4}), {1, 2, 0, 0, 1, 1}, linear | kBatch);
  pad("pad negative interior", f32({3, 4}), {-1, 2, 1, 2, -3, 2}, linear);
  pad("pad operand only", f32({4}), {0, 0, 2}, linear).diff = {true, false};
  pad("pad value only", f32({4}), {1, -1, 1}, linear).diff = {false, true};
  r.add("pad cropping", Prim::pad, {i32({3, 4}), i32({})},
        {{"padding_config", Ints{-1, 2, 1, 2, -1, 0}}}, kBatch);
  r.add("pad 8x8", Prim::pad, {m8(), m8({})}, {{"padding_config", Ints{1, 2, 0, 0, 0, 1}}}, kShard);

  r.add("rev", Prim::rev, {f32({3, 4})}, {{"dimensions", Ints{0}}}, linear).blank = true;
  r.add("rev both", Prim::rev, {f32({3, 4})}, {{"dimensions", Ints{0, 1}}}, linear).blank = true;
  r.add("rev last", Prim::rev, {f32({3, 4})}, {{"dimensions", Ints{1}}}, kBatch);
  r.add("rev two", Prim::rev, {i32({3, 4, 2})}, {{"dimensions", Ints{0, 2}}}, kBatch);
  r.add("rev 8x8", Prim::rev, {m8()}, {{"dimensions", Ints{0}}}, kShard);

  r.add("iota", Prim::iota, {},
        {{"dtype", DType::float32}, {"shape", Ints{4}}, {"dimension", int64_t{0}}}, kJvp)
      .zero_tangent = true;
  const Operand key{{2}, DType::uint32, 0, 4294967295.0};
  for (bool partitionable : {true, false}) {
    r.add(partitionable ? "random_bits" : "random_bits original", Prim::random_bits, {key},
          {{"shape", Ints{3, 2}}, {"bit_width", int64_t{32}}, {"partitionable", partitionable}},
          kBatch);
  }
}

// ---- data movement against index maps ---------------------------------------------------

int64_t flat(const Shape& shape, const Ints& index) {
  int64_t f = 0;
  for (size_t d = 0; d < shape.size(); ++d) f = f * shape[d] + index[d];
  return f;
}

Source same(const Shape& shape, const Ints& i) { return {0, flat(shape, i)}; }

// Reference of pad for one flat config: operand index of out index, or the padding value.
Source pad_ref(const Shape& shape, const Ints& config, const Ints& out) {
  Ints in(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t p = out[d] - config[3 * d];
    const int64_t step = config[3 * d + 2] + 1;
    if (p < 0 || p % step != 0 || p / step >= shape[d]) return {1, 0};
    in[d] = p / step;
  }
  return {0, flat(shape, in)};
}

Params P(std::initializer_list<std::pair<std::string, core::ParamValue>> items) {
  return Params(items);
}

// A values row of a structural primitive: array operands (their dtype is the leg's), the
// trailing start indices, and where each element of the result comes from (nullptr: the
// result is empty).
struct IndexCase {
  std::string name;
  Prim prim;
  std::vector<Shape> shapes;
  Ints indices;
  Params params;
  Shape out_shape;
  std::function<Source(const Ints& out)> ref;
};

// Rows of the values leg only: edge shapes (rank 0, empty) and shapes large enough for
// the kernels' tiled and parallel paths.
void index_map_rows(Rows& r) {
  auto add = [&](IndexCase k) {
    std::vector<Operand> ops;
    for (Shape& shape : k.shapes) ops.push_back(f32(std::move(shape)));
    for (int64_t v : k.indices) ops.push_back(index(v));
    Case& c = r.add(k.name, k.prim, std::move(ops), std::move(k.params), kValues);
    c.ref.index = k.ref ? k.ref : [](const Ints&) { return Source{0, 0}; };
    c.ref.out_shape = k.out_shape;
  };
  // broadcast_in_dim
  add({"bcast_row",
       Prim::broadcast_in_dim,
       {{3}},
       {},
       P({{"shape", Ints{2, 3}}, {"broadcast_dimensions", Ints{1}}}),
       {2, 3},
       [](const Ints& o) {
         return Source{0, o[1]};
       }});
  add({"bcast_size1",
       Prim::broadcast_in_dim,
       {{3, 1}},
       {},
       P({{"shape", Ints{3, 4}}, {"broadcast_dimensions", Ints{0, 1}}}),
       {3, 4},
       [](const Ints& o) {
         return Source{0, o[0]};
       }});
  add({"bcast_middle",
       Prim::broadcast_in_dim,
       {{2, 3}},
       {},
       P({{"shape", Ints{2, 4, 3}}, {"broadcast_dimensions", Ints{0, 2}}}),
       {2, 4, 3},
       [](const Ints& o) {
         return Source{0, o[0] * 3 + o[2]};
       }});
  add({"bcast_scalar",
       Prim::broadcast_in_dim,
       {{}},
       {},
       P({{"shape", Ints{2, 2}}, {"broadcast_dimensions", Ints{}}}),
       {2, 2},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"bcast_rank0",
       Prim::broadcast_in_dim,
       {{}},
       {},
       P({{"shape", Ints{}}, {"broadcast_dimensions", Ints{}}}),
       {},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"bcast_zero",
       Prim::broadcast_in_dim,
       {{0}},
       {},
       P({{"shape", Ints{2, 0}}, {"broadcast_dimensions", Ints{1}}}),
       {2, 0},
       nullptr});
  add({"bcast_big",
       Prim::broadcast_in_dim,
       {{1, 300}},
       {},
       P({{"shape", Ints{300, 300}}, {"broadcast_dimensions", Ints{0, 1}}}),
       {300, 300},
       [](const Ints& o) {
         return Source{0, o[1]};
       }});
  add({"bcast_fill_big",
       Prim::broadcast_in_dim,
       {{}},
       {},
       P({{"shape", Ints{100000}}, {"broadcast_dimensions", Ints{}}}),
       {100000},
       [](const Ints&) {
         return Source{0, 0};
       }});
  // reshape, squeeze, expand_dims: same row-major order
  add({"reshape",
       Prim::reshape,
       {{2, 3, 4}},
       {},
       P({{"new_sizes", Ints{6, 4}}}),
       {6, 4},
       [](const Ints& o) {
         return same({6, 4}, o);
       }});
  add({"reshape_rank0",
       Prim::reshape,
       {{}},
       {},
       P({{"new_sizes", Ints{1, 1}}}),
       {1, 1},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"reshape_zero",
       Prim::reshape,
       {{0, 3}},
       {},
       P({{"new_sizes", Ints{3, 0}}}),
       {3, 0},
       nullptr});
  add({"reshape_big",
       Prim::reshape,
       {{600, 400}},
       {},
       P({{"new_sizes", Ints{400, 600}}}),
       {400, 600},
       [](const Ints& o) {
         return same({400, 600}, o);
       }});
  add({"squeeze",
       Prim::squeeze,
       {{1, 3, 1}},
       {},
       P({{"dimensions", Ints{0, 2}}}),
       {3},
       [](const Ints& o) {
         return Source{0, o[0]};
       }});
  add({"expand_dims",
       Prim::expand_dims,
       {{3}},
       {},
       P({{"dimensions", Ints{0, 2}}}),
       {1, 3, 1},
       [](const Ints& o) {
         return Source{0, o[1]};
       }});
  add({"expand_rank0",
       Prim::expand_dims,
       {{}},
       {},
       P({{"dimensions", Ints{0}}}),
       {1},
       [](const Ints&) {
         return Source{0, 0};
       }});
  // transpose
  add({"transpose3",
       Prim::transpose,
       {{2, 3, 4}},
       {},
       P({{"permutation", Ints{2, 0, 1}}}),
       {4, 2, 3},
       [](const Ints& o) {
         return same({2, 3, 4}, {o[1], o[2], o[0]});
       }});
  add({"transpose_tiled",
       Prim::transpose,
       {{96, 80}},
       {},
       P({{"permutation", Ints{1, 0}}}),
       {80, 96},
       [](const Ints& o) {
         return same({96, 80}, {o[1], o[0]});
       }});
  add({"transpose_tiled3",
       Prim::transpose,
       {{3, 64, 40}},
       {},
       P({{"permutation", Ints{2, 1, 0}}}),
       {40, 64, 3},
       [](const Ints& o) {
         return same({3, 64, 40}, {o[2], o[1], o[0]});
       }});
  add({"transpose_big",
       Prim::transpose,
       {{7, 300, 90}},
       {},
       P({{"permutation", Ints{2, 0, 1}}}),
       {90, 7, 300},
       [](const Ints& o) {
         return same({7, 300, 90}, {o[1], o[2], o[0]});
       }});
  add({"transpose_rank0",
       Prim::transpose,
       {{}},
       {},
       P({{"permutation", Ints{}}}),
       {},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"transpose_zero",
       Prim::transpose,
       {{0, 5}},
       {},
       P({{"permutation", Ints{1, 0}}}),
       {5, 0},
       nullptr});
  // slice
  add({"slice",
       Prim::slice,
       {{5, 6}},
       {},
       P({{"start_indices", Ints{1, 0}}, {"limit_indices", Ints{4, 6}}, {"strides", Ints{}}}),
       {3, 6},
       [](const Ints& o) {
         return same({5, 6}, {o[0] + 1, o[1]});
       }});
  add({"slice_strided",
       Prim::slice,
       {{7, 8}},
       {},
       P({{"start_indices", Ints{1, 2}}, {"limit_indices", Ints{7, 8}}, {"strides", Ints{2, 3}}}),
       {3, 2},
       [](const Ints& o) {
         return same({7, 8}, {1 + 2 * o[0], 2 + 3 * o[1]});
       }});
  add({"slice_no_strides_param",
       Prim::slice,
       {{4}},
       {},
       P({{"start_indices", Ints{2}}, {"limit_indices", Ints{4}}}),
       {2},
       [](const Ints& o) {
         return Source{0, o[0] + 2};
       }});
  add({"slice_empty",
       Prim::slice,
       {{4, 3}},
       {},
       P({{"start_indices", Ints{2, 0}}, {"limit_indices", Ints{2, 3}}}),
       {0, 3},
       nullptr});
  add({"slice_rank0",
       Prim::slice,
       {{}},
       {},
       P({{"start_indices", Ints{}}, {"limit_indices", Ints{}}}),
       {},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"slice_big",
       Prim::slice,
       {{400, 300}},
       {},
       P({{"start_indices", Ints{3, 1}},
          {"limit_indices", Ints{400, 300}},
          {"strides", Ints{1, 2}}}),
       {397, 150},
       [](const Ints& o) {
         return same({400, 300}, {o[0] + 3, 1 + 2 * o[1]});
       }});
  // dynamic_slice: starts clamped into [0, size - slice_size]
  add({"dslice",
       Prim::dynamic_slice,
       {{5, 6}},
       {1, 2},
       P({{"slice_sizes", Ints{2, 3}}}),
       {2, 3},
       [](const Ints& o) {
         return same({5, 6}, {o[0] + 1, o[1] + 2});
       }});
  add({"dslice_clamped",
       Prim::dynamic_slice,
       {{5, 6}},
       {4, -3},
       P({{"slice_sizes", Ints{2, 3}}}),
       {2, 3},
       [](const Ints& o) {
         return same({5, 6}, {o[0] + 3, o[1]});
       }});
  add({"dslice_huge",
       Prim::dynamic_slice,
       {{5}},
       {2000000000},
       P({{"slice_sizes", Ints{5}}}),
       {5},
       [](const Ints& o) {
         return Source{0, o[0]};
       }});
  add({"dslice_rank0",
       Prim::dynamic_slice,
       {{}},
       {},
       P({{"slice_sizes", Ints{}}}),
       {},
       [](const Ints&) {
         return Source{0, 0};
       }});
  add({"dslice_zero",
       Prim::dynamic_slice,
       {{5, 6}},
       {1, 1},
       P({{"slice_sizes", Ints{0, 3}}}),
       {0, 3},
       nullptr});
  // dynamic_update_slice
  auto dus_ref = [](Shape shape, Shape update, Ints start) {
    return [=](const Ints& o) {
      Ints u(o.size());
      for (size_t d = 0; d < o.size(); ++d) {
        u[d] = o[d] - start[d];
        if (u[d] < 0 || u[d] >= update[d]) return same(shape, o);
      }
      return Source{1, flat(update, u)};
    };
  };
  add({"dus",
       Prim::dynamic_update_slice,
       {{4, 5}, {2, 3}},
       {1, 1},
       {},
       {4, 5},
       dus_ref({4, 5}, {2, 3}, {1, 1})});
  add({"dus_clamped",
       Prim::dynamic_update_slice,
       {{4, 5}, {2, 3}},
       {3, -7},
       {},
       {4, 5},
       dus_ref({4, 5}, {2, 3}, {2, 0})});
  add({"dus_rank0", Prim::dynamic_update_slice, {{}, {}}, {}, {}, {}, [](const Ints&) {
         return Source{1, 0};
       }});
  add({"dus_empty_update", Prim::dynamic_update_slice, {{3}, {0}}, {1}, {}, {3}, [](const Ints& o) {
         return Source{0, o[0]};
       }});
  add({"dus_big",
       Prim::dynamic_update_slice,
       {{300, 300}, {100, 299}},
       {150, 1},
       {},
       {300, 300},
       dus_ref({300, 300}, {100, 299}, {150, 1})});
  // concatenate
  add({"concat1",
       Prim::concatenate,
       {{2, 3}, {2, 1}, {2, 2}},
       {},
       P({{"dimension", 1}}),
       {2, 6},
       [](const Ints& o) {
         if (o[1] < 3) return Source{0, o[0] * 3 + o[1]};
         if (o[1] < 4) return Source{1, o[0]};
         return Source{2, o[0] * 2 + o[1] - 4};
       }});
  add({"concat0_zero",
       Prim::concatenate,
       {{1, 3}, {0, 3}, {2, 3}},
       {},
       P({{"dimension", 0}}),
       {3, 3},
       [](const Ints& o) {
         return o[0] < 1 ? Source{0, o[1]} : Source{2, (o[0] - 1) * 3 + o[1]};
       }});
  add({"concat_big",
       Prim::concatenate,
       {{200, 150}, {200, 250}},
       {},
       P({{"dimension", 1}}),
       {200, 400},
       [](const Ints& o) {
         return o[1] < 150 ? Source{0, o[0] * 150 + o[1]} : Source{1, o[0] * 250 + o[1] - 150};
       }});
  // pad: operand, then the padding value (operand 1)
  auto pad = [&](std::string name, Shape shape, Ints config, Shape out) {
    add({name,
         Prim::pad,
         {shape, {}},
         {},
         P({{"padding_config", config}}),
         out,
         [=](const Ints& o) { return pad_ref(shape, config, o); }});
  };
  pad("pad_edges", {3}, {1, 2, 0}, {6});
  pad("pad_interior", {3}, {0, 0, 2}, {7});
  pad("pad_negative", {4}, {-1, -1, 1}, {5});
  pad("pad_crop_all_but_one", {3}, {-2, -2, 1}, {1});
  pad("pad_crop_to_zero", {3}, {-2, -1, 0}, {0});
  pad("pad_2d", {3, 4}, {1, -1, 1, -2, 3, 0}, {5, 5});
  pad("pad_rank0", {}, {}, {});
  pad("pad_zero_operand", {0}, {2, 1, 3}, {3});
  pad("pad_big", {250, 250}, {3, 4, 1, -2, -1, 0}, {506, 247});
  // rev
  add({"rev0", Prim::rev, {{3, 4}}, {}, P({{"dimensions", Ints{0}}}), {3, 4}, [](const Ints& o) {
         return same({3, 4}, {2 - o[0], o[1]});
       }});
  add({"rev01",
       Prim::rev,
       {{3, 4}},
       {},
       P({{"dimensions", Ints{1, 0}}}),
       {3, 4},
       [](const Ints& o) {
         return same({3, 4}, {2 - o[0], 3 - o[1]});
       }});
  add({"rev_none", Prim::rev, {{3, 4}}, {}, P({{"dimensions", Ints{}}}), {3, 4}, [](const Ints& o) {
         return same({3, 4}, o);
       }});
  add({"rev_rank0", Prim::rev, {{}}, {}, P({{"dimensions", Ints{}}}), {}, [](const Ints&) {
         return Source{0, 0};
       }});
  add({"rev_zero", Prim::rev, {{0, 2}}, {}, P({{"dimensions", Ints{0}}}), {0, 2}, nullptr});
  add({"rev_big",
       Prim::rev,
       {{200, 300}},
       {},
       P({{"dimensions", Ints{1}}}),
       {200, 300},
       [](const Ints& o) {
         return same({200, 300}, {o[0], 299 - o[1]});
       }});
}

// ---- dot_general against a naive loop ---------------------------------------------------

Ints free_of(size_t rank, const Ints& a, const Ints& b) {
  Ints f;
  for (int64_t d = 0; d < int64_t(rank); ++d) {
    if (std::count(a.begin(), a.end(), d) + std::count(b.begin(), b.end(), d) == 0) {
      f.push_back(d);
    }
  }
  return f;
}

Ints strides_of(const Shape& shape) {
  Ints s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Calls f(multi_index) for every index of `shape`, in row-major order.
void for_each_index(const Shape& shape, const std::function<void(const Ints&)>& f) {
  if (shape_size(shape) == 0) return;
  Ints idx(shape.size(), 0);
  while (true) {
    f(idx);
    size_t d = shape.size();
    while (d > 0 && ++idx[d - 1] == shape[d - 1]) idx[--d] = 0;
    if (d == 0) return;
  }
}

double wrap_to(DType dtype, uint64_t v) {
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return double(static_cast<T>(v));
    } else {
      return double(v != 0);
    }
  });
}

// For each result index, loops over the contracting index space.
std::vector<double> naive_dot(const Case& c, const std::vector<std::vector<double>>& in,
                              const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const core::Aval& out = outs[0];
  const Shape& ls_shape = c.operands[0].shape;
  const Shape& rs_shape = c.operands[1].shape;
  const Ints lc = c.params.get<Ints>("lhs_contracting_dimensions");
  const Ints rc = c.params.get<Ints>("rhs_contracting_dimensions");
  const Ints lb = c.params.get<Ints>("lhs_batch_dimensions");
  const Ints rb = c.params.get<Ints>("rhs_batch_dimensions");
  const std::vector<double>& a = in[0];
  const std::vector<double>& b = in[1];
  const Ints lf = free_of(ls_shape.size(), lc, lb), rf = free_of(rs_shape.size(), rc, rb);
  Shape k_shape;
  for (int64_t d : lc) k_shape.push_back(ls_shape[size_t(d)]);
  const Ints ls = strides_of(ls_shape), rs = strides_of(rs_shape);
  std::vector<double> want;
  for_each_index(out.shape, [&](const Ints& o) {
    int64_t lo = 0, ro = 0;
    size_t pos = 0;
    for (size_t i = 0; i < lb.size(); ++i, ++pos) {
      lo += o[pos] * ls[size_t(lb[i])];
      ro += o[pos] * rs[size_t(rb[i])];
    }
    for (int64_t d : lf) lo += o[pos++] * ls[size_t(d)];
    for (int64_t d : rf) ro += o[pos++] * rs[size_t(d)];
    double sum = 0, mag = 0;
    uint64_t wrapped = 0;
    bool any = false;
    for_each_index(k_shape, [&](const Ints& k) {
      int64_t l = lo, r = ro;
      for (size_t i = 0; i < k.size(); ++i) {
        l += k[i] * ls[size_t(lc[i])];
        r += k[i] * rs[size_t(rc[i])];
      }
      sum += a[size_t(l)] * b[size_t(r)];
      mag += std::abs(a[size_t(l)] * b[size_t(r)]);
      wrapped += uint64_t(int64_t(a[size_t(l)])) * uint64_t(int64_t(b[size_t(r)]));
      any = any || (a[size_t(l)] != 0 && b[size_t(r)] != 0);
    });
    if (out.dtype == DType::bool_) {
      want.push_back(any);
    } else if (is_integer(out.dtype)) {
      want.push_back(wrap_to(out.dtype, wrapped));
    } else {
      want.push_back(sum);
    }
    scale.push_back(mag + 1e-30);
  });
  return want;
}

// Layouts, dtypes and sizes of dot_general for the values leg: transposed, batched and
// empty operands, and sizes for the GEMM's parallel and tiled paths.
void dot_value_rows(Rows& r) {
  struct DotCase {
    const char* name;
    Shape lhs, rhs;
    Ints lc, rc, lb, rb;
    DType dtype;
    std::optional<DType> preferred = std::nullopt;
  };
  const DType f32 = DType::float32, f64 = DType::float64;
  const DotCase cases[] = {
      {"matmul", {5, 7}, {7, 3}, {1}, {0}, {}, {}, f32},
      {"matmul f64", {6, 9}, {9, 4}, {1}, {0}, {}, {}, f64},
      {"lhs contracting first", {7, 5}, {7, 3}, {0}, {0}, {}, {}, f32},
      {"rhs contracting last", {5, 7}, {3, 7}, {1}, {1}, {}, {}, f64},
      {"both transposed", {7, 5}, {3, 7}, {0}, {1}, {}, {}, f32},
      {"batched", {2, 4, 6}, {2, 6, 5}, {2}, {1}, {0}, {0}, f32},
      {"batched transposed", {3, 6, 4}, {3, 5, 6}, {1}, {2}, {0}, {0}, f64},
      {"batch not leading", {4, 2, 6}, {2, 6, 3}, {2}, {1}, {1}, {0}, f32},
      {"two batch dims swapped", {2, 3, 4, 5}, {3, 2, 5, 2}, {3}, {2}, {1, 0}, {0, 1}, f32},
      {"two contracting dims", {3, 4, 5}, {4, 5, 2}, {1, 2}, {0, 1}, {}, {}, f32},
      {"contracting out of order", {3, 4, 5}, {5, 4, 2}, {2, 1}, {0, 1}, {}, {}, f64},
      {"free dims on both sides", {2, 3, 4}, {4, 5}, {2}, {0}, {}, {}, f32},
      {"vector dot", {100}, {100}, {0}, {0}, {}, {}, f32},
      {"matrix-vector", {6, 50}, {50}, {1}, {0}, {}, {}, f32},
      {"outer product", {3}, {4}, {}, {}, {}, {}, f32},
      {"scalar times matrix", {}, {2, 3}, {}, {}, {}, {}, f64},
      {"contracting size 0", {3, 0}, {0, 4}, {1}, {0}, {}, {}, f32},
      {"contracting size 0 int", {3, 0}, {0, 4}, {1}, {0}, {}, {}, DType::int32},
      {"empty batch", {0, 3, 4}, {0, 4, 2}, {2}, {1}, {0}, {0}, f32},
      {"empty free dim", {0, 4}, {4, 2}, {1}, {0}, {}, {}, f64},
      {"large (parallel panels)", {300, 200}, {200, 150}, {1}, {0}, {}, {}, f32},
      {"float16", {5, 33}, {33, 6}, {1}, {0}, {}, {}, DType::float16},
      {"bfloat16 transposed", {33, 5}, {6, 33}, {0}, {1}, {}, {}, DType::bfloat16},
      {"float16 to float32", {5, 33}, {33, 6}, {1}, {0}, {}, {}, DType::float16, f32},
      {"float32 to float64", {4, 9}, {9, 3}, {1}, {0}, {}, {}, f32, f64},
      {"int32", {4, 5}, {5, 3}, {1}, {0}, {}, {}, DType::int32},
      {"int32 tiles", {37, 300}, {300, 290}, {1}, {0}, {}, {}, DType::int32},
      {"int8 wraps", {3, 40}, {40, 2}, {1}, {0}, {}, {}, DType::int8},
      {"int8 to int32", {3, 40}, {40, 2}, {1}, {0}, {}, {}, DType::int8, DType::int32},
      {"uint8 to float32", {3, 40}, {40, 2}, {1}, {0}, {}, {}, DType::uint8, f32},
      {"uint16 batched", {2, 3, 7}, {2, 7, 4}, {2}, {1}, {0}, {0}, DType::uint16},
      {"int64", {4, 6}, {6, 5}, {1}, {0}, {}, {}, DType::int64},
      {"bool", {4, 6}, {6, 5}, {1}, {0}, {}, {}, DType::bool_},
  };
  for (const DotCase& d : cases) {
    Params params = dot_params(d.lc, d.rc, d.lb, d.rb);
    if (d.preferred) params.set("preferred_element_type", *d.preferred);
    Case& c = r.add(std::string("dot_general ") + d.name, Prim::dot_general,
                    {{d.lhs, d.dtype}, {d.rhs, d.dtype}}, std::move(params), kValues);
    c.ref.naive = naive_dot;
  }
}

// ---- contractions and reductions ------------------------------------------------------

void contraction_rows(Rows& r) {
  // dot_general: every layout, each operand alone taken as the linear one.
  struct Layout {
    std::string name;
    Shape lhs, rhs;
    Params params;
    uint32_t batch = 0;
  };
  const Layout layouts[] = {
      {"matmul", {3, 4}, {4, 5}, dot_params({1}, {0}), kBatch},
      {"transposed contraction", {4, 3}, {5, 4}, dot_params({0}, {1}), kBatch},
      {"batch", {2, 3, 4}, {2, 4, 5}, dot_params({2}, {1}, {0}, {0}), kBatch},
      {"batch in the middle", {3, 2, 4}, {4, 2, 5}, dot_params({2}, {0}, {1}, {1})},
      {"two contractions crossed", {2, 3, 4}, {4, 5, 3}, dot_params({1, 2}, {2, 0})},
      {"vector dot", {4}, {4}, dot_params({0}, {0}), kBatch},
      {"outer product", {3}, {2}, dot_params({}, {})},
      {"batch and crossed", {2, 4, 3, 5}, {3, 2, 4}, dot_params({1, 2}, {2, 0}, {0}, {1})},
  };
  for (const Layout& l : layouts) {
    Case& c = r.add("dot_general " + l.name, Prim::dot_general, {f32(l.lhs), f32(l.rhs)}, l.params,
                    kGrad | kTranspose | l.batch);
    c.linear = {{true, false}, {false, true}};
    c.blank = true;
    c.tolerance = 1e-5;
  }
  r.add("dot_general int", Prim::dot_general, {i32({2, 3}), i32({3})}, dot_params({1}, {0}),
        kBatch);
  Params to_f32 = dot_params({1}, {0});
  to_f32.set("preferred_element_type", DType::float32);
  r.add("dot_general 8x8", Prim::dot_general, {m8(), m8()}, to_f32, kShard).tolerance = 1e-5;
  Params batched = dot_params({2}, {1}, {0}, {0});
  batched.set("preferred_element_type", DType::float32);
  r.add("dot_general batched 2x8x8", Prim::dot_general, {m8({2, 8, 8}), m8({2, 8, 8})}, batched,
        kShard)
      .tolerance = 1e-5;

  r.add("reduce_sum", Prim::reduce_sum, {f32({3, 4, 5})}, {{"axes", Ints{0, 2}}},
        kGrad | kTranspose);
  r.add("reduce_sum all", Prim::reduce_sum, {f32({3, 4})}, {{"axes", Ints{0, 1}}},
        kGrad | kTranspose);
  r.add("reduce_sum int", Prim::reduce_sum, {i32({3, 4})}, {{"axes", Ints{0}}}, kBatch);
  for (Prim p : {Prim::reduce_sum, Prim::reduce_prod, Prim::reduce_max, Prim::reduce_min}) {
    const double tol = p == Prim::reduce_sum || p == Prim::reduce_prod ? 1e-5 : 0;
    r.add(name_of(p) + " batched", p, {f32({3, 4}, 0.5, 1.5)}, {{"axes", Ints{1}}}, kBatch)
        .tolerance = tol;
    r.add(name_of(p) + " two axes batched", p, {f32({2, 3, 4}, 0.5, 1.5)}, {{"axes", Ints{0, 2}}},
          kBatch)
        .tolerance = tol;
    for (Ints axes : {Ints{0}, Ints{1}, Ints{0, 1}}) {
      r.add(name_of(p) + " 8x8 axes " + axes_str(axes), p, {m8()}, {{"axes", axes}}, kShard)
          .tolerance = 1e-5;
    }
  }
  r.add("reduce_max", Prim::reduce_max, {f32({3, 4})}, {{"axes", Ints{1}}}, kGrad);
  r.add("reduce_max all", Prim::reduce_max, {f32({2, 3, 2})}, {{"axes", Ints{0, 2}}}, kGrad);
  r.add("reduce_min", Prim::reduce_min, {f32({4, 3})}, {{"axes", Ints{0}}}, kGrad);
  r.add("reduce_prod odd", Prim::reduce_prod, {f32({3, 5})}, {{"axes", Ints{1}}}, kGrad);
  r.add("reduce_prod two axes", Prim::reduce_prod, {f32({2, 3, 4})}, {{"axes", Ints{2, 0}}}, kGrad);
  r.add("reduce_prod one zero", Prim::reduce_prod, {given({1.5, 0.0, -2.0, 0.5})},
        {{"axes", Ints{0}}}, kGrad);
  r.add("reduce_prod two zeros", Prim::reduce_prod, {given({0.0, 3.0, 0.0})}, {{"axes", Ints{0}}},
        kGrad);
  r.add("reduce_prod no axes", Prim::reduce_prod, {f32({3})}, {{"axes", Ints{}}}, kGrad);
  r.add("reduce_and", Prim::reduce_and, {boolean({3, 4})}, {{"axes", Ints{1}}}, kBatch);
  r.add("reduce_or", Prim::reduce_or, {boolean({3, 4})}, {{"axes", Ints{0, 1}}}, kBatch);
  r.add("reduce_or 8x8", Prim::reduce_or, {boolean({8, 8})}, {{"axes", Ints{1}}}, kShard);
  r.add("reduce_and 8x8", Prim::reduce_and, {boolean({8, 8})}, {{"axes", Ints{0}}}, kShard);

  const Params arg1{{"axes", Ints{1}}, {"index_dtype", DType::int32}};
  const Params arg0{{"axes", Ints{0}}, {"index_dtype", DType::int32}};
  for (Prim p : {Prim::argmax, Prim::argmin}) {
    r.add(name_of(p), p, {f32({3, 4})}, arg1, kGrad | kBatch).zero_tangent = true;
    r.add(name_of(p) + " ties", p, {i32({3, 4}, 0, 2)}, arg0, kBatch);
    r.add(name_of(p) + " 8x8", p, {m8()}, p == Prim::argmax ? arg1 : arg0, kShard);
  }

  const Params forward{{"axis", int64_t{1}}, {"reverse", false}};
  const Params backward{{"axis", int64_t{0}}, {"reverse", true}};
  r.add("cumsum", Prim::cumsum, {f32({4, 5})}, forward, kGrad | kTranspose).blank = true;
  r.add("cumsum reverse", Prim::cumsum, {f32({4, 5})}, backward, kGrad | kTranspose).blank = true;
  r.add("cumsum batched", Prim::cumsum, {f32({3, 4})}, forward, kBatch);
  r.add("cumsum reverse int", Prim::cumsum, {i32({3, 4})}, backward, kBatch);
  r.add("cumsum 8x8", Prim::cumsum, {m8()}, {{"axis", int64_t{0}}, {"reverse", false}}, kShard)
      .tolerance = 1e-5;

  r.add("sort one operand", Prim::sort, {f32({6})}, sort_params(0, 1), kGrad);
  r.add("sort keys and values", Prim::sort, {f32({3, 5}), f32({3, 5})}, sort_params(1, 1), kGrad);
  r.add("sort values only", Prim::sort, {f32({4, 3}), f32({4, 3})}, sort_params(0, 1), kGrad)
      .diff = {false, true};
  // The jvp's sort is linear in its extra (tangent) operands; keys stay known.
  Case& st = r.add("sort transpose", Prim::sort, {f32({3, 5}), f32({3, 5})}, sort_params(1, 1),
                   kTranspose);
  st.linear = {{false, true}};
  st.first_linear_out = 1;
  Case& st2 =
      r.add("sort transpose two keys", Prim::sort,
            {given({1, 0, 1, 0, 2}), f32({5}), f32({5}), f32({5})}, sort_params(0, 2), kTranspose);
  st2.linear = {{false, false, true, true}};
  st2.first_linear_out = 2;
  r.add("sort batched", Prim::sort, {f32({3, 5})}, sort_params(1, 1), kBatch);
  r.add("sort by key", Prim::sort, {i32({4, 3}, 0, 2), f32({4, 3})}, sort_params(0, 1), kBatch);
  r.add("sort two keys", Prim::sort, {i32({6}, 0, 1), i32({6}, 0, 2), f32({6})}, sort_params(0, 2),
        kBatch);
  r.add("sort 8x8", Prim::sort, {m8()}, sort_params(1, 1), kShard);
}

// The values leg of the reductions, argmax/argmin, cumsum and sort: every axes combination
// of a rank-3 operand, edge shapes (rank 0, empty, size-1 dims, several passes, more
// columns than one block), over the dtypes each takes.
void reduction_value_rows(Rows& r) {
  struct Reduce {
    Prim prim;
    std::vector<DType> dtypes;
    double lo, hi;  // float products stay near 1, where float16 cannot overflow
  };
  using D = DType;
  const Reduce reduces[] = {
      {Prim::reduce_sum,
       {D::float32, D::float64, D::float16, D::int32, D::uint8, D::int8},
       -50,
       100},
      {Prim::reduce_prod, {D::float32, D::float64}, 0.9, 1.1},
      {Prim::reduce_prod, {D::int32, D::uint8}, 1, 3},
      {Prim::reduce_max, {D::float32, D::bfloat16, D::int16, D::uint32, D::bool_}, -50, 50},
      {Prim::reduce_min, {D::float64, D::float16, D::int64, D::uint8, D::bool_}, -50, 50},
      {Prim::reduce_and, {D::bool_, D::int32, D::uint8}, -128, 127},
      {Prim::reduce_or, {D::bool_, D::int16, D::uint64}, -128, 127},
  };
  for (const Reduce& red : reduces) {
    for (Ints axes :
         {Ints{}, Ints{0}, Ints{1}, Ints{2}, Ints{0, 1}, Ints{0, 2}, Ints{1, 2}, Ints{0, 1, 2}}) {
      Case& c =
          r.add(name_of(red.prim) + " " + std::string(dtype_name(red.dtypes[0])) + " axes " +
                    axes_str(axes),
                red.prim, {{{3, 4, 5}, red.dtypes[0], red.lo, red.hi}}, {{"axes", axes}}, kValues);
      c.ref.naive = naive_reduce;
      c.ref.dtypes.assign(red.dtypes.begin() + 1, red.dtypes.end());
    }
  }
  const std::pair<Shape, Ints> odd[] = {
      {{}, {}},
      {{2, 1, 3, 1}, {1, 2}},
      {{6, 5, 4, 3}, {0, 2}},
      {{2, 3, 4, 5, 6}, {0, 2, 4}},
      {{3, 0, 2}, {1}},  // empty reduction: the identity
      {{3, 0, 2}, {0}},  // empty result
      {{0}, {0}},
      {{7, 300}, {0}},
      {{3, 1000}, {1}},
  };
  for (const auto& [shape, axes] : odd) {
    const Operand ops[] = {{shape, D::float32, -2, 2},
                           {shape, D::float32, -5, 5},
                           {shape, D::float32, -5, 5},
                           {shape, D::float64, 0.99, 1.01},
                           {shape, D::int8, -128, 127}};
    const Prim prims[] = {Prim::reduce_sum, Prim::reduce_max, Prim::reduce_min, Prim::reduce_prod,
                          Prim::reduce_and};
    for (size_t i = 0; i < std::size(prims); ++i) {
      Case& c = r.add(name_of(prims[i]) + " of " + axes_str(shape) + " axes " + axes_str(axes),
                      prims[i], {ops[i]}, {{"axes", axes}}, kValues);
      c.ref.naive = naive_reduce;
      if (prims[i] == Prim::reduce_sum) c.ref.dtypes = {D::float16};
    }
  }

  // Few distinct values, so that ties are common; NaNs in the floats.
  const Shape arg_shape = {4, 5, 300};
  std::vector<double> few(size_t(shape_size(arg_shape)));
  std::mt19937 rng(11);
  for (size_t i = 0; i < few.size(); ++i) {
    few[i] = i % 37 == 0 ? std::numeric_limits<double>::quiet_NaN() : double(rng() % 5);
  }
  for (Prim p : {Prim::argmax, Prim::argmin}) {
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (DType index : {D::int32, D::uint16}) {
        const Params params{{"axes", Ints{axis}}, {"index_dtype", index}};
        const std::string name =
            name_of(p) + " axis " + std::to_string(axis) + " to " + std::string(dtype_name(index));
        Case& f = r.add(name, p, {{arg_shape, D::float32, 0, 0, few}}, params, kValues);
        f.ref.naive = naive_arg;
        f.ref.dtypes = {D::float16};
        Case& i = r.add(name + " of integers", p, {{arg_shape, D::int32, 0, 4}}, params, kValues);
        i.ref.naive = naive_arg;
        i.ref.dtypes = {D::uint8, D::bool_};
      }
    }
  }

  for (int64_t axis = 0; axis < 3; ++axis) {
    for (bool reverse : {false, true}) {
      Case& c = r.add("cumsum axis " + std::to_string(axis) + (reverse ? " reverse" : ""),
                      Prim::cumsum, {{{3, 4, 300}, D::float32, -3, 100}},
                      {{"axis", axis}, {"reverse", reverse}}, kValues);
      c.ref.naive = naive_cumsum;
      c.ref.dtypes = {D::float64, D::float16, D::int32, D::uint8};
    }
  }

  // Values are their positions, so the permutation shows.
  std::vector<double> positions(6 * 40);
  for (size_t i = 0; i < positions.size(); ++i) positions[i] = double(i);
  for (int64_t dim = 0; dim < 2; ++dim) {
    Case& c = r.add("sort dimension " + std::to_string(dim), Prim::sort,
                    {{{6, 40}, D::int8, -9, 9}, {{6, 40}, D::int32, 0, 0, positions}},
                    sort_params(dim, 1), kValues);
    c.ref.naive = naive_sort;
    c.ref.dtypes = {D::uint16, D::float32, D::bfloat16, D::bool_, D::int64, D::float64};
  }
}

// ---- layouts ------------------------------------------------------------------------------

void layout_rows(Rows& r) {
  r.add("sharding_constraint", Prim::sharding_constraint, {f32({2, 3})}, on_one_device(),
        kGrad | kTranspose | kBatch)
      .blank = true;
  // On the first device: the table is built once, whatever the number of devices.
  const std::vector<Device> first{devices()[0]};
  const Params positional{
      {"sharding", std::make_shared<const Sharding>(PositionalSharding(first).reshape(1, 1))}};
  r.add("sharding_constraint positional", Prim::sharding_constraint, {f32({2, 3})}, positional,
        kBatch);
  r.add("device_put", Prim::device_put, {f32({2, 3})}, on_one_device(), kGrad | kTranspose | kBatch)
      .blank = true;
  // The tangent's form: the primal rides along so that the transpose knows its layout.
  Case& src = r.add("device_put with source", Prim::device_put, {f32({2, 3}), f32({2, 3})},
                    on_one_device(), kGrad | kTranspose);
  src.diff = {true, false};
  src.blank = true;
}

// ---- naive references ---------------------------------------------------------------------

// Element i of an operand's values, a rank-0 operand broadcast.
double at(const std::vector<double>& v, size_t i) { return v.size() == 1 ? v[0] : v[i]; }

// The case of `which`, clamped into range.
std::vector<double> naive_select(const Case&, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>& out, std::vector<double>& scale) {
  std::vector<double> want;
  const int64_t last = int64_t(in.size()) - 2;
  for (size_t i = 0; i < size_t(out[0].size()); ++i) {
    const int64_t k = std::clamp(int64_t(at(in[0], i)), int64_t{0}, last);
    want.push_back(at(in[size_t(1 + k)], i));
  }
  scale.assign(want.size(), 0);
  return want;
}

std::vector<double> naive_clamp(const Case&, const std::vector<std::vector<double>>& in,
                                const std::vector<core::Aval>& out, std::vector<double>& scale) {
  std::vector<double> want;
  for (size_t i = 0; i < size_t(out[0].size()); ++i) {
    want.push_back(std::min(std::max(at(in[1], i), at(in[0], i)), at(in[2], i)));
  }
  scale.assign(want.size(), 0);
  return want;
}

std::vector<double> naive_fma(const Case&, const std::vector<std::vector<double>>& in,
                              const std::vector<core::Aval>& out, std::vector<double>& scale) {
  std::vector<double> want;
  for (size_t i = 0; i < size_t(out[0].size()); ++i) {
    const double ab = at(in[0], i) * at(in[1], i), c = at(in[2], i);
    want.push_back(ab + c);
    scale.push_back(std::abs(ab) + std::abs(c) + 1e-30);
  }
  return want;
}

// The next value of the result's dtype (float32 or float64) from x towards y.
std::vector<double> naive_nextafter(const Case&, const std::vector<std::vector<double>>& in,
                                    const std::vector<core::Aval>& out,
                                    std::vector<double>& scale) {
  std::vector<double> want;
  for (size_t i = 0; i < size_t(out[0].size()); ++i) {
    const double x = at(in[0], i), y = at(in[1], i);
    want.push_back(out[0].dtype == DType::float32 ? double(std::nextafter(float(x), float(y)))
                                                  : std::nextafter(x, y));
  }
  scale.assign(want.size(), 0);
  return want;
}

// Doubles for floats and comparisons, wrapping uint64 for integer arithmetic and bits.
std::vector<double> naive_reduce(const Case& c, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const Prim prim = c.prim;
  const DType dt = outs[0].dtype;
  const Shape& shape = c.operands[0].shape;
  const Ints axes = c.params.get<Ints>("axes");
  const size_t n = size_t(outs[0].size());
  double init = prim == Prim::reduce_prod ? 1 : 0;
  dispatch_dtype(dt, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_arithmetic_v<T>) {
      if (prim == Prim::reduce_max) init = double(std::numeric_limits<T>::lowest());
      if (prim == Prim::reduce_min) init = double(std::numeric_limits<T>::max());
    }
  });
  const double inf = std::numeric_limits<double>::infinity();
  if (is_floating(dt) && prim == Prim::reduce_max) init = -inf;
  if (is_floating(dt) && prim == Prim::reduce_min) init = inf;
  std::vector<double> acc(n, init), mag(n, prim == Prim::reduce_prod ? 1 : 0);
  std::vector<uint64_t> wrapped(n, prim == Prim::reduce_prod ? 1 : 0);
  if (prim == Prim::reduce_and) std::fill(wrapped.begin(), wrapped.end(), ~uint64_t(0));
  size_t i = 0;
  for_each_index(shape, [&](const Ints& idx) {
    size_t o = 0;
    for (size_t d = 0; d < idx.size(); ++d) {
      if (std::count(axes.begin(), axes.end(), int64_t(d)) == 0) {
        o = o * size_t(shape[d]) + size_t(idx[d]);
      }
    }
    const double e = in[0][i++];
    const uint64_t u = uint64_t(int64_t(e));
    switch (prim) {
      case Prim::reduce_sum:
        acc[o] += e, mag[o] += std::abs(e), wrapped[o] += u;
        break;
      case Prim::reduce_prod:
        acc[o] *= e, mag[o] *= std::abs(e), wrapped[o] *= u;
        break;
      case Prim::reduce_max:
        acc[o] = (std::isnan(acc[o]) || e <= acc[o]) && !std::isnan(e) ? acc[o] : e;
        break;
      case Prim::reduce_min:
        acc[o] = (std::isnan(acc[o]) || e >= acc[o]) && !std::isnan(e) ? acc[o] : e;
        break;
      case Prim::reduce_and:
        wrapped[o] &= u;
        break;
      default:
        wrapped[o] |= u;
        break;
    }
  });
  const bool exact = prim == Prim::reduce_max || prim == Prim::reduce_min;
  for (size_t o = 0; o < n; ++o) {
    if (!exact && !is_floating(dt)) acc[o] = wrap_to(dt, wrapped[o]);
    scale.push_back(exact ? 0 : std::max(mag[o], 1e-30));
  }
  return acc;
}

// NaN is the extreme; ties go to the first index.
std::vector<double> naive_arg(const Case& c, const std::vector<std::vector<double>>& in,
                              const std::vector<core::Aval>&, std::vector<double>& scale) {
  const bool is_max = c.prim == Prim::argmax;
  const int64_t axis = c.params.get<Ints>("axes")[0];
  const Shape& s = c.operands[0].shape;
  const std::vector<double>& v = in[0];
  int64_t p = 1, i = 1;
  for (int64_t d = 0; d < axis; ++d) p *= s[size_t(d)];
  for (size_t d = size_t(axis) + 1; d < s.size(); ++d) i *= s[d];
  const int64_t r = s[size_t(axis)];
  std::vector<double> out;
  for (int64_t a = 0; a < p; ++a) {
    for (int64_t k0 = 0; k0 < i; ++k0) {
      int64_t best = 0;
      for (int64_t k = 1; k < r; ++k) {
        const double cur = v[size_t((a * r + best) * i + k0)], e = v[size_t((a * r + k) * i + k0)];
        if (std::isnan(cur)) break;
        if (std::isnan(e) || (is_max ? e > cur : e < cur)) best = k;
      }
      out.push_back(double(best));
    }
  }
  scale.assign(out.size(), 0);
  return out;
}

// Sums in double (or wrapping uint64) rounded once, as the kernel does.
std::vector<double> naive_cumsum(const Case& c, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const DType dt = outs[0].dtype;
  const Shape& shape = c.operands[0].shape;
  const int64_t axis = c.params.get<int64_t>("axis");
  const bool reverse = c.params.get<bool>("reverse");
  const std::vector<double>& v = in[0];
  const Ints st = strides_of(shape);
  std::vector<double> want(v.size());
  for_each_index(shape, [&](const Ints& idx) {
    int64_t base = 0;
    for (size_t d = 0; d < shape.size(); ++d) base += (int64_t(d) == axis ? 0 : idx[d]) * st[d];
    double sum = 0;
    uint64_t wrapped = 0;
    const int64_t n = shape[size_t(axis)], here = idx[size_t(axis)];
    const int64_t first = reverse ? here : 0, last = reverse ? n - 1 : here;
    for (int64_t step = 0; step <= last - first; ++step) {
      const int64_t k = reverse ? last - step : first + step;
      sum += v[size_t(base + k * st[size_t(axis)])];
      wrapped += uint64_t(int64_t(v[size_t(base + k * st[size_t(axis)])]));
    }
    want[size_t(base + here * st[size_t(axis)])] = is_floating(dt) ? sum : wrap_to(dt, wrapped);
  });
  scale.assign(want.size(), 0);
  return want;
}

// A stable sort of each line by the keys, lexicographically; every operand follows.
std::vector<double> naive_sort(const Case& c, const std::vector<std::vector<double>>& in,
                               const std::vector<core::Aval>&, std::vector<double>& scale) {
  const Shape& shape = c.operands[0].shape;
  const int64_t dim = c.params.get<int64_t>("dimension");
  const size_t keys = size_t(c.params.get<int64_t>("num_keys"));
  const int64_t n = shape[size_t(dim)], step = strides_of(shape)[size_t(dim)];
  std::vector<std::vector<double>> sorted(in.size(), std::vector<double>(in[0].size()));
  Shape lines = shape;
  lines[size_t(dim)] = 1;
  for_each_index(lines, [&](const Ints& line) {
    const int64_t base = flat(shape, line);
    std::vector<int64_t> order(static_cast<size_t>(n));
    std::iota(order.begin(), order.end(), 0);
    std::stable_sort(order.begin(), order.end(), [&](int64_t a, int64_t b) {
      for (size_t k = 0; k < keys; ++k) {
        const double x = in[k][size_t(base + a * step)], y = in[k][size_t(base + b * step)];
        if (x != y) return x < y;
      }
      return false;
    });
    for (size_t o = 0; o < in.size(); ++o) {
      for (int64_t j = 0; j < n; ++j) {
        sorted[o][size_t(base + j * step)] = in[o][size_t(base + order[size_t(j)] * step)];
      }
    }
  });
  std::vector<double> want;
  for (const std::vector<double>& s : sorted) want.insert(want.end(), s.begin(), s.end());
  scale.assign(want.size(), 0);
  return want;
}

// Gather and scatter (lax.gather, lax.scatter*).
// Naive gather and scatter: one result element (gather) or one update element (scatter,
// positions in order, so repeated places combine as the kernel combines them) at a time.
struct GatherDims {
  Ints window_dims, collapsed, start_map, operand_batching, index_batching;
};

GatherDims dims_of(const Params& p, bool scatter) {
  auto get = [&](const char* name) { return p.get<Ints>(name); };
  if (scatter) {
    return {get("update_window_dims"), get("inserted_window_dims"),
            get("scatter_dims_to_operand_dims"), get("operand_batching_dims"),
            get("scatter_indices_batching_dims")};
  }
  return {get("offset_dims"), get("collapsed_slice_dims"), get("start_index_map"),
          get("operand_batching_dims"), get("start_indices_batching_dims")};
}

bool contains(const Ints& v, int64_t x) { return std::find(v.begin(), v.end(), x) != v.end(); }

// The operand index of window element `window` (coordinates along the window dimensions,
// in order) of index vector `batch`; nullopt when the window is out of bounds (and not
// clamped).
std::optional<Ints> place(const Shape& xs, const Shape& is, const std::vector<double>& idx,
                          const GatherDims& d, const Ints& window_size, const Ints& batch,
                          const Ints& window, bool clamp) {
  Ints start(xs.size(), 0);
  Ints at = batch;
  at.push_back(0);
  for (int64_t j = 0; j < is.back(); ++j) {
    at.back() = j;
    const size_t dim = size_t(d.start_map[size_t(j)]);
    const int64_t hi = xs[dim] - window_size[dim];
    int64_t v = int64_t(idx[size_t(flat(is, at))]);
    if (clamp) {
      v = std::clamp<int64_t>(v, 0, std::max<int64_t>(hi, 0));
    } else if (v < 0 || v > hi) {
      return std::nullopt;
    }
    start[dim] = v;
  }
  for (size_t j = 0; j < d.operand_batching.size(); ++j) {
    start[size_t(d.operand_batching[j])] = batch[size_t(d.index_batching[j])];
  }
  size_t w = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    if (contains(d.collapsed, int64_t(i)) || contains(d.operand_batching, int64_t(i))) continue;
    start[i] += window[w++];
  }
  return start;
}

std::vector<double> naive_gather(const Case& c, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const Shape& xs = c.operands[0].shape;
  const Shape& is = c.operands[1].shape;
  const GatherDims d = dims_of(c.params, false);
  const Ints& slice = c.params.get<Ints>("slice_sizes");
  const bool fill = c.params.get<std::string>("mode") == "GatherScatterMode.FILL_OR_DROP";
  const DType dt = outs[0].dtype;
  // JAX's default fill values: NaN, the minimum of signed integers, the maximum of
  // unsigned ones, true.
  double fill_value = c.params.has("fill_value") ? c.params.get<double>("fill_value") : kNan;
  if (!c.params.has("fill_value") && !is_floating(dt)) {
    fill_value = dt == DType::bool_        ? 1
                 : is_unsigned_integer(dt) ? std::ldexp(1.0, bits_of(dt)) - 1
                                           : -std::ldexp(1.0, bits_of(dt) - 1);
  }
  std::vector<double> want;
  for_each_index(outs[0].shape, [&](const Ints& o) {
    Ints batch, window;
    for (size_t i = 0; i < o.size(); ++i) {
      (contains(d.window_dims, int64_t(i)) ? window : batch).push_back(o[i]);
    }
    const auto at = place(xs, is, in[1], d, slice, batch, window, !fill);
    want.push_back(at ? in[0][size_t(flat(xs, *at))] : fill_value);
  });
  scale.assign(want.size(), 0);
  return want;
}

std::vector<double> naive_scatter(const Case& c, const std::vector<std::vector<double>>& in,
                                  const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const Shape& xs = c.operands[0].shape;
  const Shape& is = c.operands[1].shape;
  const Shape& us = c.operands[2].shape;
  const GatherDims d = dims_of(c.params, true);
  const bool clamp = c.params.get<std::string>("mode") == "GatherScatterMode.CLIP";
  const DType dt = outs[0].dtype;
  const Prim p = c.prim;
  Ints window_size;
  Shape window_shape;
  size_t w = 0;
  for (size_t i = 0; i < xs.size(); ++i) {
    const bool inserted =
        contains(d.collapsed, int64_t(i)) || contains(d.operand_batching, int64_t(i));
    window_size.push_back(inserted ? 1 : us[size_t(d.window_dims[w++])]);
  }
  for (int64_t u : d.window_dims) window_shape.push_back(us[size_t(u)]);
  std::vector<double> out = in[0];
  std::vector<uint64_t> wrapped;
  for (double v : in[0]) wrapped.push_back(uint64_t(int64_t(v)));
  scale.assign(out.size(), 0);
  for (size_t i = 0; i < out.size(); ++i) scale[i] = std::abs(out[i]);
  for_each_index(Shape(is.begin(), is.end() - 1), [&](const Ints& batch) {
    for_each_index(window_shape, [&](const Ints& window) {
      const auto at = place(xs, is, in[1], d, window_size, batch, window, clamp);
      if (!at) return;
      Ints u;
      size_t b = 0, v = 0;
      for (size_t i = 0; i < us.size(); ++i) {
        u.push_back(contains(d.window_dims, int64_t(i)) ? window[v++] : batch[b++]);
      }
      const size_t t = size_t(flat(xs, *at));
      const double x = in[2][size_t(flat(us, u))];
      if (p == Prim::scatter) {
        out[t] = x;
      } else if (p == Prim::scatter_add) {
        out[t] += x;
        wrapped[t] += uint64_t(int64_t(x));
        scale[t] += std::abs(x);
      } else if (p == Prim::scatter_mul) {
        out[t] *= x;
        wrapped[t] *= uint64_t(int64_t(x));
        scale[t] = 4 * std::abs(out[t]);
      } else {
        out[t] = p == Prim::scatter_min ? std::min(out[t], x) : std::max(out[t], x);
      }
      if (p != Prim::scatter_add && p != Prim::scatter_mul) wrapped[t] = uint64_t(int64_t(out[t]));
    });
  });
  const bool exact = p != Prim::scatter_add && p != Prim::scatter_mul;
  for (size_t i = 0; i < out.size(); ++i) {
    if (is_integer(dt)) out[i] = wrap_to(dt, wrapped[i]);
    if (exact) scale[i] = 0;
  }
  return out;
}

Params gather_params(Ints offset, Ints collapsed, Ints start_map, Ints slice,
                     const std::string& mode = "PROMISE_IN_BOUNDS", Ints operand_batching = {},
                     Ints index_batching = {}) {
  return {{"offset_dims", offset},
          {"collapsed_slice_dims", collapsed},
          {"start_index_map", start_map},
          {"operand_batching_dims", operand_batching},
          {"start_indices_batching_dims", index_batching},
          {"slice_sizes", slice},
          {"indices_are_sorted", false},
          {"unique_indices", false},
          {"mode", "GatherScatterMode." + mode}};
}

Params scatter_params(Ints window, Ints inserted, Ints to_operand,
                      const std::string& mode = "FILL_OR_DROP", Ints operand_batching = {},
                      Ints index_batching = {}) {
  return {{"update_window_dims", window},
          {"inserted_window_dims", inserted},
          {"scatter_dims_to_operand_dims", to_operand},
          {"operand_batching_dims", operand_batching},
          {"scatter_indices_batching_dims", index_batching},
          {"indices_are_sorted", false},
          {"unique_indices", false},
          {"mode", "GatherScatterMode." + mode}};
}

// Fixed int32 index vectors (the batching leg cannot add a batch dimension to them).
Operand indices(Shape s, std::vector<double> v) {
  return {std::move(s), DType::int32, 0, 0, std::move(v)};
}
// Index vectors drawn from [lo, hi].
Operand drawn(Shape s, double lo, double hi) { return {std::move(s), DType::int32, lo, hi}; }

// gather and the scatters: JAX's lax_test configurations, the embedding lookup on an 8x8
// table (whose vocabulary the shard leg splits) and its scatter-add transpose, each mode
// with out-of-bounds starts, repeated starts.
void gather_rows(Rows& r) {
  const uint32_t all = kValues | kGrad | kTranspose | kBatch | kShard;
  const std::vector<DType> moved = {DType::float64, DType::int8, DType::uint16, DType::bfloat16,
                                    DType::bool_};
  auto gather = [&](const std::string& name, std::vector<Operand> ops, Params params,
                    uint32_t legs) {
    Case& c = r.add("gather " + name, Prim::gather, std::move(ops), std::move(params), legs);
    c.ref.naive = naive_gather;
    c.ref.dtypes = moved;
  };
  gather("rows", {f32({8, 8}), drawn({5, 1}, 0, 7)}, gather_params({1}, {0}, {0}, {1, 8}), all);
  // Out of bounds under PROMISE_IN_BOUNDS: clamped, yet the transpose drops (as JAX's).
  gather("rows out of bounds", {f32({8, 8}), drawn({3, 1}, -3, 10)},
         gather_params({1}, {0}, {0}, {1, 8}), kValues | kBatch | kShard);
  gather("rows clip", {f32({8, 8}), drawn({4, 1}, -3, 10)},
         gather_params({1}, {0}, {0}, {1, 8}, "CLIP"), all);
  Params fill = gather_params({1}, {0}, {0}, {1, 8}, "FILL_OR_DROP");
  fill.set("fill_value", -1.0);
  // A nonzero fill makes the gather affine: no transpose leg (its linearization fills 0).
  gather("rows fill -1", {f32({8, 8}), drawn({4, 1}, -3, 10)}, fill, all & ~kTranspose);
  fill.set("fill_value", 0.0);
  gather("rows fill 0", {f32({8, 8}), drawn({4, 1}, -3, 10)}, fill, all);
  gather("rows fill default", {f32({8, 8}), drawn({4, 1}, -3, 10)},
         gather_params({1}, {0}, {0}, {1, 8}, "FILL_OR_DROP"), kValues | kBatch | kShard);
  gather("columns", {f32({8, 8}), drawn({3, 1}, 0, 7)}, gather_params({0}, {1}, {1}, {8, 1}), all);
  gather("two components", {f32({8, 8}), drawn({4, 2}, 0, 7)},
         gather_params({}, {0, 1}, {0, 1}, {1, 1}), all);
  gather("2-d windows", {f32({5, 6}), drawn({3, 2}, 0, 3)},
         gather_params({1, 2}, {}, {0, 1}, {2, 3}), all);
  gather("elements", {f32({5}), drawn({2, 1}, 0, 4)}, gather_params({}, {0}, {0}, {1}), all);
  gather("two components and a window", {f32({10, 5}), drawn({2, 2}, 0, 2)},
         gather_params({1}, {0}, {0, 1}, {1, 3}), all);
  gather("window of 2", {f32({10}), drawn({3, 1}, 0, 8)}, gather_params({1}, {}, {0}, {2}), all);
  gather("batching dims", {f32({2, 5}), drawn({2, 2, 1}, 0, 4)},
         gather_params({}, {1}, {1}, {1, 1}, "PROMISE_IN_BOUNDS", {0}, {0}), all);
  gather("two batching dims", {f32({2, 3, 10}), drawn({3, 2, 1}, 0, 7)},
         gather_params({2}, {}, {2}, {1, 1, 3}, "PROMISE_IN_BOUNDS", {0, 1}, {1, 0}), all);
  gather("2-d batch of indices", {f32({7, 3}), drawn({3, 2, 1}, 0, 6)},
         gather_params({2}, {0}, {0}, {1, 3}), all);
  gather("no indices", {f32({4, 3}), indices({0, 1}, {})}, gather_params({1}, {0}, {0}, {1, 3}),
         kValues | kBatch);

  // The scatters. scatter-add is linear in the operand and the updates together (the
  // updates zeroed when only the operand is); scatter-mul in either alone, the other
  // kept as a coefficient (in the updates only with unique indices); scatter in both
  // together, with unique indices; scatter-min/max are not linear.
  struct Kind {
    Prim prim;
    std::string name;
    std::vector<DType> dtypes;
  };
  const std::vector<DType> arithmetic = {DType::float64, DType::int8, DType::uint16,
                                         DType::bfloat16};
  const Kind kinds[] = {{Prim::scatter, "scatter", moved},
                        {Prim::scatter_add, "scatter-add", arithmetic},
                        {Prim::scatter_mul, "scatter-mul", arithmetic},
                        {Prim::scatter_min, "scatter-min", moved},
                        {Prim::scatter_max, "scatter-max", moved}};
  for (const Kind& k : kinds) {
    const bool add = k.prim == Prim::scatter_add;
    const bool mul = k.prim == Prim::scatter_mul;
    auto row = [&](const std::string& name, std::vector<Operand> ops, Params params, bool unique) {
      params.set("unique_indices", unique);
      const bool transposes = add || mul || (k.prim == Prim::scatter && unique);
      // Fixed (unique) indices cannot be batched.
      const bool fixed = !ops[1].values.empty();
      const uint32_t legs =
          kValues | kGrad | kShard | (fixed ? 0 : kBatch) | (transposes ? kTranspose : 0);
      Case& c = r.add(k.name + " " + name, k.prim, std::move(ops), std::move(params), legs);
      c.ref.naive = naive_scatter;
      c.ref.dtypes = k.dtypes;
      c.tolerance = 1e-5;
      if (add) {
        c.linear = {{true, false, true}, {true, false, false}, {false, false, true}};
        c.fixed = Fixed::zero;
      } else if (mul && unique && name == "rows unique") {
        // Linear in the updates only where every place is written (else affine).
        c.linear = {{true, false, false}, {false, false, true}};
      } else if (mul && unique) {
        c.linear = {{true, false, false}};
      } else if (mul) {
        c.linear = {{true, false, false}};
        c.diff = {true, false, false};  // JAX differentiates the updates only when unique
      } else if (k.prim == Prim::scatter) {
        c.linear = {{true, false, true}};
      }
    };
    row("rows", {f32({8, 8}), drawn({8, 1}, -2, 9), f32({8, 8})}, scatter_params({1}, {0}, {0}),
        false);
    row("rows clip", {f32({8, 8}), drawn({8, 1}, -3, 10), f32({8, 8})},
        scatter_params({1}, {0}, {0}, "CLIP"), false);
    row("rows unique", {f32({8, 8}), indices({8, 1}, {7, 0, 3, 5, 1, 2, 6, 4}), f32({8, 8})},
        scatter_params({1}, {0}, {0}, "PROMISE_IN_BOUNDS"), true);
    row("window of 2", {f32({10}), drawn({3, 1}, 0, 8), f32({3, 2})}, scatter_params({1}, {}, {0}),
        false);
    row("batching dims", {f32({2, 5}), drawn({2, 2, 1}, -1, 5), f32({2, 2})},
        scatter_params({}, {1}, {1}, "FILL_OR_DROP", {0}, {0}), false);
    row("2-d windows clip", {f32({5, 6}), drawn({3, 2}, -2, 6), f32({3, 2, 3})},
        scatter_params({1, 2}, {}, {0, 1}, "CLIP"), false);
    row("two batching dims", {f32({2, 3, 10}), drawn({3, 2, 1}, 0, 7), f32({3, 2, 3})},
        scatter_params({2}, {}, {2}, "FILL_OR_DROP", {0, 1}, {1, 0}), true);
  }
}

// The naive reference of cumprod, cummax, cummin and cumlogsumexp: each result element
// reduces its prefix (suffix when reversed) from scratch, floats in double as the kernel
// accumulates them (so the kernel must give it exactly), integers wrapping.
std::vector<double> naive_cumulative(const Case& c, const std::vector<std::vector<double>>& in,
                                     const std::vector<core::Aval>& outs,
                                     std::vector<double>& scale) {
  const DType dt = outs[0].dtype;
  const Shape& shape = c.operands[0].shape;
  const int64_t axis = c.params.get<int64_t>("axis");
  const bool reverse = c.params.get<bool>("reverse");
  const std::vector<double>& v = in[0];
  const Ints st = strides_of(shape);
  auto combine = [&](double acc, double x) -> double {
    switch (c.prim) {
      case Prim::cumprod:
        return acc * x;
      case Prim::cummax:
        return double(max_ref(acc, x));
      case Prim::cummin:
        return double(min_ref(acc, x));
      default: {  // JAX's logaddexp
        const double delta = acc - x;
        if (std::isnan(delta)) return acc + x;
        return std::max(acc, x) + std::log1p(std::exp(-std::abs(delta)));
      }
    }
  };
  std::vector<double> want(v.size());
  for_each_index(shape, [&](const Ints& idx) {
    int64_t base = 0;
    for (size_t d = 0; d < shape.size(); ++d) base += (int64_t(d) == axis ? 0 : idx[d]) * st[d];
    const int64_t n = shape[size_t(axis)], here = idx[size_t(axis)];
    const int64_t first = reverse ? here : 0, last = reverse ? n - 1 : here;
    double acc = 0;
    uint64_t wrapped = 1;
    for (int64_t step = 0; step <= last - first; ++step) {
      const int64_t k = reverse ? last - step : first + step;
      const double x = v[size_t(base + k * st[size_t(axis)])];
      acc = step == 0 ? x : combine(acc, x);
      wrapped *= uint64_t(int64_t(x));
    }
    const bool wraps = c.prim == Prim::cumprod && !is_floating(dt);
    want[size_t(base + here * st[size_t(axis)])] = wraps ? wrap_to(dt, wrapped) : acc;
  });
  scale.assign(want.size(), 0);
  return want;
}

// The inverse hyperbolic functions, erfc and the cumulative reductions.
void hyperbolic_and_cumulative_rows(Rows& r) {
  struct Unary {
    Prim prim;
    double lo, hi;  // inside the domain, away from singular derivatives
    Real (*ref)(Real);
    Real ref_lo, ref_hi;
  };
  const Unary unary[] = {
      {Prim::asinh, -3, 3, [](Real x) { return std::asinh(x); }, -1e25L, 1e25L},
      {Prim::acosh, 1.2, 4, [](Real x) { return std::acosh(x); }, 1, 1e25L},
      {Prim::atanh, -0.9, 0.9, [](Real x) { return std::atanh(x); }, -1, 1},
      {Prim::erfc, -2, 2, [](Real x) { return std::erfc(x); }, -4, 9},
  };
  for (const Unary& u : unary) {
    Case& c = r.add(name_of(u.prim), u.prim, {f32({3, 4}, u.lo, u.hi)}, {}, kAll | kValues);
    c.ref = {.unary = u.ref, .lo = u.ref_lo, .hi = u.ref_hi};
    r.add(name_of(u.prim) + " of a scalar", u.prim, {f32({}, u.lo, u.hi)}, {}, kBatch);
  }
  // The ranges above reach SLEEF's overflow (libm's lanes); these, the usual values.
  r.add("asinh near 0", Prim::asinh, {f32({4})}, {}, kValues).ref = {
      .unary = [](Real x) { return std::asinh(x); }, .lo = -4, .hi = 4};
  r.add("acosh near 1", Prim::acosh, {f32({4})}, {}, kValues).ref = {
      .unary = [](Real x) { return std::acosh(x); }, .lo = 1, .hi = 9};
  r.add("erfc tail", Prim::erfc, {f32({4})}, {}, kValues).ref = {
      .unary = [](Real x) { return std::erfc(x); }, .lo = 0.5L, .hi = 3};

  using D = DType;
  const Prim cumulative[] = {Prim::cumprod, Prim::cummax, Prim::cummin, Prim::cumlogsumexp};
  for (Prim p : cumulative) {
    const std::string n = name_of(p);
    const Params forward{{"axis", int64_t{1}}, {"reverse", false}};
    const Params backward{{"axis", int64_t{0}}, {"reverse", true}};
    r.add(n, p, {f32({4, 5})}, forward, kGrad | kBatch);
    r.add(n + " reverse", p, {f32({5, 3})}, backward, kGrad | kBatch);
    r.add(n + " of odd length", p, {f32({2, 7})}, forward, kGrad);
    r.add(n + " rank 1", p, {f32({6})}, {{"axis", int64_t{0}}, {"reverse", false}}, kGrad | kBatch);
    r.add(n + " rank 3", p, {f32({2, 3, 4})}, {{"axis", int64_t{1}}, {"reverse", true}}, kBatch);
    if (p != Prim::cumlogsumexp) {
      r.add(n + " int", p, {i32({3, 4}, -3, 3)}, backward, kBatch);
    }
    for (int64_t axis : {0, 1}) {
      r.add(n + " 8x8 axis " + std::to_string(axis), p, {m8()},
            {{"axis", axis}, {"reverse", axis == 1}}, kShard)
          .tolerance = 1e-5;
    }
    for (int64_t axis = 0; axis < 3; ++axis) {
      for (bool reverse : {false, true}) {
        // Products stay near 1, where no dtype overflows over 300 steps.
        const bool prod = p == Prim::cumprod;
        Case& c = r.add(n + " axis " + std::to_string(axis) + (reverse ? " reverse" : ""), p,
                        {{{3, 4, 300}, D::float32, prod ? 0.99 : -3, prod ? 1.01 : 100}},
                        {{"axis", axis}, {"reverse", reverse}}, kValues);
        c.ref.naive = naive_cumulative;
        c.ref.dtypes = {D::float64, D::float16, D::bfloat16};
        if (p != Prim::cumlogsumexp) {
          Case& i = r.add(
              n + " of integers axis " + std::to_string(axis) + (reverse ? " reverse" : ""), p,
              {{{3, 4, 30}, D::int32, -3, 3}}, {{"axis", axis}, {"reverse", reverse}}, kValues);
          i.ref.naive = naive_cumulative;
          i.ref.dtypes = {D::int8, D::uint8, D::int64};
        }
      }
    }
  }
  // Zeros in a product: the derivative JAX's associative scan gives, not a division.
  r.add("cumprod one zero", Prim::cumprod, {given({1.5, 0.0, -2.0, 0.5, 3.0})},
        {{"axis", int64_t{0}}, {"reverse", false}}, kGrad);
  r.add("cumprod two zeros", Prim::cumprod, {given({0.0, 3.0, 0.0, 2.0})},
        {{"axis", int64_t{0}}, {"reverse", true}}, kGrad);
  Case& nan = r.add("cummax NaN", Prim::cummax, {given({1.0, double(kNan), 3.0, -1.0})},
                    {{"axis", int64_t{0}}, {"reverse", false}}, kValues);
  nan.ref.naive = naive_cumulative;
}

// Special functions (lgamma, digamma, igamma, random_gamma_grad).
void special_rows(Rows& r) {
  r.add("lgamma", Prim::lgamma, {f32({3, 4}, 0.5, 6)}, {}, kAll);
  r.add("digamma", Prim::digamma, {f32({3, 4}, 0.5, 6)}, {}, kAll);
  r.add("lgamma of a scalar", Prim::lgamma, {f32({}, 0.5, 6)}, {}, kBatch | kGrad);
  r.add("digamma of negatives", Prim::digamma, {f32({2, 3}, -2.9, -2.1)}, {}, kGrad | kBatch);
  // polygamma's order is an integer (its derivative in m is an error, as in JAX).
  Case& pg = r.add("polygamma", Prim::polygamma, {f32({4}, 1, 1), f32({4}, 0.5, 3)}, {}, kAll);
  pg.diff = {false, true};
  r.add("igamma", Prim::igamma, {f32({3, 4}, 0.5, 3), f32({3, 4}, 0.2, 4)}, {}, kAll);
  r.add("igamma of a scalar", Prim::igamma, {f32({}, 0.5, 3), f32({4}, 0.2, 4)}, {},
        kGrad | kBatch | kFuse);
  r.add("igamma_grad_a", Prim::igamma, {f32({3, 4}, 0.5, 3), f32({3, 4}, 0.2, 4)},
        {{"derivative", int64_t{1}}}, kShape | kBatch | kShard | kFuse);
  r.add("random_gamma_grad", Prim::random_gamma_grad, {f32({3, 4}, 0.3, 5), f32({3, 4}, 0.1, 6)},
        {}, kShape | kBatch | kShard | kFuse);
}

// ---- linear algebra: naive references in double, one matrix at a time -----------------

// Calls f(offset of matrix b) for each of the `batch` matrices of `size` elements.
int64_t matrices(const Shape& shape, int core_rank) {
  int64_t b = 1;
  for (size_t d = 0; d + size_t(core_rank) < shape.size(); ++d) b *= shape[d];
  return b;
}

// A generous tolerance for solves of well-conditioned matrices: 100 times the result's
// magnitude (plus one) in units of the dtype's rounding.
void solve_scale(const std::vector<double>& want, std::vector<double>& scale) {
  double m = 1;
  for (double w : want) m = std::max(m, std::abs(w));
  scale.assign(want.size(), 100 * m);
}

// The lower Cholesky factor from the lower triangle; NaNs when not positive definite.
std::vector<double> naive_cholesky(const Case& c, const std::vector<std::vector<double>>& in,
                                   const std::vector<core::Aval>&, std::vector<double>& scale) {
  const Shape& shape = c.operands[0].shape;
  const int64_t n = shape.back();
  std::vector<double> out(in[0].size(), 0.0);
  for (int64_t b = 0; b < matrices(shape, 2); ++b) {
    const double* a = in[0].data() + b * n * n;
    double* l = out.data() + b * n * n;
    bool ok = true;
    for (int64_t j = 0; j < n && ok; ++j) {
      double d = a[j * n + j];
      for (int64_t k = 0; k < j; ++k) d -= l[j * n + k] * l[j * n + k];
      ok = d > 0;
      l[j * n + j] = std::sqrt(d);
      for (int64_t i = j + 1; i < n && ok; ++i) {
        double v = a[i * n + j];
        for (int64_t k = 0; k < j; ++k) v -= l[i * n + k] * l[j * n + k];
        l[i * n + j] = v / l[j * n + j];
      }
    }
    if (!ok) std::fill_n(l, n * n, std::nan(""));
  }
  solve_scale(out, scale);
  return out;
}

// Gaussian elimination with partial pivoting (the first row of largest magnitude, as
// LAPACK's getrf picks): lu, then the pivots, then the permutation.
std::vector<double> naive_lu(const Case& c, const std::vector<std::vector<double>>& in,
                             const std::vector<core::Aval>&, std::vector<double>& scale) {
  const Shape& shape = c.operands[0].shape;
  const int64_t m = shape[shape.size() - 2], n = shape.back(), k = std::min(m, n);
  const int64_t batch = matrices(shape, 2);
  std::vector<double> lu = in[0], pivots, perms;
  for (int64_t b = 0; b < batch; ++b) {
    double* a = lu.data() + b * m * n;
    std::vector<int64_t> perm(static_cast<size_t>(m));
    std::iota(perm.begin(), perm.end(), 0);
    for (int64_t j = 0; j < k; ++j) {
      int64_t p = j;
      for (int64_t i = j + 1; i < m; ++i) {
        if (std::abs(a[i * n + j]) > std::abs(a[p * n + j])) p = i;
      }
      pivots.push_back(double(p));
      std::swap(perm[size_t(j)], perm[size_t(p)]);
      for (int64_t q = 0; q < n; ++q) std::swap(a[j * n + q], a[p * n + q]);
      for (int64_t i = j + 1; i < m; ++i) {
        a[i * n + j] /= a[j * n + j];
        for (int64_t q = j + 1; q < n; ++q) a[i * n + q] -= a[i * n + j] * a[j * n + q];
      }
    }
    for (int64_t v : perm) perms.push_back(double(v));
  }
  solve_scale(lu, scale);
  std::vector<double> out = lu;
  out.insert(out.end(), pivots.begin(), pivots.end());
  out.insert(out.end(), perms.begin(), perms.end());
  scale.resize(out.size(), 0.0);
  return out;
}

// The row swaps applied to the identity, in order.
std::vector<double> naive_pivots(const Case& c, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>&, std::vector<double>& scale) {
  const Shape& shape = c.operands[0].shape;
  const int64_t k = shape.back();
  const int64_t m = c.params.get<int64_t>("permutation_size");
  std::vector<double> out;
  for (int64_t b = 0; b < matrices(shape, 1); ++b) {
    std::vector<double> perm(static_cast<size_t>(m));
    std::iota(perm.begin(), perm.end(), 0.0);
    for (int64_t i = 0; i < k; ++i) {
      std::swap(perm[size_t(i)], perm[size_t(in[0][size_t(b * k + i)])]);
    }
    out.insert(out.end(), perm.begin(), perm.end());
  }
  scale.assign(out.size(), 0.0);
  return out;
}

// Substitution with op(a) = a or a^T, its triangle `lower` (of a), from the left (op(a) x =
// b) or the right (x op(a) = b, solved as op(a)^T x^T = b^T).
std::vector<double> naive_triangular_solve(const Case& c,
                                           const std::vector<std::vector<double>>& in,
                                           const std::vector<core::Aval>&,
                                           std::vector<double>& scale) {
  const Shape& bs = c.operands[1].shape;
  const int64_t rows = bs[bs.size() - 2], cols = bs.back();
  const bool left = c.params.get<bool>("left_side");
  const bool unit = c.params.get<bool>("unit_diagonal");
  // With right-side solves as left ones on b^T, op(a) becomes op(a)^T.
  const bool trans = c.params.get<bool>("transpose_a") != !left;
  const bool lower = c.params.get<bool>("lower");
  const int64_t n = left ? rows : cols;      // the solved dimension
  const int64_t width = left ? cols : rows;  // the free one
  std::vector<double> out(in[1].size());
  for (int64_t b = 0; b < matrices(bs, 2); ++b) {
    const double* a = in[0].data() + b * n * n;
    // t(i, j) = op'(a)(i, j), the matrix of the left-side solve; x(i, w) its unknowns.
    auto t = [&](int64_t i, int64_t j) {
      const bool in_triangle = lower ? (trans ? i <= j : j <= i) : (trans ? j <= i : i <= j);
      if (!in_triangle) return 0.0;
      if (i == j && unit) return 1.0;
      return trans ? a[j * n + i] : a[i * n + j];
    };
    auto at = [&](int64_t i, int64_t w) {
      return b * rows * cols + (left ? i * cols + w : w * cols + i);
    };
    const bool forward = lower != trans;
    for (int64_t w = 0; w < width; ++w) {
      for (int64_t s = 0; s < n; ++s) {
        const int64_t i = forward ? s : n - 1 - s;
        double v = in[1][size_t(at(i, w))];
        for (int64_t j = 0; j < n; ++j) {
          if (j != i) v -= t(i, j) * out[size_t(at(j, w))] * double(forward ? j < i : j > i);
        }
        out[size_t(at(i, w))] = v / t(i, i);
      }
    }
  }
  solve_scale(out, scale);
  return out;
}

Params ts_params(bool left, bool lower, bool transpose, bool unit) {
  return {{"left_side", left},
          {"lower", lower},
          {"transpose_a", transpose},
          {"conjugate_a", false},
          {"unit_diagonal", unit}};
}

// Linear algebra on LAPACK. Matrices are well conditioned: fixed values (a symmetric
// positive-definite one for cholesky) or triangles with entries in [1, 2]. cholesky and
// eigh read one triangle while their jvp rules, as JAX's, take the tangent as symmetric (the
// front ends symmetrize), so their jvp legs run on 1x1 matrices here; tests/lax/linalg_test.cpp
// checks their derivatives against JAX's, as it checks qr, svd and eigh's values (sign
// conventions).
void linalg_rows(Rows& r) {
  const Operand spd{{3, 3}, DType::float32, 0, 0, {4, 1, 0.5, 1, 3, 0.2, 0.5, 0.2, 2}};
  Case& chol = r.add("cholesky spd", Prim::cholesky, {spd}, {}, kValues | kVjp | kShard);
  chol.ref.naive = naive_cholesky;
  chol.ref.dtypes = {DType::float64};
  r.add("cholesky 1x1", Prim::cholesky, {f32({1, 1}, 1, 2)}, {}, kGrad | kBatch);
  r.add("cholesky batched 1x1", Prim::cholesky, {f32({8, 1, 1}, 1, 2)}, {}, kShard | kBatch);
  r.add("cholesky not positive definite", Prim::cholesky, {f32({3, 3}, -2, -1)}, {}, kValues)
      .ref.naive = naive_cholesky;

  for (Shape s : {Shape{4, 4}, Shape{5, 3}, Shape{3, 5}, Shape{2, 3, 3}}) {
    Case& c = r.add("lu " + shape_str(s), Prim::lu, {f32(s)}, {}, kValues | kGrad | kBatch);
    c.ref.naive = naive_lu;
    c.ref.dtypes = {DType::float64};
  }
  r.add("lu batched", Prim::lu, {f32({8, 3, 3})}, {}, kShard);
  Case& piv = r.add("lu_pivots_to_permutation", Prim::lu_pivots_to_permutation, {i32({2, 3}, 0, 3)},
                    {{"permutation_size", int64_t{4}}}, kValues | kBatch | kShard);
  piv.ref.naive = naive_pivots;

  const Params reduced{{"full_matrices", false}};
  const Params full{{"full_matrices", true}};
  r.add("qr 4x3", Prim::qr, {f32({4, 3})}, reduced, kGrad | kBatch);
  r.add("qr 3x5", Prim::qr, {f32({3, 5})}, reduced, kGrad | kBatch);
  r.add("qr 5x3 full", Prim::qr, {f32({5, 3})}, full, kGrad | kBatch);
  r.add("qr batched", Prim::qr, {f32({8, 4, 3})}, reduced, kShard);

  auto svd_params = [](bool full_matrices, bool compute_uv) {
    return Params{{"full_matrices", full_matrices}, {"compute_uv", compute_uv}};
  };
  r.add("svd 4x3", Prim::svd, {f32({4, 3})}, svd_params(false, true), kGrad | kBatch);
  r.add("svd 3x4", Prim::svd, {f32({3, 4})}, svd_params(false, true), kGrad);
  r.add("svd 3x3 full", Prim::svd, {f32({3, 3})}, svd_params(true, true), kGrad);
  r.add("svd values 4x3", Prim::svd, {f32({4, 3})}, svd_params(true, false), kGrad | kBatch);
  r.add("svd batched", Prim::svd, {f32({8, 3, 3})}, svd_params(false, true), kShard);

  const Params lower{{"lower", true}, {"sort_eigenvalues", true}};
  const Params upper{{"lower", false}, {"sort_eigenvalues", true}};
  r.add("eigh 4x4", Prim::eigh, {f32({4, 4})}, lower, kVjp | kBatch);
  r.add("eigh upper", Prim::eigh, {f32({3, 3})}, upper, kVjp | kBatch);
  r.add("eigh 1x1", Prim::eigh, {f32({1, 1})}, lower, kJvp);
  r.add("eigh batched", Prim::eigh, {f32({8, 4, 4})}, lower, kShard);

  struct Solve {
    const char* name;
    bool left, lower, transpose, unit;
    Shape b;
  };
  const Solve solves[] = {{"left lower", true, true, false, false, {3, 2}},
                          {"left upper transposed", true, false, true, false, {3, 4}},
                          {"right upper", false, false, false, false, {2, 3}},
                          {"right lower transposed unit", false, true, true, true, {4, 3}}};
  for (const Solve& s : solves) {
    Case& c = r.add(std::string("triangular_solve ") + s.name, Prim::triangular_solve,
                    {f32({3, 3}, 1, 2), f32(s.b)}, ts_params(s.left, s.lower, s.transpose, s.unit),
                    kValues | kGrad | kTranspose | kBatch);
    c.linear = {{false, true}};
    c.tolerance = 1e-5;
    c.ref.naive = naive_triangular_solve;
    c.ref.dtypes = {DType::float64};
  }
  r.add("triangular_solve batched", Prim::triangular_solve, {f32({8, 3, 3}, 1, 2), f32({8, 3, 2})},
        ts_params(true, true, false, false), kShard)
      .tolerance = 1e-6;
}

// Convolution and windowed reductions.
Params conv_params(Ints strides, Ints padding, Ints lhs_dil, Ints rhs_dil, Ints lhs_spec,
                   Ints rhs_spec, Ints out_spec, int64_t fgc = 1, int64_t bgc = 1) {
  return {{"window_strides", strides}, {"padding", padding},         {"lhs_dilation", lhs_dil},
          {"rhs_dilation", rhs_dil},   {"lhs_spec", lhs_spec},       {"rhs_spec", rhs_spec},
          {"out_spec", out_spec},      {"feature_group_count", fgc}, {"batch_group_count", bgc}};
}
Ints iota_spec(size_t n) {
  Ints v(n);
  std::iota(v.begin(), v.end(), 0);
  return v;
}
Params conv_nc(Ints strides, Ints padding, Ints lhs_dil, Ints rhs_dil, int64_t fgc = 1,
               int64_t bgc = 1) {
  const Ints spec = iota_spec(strides.size() + 2);
  return conv_params(strides, padding, lhs_dil, rhs_dil, spec, spec, spec, fgc, bgc);
}

// Where input position p (padding subtracted) of a dilated dimension lands, or -1.
int64_t dilated_source(int64_t p, int64_t size, int64_t dil) {
  if (p < 0 || p % dil != 0 || p / dil >= size) return -1;
  return p / dil;
}

// XLA's convolution, one result element at a time over (input feature, window position).
std::vector<double> naive_conv(const Case& c, const std::vector<std::vector<double>>& in,
                               const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const Shape& ls = c.operands[0].shape;
  const Shape& rs = c.operands[1].shape;
  const Shape& os = outs[0].shape;
  const Ints l = c.params.get<Ints>("lhs_spec"), k = c.params.get<Ints>("rhs_spec"),
             o = c.params.get<Ints>("out_spec");
  const Ints st = c.params.get<Ints>("window_strides"), pad = c.params.get<Ints>("padding"),
             ld = c.params.get<Ints>("lhs_dilation"), rd = c.params.get<Ints>("rhs_dilation");
  const int64_t fgc = c.params.get<int64_t>("feature_group_count");
  const int64_t bgc = c.params.get<int64_t>("batch_group_count");
  const int64_t og = rs[size_t(k[0])] / (fgc * bgc), cg = rs[size_t(k[1])];
  const int64_t nout = os[size_t(o[0])];
  const size_t n = st.size();
  Shape window;
  for (size_t d = 0; d < n; ++d) window.push_back(rs[size_t(k[d + 2])]);
  std::vector<double> want;
  for_each_index(os, [&](const Ints& out) {
    const int64_t b = out[size_t(o[0])], f = out[size_t(o[1])];
    const int64_t g = f / og;
    double sum = 0, mag = 0;
    uint64_t wrapped = 0;
    for (int64_t ch = 0; ch < cg; ++ch) {
      for_each_index(window, [&](const Ints& w) {
        Ints li(ls.size()), ri(rs.size());
        li[size_t(l[0])] = bgc > 1 ? g * nout + b : b;
        li[size_t(l[1])] = fgc > 1 ? g * cg + ch : ch;
        ri[size_t(k[0])] = f;
        ri[size_t(k[1])] = ch;
        for (size_t d = 0; d < n; ++d) {
          const int64_t q =
              dilated_source(out[size_t(o[d + 2])] * st[d] + w[d] * rd[d] - pad[2 * d],
                             ls[size_t(l[d + 2])], ld[d]);
          if (q < 0) return;
          li[size_t(l[d + 2])] = q;
          ri[size_t(k[d + 2])] = w[d];
        }
        const double a = in[0][size_t(flat(ls, li))], v = in[1][size_t(flat(rs, ri))];
        sum += a * v;
        mag += std::abs(a * v);
        wrapped += uint64_t(int64_t(a)) * uint64_t(int64_t(v));
      });
    }
    want.push_back(is_integer(outs[0].dtype) ? wrap_to(outs[0].dtype, wrapped) : sum);
    scale.push_back(mag + 1e-30);
  });
  return want;
}

// The window positions of result index `o` in row-major window order (-1: padding or a
// hole of base dilation); params as reduce_window's.
std::vector<int64_t> window_sources(const Params& p, const Shape& in, const Ints& o) {
  const Ints win = p.get<Ints>("window_dimensions"), st = p.get<Ints>("window_strides"),
             pad = p.get<Ints>("padding");
  const Ints bd = p.has("base_dilation") ? p.get<Ints>("base_dilation") : Ints(in.size(), 1);
  const Ints wd = p.has("window_dilation") ? p.get<Ints>("window_dilation") : Ints(in.size(), 1);
  std::vector<int64_t> out;
  for_each_index(Shape(win.begin(), win.end()), [&](const Ints& k) {
    Ints idx(in.size());
    for (size_t d = 0; d < in.size(); ++d) {
      idx[d] = dilated_source(o[d] * st[d] + k[d] * wd[d] - pad[2 * d], in[d], bd[d]);
      if (idx[d] < 0) {
        out.push_back(-1);
        return;
      }
    }
    out.push_back(flat(in, idx));
  });
  return out;
}

std::vector<double> naive_window(const Case& c, const std::vector<std::vector<double>>& in,
                                 const std::vector<core::Aval>& outs, std::vector<double>& scale) {
  const Shape& shape = c.operands[0].shape;
  std::vector<double> want;
  for_each_index(outs[0].shape, [&](const Ints& o) {
    double acc = c.prim == Prim::reduce_window_sum   ? 0
                 : c.prim == Prim::reduce_window_max ? -INFINITY
                                                     : INFINITY;
    double mag = 0;
    for (int64_t s : window_sources(c.params, shape, o)) {
      if (s < 0) continue;
      const double v = in[0][size_t(s)];
      acc = c.prim == Prim::reduce_window_sum   ? acc + v
            : c.prim == Prim::reduce_window_max ? std::max(acc, v)
                                                : std::min(acc, v);
      mag += std::abs(v);
    }
    if (is_integer(outs[0].dtype) && c.prim != Prim::reduce_window_sum && std::isinf(acc)) {
      acc = dispatch_dtype(outs[0].dtype, [&](auto tag) {
        using T = decltype(tag);
        if constexpr (std::is_integral_v<T>) {
          return double(acc > 0 ? std::numeric_limits<T>::max() : std::numeric_limits<T>::lowest());
        } else {
          return acc;
        }
      });
    }
    want.push_back(acc);
    scale.push_back(c.prim == Prim::reduce_window_sum ? mag + 1e-30 : 0);
  });
  return want;
}

// The first element of each window that wins (ge: the max) and the selection's operands.
int64_t selected(const Params& p, const Shape& shape, const std::vector<double>& x, const Ints& o) {
  const bool ge = p.get<std::string>("select_prim") == "ge";
  int64_t chosen = -2;
  double best = ge ? -INFINITY : INFINITY;
  for (int64_t s : window_sources(p, shape, o)) {
    const double v = s < 0 ? (ge ? -INFINITY : INFINITY) : x[size_t(s)];
    if (chosen == -2 || !(ge ? best >= v : best <= v)) {
      best = v;
      chosen = s;
    }
  }
  return chosen;
}

std::vector<double> naive_gather_add(const Case& c, const std::vector<std::vector<double>>& in,
                                     const std::vector<core::Aval>& outs,
                                     std::vector<double>& scale) {
  std::vector<double> want;
  for_each_index(outs[0].shape, [&](const Ints& o) {
    const int64_t s = selected(c.params, c.operands[1].shape, in[1], o);
    want.push_back(s < 0 ? 0 : in[0][size_t(s)]);
  });
  scale.assign(want.size(), 0);
  return want;
}

std::vector<double> naive_scatter_add(const Case& c, const std::vector<std::vector<double>>& in,
                                      const std::vector<core::Aval>& outs,
                                      std::vector<double>& scale) {
  std::vector<double> want(size_t(shape_size(outs[0].shape)), 0.0);
  std::vector<double> mag(want.size(), 1e-30);
  int64_t i = 0;
  for_each_index(c.operands[0].shape, [&](const Ints& o) {
    const int64_t s = selected(c.params, c.operands[1].shape, in[1], o);
    if (s >= 0) {
      want[size_t(s)] += in[0][size_t(i)];
      mag[size_t(s)] += std::abs(in[0][size_t(i)]);
    }
    ++i;
  });
  scale = mag;
  return want;
}

Params window_params(Ints win, Ints strides, Ints padding, Ints bdil = {}, Ints wdil = {}) {
  Params p{{"window_dimensions", win}, {"window_strides", strides}, {"padding", padding}};
  p.set("base_dilation", bdil.empty() ? Ints(win.size(), 1) : bdil);
  p.set("window_dilation", wdil.empty() ? Ints(win.size(), 1) : wdil);
  return p;
}

void conv_rows(Rows& r) {
  // conv_general_dilated: layouts, strides, padding, dilations, groups, ranks; each
  // operand alone taken as the linear one; the kernel against the naive loop.
  struct Conv {
    std::string name;
    Shape lhs, rhs;
    Params params;
  };
  const Ints nhwc{0, 3, 1, 2}, hwio{3, 2, 0, 1};
  const Conv convs[] = {
      {"2d", {2, 3, 5, 4}, {4, 3, 3, 2}, conv_nc({1, 1}, {1, 1, 0, 1}, {1, 1}, {1, 1})},
      {"strides and dilations",
       {1, 2, 6, 5},
       {2, 2, 2, 3},
       conv_nc({2, 1}, {1, 0, 2, 1}, {1, 2}, {2, 1})},
      {"negative padding",
       {1, 2, 6, 5},
       {2, 2, 2, 2},
       conv_nc({1, 1}, {-1, 0, 1, -1}, {1, 1}, {1, 1})},
      {"feature groups",
       {2, 4, 4, 4},
       {6, 2, 3, 3},
       conv_nc({1, 1}, {1, 1, 1, 1}, {1, 1}, {1, 1}, 2)},
      {"batch groups",
       {4, 2, 4, 4},
       {4, 2, 2, 2},
       conv_nc({1, 1}, {0, 0, 0, 0}, {1, 1}, {1, 1}, 1, 2)},
      {"nhwc hwio",
       {2, 5, 4, 3},
       {3, 2, 3, 4},
       conv_params({1, 2}, {1, 1, 0, 1}, {1, 1}, {1, 1}, nhwc, hwio, nhwc)},
      {"1d", {2, 3, 7}, {2, 3, 3}, conv_nc({2}, {1, 1}, {1}, {1})},
      {"3d",
       {1, 2, 3, 4, 3},
       {2, 2, 2, 2, 2},
       conv_nc({1, 1, 1}, {1, 0, 0, 1, 1, 0}, {1, 1, 1}, {1, 1, 1})},
  };
  for (const Conv& cv : convs) {
    Case& c = r.add("conv_general_dilated " + cv.name, Prim::conv_general_dilated,
                    {f32(cv.lhs), f32(cv.rhs)}, cv.params, kGrad | kTranspose | kBatch | kValues);
    c.linear = {{true, false}, {false, true}};
    c.tolerance = 1e-5;
    c.ref.naive = naive_conv;
    c.ref.dtypes = {DType::float64};
  }
  r.add("conv_general_dilated int32", Prim::conv_general_dilated,
        {i32({1, 2, 4, 4}), i32({2, 2, 2, 2})}, conv_nc({1, 1}, {0, 1, 1, 0}, {1, 1}, {1, 1}),
        kValues | kBatch)
      .ref.naive = naive_conv;
  // Sharded: every spec of the images (batch, features, spatial) with the kernel
  // replicated or laid out the same way.
  r.add("conv_general_dilated 8x8x4x4", Prim::conv_general_dilated,
        {m8({8, 8, 4, 4}), m8({8, 8, 3, 3})}, conv_nc({1, 1}, {1, 1, 1, 1}, {1, 1}, {1, 1}), kShard)
      .tolerance = 1e-5;

  // Windowed reductions.
  const Params pool = window_params({1, 2, 2}, {1, 2, 1}, {0, 0, 0, 1, 1, 0});
  for (Prim p : {Prim::reduce_window_sum, Prim::reduce_window_max, Prim::reduce_window_min}) {
    const uint32_t transpose = p == Prim::reduce_window_sum ? kTranspose : 0;
    // Max pooling's vjp refuses window dilation, as JAX's does.
    const Params dilated =
        window_params({1, 2, 2}, {1, 1, 2}, {0, 0, 1, 0, 0, 1}, {1, 2, 1},
                      p == Prim::reduce_window_sum ? Ints{1, 1, 2} : Ints{1, 1, 1});
    Case& c = r.add(name_of(p), p, {f32({2, 6, 5})}, pool, kGrad | transpose | kBatch | kValues);
    c.ref.naive = naive_window;
    c.ref.dtypes = {DType::float64, DType::int32};
    c.tolerance = 1e-6;
    Case& d = r.add(name_of(p) + " dilated", p, {f32({2, 5, 6})}, dilated,
                    kGrad | transpose | kBatch | kValues);
    d.ref.naive = naive_window;
    d.tolerance = 1e-6;
    r.add(name_of(p) + " 8x8x4x4", p, {m8({8, 8, 4, 4})},
          window_params({1, 1, 2, 2}, {1, 1, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0}), kShard)
        .tolerance = 1e-6;
  }
  // The selections of max pooling's derivatives (ties go to the first element).
  Params ge = pool;
  ge.set("select_prim", std::string("ge"));
  Case& gather = r.add("select_and_gather_add", Prim::select_and_gather_add,
                       {f32({2, 6, 5}), f32({2, 6, 5})}, ge, kGrad | kTranspose | kBatch | kValues);
  gather.diff = {true, false};
  gather.ref.naive = naive_gather_add;
  Params le = window_params({1, 2, 2}, {1, 1, 1}, {0, 0, 1, 1, 0, 0});
  le.set("select_prim", std::string("le"));
  // Operands of three values, so most windows hold ties.
  auto tied = [](Shape shape) {
    std::vector<double> v(size_t(shape_size(shape)));
    for (size_t i = 0; i < v.size(); ++i) v[i] = double(int64_t(i * 7 % 3) - 1);
    return Operand{std::move(shape), DType::float32, 0, 0, v};
  };
  Case& gather_ties = r.add("select_and_gather_add le ties", Prim::select_and_gather_add,
                            {f32({2, 4, 5}), tied({2, 4, 5})}, le, kValues);
  gather_ties.ref.naive = naive_gather_add;
  Params scatter{{"select_prim", std::string("ge")},
                 {"window_dimensions", Ints{1, 2, 2}},
                 {"window_strides", Ints{1, 2, 1}},
                 {"padding", Ints{0, 0, 0, 1, 1, 0}}};
  Case& sas =
      r.add("select_and_scatter_add", Prim::select_and_scatter_add,
            {f32({2, 3, 5}), f32({2, 6, 5})}, scatter, kGrad | kTranspose | kBatch | kValues);
  sas.diff = {true, false};
  sas.ref.naive = naive_scatter_add;
  sas.tolerance = 1e-6;
  Params ties = scatter;
  ties.set("window_strides", Ints{1, 1, 1});
  Case& sas_ties = r.add("select_and_scatter_add ties", Prim::select_and_scatter_add,
                         {f32({2, 6, 5}), tied({2, 6, 5})}, ties, kValues);
  sas_ties.ref.naive = naive_scatter_add;
  for (Prim p : {Prim::select_and_gather_add, Prim::select_and_scatter_add}) {
    const bool g = p == Prim::select_and_gather_add;
    r.add(
         name_of(p) + " 8x8x4x4", p,
         {m8(g ? Shape{8, 8, 4, 4} : Shape{8, 8, 2, 2}), m8({8, 8, 4, 4})},
         [&] {
           Params q = window_params({1, 1, 2, 2}, {1, 1, 2, 2}, {0, 0, 0, 0, 0, 0, 0, 0});
           if (!g)
             q = Params{{"window_dimensions", Ints{1, 1, 2, 2}},
                        {"window_strides", Ints{1, 1, 2, 2}},
                        {"padding", Ints{0, 0, 0, 0, 0, 0, 0, 0}}};
           q.set("select_prim", std::string("ge"));
           return q;
         }(),
         kShard)
        .tolerance = 1e-6;
  }
}

// Custom derivative calls: exempt (they hold traced programs; see exempt()).
void custom_derivative_rows(Rows& r) { (void)r; }

}  // namespace

const std::vector<Case>& cases() {
  static const std::vector<Case> all = [] {
    Rows r;
    unary_rows(r);
    float_binary_rows(r);
    discrete_binary_rows(r);
    other_elementwise_rows(r);
    structural_rows(r);
    index_map_rows(r);
    contraction_rows(r);
    dot_value_rows(r);
    reduction_value_rows(r);
    layout_rows(r);
    gather_rows(r);

    hyperbolic_and_cumulative_rows(r);

    special_rows(r);

    linalg_rows(r);

    conv_rows(r);

    custom_derivative_rows(r);
    return r.take();
  }();
  return all;
}

const std::map<std::string_view, std::string_view>& exempt() {
  static constexpr std::string_view kPerDevice =
      "per-device only: made by the partitioner's reshard after differentiation and batching; "
      "checked by compiler/partition_test.cpp and the shard leg's runs";
  static constexpr std::string_view kNamedAxis =
      "a named-axis collective: binds only inside vmap, pmap or shard_map, where its axis "
      "exists; checked against host loops by transforms/collectives_test.cpp";
  static const std::map<std::string_view, std::string_view> reasons = {
      {"pjit", "holds a program: the vjp leg runs every row through a pjit equation"},
      {"inspect_sharding",
       "the identity whose result nothing reads: its callback runs at compile time "
       "(api/explain_test.cpp)"},
      {"fusion", "made by the compiler's fusion pass: the fuse leg checks it on every row"},
      {"all-gather", kPerDevice},
      {"all-reduce", kPerDevice},
      {"reduce-scatter", kPerDevice},
      {"all-to-all", kPerDevice},
      {"collective-permute", kPerDevice},
      {"shard-slice", kPerDevice},
      {"psum", kNamedAxis},
      {"pmax", kNamedAxis},
      {"pmin", kNamedAxis},
      {"all_gather", kNamedAxis},
      {"reduce_scatter", kNamedAxis},
      {"ppermute", kNamedAxis},
      {"all_to_all", kNamedAxis},
      {"axis_index", kNamedAxis},
      {"shard_map", "holds a per-device program over mesh axes: transforms/shard_map_test.cpp"},
      {"cond", "control flow over sub-programs: tests/lax/control_flow/"},
      {"while", "control flow over sub-programs: tests/lax/control_flow/"},
      {"scan", "control flow over sub-programs: tests/lax/control_flow/"},
      {"remat2", "checkpoint's call of a program: tests/lax/control_flow/"},
      {"custom_jvp_call",
       "holds the user's function and jvp rule as traced programs: "
       "transforms/custom_derivatives_test.cpp checks every transform against JAX"},
      {"custom_vjp_call",
       "holds the user's function, fwd and bwd as traced programs: "
       "transforms/custom_derivatives_test.cpp checks every transform against JAX"},
      {"custom_lin",
       "made only by custom_vjp_call's jvp, its transpose runs bwd (forward, JAX's "
       "TypeError): transforms/custom_derivatives_test.cpp"},
      {"manual-enter", "compiler-internal: where an inlined shard_map begins (shard_map_test)"},
      {"manual-exit", "compiler-internal: where an inlined shard_map ends (shard_map_test)"},
  };
  return reasons;
}

const std::map<Leg, std::map<std::string_view, std::string_view>>& leg_exempt() {
  static constexpr std::string_view kIntegers =
      "integer and boolean operands only: nothing to differentiate (zero tangents: "
      "ElementwiseGrad.IntegerOperandsHaveZeroTangents)";
  static constexpr std::string_view kBooleans =
      "boolean operands only (zero tangent: StructuralGrad.ZeroTangentPrimitives)";
  static constexpr std::string_view kKey =
      "a uint32 key in, integer bits out: nothing to differentiate (a jvp rule exists: "
      "StructuralGrad.ZeroTangentPrimitives)";
  static constexpr std::string_view kSigns =
      "factors unique only up to signs: linalg/linalg_test.cpp checks them against JAX's "
      "(values, reconstructions, orthogonality) as JAX's tests do";
  static constexpr std::string_view kLayout =
      "the identity with a layout: its sharded behaviour is the sharding API's "
      "(sharding/sharding_test.cpp, robustness/sharding_api_test.cpp)";
  static constexpr std::string_view kSpecialValues =
      "checked against JAX's values over its domain, NaN and infinite corners included "
      "(random/distributions_test.cpp, Special.ValuesMatchJax): XLA's Lanczos and series "
      "algorithms, kept to give JAX's values, are tens of ulp from the rounded value";
  static constexpr std::string_view kNoDerivative =
      "no jvp rule, as JAX's lax code for it has none that is used: its jvp raises "
      "NotImplementedError (random/distributions_test.cpp, Special.RuleErrors)";
  static const std::map<Leg, std::map<std::string_view, std::string_view>> reasons = {
      {kValues,
       {{"iota",
         "no operands, its dtype a param: StructuralKernel.Iota checks every dtype "
         "and shape against the index"},
        {"random_bits",
         "bits of a counter-based generator: random/random_test.cpp checks "
         "them against JAX's bits (Threefry.KnownAnswerVectors, Original.*)"},
        {"sharding_constraint", "no kernel: the partitioner turns it into a reshard"},
        {"device_put",
         "no kernel: the runtime moves buffers between devices "
         "(api/array_test.cpp, robustness/sharding_api_test.cpp)"},
        {"lgamma", kSpecialValues},
        {"digamma", kSpecialValues},
        {"polygamma", kSpecialValues},
        {"igamma", kSpecialValues},
        {"random_gamma_grad", kSpecialValues},
        {"qr", kSigns},
        {"svd", kSigns},
        {"eigh", kSigns}}},
      {kJvp,
       {{"not", kIntegers},
        {"and", kIntegers},
        {"or", kIntegers},
        {"xor", kIntegers},
        {"shift_left", kIntegers},
        {"shift_right_logical", kIntegers},
        {"shift_right_arithmetic", kIntegers},
        {"reduce_and", kBooleans},
        {"reduce_or", kBooleans},
        {"random_bits", kKey},
        {"random_gamma_grad", kNoDerivative},
        {"lu_pivots_to_permutation", kIntegers}}},
      {kVjp,
       {{"not", kIntegers},
        {"and", kIntegers},
        {"or", kIntegers},
        {"xor", kIntegers},
        {"shift_left", kIntegers},
        {"shift_right_logical", kIntegers},
        {"shift_right_arithmetic", kIntegers},
        {"reduce_and", kBooleans},
        {"reduce_or", kBooleans},
        {"random_bits", kKey},
        {"random_gamma_grad", kNoDerivative},
        {"iota", "no operands: nothing to differentiate"},
        {"lu_pivots_to_permutation", kIntegers}}},
      {kBatch, {{"iota", "no operands: nothing of it is ever batched"}}},
      {kShard,
       {{"iota",
         "no operands: checked sharded through the partitioner's padding masks and "
         "StructuralKernel.IotaShardOffset"},
        {"random_bits", "draws sharded over 1-8 devices, bit for bit: random/random_test.cpp"},
        {"sharding_constraint", kLayout},
        {"device_put", kLayout}}},
  };
  return reasons;
}

std::vector<bool> diff_of(const Case& c) {
  if (!c.diff.empty()) return c.diff;
  std::vector<bool> d;
  for (const Operand& o : c.operands) d.push_back(is_floating(o.dtype));
  return d;
}

Array draw(const Operand& o, const Shape& shape, std::mt19937& rng) {
  if (!o.values.empty()) return numpy::array(o.values, o.shape, o.dtype);
  std::vector<double> v(size_t(shape_size(shape)));
  if (is_floating(o.dtype)) {
    std::uniform_real_distribution<double> u(o.lo, o.hi);
    for (double& e : v) e = u(rng);
  } else {
    // Unsigned and bool dtypes take the non-negative part of the range.
    const bool non_negative = is_unsigned_integer(o.dtype) || o.dtype == DType::bool_;
    const double lo = non_negative ? std::max(0.0, o.lo) : o.lo;
    const double hi = o.dtype == DType::bool_ ? std::min(1.0, o.hi) : o.hi;
    std::uniform_int_distribution<int64_t> u(static_cast<int64_t>(lo), static_cast<int64_t>(hi));
    for (double& e : v) e = double(u(rng));
  }
  return numpy::array(v, shape, o.dtype);
}

Array draw_for_grad(const Case& c, size_t i, std::mt19937& rng) {
  Operand o = c.operands[i];
  if (is_floating(o.dtype) && !c.keep_dtypes) o.dtype = DType::float64;
  return draw(o, o.shape, rng);
}

int bits_of(DType t) { return 8 * dtype_itemsize(t); }
I128 wrap(DType t, I128 v) {
  const int bits = bits_of(t);
  const auto mask = (static_cast<unsigned __int128>(1) << bits) - 1;
  const I128 low = I128(static_cast<unsigned __int128>(v) & mask);
  return is_signed_integer(t) && low >= (I128(1) << (bits - 1)) ? low - (I128(1) << bits) : low;
}

}  // namespace parax::prim_table
