// ShapeDtypeStruct: lowering and compiling ahead of time on a struct behaves as on a real
// array of that sharding, a struct holds no data, and eval_shape returns structs.
#include <gtest/gtest.h>

#include <utility>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

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

}  // namespace
}  // namespace parax
