// Autodiff rules of the elementwise primitives where the sweep's rows (prims/prim_table.cpp,
// checked by grad_legs_test.cpp) cannot say it: ties split half and half, pow at a zero
// base, zero tangents of integer operands, symbolic zeros in and out, float32 tangents
// keeping their dtype, and rules running on tracers under jit.
#include <gtest/gtest.h>

#include <cmath>
#include <random>
#include <string>
#include <vector>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/jit.h"
#include "parax/numpy.h"
#include "prims/prim_table.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;
using Values = std::vector<double>;

// float64 values: jax_enable_x64 on for each test.
using ElementwiseGrad = testing::WithX64;

Array make(const Values& v, const Shape& shape, DType dtype = DType::float64) {
  return numpy::array(v, shape, dtype);
}

Values host(const Array& x) { return x.to_vector<double>(); }

std::vector<Array> run_jvp(Prim p, const std::vector<Array>& primals,
                           const std::vector<Array>& tangents, const Params& params) {
  const std::vector<Array> outs = core::bind(p, primals, params);
  EXPECT_NE(core::rules(p).jvp, nullptr) << core::prim_name(p);
  return core::rules(p).jvp(primals, tangents, outs, params);
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

// Integer operands: zero tangents (the floating rows are the sweep's zero_tangent rows).
TEST_F(ElementwiseGrad, IntegerOperandsHaveZeroTangents) {
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

// Tangents keep the primal's dtype (a float64 constant must not promote them): the jvp of
// every elementwise row of prims/prim_table.cpp whose floating operands are float32.
TEST_F(ElementwiseGrad, Float32TangentsStayFloat32) {
  std::mt19937 rng(3);
  int checked = 0;
  for (const prim_table::Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kJvp) || c.zero_tangent ||
        !core::has_trait(c.prim, core::kElementwise)) {
      continue;
    }
    SCOPED_TRACE(c.name);
    const std::vector<bool> diff = prim_table::diff_of(c);
    std::vector<Array> primals, tangents;
    bool float32 = true;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      const prim_table::Operand& o = c.operands[i];
      float32 = float32 && (!is_floating(o.dtype) || o.dtype == DType::float32);
      primals.push_back(prim_table::draw(o, o.shape, rng));
      tangents.push_back(diff[i] ? numpy::full(o.shape, 0.5, DType::float32) : Array());
    }
    if (!float32) continue;
    const Array out = run_jvp(c.prim, primals, tangents, c.params)[0];
    EXPECT_EQ(out.dtype(), core::bind(c.prim, primals, c.params)[0].dtype());
    for (double v : host(out)) EXPECT_TRUE(std::isfinite(v));
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

// Rules bind primitives, so they also run on tracers inside jit, with the same values.
TEST_F(ElementwiseGrad, RulesRunUnderJit) {
  auto rule = [](const Array& x, const Array& y, const Array& t) {
    const Array z = core::bind1(Prim::pow, {x, y});
    const Array jvp = core::rules(Prim::pow).jvp(std::vector<Array>{x, y}, std::vector<Array>{t, t},
                                                 {&z, 1}, {})[0];
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
}  // namespace parax
