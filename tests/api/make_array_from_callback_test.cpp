// make_array_from_callback builds each shard from the callback's block for the shard's
// index, and rejects a block of the wrong shape.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(ShardingApiCallback, BuildsShardsFromTheirIndices) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const NamedSharding s(mesh, P("a", "b"));
  std::vector<Index> seen;
  Array x = make_array_from_callback(Shape{8, 4}, s, [&](const Index& index) {
    seen.push_back(index);
    std::vector<float> block;
    for (int64_t i = index[0].begin(8); i < index[0].end(8); ++i) {
      for (int64_t j = index[1].begin(4); j < index[1].end(4); ++j) {
        block.push_back(float(i * 4 + j));
      }
    }
    return block;
  });
  EXPECT_EQ(seen.size(), 8u);
  EXPECT_EQ(x.sharding(), Sharding(s));
  EXPECT_TRUE(x.is_committed());
  EXPECT_EQ(x.dtype(), DType::float32);
  EXPECT_EQ(x.to_vector<float>(), jnp::arange(32.0f).to_vector<float>());
  // An Array callback, replicated: every device gets the whole array.
  Array host = jnp::arange(6).reshape({2, 3});
  Array r = make_array_from_callback(Shape{2, 3}, NamedSharding(mesh, P()),
                                     [&](const Index&) { return host; });
  EXPECT_EQ(r.dtype(), DType::int32);
  EXPECT_EQ(r.to_vector<int32_t>(), host.to_vector<int32_t>());
  EXPECT_EQ(r.addressable_shards().size(), 8u);
}

TEST(ShardingApiCallback, WrongBlockShapeRaises) {
  Mesh mesh = make_mesh({8}, {"x"});
  const NamedSharding s(mesh, P("x"));
  EXPECT_THROW_MSG(
      make_array_from_callback(Shape{16}, s, [](const Index&) { return std::vector<float>(3); }),
      ValueError,
      "Expected shard shape (2,) doesn't match the single device array shape (3,). Shape of "
      "Array is float32[16] with sharding NamedSharding(mesh=Mesh('x': 8), "
      "spec=PartitionSpec('x',))");
  EXPECT_THROW(make_array_from_callback(Shape{16}, s,
                                        [](const Index&) {
                                          return jnp::zeros({1, 2});
                                        }),
               ValueError);
  EXPECT_THROW(make_array_from_callback(Shape{12}, NamedSharding(make_mesh({8}, {"x"}), P("x")),
                                        [](const Index&) { return jnp::zeros({2}); }),
               ValueError);
}

}  // namespace
}  // namespace parax
