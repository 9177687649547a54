// Autodiff rules of the structural, contraction and reduction primitives, called directly:
// each jvp against central finite differences (float64), each transpose by the dot-product
// test <ct, L(t)> == <L^T(ct), t> for random t and ct. The jvp rows are also this family's
// rows of vjp_jvp_test.cpp.
#include <gtest/gtest.h>

#include <cmath>
#include <random>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/lax.h"
#include "parax/numpy.h"
#include "parax/sharding.h"
#include "prims/grad_cases.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;

// float64 rows: jax_enable_x64 on for each test.
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

Array index(int64_t v) { return numpy::array(int32_t(v)); }

std::vector<double> values(const Array& x) { return x.astype(DType::float64).to_vector<double>(); }

double vdot(const Array& a, const Array& b) {
  const std::vector<double> x = values(a);
  const std::vector<double> y = values(b);
  EXPECT_EQ(x.size(), y.size());
  double s = 0;
  for (size_t i = 0; i < x.size() && i < y.size(); ++i) s += x[i] * y[i];
  return s;
}

// Returns x + a * t, computed on the host.
Array axpy(const Array& x, double a, const Array& t) {
  std::vector<double> v = values(x);
  const std::vector<double> w = values(t);
  for (size_t i = 0; i < v.size(); ++i) v[i] += a * w[i];
  return numpy::array(v, x.shape(), x.dtype());
}

struct Case {
  std::string name;
  Prim prim;
  std::vector<Array> operands;
  Params params;
  std::vector<bool> diff;  // operands that get tangents (jvp) / are linear (transpose)
  bool transpose = true;
  size_t first_linear_out = 0;  // earlier results do not depend on the linear operands
};

void check_jvp(const Case& c) {
  SCOPED_TRACE(c.name);
  const std::vector<Array> outs = core::bind(c.prim, c.operands, c.params);
  std::vector<Array> t(c.operands.size());
  for (size_t i = 0; i < t.size(); ++i) {
    if (c.diff[i]) t[i] = random(c.operands[i].shape());
  }
  ASSERT_NE(core::rules(c.prim).jvp, nullptr);
  const std::vector<Array> got = core::rules(c.prim).jvp(c.operands, t, outs, c.params);
  ASSERT_EQ(got.size(), outs.size());
  constexpr double kEps = 1e-6;
  std::vector<Array> plus(c.operands), minus(c.operands);
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].valid()) continue;
    plus[i] = axpy(c.operands[i], kEps, t[i]);
    minus[i] = axpy(c.operands[i], -kEps, t[i]);
  }
  const std::vector<Array> hi = core::bind(c.prim, plus, c.params);
  const std::vector<Array> lo = core::bind(c.prim, minus, c.params);
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!is_floating(outs[o].dtype())) {
      EXPECT_FALSE(got[o].valid()) << "result " << o;
      continue;
    }
    const std::vector<double> h = values(hi[o]);
    const std::vector<double> l = values(lo[o]);
    std::vector<double> g(h.size(), 0.0);
    if (got[o].valid()) {
      EXPECT_EQ(got[o].shape(), outs[o].shape());
      EXPECT_EQ(got[o].dtype(), outs[o].dtype());
      g = values(got[o]);
    }
    double scale = 1;
    for (size_t k = 0; k < h.size(); ++k) scale = std::max(scale, std::abs(h[k] - l[k]) / kEps);
    for (size_t k = 0; k < h.size(); ++k) {
      EXPECT_NEAR(g[k], (h[k] - l[k]) / (2 * kEps), 1e-6 * scale) << "result " << o << "[" << k
                                                                   << "]";
    }
  }
}

// blank: pass the linear operands as symbolic (invalid) placeholders instead of typed ones.
void check_transpose(const Case& c, bool blank = false) {
  SCOPED_TRACE(c.name + (blank ? " (no placeholders)" : ""));
  std::vector<Array> t(c.operands.size());
  std::vector<Array> in(c.operands);
  std::vector<Array> placeholders(c.operands);
  std::unique_ptr<bool[]> linear(new bool[c.operands.size()]);
  // concatenate, pad and dynamic_update_slice are linear in all their float operands
  // together: the fixed ones must be zero for t -> L(t) to be linear, not affine.
  const bool additive = c.prim == Prim::concatenate || c.prim == Prim::pad ||
                        c.prim == Prim::dynamic_update_slice;
  for (size_t i = 0; i < t.size(); ++i) {
    linear[i] = c.diff[i];
    if (!c.diff[i] && additive && is_floating(c.operands[i].dtype())) {
      in[i] = numpy::zeros(c.operands[i].shape(), c.operands[i].dtype());
    }
    if (!c.diff[i]) continue;
    t[i] = random(c.operands[i].shape(), c.operands[i].dtype());
    in[i] = t[i];
    if (blank) placeholders[i] = Array();
  }
  const std::vector<Array> y = core::bind(c.prim, in, c.params);
  std::vector<Array> ct(y.size());
  double lhs = 0;
  for (size_t o = c.first_linear_out; o < y.size(); ++o) {
    ct[o] = random(y[o].shape(), y[o].dtype());
    lhs += vdot(ct[o], y[o]);
  }
  ASSERT_NE(core::rules(c.prim).transpose, nullptr);
  const std::vector<Array> back = core::rules(c.prim).transpose(
      ct, placeholders, std::span<const bool>(linear.get(), t.size()), c.params);
  ASSERT_EQ(back.size(), c.operands.size());
  double rhs = 0;
  for (size_t i = 0; i < t.size(); ++i) {
    if (!c.diff[i]) {
      EXPECT_FALSE(back[i].valid()) << "operand " << i;
      continue;
    }
    ASSERT_TRUE(back[i].valid()) << "operand " << i;
    EXPECT_EQ(back[i].shape(), t[i].shape()) << "operand " << i;
    EXPECT_EQ(back[i].dtype(), t[i].dtype()) << "operand " << i;
    rhs += vdot(back[i], t[i]);
  }
  EXPECT_NEAR(lhs, rhs, 1e-9 * std::max(1.0, std::abs(lhs)));
}

Params slice_params(Ints start, Ints limit, Ints strides = {}) {
  return {{"start_indices", start}, {"limit_indices", limit}, {"strides", strides}};
}

Params pad_params(Ints config) { return {{"padding_config", config}}; }

Params dot_params(Ints lc, Ints rc, Ints lb = {}, Ints rb = {}) {
  return {{"lhs_contracting_dimensions", lc},
          {"rhs_contracting_dimensions", rc},
          {"lhs_batch_dimensions", lb},
          {"rhs_batch_dimensions", rb}};
}

Params sort_params(int64_t dimension, int64_t num_keys) {
  return {{"dimension", dimension}, {"is_stable", true}, {"num_keys", num_keys}};
}

// A layout for with_sharding_constraint that one device can hold: P('a', None) on a
// one-device mesh.
std::shared_ptr<const Sharding> one_device_sharding() {
  return std::make_shared<const NamedSharding>(make_mesh({1}, {"a"}), P("a", None));
}

// The linear structural primitives: the jvp is the primitive on the tangent.
std::vector<Case> linear_cases() {
  const Array s = random({});
  return {
      {"broadcast new dims", Prim::broadcast_in_dim, {random({3})},
       {{"shape", Shape{2, 3, 4}}, {"broadcast_dimensions", Ints{1}}}, {true}},
      {"broadcast size-1 dim", Prim::broadcast_in_dim, {random({1, 3})},
       {{"shape", Shape{2, 5, 3}}, {"broadcast_dimensions", Ints{1, 2}}}, {true}},
      {"broadcast scalar", Prim::broadcast_in_dim, {s},
       {{"shape", Shape{2, 3}}, {"broadcast_dimensions", Ints{}}}, {true}},
      {"reshape merge", Prim::reshape, {random({2, 3, 4})}, {{"new_sizes", Shape{6, 4}}}, {true}},
      {"reshape split", Prim::reshape, {random({4, 3})}, {{"new_sizes", Shape{2, 2, 3}}}, {true}},
      {"transpose", Prim::transpose, {random({2, 3, 4})}, {{"permutation", Ints{2, 0, 1}}},
       {true}},
      {"squeeze", Prim::squeeze, {random({2, 1, 3, 1})}, {{"dimensions", Ints{1, 3}}}, {true}},
      {"expand_dims", Prim::expand_dims, {random({2, 3})}, {{"dimensions", Ints{0, 2}}}, {true}},
      {"slice", Prim::slice, {random({5, 7})}, slice_params({1, 2}, {4, 7}), {true}},
      {"slice strided", Prim::slice, {random({5, 7})}, slice_params({0, 1}, {5, 7}, {2, 3}),
       {true}},
      {"slice stride short of limit", Prim::slice, {random({6})}, slice_params({1}, {6}, {2}),
       {true}},
      {"slice empty", Prim::slice, {random({4, 3})}, slice_params({2, 0}, {2, 3}), {true}},
      {"pad", Prim::pad, {random({3, 4}), random({})}, pad_params({1, 2, 0, 0, 1, 1}),
       {true, true}},
      {"pad negative interior", Prim::pad, {random({3, 4}), random({})},
       pad_params({-1, 2, 1, 2, -3, 2}), {true, true}},
      {"pad operand only", Prim::pad, {random({4}), random({})}, pad_params({0, 0, 2}),
       {true, false}},
      {"pad value only", Prim::pad, {random({4}), random({})}, pad_params({1, -1, 1}),
       {false, true}},
      {"rev", Prim::rev, {random({3, 4})}, {{"dimensions", Ints{0}}}, {true}},
      {"rev both", Prim::rev, {random({3, 4})}, {{"dimensions", Ints{0, 1}}}, {true}},
      {"concatenate", Prim::concatenate, {random({2, 3}), random({4, 3}), random({1, 3})},
       {{"dimension", int64_t{0}}}, {true, true, true}},
      {"concatenate some linear", Prim::concatenate, {random({2, 1}), random({2, 3}),
       random({2, 2})}, {{"dimension", int64_t{1}}}, {true, false, true}},
      {"dynamic_slice", Prim::dynamic_slice, {random({5, 6}), index(1), index(2)},
       {{"slice_sizes", Ints{3, 2}}}, {true, false, false}},
      {"dynamic_slice clamped", Prim::dynamic_slice, {random({5, 6}), index(4), index(-3)},
       {{"slice_sizes", Ints{3, 4}}}, {true, false, false}},
      {"dynamic_update_slice", Prim::dynamic_update_slice,
       {random({5, 6}), random({2, 3}), index(1), index(4)}, {}, {true, true, false, false}},
      {"dynamic_update_slice update only", Prim::dynamic_update_slice,
       {random({5, 6}), random({2, 3}), index(9), index(0)}, {}, {false, true, false, false}},
      {"dynamic_update_slice operand only", Prim::dynamic_update_slice,
       {random({5, 6}), random({2, 3}), index(2), index(2)}, {}, {true, false, false, false}},
      {"reduce_sum", Prim::reduce_sum, {random({3, 4, 5})}, {{"axes", Ints{0, 2}}}, {true}},
      {"reduce_sum all", Prim::reduce_sum, {random({3, 4})}, {{"axes", Ints{0, 1}}}, {true}},
      {"cumsum", Prim::cumsum, {random({4, 5})}, {{"axis", int64_t{1}}, {"reverse", false}},
       {true}},
      {"cumsum reverse", Prim::cumsum, {random({4, 5})},
       {{"axis", int64_t{0}}, {"reverse", true}}, {true}},
      {"sharding_constraint", Prim::sharding_constraint, {random({2, 3})},
       {{"sharding", one_device_sharding()}}, {true}},
      {"device_put", Prim::device_put, {random({2, 3})}, {{"sharding", one_device_sharding()}},
       {true}},
      // The tangent's form: the primal rides along so that the transpose knows its layout.
      {"device_put with source", Prim::device_put, {random({2, 3}), random({2, 3})},
       {{"sharding", one_device_sharding()}}, {true, false}},
  };
}

// dot_general: every layout, with the lhs and the rhs each taken as the linear operand.
std::vector<Case> dot_cases() {
  struct Layout {
    std::string name;
    Shape lhs, rhs;
    Params params;
  };
  const std::vector<Layout> layouts = {
      {"matmul", {3, 4}, {4, 5}, dot_params({1}, {0})},
      {"transposed contraction", {4, 3}, {5, 4}, dot_params({0}, {1})},
      {"batch", {2, 3, 4}, {2, 4, 5}, dot_params({2}, {1}, {0}, {0})},
      {"batch in the middle", {3, 2, 4}, {4, 2, 5}, dot_params({2}, {0}, {1}, {1})},
      {"two contractions crossed", {2, 3, 4}, {4, 5, 3}, dot_params({1, 2}, {2, 0})},
      {"vector dot", {4}, {4}, dot_params({0}, {0})},
      {"outer product", {3}, {2}, dot_params({}, {})},
      {"batch and crossed", {2, 4, 3, 5}, {3, 2, 4}, dot_params({1, 2}, {2, 0}, {0}, {1})},
  };
  std::vector<Case> cases;
  for (const Layout& l : layouts) {
    const Array lhs = random(l.lhs);
    const Array rhs = random(l.rhs);
    cases.push_back({l.name + " (both)", Prim::dot_general, {lhs, rhs}, l.params,
                     {true, true}, false});
    cases.push_back({l.name + " (lhs)", Prim::dot_general, {lhs, rhs}, l.params,
                     {true, false}});
    cases.push_back({l.name + " (rhs)", Prim::dot_general, {lhs, rhs}, l.params,
                     {false, true}});
  }
  return cases;
}

TEST_F(StructuralGrad, LinearJvpMatchesFiniteDifferences) {
  for (const Case& c : linear_cases()) check_jvp(c);
}

TEST_F(StructuralGrad, LinearTransposePassesDotProductTest) {
  for (const Case& c : linear_cases()) check_transpose(c);
}

// These transposes recover what they need from the cotangent and the params alone.
TEST_F(StructuralGrad, TransposeWithoutPlaceholders) {
  for (const Case& c : linear_cases()) {
    if (c.prim == Prim::transpose || c.prim == Prim::squeeze || c.prim == Prim::rev ||
        c.prim == Prim::expand_dims || c.prim == Prim::pad || c.prim == Prim::cumsum ||
        c.prim == Prim::sharding_constraint || c.prim == Prim::device_put) {
      check_transpose(c, true);
    }
  }
  for (const Case& c : dot_cases()) {
    if (c.transpose) check_transpose(c, true);
  }
}

TEST_F(StructuralGrad, DotGeneral) {
  for (const Case& c : dot_cases()) {
    check_jvp(c);
    if (c.transpose) check_transpose(c);
  }
}

// The cotangent of a float32 product accumulated in float64 goes back to float32.
TEST_F(StructuralGrad, DotGeneralPreferredElementType) {
  Params params = dot_params({1}, {0});
  params.set("preferred_element_type", DType::float64);
  const Array lhs = random({3, 4}, DType::float32);
  const Array rhs = random({4, 2}, DType::float32);
  const Array ct = random({3, 2});
  const bool linear[] = {true, false};
  const std::vector<Array> back = core::rules(Prim::dot_general).transpose(
      {&ct, 1}, std::vector<Array>{lhs, rhs}, std::span<const bool>(linear, 2), params);
  ASSERT_TRUE(back[0].valid());
  EXPECT_EQ(back[0].dtype(), DType::float32);
  const Array y = core::bind1(Prim::dot_general, {lhs, rhs}, params);
  EXPECT_NEAR(vdot(ct, y), vdot(back[0], lhs), 1e-4 * std::max(1.0, std::abs(vdot(ct, y))));
}

std::vector<Case> nonlinear_reduction_cases() {
  const Params arg_params{{"axes", Ints{1}}, {"index_dtype", DType::int32}};
  return {
      {"reduce_max", Prim::reduce_max, {random({3, 4})}, {{"axes", Ints{1}}}, {true}, false},
      {"reduce_max all", Prim::reduce_max, {random({2, 3, 2})}, {{"axes", Ints{0, 2}}}, {true},
       false},
      {"reduce_min", Prim::reduce_min, {random({4, 3})}, {{"axes", Ints{0}}}, {true}, false},
      {"reduce_prod odd", Prim::reduce_prod, {random({3, 5})}, {{"axes", Ints{1}}}, {true},
       false},
      {"reduce_prod two axes", Prim::reduce_prod, {random({2, 3, 4})}, {{"axes", Ints{2, 0}}},
       {true}, false},
      {"reduce_prod one zero", Prim::reduce_prod, {numpy::array({1.5, 0.0, -2.0, 0.5})},
       {{"axes", Ints{0}}}, {true}, false},
      {"reduce_prod two zeros", Prim::reduce_prod, {numpy::array({0.0, 3.0, 0.0})},
       {{"axes", Ints{0}}}, {true}, false},
      {"reduce_prod no axes", Prim::reduce_prod, {random({3})}, {{"axes", Ints{}}}, {true},
       false},
      // Integer results: symbolic-zero tangents.
      {"argmax", Prim::argmax, {random({3, 4})}, arg_params, {true}, false},
      {"argmin", Prim::argmin, {random({3, 4})}, arg_params, {true}, false},
  };
}

TEST_F(StructuralGrad, NonlinearReductions) {
  for (const Case& c : nonlinear_reduction_cases()) check_jvp(c);
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

std::vector<Case> sort_cases() {
  return {
      {"sort one operand", Prim::sort, {random({6})}, sort_params(0, 1), {true}, false},
      {"sort keys and values", Prim::sort, {random({3, 5}), random({3, 5})}, sort_params(1, 1),
       {true, true}, false},
      {"sort values only", Prim::sort, {random({4, 3}), random({4, 3})}, sort_params(0, 1),
       {false, true}, false},
  };
}

TEST_F(StructuralGrad, Sort) {
  for (const Case& c : sort_cases()) check_jvp(c);
  // The jvp's sort is linear in its extra (tangent) operands; keys stay known.
  check_transpose({"sort transpose", Prim::sort, {random({3, 5}), random({3, 5})},
                   sort_params(1, 1), {false, true}, true, 1});
  check_transpose({"sort transpose two keys", Prim::sort,
                   {numpy::array({1.0, 0.0, 1.0, 0.0, 2.0}), random({5}), random({5}),
                    random({5})},
                   sort_params(0, 2), {false, false, true, true}, true, 2});
}

// Integer and boolean results have symbolic-zero tangents (argmax and argmin: in
// NonlinearReductions).
TEST_F(StructuralGrad, ZeroTangentPrimitives) {
  const Params axes{{"axes", Ints{1}}};
  const Array b = lax::gt(random({3, 4}), 0.0);
  for (Prim p : {Prim::reduce_and, Prim::reduce_or}) {
    const std::vector<Array> outs = core::bind(p, {b}, axes);
    const Array none;
    EXPECT_FALSE(core::rules(p).jvp(std::vector<Array>{b}, {&none, 1}, outs, axes)[0].valid());
  }
  const Params iota{{"dtype", DType::float64}, {"shape", Shape{4}}, {"dimension", int64_t{0}}};
  const std::vector<Array> outs = core::bind(Prim::iota, {}, iota);
  EXPECT_FALSE(core::rules(Prim::iota).jvp({}, {}, outs, iota)[0].valid());
  EXPECT_NE(core::rules(Prim::random_bits).jvp, nullptr);
}

}  // namespace

namespace sweep {

std::vector<GradCase> structural_grad_cases() {
  std::vector<GradCase> cases;
  for (const auto& list :
       {linear_cases(), dot_cases(), nonlinear_reduction_cases(), sort_cases()}) {
    for (const Case& c : list) cases.push_back({c.name, c.prim, c.operands, c.params, c.diff});
  }
  return cases;
}

}  // namespace sweep
}  // namespace parax
