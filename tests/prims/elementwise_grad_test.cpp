// Autodiff rules of the elementwise primitives, called directly on concrete arrays: every
// jvp against central finite differences in float64, zero tangents where the function is
// piecewise constant or not over floats, every transpose by the dot-product test
// <ct, L(t)> == <L^T(ct), t> (rank-0 broadcast operands included), and float32 tangents
// keeping their dtype. The jvp rows are also this family's rows of vjp_jvp_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <memory>
#include <random>
#include <string>
#include <vector>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/jit.h"
#include "parax/numpy.h"
#include "prims/grad_cases.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;
using Values = std::vector<double>;

// float64 rows: jax_enable_x64 on for each test.
using ElementwiseGrad = testing::WithX64;

// An operand: its values and shape (empty shape: rank 0), and dtype.
struct Operand {
  Values values;
  Shape shape;
  DType dtype = DType::float64;
};

Operand vec(Values v, DType dtype = DType::float64) {
  const int64_t n = int64_t(v.size());
  return {std::move(v), Shape{n}, dtype};
}
Operand scalar(double v, DType dtype = DType::float64) { return {{v}, Shape{}, dtype}; }

Array make(const Operand& o) { return numpy::array(o.values, o.shape, o.dtype); }
Array make(const Values& v, const Shape& shape, DType dtype = DType::float64) {
  return numpy::array(v, shape, dtype);
}

Values host(const Array& x) { return x.to_vector<double>(); }

double dot(const Array& a, const Array& b) {
  const Values u = host(a), v = host(b);
  EXPECT_EQ(u.size(), v.size());
  double s = 0;
  for (size_t i = 0; i < u.size(); ++i) s += u[i] * v[i];
  return s;
}

// Multiples of 2^-10, exact in every float dtype tested, so that conversions are exact.
Values random_values(size_t n, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(-1024, 1024);
  Values v(n);
  for (double& x : v) x = u(rng) / 1024.0;
  return v;
}

std::vector<Array> make_all(const std::vector<Operand>& ops) {
  std::vector<Array> out;
  for (const Operand& o : ops) out.push_back(make(o));
  return out;
}

std::vector<Array> run_jvp(Prim p, const std::vector<Array>& primals,
                           const std::vector<Array>& tangents, const Params& params) {
  const std::vector<Array> outs = core::bind(p, primals, params);
  EXPECT_NE(core::rules(p).jvp, nullptr) << core::prim_name(p);
  return core::rules(p).jvp(primals, tangents, outs, params);
}

// Checks the jvp in each floating operand alone and in all at once against
// (f(x + h t) - f(x - h t)) / 2h.
void check_jvp(Prim p, const std::vector<Operand>& ops, const Params& params = {}) {
  SCOPED_TRACE(std::string(core::prim_name(p)));
  std::mt19937 rng(7);
  const std::vector<Array> primals = make_all(ops);
  const int all = int(ops.size());
  for (int which = 0; which <= all; ++which) {
    std::vector<Array> tangents(ops.size()), plus, minus;
    const double h = 1e-6;
    bool any = false;
    for (size_t i = 0; i < ops.size(); ++i) {
      const bool perturb = (which == all || which == int(i)) && is_floating(ops[i].dtype);
      if (!perturb) {
        plus.push_back(primals[i]);
        minus.push_back(primals[i]);
        continue;
      }
      any = true;
      const Values t = random_values(ops[i].values.size(), rng);
      tangents[i] = make(t, ops[i].shape);
      Values up = ops[i].values, down = ops[i].values;
      for (size_t k = 0; k < t.size(); ++k) {
        up[k] += h * t[k];
        down[k] -= h * t[k];
      }
      plus.push_back(make(up, ops[i].shape));
      minus.push_back(make(down, ops[i].shape));
    }
    if (!any) continue;
    const std::string in = which == all ? std::string("all") : std::to_string(which);
    SCOPED_TRACE("tangent in operand " + in);
    const std::vector<Array> out_t = run_jvp(p, primals, tangents, params);
    ASSERT_EQ(out_t.size(), 1u);
    const Values hi = host(core::bind1(p, plus, params));
    const Values lo = host(core::bind1(p, minus, params));
    ASSERT_TRUE(out_t[0].valid());
    const Array expected_shape = core::bind1(p, primals, params);
    EXPECT_EQ(out_t[0].shape(), expected_shape.shape());
    EXPECT_EQ(out_t[0].dtype(), expected_shape.dtype());
    const Values got = host(out_t[0]);
    ASSERT_EQ(got.size(), hi.size());
    for (size_t k = 0; k < got.size(); ++k) {
      const double fd = (hi[k] - lo[k]) / (2 * h);
      EXPECT_NEAR(got[k], fd, 1e-6 * (1 + std::abs(fd))) << "element " << k;
    }
  }
}

// A row of the sweep: the primitive at a point chosen inside its domain, away from kinks.
struct Row {
  Prim prim;
  std::vector<Operand> ops;
  Params params = {};
};

std::vector<Row> unary_rows() {
  const Operand general = vec({-0.7, 0.3, 1.2, -1.9});
  const Operand positive = vec({0.4, 1.3, 2.5, 0.9});
  const Operand unit = vec({-0.6, 0.1, 0.5, -0.2});
  std::vector<Row> rows;
  for (Prim p : {Prim::neg, Prim::abs, Prim::exp, Prim::exp2, Prim::expm1, Prim::sin, Prim::cos,
                 Prim::atan, Prim::sinh, Prim::cosh, Prim::tanh, Prim::cbrt, Prim::logistic,
                 Prim::erf, Prim::copy}) {
    rows.push_back({p, {general}});
  }
  for (Prim p : {Prim::log, Prim::log1p, Prim::sqrt, Prim::rsqrt}) rows.push_back({p, {positive}});
  for (Prim p : {Prim::asin, Prim::acos, Prim::erf_inv, Prim::tan}) rows.push_back({p, {unit}});
  for (int64_t y : {1, 2, 3, -2}) rows.push_back({Prim::integer_pow, {general}, {{"y", y}}});
  rows.push_back({Prim::neg, {scalar(0.3)}});
  return rows;
}

std::vector<Row> binary_rows() {
  const Operand x = vec({-0.7, 0.3, 1.2, -1.9});
  const Operand y = vec({0.8, -1.1, 0.5, 1.7});
  std::vector<Row> rows;
  for (Prim p : {Prim::add, Prim::sub, Prim::mul, Prim::div, Prim::max, Prim::min, Prim::atan2}) {
    rows.push_back({p, {x, y}});
    rows.push_back({p, {scalar(0.45), y}});  // rank-0 operands broadcast
    rows.push_back({p, {x, scalar(-0.35)}});
  }
  rows.push_back({Prim::rem, {vec({5.3, -7.1, 2.2, -0.4}), vec({2.1, 2.5, -0.7, 0.3})}});
  rows.push_back({Prim::rem, {scalar(5.3), vec({2.1, 2.5, -0.7, 0.3})}});
  const Operand base = vec({0.4, 1.3, 2.5, 0.9});
  rows.push_back({Prim::pow, {base, y}});
  rows.push_back({Prim::pow, {scalar(1.7), y}});
  rows.push_back({Prim::pow, {base, scalar(-1.3)}});
  rows.push_back({Prim::pow, {base, vec({2, -1, 0, 3}, DType::int32)}});
  rows.push_back({Prim::pow, {scalar(1.7), vec({2, -1, 0, 3}, DType::int32)}});
  return rows;
}

std::vector<Row> other_rows() {
  const Operand a = vec({-0.7, 0.3, 1.2, -1.9}), b = vec({0.8, -1.1, 0.5, 1.7});
  const Operand c = vec({2.5, 0.2, -0.9, 0.1});
  const Operand which_bool{{1, 0, 0, 1}, Shape{4}, DType::bool_};
  return {
      // Bounds away from x, so each operand's finite difference sees one branch.
      {Prim::clamp, {scalar(-1), vec({-2, 0.3, 0.5, 3}), scalar(1)}},
      {Prim::clamp, {vec({-1, 0, 0.6, 0}), vec({-2, 0.3, 0.5, 3}), vec({1, 1, 2, 2})}},
      {Prim::select_n, {which_bool, a, b}},
      {Prim::select_n, {vec({-1, 0, 1, 5}, DType::int32), a, b, c}},
      {Prim::select_n, {scalar(1, DType::int32), a, b, c}},
      {Prim::fma, {a, b, c}},
      {Prim::fma, {scalar(0.7), b, c}},
      {Prim::fma, {a, scalar(-1.3), scalar(0.4)}},
      {Prim::convert_element_type,
       {vec({0.5, -1.5, 2, 3})},
       {{"new_dtype", DType::float64}, {"weak_type", false}}},
  };
}

// Piecewise constant, or with a result that is not floating: zero tangents.
std::vector<Row> zero_tangent_rows() {
  const Operand x = vec({-0.7, 0.3, 1.2}), y = vec({0.8, -1.1, 0.5});
  std::vector<Row> rows;
  for (Prim p : {Prim::sign, Prim::floor, Prim::ceil, Prim::is_finite, Prim::stop_gradient}) {
    rows.push_back({p, {x}});
  }
  rows.push_back({Prim::round, {x}, {{"rounding_method", int64_t(1)}}});
  rows.push_back({Prim::nextafter, {x, y}});
  for (Prim p : {Prim::eq, Prim::ne, Prim::lt, Prim::le, Prim::gt, Prim::ge}) {
    rows.push_back({p, {x, y}});
  }
  rows.push_back({Prim::integer_pow, {x}, {{"y", int64_t(0)}}});
  rows.push_back(
      {Prim::convert_element_type, {x}, {{"new_dtype", DType::int32}, {"weak_type", false}}});
  return rows;
}

TEST_F(ElementwiseGrad, UnaryJvpMatchesFiniteDifferences) {
  for (const Row& r : unary_rows()) check_jvp(r.prim, r.ops, r.params);
}

TEST_F(ElementwiseGrad, BinaryJvpMatchesFiniteDifferences) {
  for (const Row& r : binary_rows()) check_jvp(r.prim, r.ops, r.params);
}

TEST_F(ElementwiseGrad, OtherJvpsMatchFiniteDifferences) {
  for (const Row& r : other_rows()) check_jvp(r.prim, r.ops, r.params);
}

TEST_F(ElementwiseGrad, MaxAndMinSplitTiesHalfAndHalf) {
  const Array x = make({1, 2, 3}, Shape{3});
  const Array y = make({1, 0, 3}, Shape{3});
  const Array ones = make({1, 1, 1}, Shape{3});
  for (Prim p : {Prim::max, Prim::min}) {
    const std::vector<Array> t = run_jvp(p, {x, y}, {ones, Array()}, {});
    const Values expected = p == Prim::max ? Values{0.5, 1, 0.5} : Values{0.5, 0, 0.5};
    EXPECT_EQ(host(t[0]), expected) << core::prim_name(p);
  }
}

// JAX's care at x = 0: an integer exponent 0 has jacobian 0 (not 0 * 0^-1), and the
// derivative in the exponent takes log(0) as 0.
TEST_F(ElementwiseGrad, PowAtZeroBaseIsFinite) {
  const Array x = make({0, 0, 2}, Shape{3});
  const Array ones = make({1, 1, 1}, Shape{3});
  const Array int_y = make({0, 2, 0}, Shape{3}, DType::int32);
  EXPECT_EQ(host(run_jvp(Prim::pow, {x, int_y}, {ones, Array()}, {})[0]), (Values{0, 0, 0}));
  const Array y = make({0.5, 2, 1}, Shape{3});
  EXPECT_EQ(host(run_jvp(Prim::pow, {x, y}, {Array(), ones}, {})[0]),
            (Values{0, 0, 2 * std::log(2.0)}));
}

void expect_zero_jvp(Prim p, const std::vector<Array>& primals, const Params& params = {}) {
  std::vector<Array> tangents;
  for (const Array& x : primals) {
    tangents.push_back(numpy::ones_like(x, is_floating(x.dtype()) ? x.dtype() : DType::float64));
  }
  const std::vector<Array> t = run_jvp(p, primals, tangents, params);
  ASSERT_EQ(t.size(), 1u) << core::prim_name(p);
  EXPECT_FALSE(t[0].valid()) << core::prim_name(p);
}

TEST_F(ElementwiseGrad, PiecewiseConstantAndNonFloatResultsHaveZeroTangents) {
  for (const Row& r : zero_tangent_rows()) expect_zero_jvp(r.prim, make_all(r.ops), r.params);
  const Array i = make({3, 5, 6}, Shape{3}, DType::int32);
  const Array j = make({1, 2, 3}, Shape{3}, DType::int32);
  expect_zero_jvp(Prim::not_, {i});
  for (Prim p : {Prim::and_, Prim::or_, Prim::xor_, Prim::shift_left, Prim::shift_right_logical,
                 Prim::shift_right_arithmetic, Prim::add, Prim::mul, Prim::max, Prim::rem}) {
    expect_zero_jvp(p, {i, j});
  }
  for (Prim p : {Prim::neg, Prim::abs, Prim::sign, Prim::copy}) expect_zero_jvp(p, {i});
  expect_zero_jvp(Prim::integer_pow, {i}, {{"y", int64_t(2)}});
  expect_zero_jvp(Prim::convert_element_type, {i},
                  {{"new_dtype", DType::float64}, {"weak_type", false}});
}

// A symbolic-zero tangent in, a symbolic zero out.
TEST_F(ElementwiseGrad, SymbolicZeroTangentsStayZero) {
  const Array x = make({0.4, 1.3}, Shape{2});
  for (Prim p : {Prim::exp, Prim::neg, Prim::sqrt, Prim::copy}) {
    EXPECT_FALSE(run_jvp(p, {x}, {Array()}, {})[0].valid()) << core::prim_name(p);
  }
  for (Prim p : {Prim::add, Prim::mul, Prim::pow, Prim::max}) {
    EXPECT_FALSE(run_jvp(p, {x, x}, {Array(), Array()}, {})[0].valid()) << core::prim_name(p);
  }
  const Array which = make({1, 0}, Shape{2}, DType::bool_);
  EXPECT_FALSE(run_jvp(Prim::select_n, {which, x, x}, {Array(), Array(), Array()}, {})[0].valid());
}

// The dot-product test of a transpose: operands marked linear get random tangents t and
// are passed to the rule as placeholders of their type (or as invalid Arrays, where the
// rule may take the result's type); the others are fixed values: coefficients of mul and
// div, select_n's `which`, and zeros elsewhere (a constant term would make L affine).
void check_transpose(Prim p, const std::vector<Operand>& ops, const std::vector<bool>& linear,
                     const Params& params = {}, bool placeholders = true) {
  SCOPED_TRACE(std::string(core::prim_name(p)));
  std::mt19937 rng(11);
  std::vector<Array> forward_in, rule_in;
  std::vector<Array> tangents(ops.size());
  for (size_t i = 0; i < ops.size(); ++i) {
    if (linear[i]) {
      tangents[i] = make(random_values(ops[i].values.size(), rng), ops[i].shape, ops[i].dtype);
      forward_in.push_back(tangents[i]);
      rule_in.push_back(placeholders ? tangents[i] : Array());
    } else {
      const bool coefficient =
          p == Prim::mul || p == Prim::div || (p == Prim::select_n && i == 0);
      rule_in.push_back(make(ops[i]));
      forward_in.push_back(coefficient ? rule_in.back() : numpy::zeros_like(rule_in.back()));
    }
  }
  const Array lt = core::bind1(p, forward_in, params);
  const Array ct = make(random_values(size_t(lt.size()), rng), lt.shape(), lt.dtype());
  ASSERT_NE(core::rules(p).transpose, nullptr);
  std::unique_ptr<bool[]> flags(new bool[linear.size()]);
  for (size_t i = 0; i < linear.size(); ++i) flags[i] = linear[i];
  const std::vector<Array> cts = core::rules(p).transpose(
      std::vector<Array>{ct}, rule_in, std::span<const bool>(flags.get(), linear.size()), params);
  ASSERT_EQ(cts.size(), ops.size());
  double rhs = 0;
  for (size_t i = 0; i < ops.size(); ++i) {
    if (!linear[i]) continue;
    ASSERT_TRUE(cts[i].valid()) << "operand " << i;
    EXPECT_EQ(cts[i].shape(), tangents[i].shape()) << "operand " << i;
    EXPECT_EQ(cts[i].dtype(), tangents[i].dtype()) << "operand " << i;
    rhs += dot(cts[i], tangents[i]);
  }
  EXPECT_NEAR(dot(ct, lt), rhs, 1e-12 * (1 + std::abs(rhs))) << ::testing::PrintToString(linear);
}

TEST_F(ElementwiseGrad, TransposesPassTheDotProductTest) {
  const Operand v = vec({0.5, -1.5, 2, 3}), w = vec({1.5, 0.7, -2.5, 4});
  const Operand s = scalar(0.0), k = scalar(1.7);
  check_transpose(Prim::neg, {v}, {true});
  check_transpose(Prim::neg, {v}, {true}, {}, false);
  check_transpose(Prim::copy, {v}, {true});
  for (Prim p : {Prim::add, Prim::sub}) {
    check_transpose(p, {v, w}, {true, true});
    check_transpose(p, {v, w}, {true, true}, {}, false);
    check_transpose(p, {s, w}, {true, true});
    check_transpose(p, {v, s}, {true, true});
    check_transpose(p, {v, w}, {false, true});
    check_transpose(p, {s, w}, {false, true});
  }
  check_transpose(Prim::mul, {v, w}, {true, false});
  check_transpose(Prim::mul, {v, w}, {false, true}, {}, false);
  check_transpose(Prim::mul, {s, w}, {true, false});
  check_transpose(Prim::mul, {v, k}, {true, false});
  check_transpose(Prim::mul, {k, v}, {false, true});
  check_transpose(Prim::mul, {w, s}, {false, true});
  check_transpose(Prim::div, {v, w}, {true, false});
  check_transpose(Prim::div, {s, w}, {true, false});
  check_transpose(Prim::div, {v, k}, {true, false});
  check_transpose(Prim::convert_element_type, {vec({1, 2, 3}, DType::float32)}, {true},
                  {{"new_dtype", DType::float64}, {"weak_type", false}});
  check_transpose(Prim::convert_element_type, {vec({1, 2, 3})}, {true},
                  {{"new_dtype", DType::float32}, {"weak_type", false}});
  const Operand which{{1, 0, 0, 1}, Shape{4}, DType::bool_};
  check_transpose(Prim::select_n, {which, v, w}, {false, true, true});
  check_transpose(Prim::select_n, {which, v, w}, {false, false, true});
  const Operand index = vec({-1, 0, 1, 5}, DType::int32);  // out of range: clamped
  check_transpose(Prim::select_n, {index, v, w, v}, {false, true, true, true});
  check_transpose(Prim::select_n, {scalar(2, DType::int32), v, w, v}, {false, true, false, true});
  check_transpose(Prim::select_n, {scalar(0, DType::int32), v}, {false, true});
}

// Tangents keep the primal's dtype (a float64 constant must not promote them).
TEST_F(ElementwiseGrad, Float32TangentsStayFloat32) {
  const Array x = make({0.4, 0.3, 0.5}, Shape{3}, DType::float32);
  const Array y = make({0.8, 0.1, 0.5}, Shape{3}, DType::float32);
  const Array t = make({1, -1, 0.5}, Shape{3}, DType::float32);
  for (Prim p : {Prim::neg, Prim::abs, Prim::exp, Prim::exp2, Prim::log, Prim::log1p, Prim::expm1,
                 Prim::sin, Prim::cos, Prim::tan, Prim::asin, Prim::acos, Prim::atan, Prim::sinh,
                 Prim::cosh, Prim::tanh, Prim::sqrt, Prim::rsqrt, Prim::cbrt, Prim::logistic,
                 Prim::erf, Prim::erf_inv, Prim::copy}) {
    const Array out = run_jvp(p, {x}, {t}, {})[0];
    EXPECT_EQ(out.dtype(), DType::float32) << core::prim_name(p);
    for (double v : host(out)) EXPECT_TRUE(std::isfinite(v)) << core::prim_name(p);
  }
  EXPECT_EQ(run_jvp(Prim::integer_pow, {x}, {t}, {{"y", int64_t(3)}})[0].dtype(), DType::float32);
  for (Prim p : {Prim::add, Prim::sub, Prim::mul, Prim::div, Prim::rem, Prim::pow, Prim::max,
                 Prim::min, Prim::atan2}) {
    EXPECT_EQ(run_jvp(p, {x, y}, {t, t}, {})[0].dtype(), DType::float32) << core::prim_name(p);
  }
  EXPECT_EQ(run_jvp(Prim::clamp, {x, y, x}, {t, t, t}, {})[0].dtype(), DType::float32);
}

// Rules bind primitives, so they also run on tracers inside jit, with the same values.
TEST_F(ElementwiseGrad, RulesRunUnderJit) {
  auto rule = [](const Array& x, const Array& y, const Array& t) {
    const Array z = core::bind1(Prim::pow, {x, y});
    const Array jvp = core::rules(Prim::pow).jvp(std::vector<Array>{x, y},
                                                 std::vector<Array>{t, t}, {&z, 1}, {})[0];
    const bool linear[] = {true, false};
    return core::rules(Prim::mul).transpose({&jvp, 1}, std::vector<Array>{x, y},
                                            std::span<const bool>(linear), {})[0];
  };
  const Array x = make({0.4, 1.3, 2.5}, Shape{3});
  const Array y = make({0.8, -1.1, 0.5}, Shape{3});
  const Array t = make({1, -1, 0.5}, Shape{3});
  EXPECT_EQ(host(jit(rule)(x, y, t)), host(rule(x, y, t)));
}

}  // namespace

namespace sweep {

std::vector<GradCase> elementwise_grad_cases() {
  const std::pair<const char*, std::vector<Row>> lists[] = {{"unary", unary_rows()},
                                                            {"binary", binary_rows()},
                                                            {"other", other_rows()},
                                                            {"zero", zero_tangent_rows()}};
  std::vector<GradCase> cases;
  for (const auto& [list, rows] : lists) {
    for (size_t k = 0; k < rows.size(); ++k) {
      const Row& r = rows[k];
      GradCase c{"", r.prim, make_all(r.ops), r.params, {}};
      std::string types;
      for (size_t i = 0; i < r.ops.size(); ++i) {
        types += (i ? ", " : "") + core::aval_of(c.operands[i]).short_str();
        c.diff.push_back(is_floating(r.ops[i].dtype));
      }
      c.name = std::string(list) + " row " + std::to_string(k) + ": " +
               std::string(core::prim_name(r.prim)) + "(" + types + ")";
      cases.push_back(std::move(c));
    }
  }
  return cases;
}

}  // namespace sweep
}  // namespace parax
