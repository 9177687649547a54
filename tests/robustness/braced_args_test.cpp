// Shapes, axis lists and specs take the spellings a C++ user types: a braced list (`{4}`,
// `{2, 3}`, `{}` for shape ()), and std::nullopt or parax::None where JAX's default is None.
// Compiling this file is half the test; the shapes checked at run time show each spelling
// reached the overload and meaning intended.
#include <gtest/gtest.h>

#include <map>
#include <optional>
#include <string>
#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace np = numpy;
namespace rnd = random;

TEST(BracedArgs, RandomSamplersTakeABracedShapeOrNone) {
  const rnd::Key k = rnd::key(0);
  EXPECT_EQ(rnd::bernoulli(k, 0.5f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::truncated_normal(k, -1.0f, 1.0f, {2, 3}).shape(), (Shape{2, 3}));
  EXPECT_EQ(rnd::gamma(k, 2.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::gamma(k, 2.0f, {2, 3}, DType::float32).shape(), (Shape{2, 3}));
  EXPECT_EQ(rnd::loggamma(k, 2.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::beta(k, 2.0f, 3.0f, {4}).shape(), (Shape{4}));
  const Array alpha = np::ones({3});
  EXPECT_EQ(rnd::dirichlet(k, alpha, {5}).shape(), (Shape{5, 3}));
  EXPECT_EQ(rnd::categorical(k, np::zeros({3}), -1, {8}).shape(), (Shape{8}));
  EXPECT_EQ(rnd::pareto(k, 2.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::t(k, 3.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::chisquare(k, 3.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::f(k, 2.0f, 3.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::triangular(k, 0.0f, 0.5f, 1.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::lognormal(k, 1.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::geometric(k, 0.5f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::multivariate_normal(k, np::zeros({2}), np::eye(2), {5}).shape(), (Shape{5, 2}));
  EXPECT_EQ(rnd::poisson(k, 3.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::binomial(k, 10.0f, 0.5f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::rayleigh(k, 1.0f, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::wald(k, 1.0f, {4}).shape(), (Shape{4}));
  // `{}` is shape (), as in the samplers whose shape is not optional.
  EXPECT_EQ(rnd::gamma(k, 2.0f, {}).shape(), Shape{});
  EXPECT_EQ(rnd::uniform(k, {}).shape(), Shape{});
}

TEST(BracedArgs, NoneAndNulloptMeanJaxsNone) {
  const rnd::Key k = rnd::key(1);
  const Array a = np::ones({3});
  // None: the parameters' shape.
  EXPECT_EQ(rnd::gamma(k, a, std::nullopt).shape(), (Shape{3}));
  EXPECT_EQ(rnd::gamma(k, a, None).shape(), (Shape{3}));
  EXPECT_EQ(rnd::categorical(k, np::zeros({2, 5}), -1, None).shape(), (Shape{2}));
  EXPECT_EQ(rnd::bernoulli(k, a, std::nullopt).shape(), (Shape{3}));
  // The spellings that compiled before still do, with the same meaning.
  const std::optional<Shape> absent;
  const std::optional<Shape> four = Shape{4};
  EXPECT_EQ(rnd::gamma(k, a, absent).shape(), (Shape{3}));
  EXPECT_EQ(rnd::gamma(k, 2.0f, four).shape(), (Shape{4}));
  EXPECT_EQ(rnd::gamma(k, 2.0f, Shape{2, 2}).shape(), (Shape{2, 2}));
  const Shape s{6};
  EXPECT_EQ(rnd::gamma(k, 2.0f, s).shape(), (Shape{6}));
  // Two draws of the same shape, however spelled, are the same draw.
  EXPECT_EQ(rnd::gamma(k, 2.0f, {2, 2}).to_vector<float>(),
            rnd::gamma(k, 2.0f, Shape{2, 2}).to_vector<float>());
}

TEST(BracedArgs, OverloadsPickTheIntendedMeaning) {
  const rnd::Key k = rnd::key(2);
  // split(key, num) and split(key, shape): one braced number is a count, as JAX's split(k, 4).
  EXPECT_EQ(rnd::split(k, {4}).shape(), (Shape{4}));
  EXPECT_EQ(rnd::split(k, {2, 3}).shape(), (Shape{2, 3}));
  // numpy::array: a braced shape, not a sharding.
  EXPECT_EQ(np::array({1.0f, 2.0f, 3.0f, 4.0f}, {2, 2}).shape(), (Shape{2, 2}));
  EXPECT_EQ(np::array(std::vector<int>{1, 2, 3, 4, 5, 6}, {3, 2}).shape(), (Shape{3, 2}));
  EXPECT_EQ(np::array({7.0f}, {}).shape(), Shape{});
  EXPECT_EQ(np::array({1.0f, 2.0f}, std::nullopt, DType::float64).dtype(), DType::float64);
  const NamedSharding rows(make_mesh({2}, {"x"}), P("x"));
  const Array placed = np::array({1.0f, 2.0f, 3.0f, 4.0f}, rows, {2, 2});
  EXPECT_EQ(placed.shape(), (Shape{2, 2}));
  EXPECT_EQ(placed.sharding(), Sharding(rows));
}

TEST(BracedArgs, AxisListsAndSpecsTakeBracesAndNone) {
  const Array x = np::arange(24.0f).reshape({2, 3, 4});
  EXPECT_EQ(np::transpose(x, {2, 0, 1}).shape(), (Shape{4, 2, 3}));
  EXPECT_EQ(np::transpose(x, std::nullopt).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(np::transpose(x, None).shape(), (Shape{4, 3, 2}));
  EXPECT_EQ(np::sum(x, {0, 2}).shape(), (Shape{3}));
  EXPECT_EQ(np::sum(x, std::nullopt).shape(), Shape{});
  EXPECT_EQ(np::sum(x, None).shape(), Shape{});
  EXPECT_EQ(nn::logsumexp(x, {1, 2}).shape(), (Shape{2}));
  // vmap's in_axes: a braced list per argument, None or std::nullopt for a shared one.
  auto add = [](const Array& a, const Array& b) { return a + b; };
  const Array row = np::ones({4});
  EXPECT_EQ(vmap(add, {.in_axes = {0, std::nullopt}})(x[0], row).shape(), (Shape{3, 4}));
  EXPECT_EQ(vmap(add, {.in_axes = {None, 1}})(row, np::ones({4, 5})).shape(), (Shape{5, 4}));
  // conv's dimension_numbers: None, or the three layout strings.
  const Array lhs = np::ones({1, 2, 5, 5});
  const Array rhs = np::ones({3, 2, 3, 3});
  EXPECT_EQ(lax::conv_general_dilated(lhs, rhs, {1, 1}, "VALID", {}, {}, std::nullopt).shape(),
            (Shape{1, 3, 3, 3}));
  EXPECT_EQ(lax::conv_general_dilated(lhs, rhs, {1, 1}, "VALID", {}, {}, None).shape(),
            (Shape{1, 3, 3, 3}));
  EXPECT_EQ(lax::conv_general_dilated(lhs, rhs, {1, 1}, "VALID", {}, {}, {"NCHW", "OIHW", "NCHW"})
                .shape(),
            (Shape{1, 3, 3, 3}));
  // PartitionSpecs and shard_map's specs: braced entries, None for an unsharded dimension.
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array m = device_put(np::ones({8, 4}), NamedSharding(mesh, {"a", None}));
  EXPECT_EQ(m.sharding(), Sharding(NamedSharding(mesh, P("a", None))));
  auto per_device =
      shard_map([](const Array& v) { return v * 2.0f; }, mesh, {P("a", "b")}, P("a", "b"));
  EXPECT_EQ(per_device(m).shape(), (Shape{8, 4}));
}

TEST(BracedArgs, MultihostGlobalShapeTakesABracedShapeOrNone) {
  const NamedSharding rows(make_mesh({8}, {"x"}), P("x"));
  const Array local = np::arange(8.0f);
  EXPECT_EQ(make_array_from_process_local_data(rows, local, {8}).shape(), (Shape{8}));
  EXPECT_EQ(make_array_from_process_local_data(rows, local, std::nullopt).shape(), (Shape{8}));
  EXPECT_EQ(make_array_from_process_local_data(rows, local, None).shape(), (Shape{8}));
}

}  // namespace
}  // namespace parax
