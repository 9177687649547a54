// An array's addressable shards are committed exactly when the array is, so an uncommitted
// shard moves to wherever a computation runs.
#include <gtest/gtest.h>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(JaxParityShards, ShardsAreCommittedAsTheirArrayIs) {
  Array u = jnp::arange(8.0f);
  ASSERT_FALSE(u.is_committed());
  for (const Shard& s : u.addressable_shards()) EXPECT_FALSE(s.data.is_committed());
  Mesh mesh = make_mesh({8}, {"x"});
  Array c = device_put(u, NamedSharding(mesh, P("x")));
  for (const Shard& s : c.addressable_shards()) EXPECT_TRUE(s.data.is_committed());
  // An uncommitted shard moves to wherever a computation runs.
  Array shard = u.addressable_shards()[0].data;
  Array on_mesh = c * 1.0f;
  EXPECT_EQ((shard + on_mesh).to_vector<float>()[7], 14.0f);
}

}  // namespace
}  // namespace parax
