// device_put of a pytree with a pytree of shardings: the shardings match the tree or a
// prefix of it; a mismatch raises JAX's error.
#include <gtest/gtest.h>

#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(ShardingApiDevicePutTree, ShardingsMatchThePytreeOrAPrefix) {
  Mesh mesh = make_mesh({8}, {"x"});
  const NamedSharding sx(mesh, P("x"));
  const NamedSharding rep(mesh, P());
  Array x = jnp::arange(16.0f);
  auto pair = device_put(std::make_pair(x, x), {sx, rep});
  EXPECT_EQ(pair.first.sharding(), Sharding(sx));
  EXPECT_EQ(pair.second.sharding(), Sharding(rep));
  std::map<std::string, std::vector<Array>> tree{{"a", {x}}, {"b", {x, x}}};
  auto placed = device_put(tree, std::map<std::string, ShardingTree>{{"a", sx}, {"b", rep}});
  EXPECT_EQ(placed["a"][0].sharding(), Sharding(sx));
  EXPECT_EQ(placed["b"][1].sharding(), Sharding(rep));
  auto nested = device_put(std::make_tuple(x, std::vector<Array>{x, x}), {sx, {rep, sx}});
  EXPECT_EQ(std::get<1>(nested)[1].sharding(), Sharding(sx));
  EXPECT_EQ(std::get<1>(nested)[1].to_vector<float>(), x.to_vector<float>());
}

TEST(ShardingApiDevicePutTree, MismatchRaisesJaxError) {
  Mesh mesh = make_mesh({8}, {"x"});
  const NamedSharding sx(mesh, P("x"));
  Array x = jnp::arange(16.0f);
  const std::string s = "NamedSharding(mesh=Mesh('x': 8), spec=PartitionSpec('x',))";
  // (A braced list of one is a single Sharding in C++: a vector makes a list of one.)
  EXPECT_THROW_MSG(device_put(std::make_pair(x, x), std::vector<Sharding>{sx}), ValueError,
                   "device_put device specification must be a tree prefix of the corresponding "
                   "value, got specification (" +
                       s + ",) for value tree PyTreeDef((*, *)).");
  EXPECT_THROW_MSG(device_put(std::make_pair(x, x), {sx, sx, sx}), ValueError,
                   "device_put device specification must be a tree prefix of the corresponding "
                   "value, got specification (" +
                       s + ", " + s + ", " + s + ") for value tree PyTreeDef((*, *)).");
}

}  // namespace
}  // namespace parax
