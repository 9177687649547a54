// numpy::array with a sharding places the new array there, committed.
#include <gtest/gtest.h>

#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(ShardingApiNumpyArray, PlacesTheNewArrayCommitted) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const NamedSharding s(mesh, P("a"));
  Array x = jnp::array({1.0f, 2.0f, 3.0f, 4.0f}, s);
  EXPECT_EQ(x.sharding(), Sharding(s));
  EXPECT_TRUE(x.is_committed());
  EXPECT_EQ(x.to_vector<float>(), (std::vector<float>{1, 2, 3, 4}));
  Array m = jnp::array({{1, 2}, {3, 4}, {5, 6}, {7, 8}}, NamedSharding(mesh, P("a", "b")));
  EXPECT_EQ(m.dtype(), DType::int32);
  EXPECT_EQ(m.addressable_shards()[0].data.shape(), (Shape{1, 1}));
  Array v = jnp::array(std::vector<double>(8, 0.5), s, Shape{4, 2}, DType::float32);
  EXPECT_EQ(v.shape(), (Shape{4, 2}));
  EXPECT_EQ(v.dtype(), DType::float32);
  EXPECT_THROW(jnp::array({1.0f, 2.0f, 3.0f}, s), ValueError);  // 3 rows over 4 devices
  {
    auto scope = sharding::use_mesh(mesh);
    EXPECT_EQ(jnp::array({1.0f, 2.0f}, P("b")).sharding(), Sharding(NamedSharding(mesh, P("b"))));
  }
}

}  // namespace
}  // namespace parax
