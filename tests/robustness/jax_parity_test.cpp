// Issue 11, "JAX's behaviour where parax differs": jit's in_shardings against committed
// arguments, device_put under differentiation, rev of a sharded dimension, indexing pmap
// results, the commitment of shards, and shard_map without array arguments.
#include <gtest/gtest.h>

#include <parax/parax.h>

#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

// --- jit in_shardings vs committed arguments -------------------------------------------

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

// --- device_put under grad, jvp and vmap -------------------------------------------------

TEST(JaxParityDevicePut, GradThroughDevicePutOntoAnotherMesh) {
  const std::vector<Device> all = devices();
  Mesh a = Mesh(std::vector<Device>(all.begin(), all.begin() + 4), "a");
  Mesh b = Mesh(std::vector<Device>(all.begin() + 4, all.end()), "b");
  Array x = device_put(jnp::arange(8.0f), NamedSharding(a, P("a")));
  auto f = [&](const Array& v) {
    Array moved = device_put(v, NamedSharding(b, P("b")));
    return jnp::sum(moved * moved);
  };
  Array g = grad(f)(x);
  std::vector<float> expected;
  for (int i = 0; i < 8; ++i) expected.push_back(2.0f * float(i));
  EXPECT_EQ(g.to_vector<float>(), expected);
  // The cotangent went back to where x lives, as JAX's transpose of device_put does.
  EXPECT_EQ(g.sharding(), Sharding(NamedSharding(a, P("a"))));
  auto [value, dx] = value_and_grad(f)(x);
  EXPECT_EQ(value.item<float>(), 140.0f);
}

TEST(JaxParityDevicePut, JvpAndVmapThroughDevicePut) {
  const std::vector<Device> all = devices();
  Mesh b = Mesh(std::vector<Device>(all.begin() + 4, all.end()), "b");
  Array x = device_put(jnp::arange(8.0f), devices()[0]);
  auto f = [&](const Array& v) { return device_put(v, NamedSharding(b, P("b"))) * 3.0f; };
  auto [y, t] = jvp(f, std::make_tuple(x), std::make_tuple(jnp::ones({8})));
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(8, 3.0f));
  EXPECT_EQ(t.sharding(), Sharding(NamedSharding(b, P("b"))));
  Array batch = jnp::arange(32.0f).reshape({4, 8});
  Array v =
      vmap([&](const Array& row) { return device_put(row, NamedSharding(b, P("b"))); })(batch);
  EXPECT_EQ(v.to_vector<float>(), batch.to_vector<float>());
}

TEST(JaxParityDevicePut, GradThroughDevicePutUnderJit) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(16.0f), NamedSharding(mesh, P("x")));
  auto f = [&](const Array& v) {
    return jnp::sum(jnp::sin(device_put(v, NamedSharding(mesh, P()))));
  };
  Array g = jit(grad(f))(x);
  Array expected = jnp::cos(jnp::arange(16.0f));
  EXPECT_LT(jnp::max(jnp::abs(g - expected)).item<float>(), 1e-6f);
  // The tangent's device_put (which carries its primal along) compiles too.
  auto tangent = jit([&](const Array& v) {
    return jvp([&](const Array& w) { return device_put(w, NamedSharding(mesh, P())) * 2.0f; },
               std::make_tuple(v), std::make_tuple(jnp::ones({16})))
        .second;
  });
  Array t = tangent(x);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(16, 2.0f));
  EXPECT_EQ(t.sharding(), Sharding(NamedSharding(mesh, P())));
  // vmap of grad: the source layout of a batched value is not known; values still right.
  Array rows = jnp::arange(32.0f).reshape({2, 16});
  Array gv = vmap(grad(f))(rows);
  EXPECT_LT(jnp::max(jnp::abs(gv - jnp::cos(rows))).item<float>(), 1e-6f);
}

// --- rev of a sharded dimension ---------------------------------------------------------

TEST(JaxParityRev, ReverseKeepsTheDimensionSharded) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array host = jnp::arange(64.0f).reshape({8, 8});
  Array x = device_put(host, NamedSharding(mesh, P("x")));
  Array r = jnp::flip(x, 0);
  EXPECT_EQ(r.sharding(), Sharding(NamedSharding(mesh, P("x"))));
  EXPECT_EQ(r.addressable_shards()[0].data.shape(), (Shape{1, 8}));
  EXPECT_EQ(r.to_vector<float>(), jnp::flip(host, 0).to_vector<float>());
  // The compiled program trades blocks instead of gathering the dimension.
  auto f = jit([](const Array& a) { return jnp::flip(a, 0); });
  std::string text = f.lower(x).compile().as_text();
  EXPECT_NE(text.find("collective-permute"), std::string::npos) << text;
  EXPECT_EQ(text.find("all-gather"), std::string::npos) << text;
}

TEST(JaxParityRev, TwoMeshAxesAndSeveralDimensions) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  Array host = jnp::arange(8.0f * 8 * 4).reshape({8, 8, 4});
  for (const PartitionSpec& spec :
       {P("a", "b"), P({"a", "b"}), P(None, "a", "b"), P("b", None, "a")}) {
    Array x = device_put(host, NamedSharding(mesh, spec));
    for (const std::vector<int64_t>& dims :
         std::vector<std::vector<int64_t>>{{0}, {1}, {2}, {0, 1}, {0, 1, 2}}) {
      Array r = lax::rev(x, dims);
      Array expected = lax::rev(host, dims);
      EXPECT_EQ(r.to_vector<float>(), expected.to_vector<float>())
          << spec << " dims " << dims.size();
      EXPECT_EQ(r.sharding().shard_shape(r.shape()), x.sharding().shard_shape(x.shape()));
    }
  }
}

TEST(JaxParityRev, PaddedDimensionsInsideJit) {
  // 6, 5 and 3 rows over 4 devices do not divide: inside jit the dimension is padded.
  const std::vector<Device> all = devices();
  Mesh mesh = make_mesh({4}, {"x"}, std::vector<Device>(all.begin(), all.begin() + 4));
  // Padding 2, 3, 1, 3, 1, 2 rows: shifts of whole blocks, of parts, and of both.
  for (int64_t n : {6, 5, 3, 9, 7, 10}) {
    Array host = jnp::arange(float(n * 3)).reshape({n, 3});
    auto f = jit([&](const Array& a) {
      Array s = lax::with_sharding_constraint(a + 1.0f, NamedSharding(mesh, P("x")));
      return jnp::flip(s, 0) * 2.0f;
    });
    Array expected = jnp::flip(host + 1.0f, 0) * 2.0f;
    EXPECT_EQ(f(host).to_vector<float>(), expected.to_vector<float>()) << n;
    const std::string text = f.lower(host).compile().as_text();
    EXPECT_NE(text.find("collective-permute"), std::string::npos) << text;
  }
}

TEST(JaxParityRev, GradOfFlipOfShardedArray) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(16.0f), NamedSharding(mesh, P("x")));
  Array w = jnp::arange(16.0f);
  Array g = grad([&](const Array& v) { return jnp::sum(jnp::flip(v, 0) * w); })(x);
  EXPECT_EQ(g.to_vector<float>(), jnp::flip(w, 0).to_vector<float>());
}

// --- indexing pmap results ------------------------------------------------------------

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

// --- the commitment of shards ---------------------------------------------------------

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

// --- shard_map without array arguments ------------------------------------------------

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
