// shard_map of a function of no arrays (in_specs=()) finds its mesh from the call and
// gives results laid out by out_specs.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(JaxParityShardMap, NoArrayArgumentsFindsTheMesh) {
  Mesh mesh = make_mesh({8}, {"x"});
  const Specs none(std::vector<PartitionSpec>{});  // in_specs=()
  auto f = shard_map([]() { return lax::axis_index("x").reshape({1}); }, mesh, none, P("x"));
  Array y = f();
  EXPECT_EQ(y.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(y.sharding(), Sharding(NamedSharding(mesh, P("x"))));
  auto g = shard_map([]() { return jnp::ones({2}) * lax::axis_index("x").astype(DType::float32); },
                     mesh, none, P("x"));
  EXPECT_EQ(g().to_vector<float>()[15], 7.0f);
}

}  // namespace
}  // namespace parax
