// Reductions over empty axes: identities (sum 0, prod 1, all true, any false), mean nan,
// and max/min/argmax errors; eager, jitted (fused with an elementwise producer) and
// sharded.
#include <gtest/gtest.h>

#include <cmath>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

std::vector<float> fvec(const Array& a) { return a.astype(DType::float32).to_vector<float>(); }

TEST(SizesEmptyReduce, FusedProdAndSumWriteTheIdentity) {
  const Array z = jnp::zeros({2, 0});
  auto prod = jit([](Array a) { return jnp::prod(a * 2, 1); });
  auto sum = jit([](Array a) { return jnp::sum(a * 2 + 1, 1); });
  auto all = jit([](Array a) { return jnp::all(a > 1, 1); });
  auto any = jit([](Array a) { return jnp::any(a > 1, 1); });
  auto prod3 = jit([](Array a) { return jnp::prod(a * 2, 2); });
  EXPECT_EQ(fvec(prod(z)), (std::vector<float>{1, 1}));
  EXPECT_EQ(fvec(sum(z)), (std::vector<float>{0, 0}));
  EXPECT_EQ(fvec(all(z)), (std::vector<float>{1, 1}));
  EXPECT_EQ(fvec(any(z)), (std::vector<float>{0, 0}));
  // Run twice more: uninitialised memory differs from call to call.
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(fvec(prod(jnp::zeros({5, 0}))), (std::vector<float>(5, 1.0f)));
    EXPECT_EQ(fvec(prod3(jnp::zeros({5, 3, 0}))), (std::vector<float>(15, 1.0f)));
    EXPECT_EQ(fvec(sum(jnp::ones({7, 0}))), (std::vector<float>(7, 0.0f)));
  }
  // Several reduced axes, one of them empty.
  auto sum2 = jit([](Array a) { return jnp::sum(jnp::exp(a), {1, 2}); });
  EXPECT_EQ(fvec(sum2(jnp::zeros({3, 0, 4}))), (std::vector<float>(3, 0.0f)));
  EXPECT_EQ(fvec(sum2(jnp::zeros({3, 4, 0}))), (std::vector<float>(3, 0.0f)));
}

TEST(SizesEmptyReduce, EagerAndUnfused) {
  const Array z = jnp::zeros({2, 0});
  EXPECT_EQ(fvec(jnp::prod(z, 1)), (std::vector<float>{1, 1}));
  EXPECT_EQ(fvec(jnp::sum(z, 1)), (std::vector<float>{0, 0}));
  EXPECT_EQ(fvec(jnp::sum(z, 0)), (std::vector<float>{}));
  EXPECT_EQ(jnp::sum(z).item<float>(), 0.0f);
  EXPECT_EQ(jnp::prod(z).item<float>(), 1.0f);
  for (float v : fvec(jnp::mean(z, 1))) EXPECT_TRUE(std::isnan(v));
  EXPECT_TRUE(
      std::isnan(jit([](Array a) { return jnp::mean(a * 3, 1); })(z).to_vector<float>()[0]));
  EXPECT_EQ(fvec(jnp::all(z, 1)), (std::vector<float>{1, 1}));
  EXPECT_EQ(fvec(jnp::any(z, 1)), (std::vector<float>{0, 0}));
  EXPECT_EQ(fvec(jnp::sum(jnp::zeros({2, 0}, DType::int32), 1)), (std::vector<float>{0, 0}));
}

TEST(SizesEmptyReduce, MaxMinArgmaxOfEmptyRaise) {
  const Array z = jnp::zeros({2, 0});
  EXPECT_THROW_HAS(jnp::max(z, 1), ValueError,
                   "zero-size array to reduction operation max which has no identity");
  EXPECT_THROW_HAS(jnp::min(z, 1), ValueError,
                   "zero-size array to reduction operation min which has no identity");
  EXPECT_THROW_HAS(jit([](Array a) { return jnp::max(a * 2, 1); })(z), ValueError,
                   "zero-size array to reduction operation max which has no identity");
  EXPECT_THROW_HAS(jnp::argmax(z, 1), ValueError, "attempt to get argmax of an empty sequence");
  EXPECT_THROW_HAS(jnp::argmin(z, 1), ValueError, "attempt to get argmin of an empty sequence");
  // Reducing a nonempty axis of an empty array is fine: the result is empty.
  EXPECT_EQ(jnp::max(z, 0).shape(), (Shape{0}));
  EXPECT_EQ(jnp::argmax(z, 0).shape(), (Shape{0}));
}

TEST(SizesEmptyReduce, Sharded) {
  auto m = make_mesh({8}, {"x"});
  const Array z = device_put(jnp::zeros({8, 0}), NamedSharding(m, P("x")));
  auto prod = jit([](Array a) { return jnp::prod(a * 2, 1); });
  auto sum = jit([](Array a) { return jnp::sum(a + 1, 1); });
  EXPECT_EQ(fvec(prod(z)), (std::vector<float>(8, 1.0f)));
  EXPECT_EQ(fvec(sum(z)), (std::vector<float>(8, 0.0f)));
  EXPECT_EQ(fvec(jnp::prod(z, 1)), (std::vector<float>(8, 1.0f)));
  EXPECT_EQ(jnp::sum(z).item<float>(), 0.0f);
  // The empty axis sharded: every shard is empty, the reduction still has its identity.
  const Array zt = device_put(jnp::zeros({0, 8}), NamedSharding(m, P(None, "x")));
  EXPECT_EQ(fvec(jit([](Array a) { return jnp::prod(a * 2, 0); })(zt)),
            (std::vector<float>(8, 1.0f)));
  EXPECT_EQ(fvec(jnp::sum(zt, 0)), (std::vector<float>(8, 0.0f)));
}

}  // namespace
}  // namespace parax
