// Autodiff rules of the structural, contraction and reduction primitives where the sweep's
// rows (prims/prim_table.cpp, checked by grad_legs_test.cpp) cannot say it: a preferred
// element type's cotangent dtype, tied maxima, and the zero tangents of boolean and
// operand-less primitives.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/lax.h"
#include "parax/numpy.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;

// float64 values: jax_enable_x64 on for each test.
using StructuralGrad = testing::WithX64;

std::mt19937& rng() {
  static std::mt19937 gen(20240611);
  return gen;
}

Array random(const Shape& shape, DType dtype = DType::float64) {
  std::normal_distribution<double> normal;
  std::vector<double> v(size_t(shape_size(shape)));
  for (double& x : v) x = normal(rng());
  return numpy::array(v, shape, dtype);
}

std::vector<double> values(const Array& x) { return x.astype(DType::float64).to_vector<double>(); }

double vdot(const Array& a, const Array& b) {
  const std::vector<double> x = values(a);
  const std::vector<double> y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) s += x[i] * y[i];
  return s;
}

// The cotangent of a float32 product accumulated in float64 goes back to float32.
TEST_F(StructuralGrad, DotGeneralPreferredElementType) {
  Params params{{"lhs_contracting_dimensions", Ints{1}},
                {"rhs_contracting_dimensions", Ints{0}},
                {"lhs_batch_dimensions", Ints{}},
                {"rhs_batch_dimensions", Ints{}}};
  params.set("preferred_element_type", DType::float64);
  const Array lhs = random({3, 4}, DType::float32);
  const Array rhs = random({4, 2}, DType::float32);
  const Array ct = random({3, 2});
  const bool linear[] = {true, false};
  const std::vector<Array> back = core::rules(Prim::dot_general)
                                      .transpose({&ct, 1}, std::vector<Array>{lhs, rhs},
                                                 std::span<const bool>(linear, 2), params);
  ASSERT_TRUE(back[0].valid());
  EXPECT_EQ(back[0].dtype(), DType::float32);
  const Array y = core::bind1(Prim::dot_general, {lhs, rhs}, params);
  EXPECT_NEAR(vdot(ct, y), vdot(back[0], lhs), 1e-4 * std::max(1.0, std::abs(vdot(ct, y))));
}

// Tied maxima share the tangent equally (finite differences have no derivative there).
TEST_F(StructuralGrad, ReduceMaxTiesAverage) {
  const Array x = numpy::array({1.0, 3.0, 3.0, -1.0});
  const Array t = numpy::array({10.0, 2.0, 4.0, 7.0});
  const Params params{{"axes", Ints{0}}};
  const std::vector<Array> outs = core::bind(Prim::reduce_max, {x}, params);
  const std::vector<Array> got =
      core::rules(Prim::reduce_max).jvp(std::vector<Array>{x}, {&t, 1}, outs, params);
  EXPECT_DOUBLE_EQ(got[0].item<double>(), 3.0);
}

// Integer and boolean results have symbolic-zero tangents (argmax, argmin and iota: the
// sweep's zero_tangent rows).
TEST_F(StructuralGrad, ZeroTangentPrimitives) {
  const Params axes{{"axes", Ints{1}}};
  const Array b = lax::gt(random({3, 4}), 0.0);
  for (Prim p : {Prim::reduce_and, Prim::reduce_or}) {
    const std::vector<Array> outs = core::bind(p, {b}, axes);
    const Array none;
    EXPECT_FALSE(core::rules(p).jvp(std::vector<Array>{b}, {&none, 1}, outs, axes)[0].valid());
  }
  EXPECT_NE(core::rules(Prim::random_bits).jvp, nullptr);
}

}  // namespace
}  // namespace parax
