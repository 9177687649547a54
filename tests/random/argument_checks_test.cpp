// random's argument checks raise JAX's kinds and texts (dtypes, key arrays where one key is
// needed, fold_in's range), and explicit dtypes are honoured without x64.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace np = numpy;
namespace rnd = random;

TEST(RandomChecks, DtypeErrorsAreValueErrorsWithJaxText) {
  EXPECT_THROW_MSG(rnd::bits(rnd::key(0), {2}, int32), ValueError,
                   "dtype argument to `bits` must be an unsigned int dtype, got int32");
  EXPECT_THROW_MSG(rnd::bits(rnd::key(0), {2}, float32), ValueError,
                   "dtype argument to `bits` must be an unsigned int dtype, got float32");
  EXPECT_THROW_MSG(rnd::uniform(rnd::key(0), {2}, int32), ValueError,
                   "dtype argument to `uniform` must be a float dtype, got int32");
  EXPECT_THROW_MSG(rnd::normal(rnd::key(0), {2}, int32), ValueError,
                   "dtype argument to `normal` must be a float or complex dtype, got int32");
  EXPECT_THROW_MSG(rnd::truncated_normal(rnd::key(0), -1.0, 1.0, Shape{2}, int32), ValueError,
                   "dtype argument to `truncated_normal` must be a float dtype, got int32");
  // randint is JAX's one TypeError here.
  EXPECT_THROW_MSG(rnd::randint(rnd::key(0), {2}, 0, 3, float32), TypeError,
                   "randint only accepts integer dtypes, got float32");
}

TEST(RandomChecks, KeyArraysAreValueErrorsWithJaxText) {
  const rnd::Key keys = rnd::split(rnd::key(0), 3);
  EXPECT_THROW_MSG(rnd::bits(keys, {2}), ValueError,
                   "bits accepts a single key, but was given a key array of shape (3,) != (). "
                   "Use jax.vmap for batching.");
  EXPECT_THROW_MSG(rnd::normal(keys, {2}), ValueError,
                   "normal accepts a single key, but was given a key array of shape (3,) != (). "
                   "Use jax.vmap for batching.");
  EXPECT_THROW_MSG(rnd::bernoulli(keys), ValueError,
                   "bernoulli accepts a single key, but was given a key array of shape (3,) != "
                   "(). Use jax.vmap for batching.");
  EXPECT_THROW_MSG(rnd::split(keys), ValueError,
                   "split accepts a single key, but was given a key array of shape (3,) != (). "
                   "Use jax.vmap for batching.");
  EXPECT_THROW_MSG(rnd::fold_in(keys, 1), ValueError,
                   "fold_in accepts a single key, but was given a key array of shape (3,) != (). "
                   "Use jax.vmap for batching.");
  // vmap is the way to batch, as the message says.
  const Array b = vmap([](const Array& k) { return rnd::bits(rnd::wrap_key_data(k), {2}); })(
      rnd::key_data(keys));
  EXPECT_EQ(b.shape(), (Shape{3, 2}));
  EXPECT_EQ(b.to_vector<uint32_t>()[0], rnd::bits(keys[0], {2}).to_vector<uint32_t>()[0]);
}

TEST(RandomChecks, SamplerDtypesAreHonouredWithoutX64) {
  // The dtype rule: uniform(..., float64) is float64 in both modes, with JAX's x64 values.
  const Array off = rnd::uniform(rnd::key(0), {3}, float64);
  EXPECT_EQ(off.dtype(), float64);
  config::update("jax_enable_x64", true);
  const Array on = rnd::uniform(rnd::key(0), {3}, float64);
  config::update("jax_enable_x64", false);
  EXPECT_EQ(off.to_vector<double>(), on.to_vector<double>());
  EXPECT_EQ(rnd::randint(rnd::key(0), {2}, 0, int64_t(1) << 40, int64).dtype(), int64);
}

TEST(RandomChecks, RandintBoundBeyondInt32NeedsA64BitDtypeWithoutX64) {
  const int64_t big = int64_t(1) << 40;
  EXPECT_THROW_MSG(rnd::randint(rnd::key(0), {2}, 0, big), ValueError,
                   "Python int 1099511627776 too large to convert to int32");
  const Array r = rnd::randint(rnd::key(0), {64}, 0, big, int64);
  EXPECT_EQ(r.dtype(), int64);
  EXPECT_GE(np::min(r).item<int64_t>(), 0);
  EXPECT_LT(np::max(r).item<int64_t>(), big);
  EXPECT_GT(np::max(r).item<int64_t>(), int64_t(1) << 32);  // uses the whole range
}

TEST(RandomChecks, FoldInTakesTheWholeUint32Range) {
  // Values from JAX 0.4.35: key_data(fold_in(key(0), d)).
  auto words = [](const rnd::Key& k) { return rnd::key_data(k).to_vector<uint32_t>(); };
  EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 4294967294u)),
            (std::vector<uint32_t>{844240965, 2082719024}));
  EXPECT_EQ(words(rnd::fold_in(rnd::key(0), int64_t(4294967294))),
            (std::vector<uint32_t>{844240965, 2082719024}));
  EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 3.7)), (std::vector<uint32_t>{2467461003, 3840466878}));
  EXPECT_EQ(words(rnd::fold_in(rnd::key(0), np::array(4294967294u))),
            (std::vector<uint32_t>{844240965, 2082719024}));
  // Outside uint32: numpy's OverflowError (ValueError in parax).
  EXPECT_THROW_MSG(rnd::fold_in(rnd::key(0), -1), ValueError,
                   "Python integer -1 out of bounds for uint32");
  EXPECT_THROW_MSG(rnd::fold_in(rnd::key(0), int64_t(1) << 32), ValueError,
                   "Python integer 4294967296 out of bounds for uint32");
  EXPECT_THROW_MSG(rnd::fold_in(rnd::key(0), np::array({1u, 2u})), TypeError,
                   "fold_in accepts a scalar, but was given an array ofshape (2,) != (). Use "
                   "jax.vmap "
                   "for batching.");
}

}  // namespace
}  // namespace parax
