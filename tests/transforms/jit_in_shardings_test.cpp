// jit's in_shardings against its arguments, as JAX's: a committed argument of another
// sharding raises pjit's error, an uncommitted one moves, one of the same layout runs.
#include <gtest/gtest.h>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(JaxParityInShardings, CommittedArgumentOfAnotherShardingRaises) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(64.0f).reshape({8, 8}), NamedSharding(mesh, P("x")));
  auto f = jit([](const Array& a) { return a + 1.0f; },
               JitOptions{.in_shardings = {NamedSharding(mesh, P(None, "x"))}});
  EXPECT_THROW_MSG(
      f(x), ValueError,
      "Sharding passed to pjit does not match the sharding on the respective arg. Got pjit "
      "sharding: NamedSharding(mesh=Mesh('x': 8), spec=PartitionSpec(None, 'x')),\narg "
      "sharding: NamedSharding(mesh=Mesh('x': 8), spec=PartitionSpec('x',)) for arg shape: "
      "float32[8,8]");
}

TEST(JaxParityInShardings, UncommittedArgumentMoves) {
  Mesh mesh = make_mesh({8}, {"x"});
  auto f = jit([](const Array& a) { return a + 1.0f; },
               JitOptions{.in_shardings = {NamedSharding(mesh, P(None, "x"))}});
  Array u = jnp::arange(64.0f).reshape({8, 8});
  ASSERT_FALSE(u.is_committed());
  Array y = f(u);
  EXPECT_EQ(y.sharding(), Sharding(NamedSharding(mesh, P(None, "x"))));
  EXPECT_EQ(y.to_vector<float>()[9], 10.0f);
}

TEST(JaxParityInShardings, CommittedArgumentOfTheSameLayoutRuns) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(64.0f).reshape({8, 8}), NamedSharding(mesh, P("x")));
  auto f = jit([](const Array& a) { return a * 2.0f; },
               JitOptions{.in_shardings = {NamedSharding(mesh, P("x", None))}});
  EXPECT_EQ(f(x).to_vector<float>()[63], 126.0f);
  // A committed single-device argument is placed too.
  Array one = device_put(jnp::arange(8.0f), devices()[1]);
  auto g =
      jit([](const Array& a) { return a; }, JitOptions{.in_shardings = {NamedSharding(mesh, P())}});
  EXPECT_THROW(g(one), ValueError);
}

}  // namespace
}  // namespace parax
