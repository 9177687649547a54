// Mismatched inputs to jvp, vjp, grad and value_and_grad raise JAX's errors and texts:
// tangents and cotangents of the wrong shape, dtype or tree, integer inputs, outputs that
// are not one scalar, has_aux misuse.
#include <gtest/gtest.h>

#include <cstdint>
#include <tuple>
#include <utility>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace np = numpy;

Array twice(const Array& x) { return x * 2; }

// ---- jvp ----

TEST(TransformChecks, JvpTangentShapeMismatchRaises) {
  EXPECT_THROW_MSG(jvp(twice, std::make_tuple(np::ones({2})), std::make_tuple(np::ones({3}))),
                   ValueError,
                   "jvp called with different primal and tangent shapes;Got primal shape (2,) "
                   "and tangent shape as (3,)");
}

TEST(TransformChecks, JvpTangentDtypeMismatchRaises) {
  EXPECT_THROW_MSG(
      jvp(twice, std::make_tuple(np::ones({2})), std::make_tuple(np::ones({2}, int32))), TypeError,
      "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case "
      "of int/bool primal dtype the tangent dtype must be float0.Got primal dtype float32 and "
      "so expected tangent dtype float32, but got tangent dtype int32 instead.");
  EXPECT_THROW(jvp(twice, std::make_tuple(np::ones({2})), std::make_tuple(np::ones({2}, float64))),
               TypeError);
}

TEST(TransformChecks, JvpOfIntegerPrimalTakesItsOwnDtypeAsZeroTangent) {
  // parax has no float0: an integer primal's tangent has its dtype and counts as zero.
  const Array x = np::array({1, 2});
  auto [y, t] = jvp(twice, std::make_tuple(x), std::make_tuple(np::array({5, 7})));
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{2, 4}));
  EXPECT_EQ(t.to_vector<int32_t>(), (std::vector<int32_t>{0, 0}));
  EXPECT_THROW_MSG(
      jvp(twice, std::make_tuple(x), std::make_tuple(np::ones({2}))), TypeError,
      "primal and tangent arguments to jax.jvp do not match; dtypes must be equal, or in case "
      "of int/bool primal dtype the tangent dtype must be float0.Got primal dtype int32 and so "
      "expected tangent dtype int32 (parax's stand-in for float0), but got tangent dtype "
      "float32 instead.");
  // A float output of an integer input: zero tangent, as JAX's float0 gives.
  auto [z, dz] =
      jvp([](const Array& i, const Array& f) { return np::astype(i, float32) * f; },
          std::make_tuple(x, np::ones({2})), std::make_tuple(np::array({9, 9}), np::ones({2})));
  EXPECT_EQ(dz.to_vector<float>(), (std::vector<float>{1, 2}));
}

TEST(TransformChecks, JvpTreeStructureMismatchRaises) {
  auto f = [](const std::vector<Array>& xs) { return xs[0]; };
  const std::vector<Array> two = {np::ones({2}), np::ones({2})};
  const std::vector<Array> one = {np::ones({2})};
  EXPECT_THROW_MSG(jvp(f, std::make_tuple(two), std::make_tuple(one)), TypeError,
                   "primal and tangent arguments to jax.jvp must have the same tree structure; "
                   "primals have tree structure PyTreeDef(([*, *],)) whereas tangents have tree "
                   "structure PyTreeDef(([*],)).");
}

// ---- grad ----

TEST(TransformChecks, GradOfIntegerInputRaises) {
  auto f = [](const Array& x) { return np::sum(np::astype(x, float32)); };
  EXPECT_THROW_MSG(grad(f)(np::array({1, 2})), TypeError,
                   "grad requires real- or complex-valued inputs (input dtype that is a "
                   "sub-dtype of np.inexact), but got int32. If you want to use Boolean- or "
                   "integer-valued inputs, use vjp or set allow_int to True.");
  EXPECT_THROW_MSG(value_and_grad(f)(np::array({true})), TypeError,
                   "grad requires real- or complex-valued inputs (input dtype that is a "
                   "sub-dtype of np.inexact), but got bool. If you want to use Boolean- or "
                   "integer-valued inputs, use vjp or set allow_int to True.");
  // An integer argument not differentiated is fine.
  auto g = [](const Array& x, const Array& i) { return np::sum(x * np::astype(i, float32)); };
  EXPECT_EQ(grad(g)(np::ones({2}), np::array({3, 4})).to_vector<float>(),
            (std::vector<float>{3, 4}));
  EXPECT_THROW(grad(g, argnums<0, 1>)(np::ones({2}), np::array({3, 4})), TypeError);
  // vjp still accepts integer inputs (JAX's advice).
  auto [y, pull] = vjp(g, np::ones({2}), np::array({3, 4}));
  EXPECT_EQ(std::get<0>(pull(np::array(1.0f))).to_vector<float>(), (std::vector<float>{3, 4}));
}

TEST(TransformChecks, GradOfNonScalarTreeOutputRaises) {
  auto pair = [](const Array& x) { return std::vector<Array>{np::sum(x), np::sum(x)}; };
  EXPECT_THROW_MSG(grad(pair)(np::ones({2})), TypeError,
                   "Gradient only defined for scalar-output functions. Output was "
                   "PyTreeDef([*, *]).");
  auto none = [](const Array&) { return std::vector<Array>{}; };
  EXPECT_THROW_MSG(grad(none)(np::ones({2})), TypeError,
                   "Gradient only defined for scalar-output functions. Output was [].");
}

TEST(TransformChecks, HasAuxMisuseRaises) {
  auto three = [](const Array& x) { return std::make_tuple(np::sum(x), np::sum(x), np::sum(x)); };
  EXPECT_THROW_MSG(value_and_grad(three, argnums<0>, has_aux)(np::ones({2})), TypeError,
                   "expected function with aux output to return a two-element tuple, but got "
                   "PyTreeDef((*, *, *))");
  auto vec_value = [](const Array& x) {
    return std::make_pair(std::vector<Array>{np::sum(x), np::sum(x)}, x);
  };
  EXPECT_THROW_MSG(value_and_grad(vec_value, argnums<0>, has_aux)(np::ones({2})), TypeError,
                   "Gradient only defined for scalar-output functions. Output was "
                   "PyTreeDef([*, *]).");
  auto ok = [](const Array& x) { return std::make_pair(np::sum(x * x), x); };
  auto [va, g] = value_and_grad(ok, argnums<0>, has_aux)(np::ones({2}));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2, 2}));
}

// ---- vjp ----

TEST(TransformChecks, VjpCotangentShapeOrDtypeMismatchRaises) {
  auto [y, pull] = vjp(twice, np::ones({2}));
  EXPECT_THROW_MSG(pull(np::ones({3})), ValueError,
                   "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got "
                   "float32[3], but expected float32[2] because the corresponding output of the "
                   "function had JAX type float32[2] (output leaf 0 of 1)");
  EXPECT_THROW_MSG(pull(np::ones({2}, int32)), ValueError,
                   "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got "
                   "int32[2], but expected float32[2] because the corresponding output of the "
                   "function had JAX type float32[2] (output leaf 0 of 1)");
  EXPECT_EQ(std::get<0>(pull(np::ones({2}))).to_vector<float>(), (std::vector<float>{2, 2}));
  // Which leaf of a pytree output is wrong.
  auto two = [](const Array& x) { return std::make_pair(x * 2, np::sum(x)); };
  auto [z, pull2] = vjp(two, np::ones({2}));
  EXPECT_THROW_MSG(pull2(std::make_pair(np::ones({2}), np::ones({1}))), ValueError,
                   "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: got "
                   "float32[1], but expected float32[] because the corresponding output of the "
                   "function had JAX type float32[] (output leaf 1 of 2)");
}

TEST(TransformChecks, VjpCotangentTreeMismatchRaises) {
  auto f = [](const Array& x) { return std::vector<Array>{x, x}; };
  auto [y, pull] = vjp(f, np::ones({2}));
  EXPECT_THROW_MSG(pull(std::vector<Array>{np::ones({2})}), ValueError,
                   "unexpected tree structure of argument to vjp function: got PyTreeDef([*]), "
                   "but expected to match PyTreeDef([*, *])");
}

TEST(TransformChecks, VjpOfIntegerOutputTakesAnyCotangentDtype) {
  // JAX: an integer output's tangent type is float0, and any same-shape cotangent passes.
  auto f = [](const Array& x) { return std::make_pair(x * 2, np::astype(x, int32)); };
  auto [y, pull] = vjp(f, np::ones({2}));
  const Array g = std::get<0>(pull(std::make_pair(np::ones({2}), np::zeros({2}, int32))));
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2, 2}));
  EXPECT_THROW(pull(std::make_pair(np::ones({2}), np::zeros({3}, int32))), ValueError);
}

TEST(SizesGrad, OutputWithNoLeavesRaisesTypeError) {
  auto empty_tuple = [](Array) { return std::tuple<>{}; };
  EXPECT_THROW_HAS(grad(empty_tuple)(np::array(1.0f)), TypeError,
                   "Gradient only defined for scalar-output functions. Output was ().");
  auto empty_vector = [](Array) { return std::vector<Array>{}; };
  EXPECT_THROW_HAS(value_and_grad(empty_vector)(np::array(1.0f)), TypeError,
                   "Gradient only defined for scalar-output functions. Output was [].");
  EXPECT_THROW_HAS(jit(grad(empty_vector))(np::array(1.0f)), TypeError,
                   "Gradient only defined for scalar-output functions");
  // One leaf still differentiates.
  auto one = [](Array x) { return std::vector<Array>{x * x}; };
  EXPECT_FLOAT_EQ(grad(one)(np::array(3.0f)).item<float>(), 6.0f);
}

}  // namespace
}  // namespace parax
