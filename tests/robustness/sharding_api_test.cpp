// Issue 11, "Also missing": the mesh context (sharding::use_mesh and bare PartitionSpecs),
// make_array_from_callback, ShapeDtypeStruct for ahead-of-time lowering and eval_shape,
// device_put with a pytree of shardings, and numpy::array with a sharding.
#include <gtest/gtest.h>

#include <thread>

#include <parax/parax.h>

#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

// --- the mesh context -----------------------------------------------------------------

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

// --- make_array_from_callback ---------------------------------------------------------

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

// --- ShapeDtypeStruct and eval_shape --------------------------------------------------

TEST(ShardingApiShapeDtypeStruct, LowersAsRealArraysOfThatSharding) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const NamedSharding s(mesh, P("a", "b"));
  auto f = jit([](const Array& a, const Array& b) { return jnp::dot(a, b) + 1.0f; });
  Array x = device_put(jnp::ones({8, 4}), s);
  Array w = device_put(jnp::ones({4, 6}), NamedSharding(mesh, P("b", None)));
  ShapeDtypeStruct xs({8, 4}, DType::float32, s);
  ShapeDtypeStruct ws({4, 6}, DType::float32, NamedSharding(mesh, P("b", None)));
  EXPECT_EQ(f.lower(xs, ws).as_text(), f.lower(x, w).as_text());
  EXPECT_EQ(f.lower(xs, ws).compile().as_text(), f.lower(x, w).compile().as_text());
  EXPECT_EQ(xs.shape(), (Shape{8, 4}));
  EXPECT_EQ(xs.sharding(), Sharding(s));
  EXPECT_EQ(xs.to_string(),
            "ShapeDtypeStruct(shape=(8, 4), dtype=float32, sharding=NamedSharding(mesh=Mesh('a': "
            "4, 'b': 2), spec=PartitionSpec('a', 'b')))");
  // Without a sharding it lowers as an uncommitted array would.
  ShapeDtypeStruct plain({8, 4}, DType::float32);
  EXPECT_EQ(f.lower(plain, ShapeDtypeStruct({4, 6}, DType::float32)).compile().as_text(),
            f.lower(jnp::ones({8, 4}), jnp::ones({4, 6})).compile().as_text());
}

TEST(ShardingApiShapeDtypeStruct, HasNoData) {
  const Array xs = ShapeDtypeStruct({4}, DType::float32);
  EXPECT_THROW(xs.to_vector<float>(), ValueError);
  EXPECT_THROW(jnp::sin(xs), ValueError);
  EXPECT_THROW(jit([](const Array& a) { return a; })(xs), ValueError);
  EXPECT_THROW(device_put(xs, devices()[0]), ValueError);
  EXPECT_THROW(ShapeDtypeStruct({6}, DType::float32, NamedSharding(make_mesh({4}, {"x"}), P("x"))),
               ValueError);
}

TEST(ShardingApiShapeDtypeStruct, EvalShape) {
  auto f = [](const Array& a, const Array& b) {
    return std::make_pair(jnp::dot(a, b), jnp::sum(a).astype(DType::int32));
  };
  auto [m, s] = eval_shape(f, ShapeDtypeStruct({3, 4}, DType::float32), jnp::ones({4, 5}));
  EXPECT_EQ(m.shape(), (Shape{3, 5}));
  EXPECT_EQ(m.dtype(), DType::float32);
  EXPECT_EQ(s.shape(), Shape{});
  EXPECT_EQ(s.dtype(), DType::int32);
  EXPECT_EQ(s.to_string(), "ShapeDtypeStruct(shape=(), dtype=int32)");
}

// --- device_put with a pytree of shardings --------------------------------------------

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

// --- numpy::array with a sharding -----------------------------------------------------

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
