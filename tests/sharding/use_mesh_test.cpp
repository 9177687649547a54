// The mesh context (sharding::use_mesh): bare PartitionSpecs resolve on the context mesh in
// device_put, jit and with_sharding_constraint; scopes nest and are thread-local; outside a
// scope bare specs raise JAX's errors.
#include <gtest/gtest.h>

#include <string>
#include <thread>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(ShardingApiUseMesh, BareSpecsResolveOnTheContextMesh) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = jnp::arange(16.0f);
  auto scope = sharding::use_mesh(mesh);
  ASSERT_TRUE(sharding::get_mesh().has_value());
  EXPECT_EQ(*sharding::get_mesh(), mesh);
  const Sharding want = NamedSharding(mesh, P("x"));
  EXPECT_EQ(device_put(x, P("x")).sharding(), want);
  EXPECT_TRUE(device_put(x, P("x")).is_committed());
  auto f = jit([](const Array& a) { return a * 2.0f; },
               JitOptions{.in_shardings = {P("x")}, .out_shardings = {P()}});
  Array y = f(x);
  EXPECT_EQ(y.sharding(), Sharding(NamedSharding(mesh, P())));
  EXPECT_EQ(y.to_vector<float>()[15], 30.0f);
  auto g = jit([](const Array& a) { return lax::with_sharding_constraint(a + 1.0f, P("x")); });
  EXPECT_EQ(g(x).sharding(), want);
  EXPECT_EQ(lax::with_sharding_constraint(x, P("x")).sharding(), want);
}

TEST(ShardingApiUseMesh, ScopesNestAndAreThreadLocal) {
  Mesh outer = make_mesh({8}, {"x"});
  Mesh inner = make_mesh({4, 2}, {"a", "b"});
  EXPECT_FALSE(sharding::get_mesh().has_value());
  {
    auto s1 = sharding::use_mesh(outer);
    {
      auto s2 = sharding::use_mesh(inner);
      EXPECT_EQ(device_put(jnp::zeros({8, 2}), P("a", "b")).sharding(),
                Sharding(NamedSharding(inner, P("a", "b"))));
      bool other_thread_sees_none = false;
      std::thread t([&] { other_thread_sees_none = !sharding::get_mesh().has_value(); });
      t.join();
      EXPECT_TRUE(other_thread_sees_none);
    }
    EXPECT_EQ(*sharding::get_mesh(), outer);
    // A jit traced under one context mesh is retraced under another.
    auto f = jit([](const Array& a) { return a; }, JitOptions{.in_shardings = {P("x")}});
    EXPECT_EQ(f(jnp::zeros({8})).sharding(), Sharding(NamedSharding(outer, P("x"))));
    auto s3 = sharding::use_mesh(make_mesh({2}, {"x"}));
    EXPECT_EQ(f(jnp::zeros({8})).sharding().num_devices(), 2);
  }
  EXPECT_FALSE(sharding::get_mesh().has_value());
}

TEST(ShardingApiUseMesh, BareSpecOutsideAContextRaisesJaxErrors) {
  Array x = jnp::arange(16.0f);
  auto f = jit([](const Array& a) { return a; }, JitOptions{.in_shardings = {P("x")}});
  try {
    f(x);
    ADD_FAILURE() << "expected RuntimeError";
  } catch (const RuntimeError& e) {
    EXPECT_EQ(std::string(e.what()).rfind(
                  "jax.jit only supports `Sharding`s being passed to in_shardings. Looks like "
                  "you are passing either `PartitionSpec` or `None` which is not allowed in "
                  "jax.jit.\nNote that in_shardings argument is optional.",
                  0),
              0u)
        << e.what();
  }
  auto g = jit([](const Array& a) { return a; }, JitOptions{.out_shardings = {P("x")}});
  EXPECT_THROW(g(x), RuntimeError);
  EXPECT_THROW_MSG(
      lax::with_sharding_constraint(x, P("x")), RuntimeError,
      "with_sharding_constraint requires a non-empty mesh if you are passing `PartitionSpec`s "
      "or `None` to shardings! Is a mesh defined at the call site? Alternatively, provide "
      "`Sharding`s to shardings and then the mesh context manager is not required.");
  EXPECT_THROW_MSG(device_put(x, P("x")), ValueError,
                   "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, `jax.Device`, "
                   "`Layout` or a pytree of these values. Received invalid value: "
                   "PartitionSpec('x',) (a bare PartitionSpec needs an enclosing "
                   "parax::sharding::use_mesh scope)");
  // A bare spec has no devices to ask about.
  EXPECT_THROW(Sharding(P("x")).shard_shape({16}), RuntimeError);
}

}  // namespace
}  // namespace parax
