// visualize_array_sharding on real arrays, against jax-arrays.md §2.4-2.5 (JAX's output
// with colour off). The layout depends only on shard fractions, so 16x16 arrays draw as
// the reference's 8192x8192 ones do.
#include <gtest/gtest.h>

#include <sstream>

#include "api/debug_internal.h"
#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

std::string draw(const Array& x) {
  std::ostringstream os;
  debug::visualize_array_sharding(x, os);
  return os.str();
}

Array put2d(P spec) {
  return device_put(jnp::zeros({16, 16}), NamedSharding(make_mesh({4, 2}, {"a", "b"}), spec));
}

TEST(Visualize, MeshSpecsAsJaxDrawsThem) {
  EXPECT_EQ(draw(put2d(P("a", "b"))),
            "┌──────────┬──────────┐\n"
            "│  CPU 0   │  CPU 1   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 2   │  CPU 3   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 4   │  CPU 5   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 6   │  CPU 7   │\n"
            "└──────────┴──────────┘\n");
  // The remaining specs' texts are checked against JAX in visualize_test's goldens; here
  // check that arrays reach the renderer with the right shard indices.
  EXPECT_NE(draw(put2d(P("b", "a"))), draw(put2d(P("a", "b"))));
}

TEST(Visualize, SingleDeviceAndOneDimensional) {
  EXPECT_EQ(draw(jnp::zeros({16, 16})),
            "┌───────────────────────┐\n"
            "│                       │\n"
            "│                       │\n"
            "│                       │\n"
            "│                       │\n"
            "│         CPU 0         │\n"
            "│                       │\n"
            "│                       │\n"
            "│                       │\n"
            "│                       │\n"
            "└───────────────────────┘\n");
  auto x = device_put(jnp::arange(24), NamedSharding(make_mesh({8}, {"x"}), P("x")));
  EXPECT_EQ(draw(x),
            "┌───────┬───────┬───────┬───────┬───────┬───────┬───────┬───────┐\n"
            "│ CPU 0 │ CPU 1 │ CPU 2 │ CPU 3 │ CPU 4 │ CPU 5 │ CPU 6 │ CPU 7 │\n"
            "└───────┴───────┴───────┴───────┴───────┴───────┴───────┴───────┘\n");
  auto y = device_put(jnp::arange(24), NamedSharding(make_mesh({4, 2}, {"a", "b"}), P("a")));
  EXPECT_EQ(draw(y),
            "┌───────┬───────┬───────┬───────┐\n"
            "│CPU 0,1│CPU 2,3│CPU 4,5│CPU 6,7│\n"
            "└───────┴───────┴───────┴───────┘\n");
}

TEST(Visualize, PositionalLayoutsDrawLikeTheirNamedEquivalents) {
  auto pos = PositionalSharding(devices()).reshape(4, 2);
  auto zeros = jnp::zeros({16, 16});
  EXPECT_EQ(draw(device_put(zeros, pos.replicate(0, true))), draw(put2d(P(None, "b"))));
  EXPECT_EQ(draw(device_put(zeros, pos.replicate(1, true))), draw(put2d(P("a", None))));
  EXPECT_EQ(draw(device_put(zeros, pos.T())), draw(put2d(P("b", "a"))));
}

TEST(Visualize, NumbersHighlightedAsRichDoes) {
  // jax-arrays.md §2.2: each id separately; commas, spaces, labels and boxes unstyled.
  EXPECT_EQ(debug::highlight_numbers("│ CPU 0,2 │ TPU_3 │"),
            "│ CPU \x1b[1;36m0\x1b[0m,\x1b[1;36m2\x1b[0m │ TPU_3 │");
}

// JAX raises for rank 0 and rank > 2; parax draws them.
TEST(Visualize, ScalarsAndHigherRanks) {
  EXPECT_EQ(draw(jnp::array(1.0f)),
            "┌───────────────────────┐\n"
            "│         CPU 0         │\n"
            "└───────────────────────┘\n");
  const Mesh mesh = make_mesh({2, 2, 2}, {"a", "b", "c"});
  const Array x = device_put(jnp::zeros({4, 16, 16}), NamedSharding(mesh, P("a", "b", "c")));
  const std::string text = draw(x);
  EXPECT_EQ(text.substr(0, text.find('\n') + 1), "[0:2, rows, cols]\n");
  EXPECT_NE(text.find("[2:4, rows, cols]\n"), std::string::npos);
  EXPECT_NE(text.find("CPU 0"), std::string::npos);
  EXPECT_NE(text.find("CPU 7"), std::string::npos);
  // dims pick the dimensions to draw
  std::ostringstream os;
  debug::visualize_array_sharding(x, os, {.dims = {0, 1}});
  EXPECT_EQ(os.str().substr(0, os.str().find('\n') + 1), "[rows, cols, 0:8]\n");
  EXPECT_THROW(debug::visualize_array_sharding(x, os, {.dims = {5}}), ValueError);
}

}  // namespace
}  // namespace parax
