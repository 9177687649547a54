// Where x[i] lives, as in JAX: element i of a pmap result is device i's shard (uncommitted),
// and indexing a NamedSharding array gives a committed array replicated over its mesh.
#include <gtest/gtest.h>

#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(JaxParityPmapIndex, ElementIIsTheShardOfDeviceI) {
  Array y = pmap([](const Array& a) { return a * 2.0f; })(jnp::arange(16.0f).reshape({8, 2}));
  for (int i = 0; i < 8; ++i) {
    Array yi = y[i];
    ASSERT_EQ(yi.devices().size(), 1u);
    EXPECT_EQ(yi.devices()[0], devices()[size_t(i)]) << i;
    EXPECT_FALSE(yi.is_committed());
    EXPECT_EQ(yi.shape(), (Shape{2}));
    EXPECT_EQ(yi.to_vector<float>(), (std::vector<float>{4.0f * i, 4.0f * i + 2}));
  }
  // A negative index takes the general path (device 0 in JAX too), with the same values.
  EXPECT_EQ(y[-1].to_vector<float>(), (std::vector<float>{28.0f, 30.0f}));
  // Computing on the result drops the pmap layout, as in JAX.
  Array z = y + 1.0f;
  EXPECT_EQ(z[3].to_vector<float>(), (std::vector<float>{13.0f, 15.0f}));
}

TEST(JaxParityPmapIndex, NamedShardingArraysIndexAsJaxDoes) {
  // JAX: x[i] of a P('x') array goes through jit: replicated over the mesh, committed.
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(16.0f).reshape({8, 2}), NamedSharding(mesh, P("x")));
  Array x3 = x[3];
  EXPECT_TRUE(x3.is_committed());
  EXPECT_EQ(x3.devices().size(), 8u);
  EXPECT_TRUE(x3.sharding().is_fully_replicated());
  EXPECT_EQ(x3.to_vector<float>(), (std::vector<float>{6.0f, 7.0f}));
}

}  // namespace
}  // namespace parax
