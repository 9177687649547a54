// rev (jnp::flip) of a sharded dimension keeps that dimension sharded, as JAX's does: over
// one and two mesh axes, with padding inside jit, and under grad.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

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

}  // namespace
}  // namespace parax
