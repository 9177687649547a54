#include <gtest/gtest.h>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

struct Mlp {
  std::vector<std::pair<Array, Array>> layers;
  Array scale;
};
PARAX_REGISTER_PYTREE(Mlp, layers, scale)

TEST(Tree, LeavesAndStructure) {
  std::vector<std::pair<Array, Array>> params = {{jnp::ones({2}), jnp::zeros({2})},
                                                 {jnp::ones({3}), jnp::zeros({3})}};
  EXPECT_EQ(tree::leaves(params).size(), 4u);
  EXPECT_EQ(tree::structure(params).to_string(), "PyTreeDef([(*, *), (*, *)])");
  std::map<std::string, Array> d = {{"b", jnp::ones({1})}, {"a", jnp::zeros({1})}};
  EXPECT_EQ(tree::structure(d).to_string(), "PyTreeDef({'a': *, 'b': *})");
  EXPECT_EQ(tree::leaves(d)[0].item<float>(), 0.f);  // sorted keys
  Mlp m{params, jnp::ones({})};
  EXPECT_EQ(tree::structure(m).to_string(), "PyTreeDef(CustomNode(Mlp[], [[(*, *), (*, *)], *]))");
  EXPECT_EQ(tree::structure(std::tuple<Array>{jnp::ones({})}).to_string(), "PyTreeDef((*,))");
  EXPECT_EQ(tree::structure(jnp::ones({})).to_string(), "PyTreeDef(*)");
}

TEST(Tree, FlattenUnflattenRoundTrip) {
  Mlp m{{{jnp::arange(2), jnp::arange(3)}, {jnp::arange(4), jnp::arange(5)}}, jnp::arange(6)};
  auto [leaves, def] = tree::flatten(m);
  ASSERT_EQ(leaves.size(), 5u);
  Mlp back = tree::unflatten<Mlp>(def, leaves);
  ASSERT_EQ(back.layers.size(), 2u);
  EXPECT_EQ(back.layers[1].second.size(), 5);
  EXPECT_EQ(back.scale.size(), 6);
  leaves.pop_back();
  EXPECT_THROW(tree::unflatten<Mlp>(def, leaves), ValueError);
  auto [l2, d2] = tree::flatten(std::vector<Array>{jnp::ones({1})});
  EXPECT_THROW((tree::unflatten<std::pair<Array, Array>>(d2, {jnp::ones({1}), jnp::ones({1})})),
               ValueError);
}

TEST(Tree, MapOverOneAndTwoTrees) {
  std::vector<Array> xs = {jnp::arange(3), jnp::arange(4)};
  auto sizes = tree::map([](const Array& a) { return jnp::full({1}, int(a.size())); }, xs);
  EXPECT_EQ(sizes[1].item<int>(), 4);
  auto pairs = tree::map([](const Array& a, const Array& b) { return a.size() > b.size() ? a : b; },
                         xs, std::vector<Array>{jnp::arange(5), jnp::arange(1)});
  EXPECT_EQ(pairs[0].size(), 5);
  EXPECT_EQ(pairs[1].size(), 4);
  EXPECT_THROW(tree::map([](const Array& a, const Array&) { return a; }, xs,
                         std::vector<Array>{jnp::arange(1)}),
               ValueError);
}

}  // namespace
}  // namespace parax
