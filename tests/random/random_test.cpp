// parax::random against JAX: every test vector of reference/jax-random.md §10 (official
// ones, published runs, and the reference model's), in both threefry modes; key printing
// and keys as jit arguments; and partitionable draws computed shard-locally (same bits for
// 1, 2, 4 and 8 shards, no collective in the compiled program). randint, truncated_normal,
// permutation and choice against JAX 0.10.2's draws in tests/golden/random_cases.txt
// (tools/make_random_goldens.py), eager, jitted, vmapped and sharded, and their errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <bit>
#include <cmath>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace rnd = random;
using U32 = std::vector<uint32_t>;

// Sets jax_threefry_partitionable for one test and restores the default after it.
class Mode {
 public:
  explicit Mode(bool partitionable) { config::update("jax_threefry_partitionable", partitionable); }
  ~Mode() { config::update("jax_threefry_partitionable", true); }
};

class X64 {
 public:
  X64() { config::update("jax_enable_x64", true); }
  ~X64() { config::update("jax_enable_x64", false); }
};

U32 words(const rnd::Key& k) { return rnd::key_data(k).to_vector<uint32_t>(); }

std::vector<float> floats_of_bits(const U32& bits) {
  std::vector<float> out;
  for (uint32_t b : bits) out.push_back(std::bit_cast<float>(b));
  return out;
}

// Distance in units in the last place between two finite floats of one sign region.
int64_t ulps(float a, float b) {
  auto key = [](float f) {
    const int32_t i = std::bit_cast<int32_t>(f);
    return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
  };
  return std::llabs(key(a) - key(b));
}

void expect_near_each(const std::vector<float>& got, const std::vector<double>& want, double tol) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t i = 0; i < got.size(); ++i) EXPECT_NEAR(got[i], want[i], tol) << "index " << i;
}

// ---- §3 / §10.1(a): the threefry block function ----

TEST(Threefry, KnownAnswerVectors) {
  struct Case {
    U32 key, count, want;
  };
  const std::vector<Case> cases = {
      {{0, 0}, {0, 0}, {0x6b200159, 0x99ba4efe}},
      {{0xffffffff, 0xffffffff}, {0xffffffff, 0xffffffff}, {0x1cb996fc, 0xbb002be7}},
      {{0x13198a2e, 0x03707344}, {0x243f6a88, 0x85a308d3}, {0xc4923a9c, 0x483df7a0}},
      {{0, 0}, {0, 1}, {928981903, 3453687069}},
  };
  for (const Case& c : cases) {
    Array out = rnd::threefry_2x32(numpy::array(c.key), numpy::array(c.count));
    EXPECT_EQ(out.to_vector<uint32_t>(), c.want);
  }
}

// testThreefry2x32Large, with n = 1000: the first half of the counters pairs with the
// second half.
TEST(Threefry, FlatHashPairsHalves) {
  const int n = 1000;
  U32 count(n, 0x243f6a88);
  count.insert(count.end(), n, 0x85a308d3);
  Array out = rnd::threefry_2x32(numpy::array(U32{0x13198a2e, 0x03707344}), numpy::array(count));
  U32 want(n, 0xc4923a9c);
  want.insert(want.end(), n, 0x483df7a0);
  EXPECT_EQ(out.to_vector<uint32_t>(), want);
}

// ---- §2 / §10.1(d): seeds ----

TEST(Seed, KeysFromSeedsWithoutX64) {
  EXPECT_EQ(words(rnd::key(0)), (U32{0, 0}));
  EXPECT_EQ(words(rnd::key(1)), (U32{0, 1}));
  EXPECT_EQ(words(rnd::key(-1)), (U32{0, 4294967295u}));
  EXPECT_EQ(words(rnd::key(-2)), (U32{0, 4294967294u}));
  EXPECT_EQ(words(rnd::key(-3)), (U32{0, 4294967293u}));
  EXPECT_EQ(words(rnd::key(2147483747)), (U32{0, 2147483747u}));
  EXPECT_EQ(words(rnd::key(2147483748)), (U32{0, 2147483748u}));
  EXPECT_EQ(words(rnd::key(-2147483748)), (U32{0, 2147483548u}));
  EXPECT_EQ(words(rnd::key(-2147483749)), (U32{0, 2147483547u}));
  EXPECT_EQ(words(rnd::key((int64_t(1) << 40) + 5)), (U32{0, 5}));
  EXPECT_EQ(rnd::PRNGKey(-1).to_vector<uint32_t>(), (U32{0, 4294967295u}));
}

TEST(Seed, KeysFromSeedsWithX64) {
  X64 x64;
  EXPECT_EQ(words(rnd::key(3)), (U32{0, 3}));
  EXPECT_EQ(words(rnd::key(-1)), (U32{4294967295u, 4294967295u}));
  EXPECT_EQ(words(rnd::key(-3)), (U32{4294967295u, 4294967293u}));
  EXPECT_EQ(words(rnd::key(-2147483748)), (U32{4294967295u, 2147483548u}));
  EXPECT_EQ(words(rnd::key(-2147483749)), (U32{4294967295u, 2147483547u}));
  EXPECT_EQ(words(rnd::key((int64_t(1) << 40) + 5)), (U32{256, 5}));
}

// ---- §9: key objects ----

TEST(Keys, PrintAsJax) {
  EXPECT_EQ(rnd::key(0).to_string(), "Array((), dtype=key<fry>) overlaying:\n[0 0]");
  std::ostringstream os;
  os << rnd::key(42);
  EXPECT_EQ(os.str(), "Array((), dtype=key<fry>) overlaying:\n[ 0 42]");
  EXPECT_EQ(rnd::wrap_key_data(numpy::array(U32{0, 0, 0, 1}, Shape{2, 2})).to_string(),
            "Array((2,), dtype=key<fry>) overlaying:\n[[0 0]\n [0 1]]");
  EXPECT_EQ(rnd::PRNGKey(0).to_string(), "Array([0, 0], dtype=uint32)");
}

TEST(Keys, ShapeIndexingAndData) {
  rnd::Key keys = rnd::split(rnd::key(0), 4);
  EXPECT_EQ(keys.shape(), (Shape{4}));
  EXPECT_EQ(rnd::key_data(keys).shape(), (Shape{4, 2}));
  EXPECT_EQ(keys[0].shape(), Shape{});
  EXPECT_EQ(words(keys[-1]), words(keys[3]));
  EXPECT_EQ(rnd::key(0).shape(), Shape{});
  EXPECT_THROW(rnd::key(0)[0], IndexError);
  EXPECT_THROW(rnd::wrap_key_data(numpy::array({1.0f, 2.0f})), TypeError);
  EXPECT_THROW(rnd::uniform(keys, {2}), ValueError);  // JAX's kind: use vmap for batches
  // A raw PRNGKey works wherever a key does.
  EXPECT_EQ(rnd::uniform(rnd::PRNGKey(0), {3}).to_vector<float>(),
            rnd::uniform(rnd::key(0), {3}).to_vector<float>());
}

TEST(Keys, PassThroughJit) {
  auto f = jit([](const rnd::Key& k) {
    rnd::Key sub = rnd::split(k)[1];
    return std::make_pair(sub, rnd::uniform(sub, {3}));
  });
  auto [sub, u] = f(rnd::key(0));
  EXPECT_EQ(words(sub), words(rnd::split(rnd::key(0))[1]));
  EXPECT_EQ(u.to_vector<float>(), rnd::uniform(rnd::split(rnd::key(0))[1], {3}).to_vector<float>());
  // Same signature, other mode: the flag is part of the cache key.
  Mode original(false);
  auto [sub2, u2] = f(rnd::key(0));
  EXPECT_EQ(words(sub2), words(rnd::split(rnd::key(0))[1]));
  EXPECT_NE(words(sub2), words(sub));
}

// ---- §5, §6 / §10.1(b, c), §10.1(f), §10.3: bits, split, fold_in ----

TEST(Original, RandomBitsOfSeed1701) {
  Mode mode(false);
  rnd::Key k = rnd::key(1701);
  EXPECT_EQ(rnd::bits(k, {3}, uint8).to_vector<uint32_t>(), (U32{216, 115, 43}));
  EXPECT_EQ(rnd::bits(k, {3}, uint16).to_vector<uint32_t>(), (U32{41682, 1300, 55017}));
  EXPECT_EQ(rnd::bits(k, {3}, uint32).to_vector<uint32_t>(),
            (U32{56197195, 4200222568, 961309823}));
  // JAX falls back to uint32 without x64; parax honours the requested uint64 (README,
  // "dtypes"), drawing the bits JAX draws with x64.
  const std::vector<uint64_t> want = {3982329540505020460ull, 16822122385914693683ull,
                                      7882654074788531506ull};
  EXPECT_EQ(rnd::bits(k, {3}, uint64).to_vector<uint64_t>(), want);
  X64 x64;
  EXPECT_EQ(rnd::bits(k, {3}, uint64).to_vector<uint64_t>(), want);
}

TEST(Original, PrngValues) {
  Mode mode(false);
  EXPECT_EQ(rnd::key_data(rnd::split(rnd::key(0), 4)).to_vector<uint32_t>(),
            (U32{2285895361, 1501764800, 1518642379, 4090693311, 433833334, 4221794875, 839183663,
                 3740430601}));
  EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 4)), (U32{2285895361, 433833334}));
}

TEST(Original, DistributionValuesBits) {
  Mode mode(false);
  rnd::Key k = rnd::key(942802475);
  EXPECT_EQ(rnd::bits(k, {5}, uint8).to_vector<uint32_t>(), (U32{10, 158, 82, 54, 158}));
  EXPECT_EQ(rnd::bits(k, {5}, uint16).to_vector<uint32_t>(),
            (U32{6738, 38161, 50695, 57337, 61600}));
  EXPECT_EQ(rnd::bits(k, {5}, uint32).to_vector<uint32_t>(),
            (U32{1978747883, 4134381225, 3628107870, 689687174, 2788938207}));
  X64 x64;
  EXPECT_EQ(rnd::bits(k, {5}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{17649965731882839947ull, 1415307058040849897ull,
                                   8282622628079774249ull, 14024425113645909402ull,
                                   2012979996110532418ull}));
}

TEST(Original, ModelBitsAndSplits) {
  Mode mode(false);
  rnd::Key k0 = rnd::key(0);
  EXPECT_EQ(rnd::key_data(rnd::split(rnd::key(42))).to_vector<uint32_t>(),
            (U32{2465931498, 3679230171, 255383827, 267815257}));
  EXPECT_EQ(rnd::key_data(rnd::split(k0, 3)).to_vector<uint32_t>(),
            (U32{2467461003, 428148500, 3186719485, 3840466878, 2562233961, 1946702221}));
  EXPECT_EQ(rnd::bits(k0, {5}).to_vector<uint32_t>(),
            (U32{2467461003, 428148500, 1688610540, 3840466878, 2562233961}));
  // Size 6 pairs differently from size 5.
  Array b23 = rnd::bits(k0, {2, 3});
  EXPECT_EQ(b23.shape(), (Shape{2, 3}));
  EXPECT_EQ(b23.to_vector<uint32_t>(),
            (U32{2467461003, 428148500, 3186719485, 3840466878, 2562233961, 1946702221}));
  EXPECT_EQ(rnd::bits(k0, {5}, uint8).to_vector<uint32_t>(), (U32{143, 35, 95, 55, 29}));
  EXPECT_EQ(rnd::bits(k0, {3}, uint16).to_vector<uint32_t>(), (U32{9103, 14175, 5405}));
  X64 x64;
  EXPECT_EQ(rnd::bits(k0, {2}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{17807037942121513089ull, 4153451187181432367ull}));
}

TEST(Partitionable, ModelBitsAndSplits) {
  Mode mode(true);
  rnd::Key k0 = rnd::key(0);
  EXPECT_EQ(rnd::key_data(rnd::split(rnd::key(42))).to_vector<uint32_t>(),
            (U32{1832780943, 270669613, 64467757, 2916123636}));
  EXPECT_EQ(rnd::key_data(rnd::split(k0, 3)).to_vector<uint32_t>(),
            (U32{1797259609, 2579123966, 928981903, 3453687069, 4146024105, 2718843009}));
  EXPECT_EQ(rnd::key_data(rnd::split(rnd::key(72), 3)).to_vector<uint32_t>(),
            (U32{1146130490, 1747753119, 679946246, 1419780272, 2305295554, 566369263}));
  for (int i = 0; i < 3; ++i) {
    EXPECT_EQ(words(rnd::fold_in(rnd::key(72), i)), words(rnd::split(rnd::key(72), 3)[i]));
  }
  EXPECT_EQ(rnd::bits(k0, {5}).to_vector<uint32_t>(),
            (U32{4070199207, 4202968722, 1427181096, 2012915765, 2447653815}));
  EXPECT_EQ(rnd::bits(k0, {2, 3}).to_vector<uint32_t>(),
            (U32{4070199207, 4202968722, 1427181096, 2012915765, 2447653815, 710830403}));
  EXPECT_EQ(rnd::bits(k0, {5}, uint8).to_vector<uint32_t>(), (U32{167, 146, 40, 53, 183}));
  EXPECT_EQ(rnd::bits(k0, {3}, uint16).to_vector<uint32_t>(), (U32{20391, 13970, 3624}));
  rnd::Key k1701 = rnd::key(1701);
  EXPECT_EQ(rnd::bits(k1701, {3}, uint8).to_vector<uint32_t>(), (U32{37, 59, 52}));
  EXPECT_EQ(rnd::bits(k1701, {3}, uint16).to_vector<uint32_t>(), (U32{42789, 29755, 60468}));
  EXPECT_EQ(rnd::bits(k1701, {3}).to_vector<uint32_t>(), (U32{1111271205, 2679469115, 974515252}));
  X64 x64;
  EXPECT_EQ(rnd::bits(k0, {2}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{7719171245655871230ull, 3989946895414531357ull}));
  EXPECT_EQ(rnd::bits(k1701, {3}, uint64).to_vector<uint64_t>(),
            (std::vector<uint64_t>{3182764935064573181ull, 366096495144982249ull,
                                   241365115613244543ull}));
}

TEST(Partitionable, FoldInAndStatefulKeys) {
  for (bool p : {true, false}) {
    Mode mode(p);
    EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 4)), (U32{2285895361, 433833334}));
    EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 0)), (U32{1797259609, 2579123966}));
    EXPECT_EQ(words(rnd::fold_in(rnd::key(0), 1)), (U32{928981903, 3453687069}));
    EXPECT_EQ(words(rnd::fold_in(rnd::key(42), 4)), (U32{2954079971, 3276725750}));
    EXPECT_EQ(words(rnd::fold_in(rnd::key(42), 5)), (U32{2765691542, 824333390}));
  }
  Mode mode(true);
  const std::vector<float> want = {0.5302608f, 0.72766423f, 0.6672406f, 0.3890121f};
  for (int i = 0; i < 4; ++i) {
    EXPECT_EQ(rnd::uniform(rnd::fold_in(rnd::key(42), i)).item<float>(), want[size_t(i)]);
  }
}

// ---- §7 / §10.1(e, f, g, h), §10.3: uniform ----

TEST(Original, UniformBackCompatData) {
  Mode mode(false);
  Array a = rnd::uniform(numpy::array(U32{42, 43}), {2, 4});
  EXPECT_EQ(a.to_vector<float>(),
            (std::vector<float>{0.42591238f, 0.076994896f, 0.44370103f, 0.72904015f, 0.17879379f,
                                0.81439507f, 0.0019190311f, 0.68608475f}));
  Array b = rnd::uniform(numpy::array(U32{0, 42}), {2, 4});
  EXPECT_EQ(b.to_vector<float>(),
            (std::vector<float>{0.6878003f, 0.599579f, 0.2652017f, 0.24115169f, 0.76292205f,
                                0.28484797f, 0.040389538f, 0.0032066107f}));
}

TEST(Original, UniformValues) {
  Mode mode(false);
  EXPECT_EQ(rnd::uniform(rnd::key(1338574713), {5}).to_vector<float>(),
            (std::vector<float>{0.29867148f, 0.07321286f, 0.87335575f, 0.26054883f, 0.41279662f}));
  EXPECT_EQ(rnd::uniform(rnd::key(0)).item<float>(), 0.41845703f);
  EXPECT_EQ(rnd::uniform(rnd::split(rnd::key(0))[1]).item<float>(), 0.10536897f);
  EXPECT_EQ(rnd::uniform(rnd::key(0), {3}).to_vector<float>(),
            (std::vector<float>{0.9653214f, 0.31468165f, 0.63302994f}));
  EXPECT_EQ(rnd::uniform(rnd::key(0), {5}).to_vector<float>(),
            floats_of_bits({0x3f131276, 0x3dcc2830, 0x3ec94c4c, 0x3f64e8de, 0x3f18b896}));
  EXPECT_EQ(rnd::uniform(rnd::key(7), {5}).to_vector<float>(),
            floats_of_bits({0x3d83dc90, 0x3e4d8250, 0x3f26847e, 0x3ec3b9ac, 0x3f2ce828}));
  expect_near_each(rnd::uniform(rnd::key(42), {3, 3}, float32, -5, 5).to_vector<float>(),
                   {1.44, -1.77, -3.07, 3.86, 2.25, -3.08, -1.55, -2.48, 1.32}, 0.005);
  expect_near_each(rnd::uniform(rnd::key(1), {3, 3}, float32, -5, 5).to_vector<float>(),
                   {2.55, -1.87, -3.76, 0.48, 3.85, -1.94, 3.2, 4.56, -1.43}, 0.005);
  expect_near_each(rnd::uniform(rnd::key(42), {3, 3}, float32, -10, 10).to_vector<float>(),
                   {2.88, -3.55, -6.13, 7.73, 4.49, -6.16, -3.1, -4.95, 2.64}, 0.005);
}

TEST(Partitionable, UniformValues) {
  Mode mode(true);
  EXPECT_EQ(rnd::uniform(rnd::key(0)).item<float>(), 0.947667f);
  auto subkey = rnd::split(rnd::key(0))[1];
  // Printed to 6 digits in JAX's docstring.
  EXPECT_NEAR(rnd::uniform(subkey).item<float>(), 0.00729382, 5e-9);
  EXPECT_EQ(rnd::uniform(rnd::key(0), {3}).to_vector<float>(),
            (std::vector<float>{0.947667f, 0.9785799f, 0.33229148f}));
  EXPECT_EQ(rnd::uniform(rnd::key(0), {5}).to_vector<float>(),
            floats_of_bits({0x3f729a4e, 0x3f7a8436, 0x3eaa221c, 0x3eeff550, 0x3f11e43a}));
  EXPECT_EQ(rnd::uniform(rnd::key(7), {5}).to_vector<float>(),
            floats_of_bits({0x3f2c9128, 0x3f79807e, 0x3e9b0e50, 0x3ee34e88, 0x3f3b1b62}));
  expect_near_each(rnd::uniform(rnd::key(42), {3, 3}, float32, -5, 5).to_vector<float>(),
                   {-0.11, 1.8, 1.16, 0.61, -0.49, 0.86, -4.25, 2.75, 1.99}, 0.005);
  expect_near_each(rnd::uniform(rnd::key(1), {3, 3}, float32, -5, 5).to_vector<float>(),
                   {-0.61, 0.34, -0.54, -0.62, 3.97, 0.59, 4.84, 3.42, -1.14}, 0.005);
  expect_near_each(rnd::uniform(rnd::key(42), {3, 3}, float32, -10, 10).to_vector<float>(),
                   {-0.23, 3.6, 2.33, 1.22, -0.99, 1.72, -8.5, 5.5, 3.98}, 0.005);
}

TEST(Uniform, RejectsNonFloatDtypes) {
  // JAX raises ValueError for both.
  EXPECT_THROW(rnd::uniform(rnd::key(0), {2}, int32), ValueError);
  EXPECT_THROW(rnd::bits(rnd::key(0), {2}, float32), ValueError);
}

// ---- §8 / §10.2, §10.3: normal ----

// Scalars and bit patterns are exact float32 values: compared exactly.
void expect_normal(const Array& got, const std::vector<float>& want) {
  const std::vector<float> g = got.to_vector<float>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_EQ(g[i], want[i]) << "index " << i << ": " << ulps(g[i], want[i]) << " ulp";
  }
}

// NumPy prints array elements as their shortest unique repr cut to at most 8 fractional
// digits (its precision option): the printed decimal is the float itself, or, where the
// repr is longer, the float rounded to 8 decimals.
void expect_printed(const Array& got, const std::vector<double>& want) {
  const std::vector<float> g = got.to_vector<float>();
  ASSERT_EQ(g.size(), want.size());
  for (size_t i = 0; i < g.size(); ++i) {
    EXPECT_TRUE(g[i] == float(want[i]) || std::abs(double(g[i]) - want[i]) <= 5e-9)
        << "index " << i << ": " << g[i] << " vs " << want[i];
  }
}

TEST(Partitionable, NormalValues) {
  Mode mode(true);
  expect_normal(rnd::normal(rnd::key(42)), {-0.028304616f});
  rnd::Key k = rnd::key(42);
  std::vector<float> chain;
  for (int i = 0; i < 3; ++i) {
    rnd::Key keys = rnd::split(k);
    k = keys[0];
    chain.push_back(rnd::normal(keys[1]).item<float>());
  }
  EXPECT_EQ(chain,
            (std::vector<float>{0.6057640314102173f, -0.21089035272598267f, -0.3948981463909149f}));
  rnd::Key three = rnd::split(rnd::key(42), 3);
  std::vector<float> each;
  for (int i = 0; i < 3; ++i) each.push_back(rnd::normal(three[i]).item<float>());
  // A printed list of scalars: shortest reprs, so exact.
  EXPECT_EQ(each, (std::vector<float>{0.07592554f, 0.60576403f, 0.4323065f}));
  expect_printed(rnd::normal(rnd::key(42), {3}), {-0.02830462, 0.46713185, 0.29570296});
  expect_printed(rnd::normal(rnd::PRNGKey(42), {2, 3}),
                 {-0.02830462, 0.46713185, 0.29570296, 0.15354592, -0.12403282, 0.21692315});
  expect_printed(rnd::normal(rnd::key(0), {24}),
                 {1.6226422,   2.0252647,  -0.43359444, -0.07861735, 0.1760909,  -0.97208923,
                  -0.49529874, 0.4943786,  0.6643493,   -0.9501635,  2.1795304,  -1.9551506,
                  0.35857072,  0.15779513, 1.2770847,   1.5104648,   0.970656,   0.59960806,
                  0.0247007,   -1.9164772, -1.8593491,  1.728144,    0.04719035, 0.814128});
  expect_printed(rnd::normal(rnd::key(1), {4, 4}),
                 {-0.15443718, 0.08470728, -0.13598049, -0.15503626, 1.2666674, 0.14829758,
                  2.1415603, 1.0026742, -0.29033586, 0.3583448, -0.70792735, -0.24555527, 0.8855825,
                  0.7861191, 0.88892716, 0.54932535});
  expect_normal(rnd::normal(rnd::key(0), {5}),
                floats_of_bits({0x3fcfb2bd, 0x40019df0, 0xbede0017, 0xbda10222, 0x3e34512c}));
  expect_normal(rnd::normal(rnd::key(42), {5}),
                floats_of_bits({0xbce7df15, 0x3eef2be8, 0x3e976661, 0x3e1d3b24, 0xbdfe04eb}));
}

TEST(Original, NormalValues) {
  Mode mode(false);
  expect_normal(rnd::normal(rnd::PRNGKey(0)), {-0.20584226f});
  expect_printed(rnd::normal(rnd::PRNGKey(0), {10}),
                 {-0.3721109, 0.26423115, -0.18252768, -0.7368197, -0.44030377, -0.1521442,
                  -0.67135346, -0.5908641, 0.73168886, 0.5673026});
  expect_printed(rnd::normal(rnd::key(0), {3, 3}),
                 {-0.3721109, 0.26423115, -0.18252768, -0.7368197, 0.44973662, -0.1521442,
                  -0.67135346, -0.5908641, 0.73168886});
  expect_printed(rnd::normal(rnd::PRNGKey(0), {3, 2}),
                 {0.18784384, -1.2833426, 0.6494181, 1.2490594, 0.24447003, -0.11744965});
  expect_normal(rnd::normal(rnd::key(0), {5}),
                floats_of_bits({0x3e405a23, 0xbfa44492, 0xbe8acc88, 0x3f9fe12e, 0x3e7a565a}));
  expect_normal(rnd::normal(rnd::key(42), {5}),
                floats_of_bits({0x3f1cbd6a, 0x3f8fb0f9, 0xbf5abad6, 0xbf500f3d, 0xbf63f195}));
  expect_near_each(rnd::normal(rnd::key(1193674498), {5}).to_vector<float>(),
                   {-1.173234, -1.511662, 0.070593, -0.099764, 1.052845}, 1e-6);
}

TEST(Normal, StatisticsAndHalfTypes) {
  std::vector<float> v = rnd::normal(rnd::key(3), {20000}).to_vector<float>();
  double mean = 0, sq = 0;
  for (float x : v) mean += x, sq += double(x) * x;
  mean /= double(v.size());
  EXPECT_NEAR(mean, 0.0, 0.03);
  EXPECT_NEAR(sq / double(v.size()), 1.0, 0.05);
  Array h = rnd::normal(rnd::key(0), {4}, float16);
  EXPECT_EQ(h.dtype(), float16);
  Array b = rnd::bernoulli(rnd::key(0), 0.5, Shape{1000});
  EXPECT_EQ(b.dtype(), bool_);
  const auto bv = b.to_vector<bool>();
  const auto ones = std::count(bv.begin(), bv.end(), true);
  EXPECT_GT(ones, 400);
  EXPECT_LT(ones, 600);
}

// ---- shard-local partitionable draws ----

std::vector<uint32_t> drawn(const Sharding& s, const Shape& shape) {
  JitOptions options;
  options.out_shardings = {s};
  auto f = jit([shape](const rnd::Key& k) { return rnd::bits(k, shape); }, options);
  return f(rnd::key(1234)).to_vector<uint32_t>();
}

TEST(Sharded, SameBitsForAnyShardCount) {
  for (bool p : {true, false}) {
    Mode mode(p);
    for (const Shape& shape : {Shape{16, 8}, Shape{8, 24}, Shape{24, 16}}) {
      const U32 want = rnd::bits(rnd::key(1234), shape).to_vector<uint32_t>();
      for (int64_t n : {1, 2, 4, 8}) {
        Mesh mesh = make_mesh({n}, {"x"});
        EXPECT_EQ(drawn(NamedSharding(mesh, P("x")), shape), want) << n << " shards, rows";
        EXPECT_EQ(drawn(NamedSharding(mesh, P(None, "x")), shape), want) << n << " shards, cols";
      }
      Mesh mesh2 = make_mesh({4, 2}, {"a", "b"});
      EXPECT_EQ(drawn(NamedSharding(mesh2, P("a", "b")), shape), want);
      EXPECT_EQ(drawn(NamedSharding(mesh2, P("b", "a")), shape), want);
    }
  }
}

TEST(Batched, VmapOverKeysDrawsEachKeysBitsInOneCall) {
  for (bool p : {true, false}) {
    Mode mode(p);
    const rnd::Key keys = rnd::split(rnd::key(7), 8);
    auto draw = [](const rnd::Key& k) { return rnd::bits(k, {4, 6}); };
    Array all = vmap(draw)(keys);
    ASSERT_EQ(all.shape(), (Shape{8, 4, 6}));
    for (int64_t k = 0; k < 8; ++k) {
      EXPECT_EQ(all[k].to_vector<uint32_t>(), draw(keys[k]).to_vector<uint32_t>()) << k;
    }
    // One random_bits over the batch of keys, not one per key.
    const std::string jaxpr = make_jaxpr(vmap(draw))(keys).to_string();
    EXPECT_EQ(jaxpr.find("random_bits"), jaxpr.rfind("random_bits")) << jaxpr;
    // The keys split over 'a' and each draw over 'b': the same bits, drawn locally.
    Mesh mesh = make_mesh({4, 2}, {"a", "b"});
    const rnd::Key placed = device_put(keys, NamedSharding(mesh, P("a")));
    auto sharded = jit([&](const rnd::Key& k) {
      return lax::with_sharding_constraint(vmap(draw)(k),
                                           NamedSharding(mesh, p ? P("a", "b") : P("a")));
    });
    EXPECT_EQ(sharded(placed).to_vector<uint32_t>(), all.to_vector<uint32_t>());
    const std::string text = sharded.lower(placed).compile().as_text();
    EXPECT_EQ(text.find("all-"), std::string::npos) << text;
  }
}

TEST(Sharded, PartitionableDrawHasNoCollective) {
  Mode mode(true);
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  auto f = jit([&](const rnd::Key& k, const Array& x) {
    Array u = rnd::uniform(k, x.shape());
    u = lax::with_sharding_constraint(u, NamedSharding(mesh, P("a", "b")));
    return x + u;
  });
  Array x = device_put(numpy::zeros({64, 32}), NamedSharding(mesh, P("a", "b")));
  const std::string text = f.lower(rnd::key(0), x).compile().as_text();
  for (const char* c : {"all-", "reduce-scatter", "collective-permute"}) {
    EXPECT_EQ(text.find(c), std::string::npos) << c << " in\n" << text;
  }
  EXPECT_NE(text.find("random_bits"), std::string::npos) << text;
  Array y = f(rnd::key(0), x);
  EXPECT_EQ(y.to_vector<float>(), rnd::uniform(rnd::key(0), {64, 32}).to_vector<float>());
  EXPECT_EQ(y.sharding().to_string(), NamedSharding(mesh, P("a", "b")).to_string());
}

// ---- randint, truncated_normal, permutation, choice and uniform over a range against
// tests/golden/random_cases.txt (tools/make_random_goldens.py, JAX 0.10.2 on CPU) ----

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("random_cases.txt"));
  return *records;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

struct Sampler {
  std::string name;
  std::function<Array()> draw;
};

// The inputs of the golden script.
Array a2d() { return numpy::reshape(numpy::arange(12, float32) * 0.5, {4, 3}); }
Array a65() { return numpy::reshape(numpy::arange(30, int32), {6, 5}); }
Array p5() { return numpy::array({0.1f, 0.2f, 0.3f, 0.25f, 0.15f}); }
Array p10() {
  return numpy::array({0.05f, 0.0f, 0.2f, 0.1f, 0.15f, 0.05f, 0.1f, 0.2f, 0.05f, 0.1f});
}
Array p300() {
  std::vector<float> p;
  for (int i = 0; i < 300; ++i) p.push_back(float((i % 7 + 0.5) / 1000.0));
  return numpy::array(p);
}

std::vector<Sampler> samplers() {
  using rnd::key;
  const Array f3 = numpy::array({-1.0f, 0.0f, 1.0f});
  return {
      {"randint_3x3",
       [] {
         return rnd::randint(key(0), {3, 3}, 0, 8);
       }},
      {"randint_neg", [] { return rnd::randint(key(42), {10}, -5, 5); }},
      {"randint_bcast",
       [] {
         return rnd::randint(key(1), {2, 5}, numpy::array({0, 10, 100, 1000, -50}), 2000);
       }},
      {"randint_big", [] { return rnd::randint(key(3), {1000}, 0, 7); }},
      {"randint_u8_256", [] { return rnd::randint(key(5), {20}, 0, 256, uint8); }},
      {"randint_i8_full", [] { return rnd::randint(key(6), {20}, -128, 128, int8); }},
      {"randint_empty_range", [] { return rnd::randint(key(7), {5}, 5, 3); }},
      {"randint_i16", [] { return rnd::randint(key(8), {10}, -1000, 1000, int16); }},
      {"randint_i32_full",
       [] { return rnd::randint(key(9), {10}, int64_t(INT32_MIN), int64_t(INT32_MAX)); }},
      {"randint_floats", [] { return rnd::randint(key(10), {6}, 1.7, 9.9); }},
      {"randint_u32",
       [] {
         return rnd::randint(key(11), {10}, numpy::array(uint32_t(0)),
                             numpy::array(uint32_t(4000000000u)), uint32);
       }},
      {"randint_u16", [] { return rnd::randint(key(12), {10}, 100, 70000, uint16); }},
      {"randint_scalar", [] { return rnd::randint(key(13), {}, 0, 100); }},
      {"randint_u8_small", [] { return rnd::randint(key(14), {17}, 3, 9, uint8); }},
      {"randint_i8_clip", [] { return rnd::randint(key(15), {12}, -1000, 1000, int8); }},
      {"randint_u8_top", [] { return rnd::randint(key(16), {5}, 255, 256, uint8); }},
      {"randint_i8_reversed", [] { return rnd::randint(key(17), {4}, 10, -10, int8); }},
      {"randint_i8_bcast",
       [] {
         return rnd::randint(key(18), {2, 3}, numpy::array({-128, 0, 100}, Shape{3}, int8),
                             numpy::array({5, 127}, Shape{2, 1}), int8);
       }},
      {"randint_u16_wrapped_bounds",
       [] {
         return rnd::randint(key(19), {6}, numpy::array(uint32_t(4000000000u)),
                             numpy::array(uint32_t(4000000100u)), uint16);
       }},
      {"randint_i16_float_bounds", [] { return rnd::randint(key(20), {7}, -1e10, 2.5, int16); }},
      {"randint_u16_neg_float", [] { return rnd::randint(key(21), {5}, -3.7, 4.9, uint16); }},
      {"randint_u8_bool_bounds", [] { return rnd::randint(key(22), {5}, false, true, uint8); }},
      {"randint_i16_big",
       [] {
         return rnd::randint(key(23), {3, 5}, -32768, 32768, int16);
       }},
      {"randint_vmap_i8",
       [] {
         return vmap([](const rnd::Key& k) { return rnd::randint(k, {5}, -20, 20, int8); })(
             rnd::split(key(24), 3));
       }},
      {"randint_vmap_u16_bounds",
       [] {
         auto f = [](const rnd::Key& k, const Array& lo) {
           return rnd::randint(k, {4}, lo, 1000, uint16);
         };
         return vmap(f)(rnd::split(key(25), 3), numpy::array({0, 500, 999}));
       }},
      {"randint_vmap_i32",
       [] {
         return vmap([](const rnd::Key& k) { return rnd::randint(k, {3}, 0, 100); })(
             rnd::split(key(26), 4));
       }},
      {"randint_vmap_u32",
       [] {
         auto f = [](const rnd::Key& k) {
           return rnd::randint(k, {2, 2}, numpy::array(uint32_t(7)),
                               numpy::array(uint32_t(3000000000u)), uint32);
         };
         return vmap(f)(rnd::split(key(27), 2));
       }},
      {"randint_i32_u32_bound",
       [] { return rnd::randint(key(29), {6}, -5, numpy::array(uint32_t(3000000000u)), int32); }},
      {"randint_jit_u8",
       [] {
         return jit([](const rnd::Key& k) { return rnd::randint(k, {9}, 0, 200, uint8); })(key(28));
       }},
      {"tn_5", [] { return rnd::truncated_normal(key(0), -1.5, 2.0, Shape{5}); }},
      {"tn_1000", [] { return rnd::truncated_normal(key(1), -2.0, 2.0, Shape{1000}); }},
      {"tn_lower_array", [f3] { return rnd::truncated_normal(key(2), f3, 3.0); }},
      {"tn_bcast",
       [f3] {
         return rnd::truncated_normal(key(3), f3, numpy::array({2.0f, 4.0f}, Shape{2, 1}),
                                      Shape{2, 3});
       }},
      {"tn_tail", [] { return rnd::truncated_normal(key(4), 3.0, 5.0, Shape{500}); }},
      {"tn_infinite",
       [] { return rnd::truncated_normal(key(5), -INFINITY, INFINITY, Shape{200}); }},
      {"tn_point", [] { return rnd::truncated_normal(key(6), 1.0, 1.0, Shape{3}); }},
      {"tn_scalar", [] { return rnd::truncated_normal(key(7), -1.0, 1.0); }},
      {"perm_int", [] { return rnd::permutation(key(0), 10); }},
      {"perm_1d", [] { return rnd::permutation(key(1), numpy::arange(20, float32) * 0.5); }},
      {"perm_2d_axis0", [] { return rnd::permutation(key(2), a65()); }},
      {"perm_2d_axis1", [] { return rnd::permutation(key(2), a65(), 1); }},
      {"perm_2d_axis_neg", [] { return rnd::permutation(key(2), a65(), -1); }},
      {"perm_2d_independent", [] { return rnd::permutation(key(3), a65(), 1, true); }},
      {"perm_two_rounds", [] { return rnd::permutation(key(4), 2000); }},
      {"perm_independent_two_rounds",
       [] {
         return rnd::permutation(key(5), numpy::reshape(numpy::arange(2100, int32), {3, 700}), 1,
                                 true);
       }},
      {"perm_one", [] { return rnd::permutation(key(6), 1); }},
      {"perm_empty", [] { return rnd::permutation(key(6), numpy::zeros({0})); }},
      {"choice_int", [] { return rnd::choice(key(0), 10, {5}); }},
      {"choice_1d",
       [] {
         return rnd::choice(key(1), numpy::arange(8, float32) * 1.5, {3, 2});
       }},
      {"choice_2d_axis0", [] { return rnd::choice(key(2), a2d(), {5}); }},
      {"choice_2d_axis1",
       [] {
         return rnd::choice(key(2), a2d(), {2, 2}, true, std::nullopt, 1);
       }},
      {"choice_scalar_draw", [] { return rnd::choice(key(3), 7); }},
      {"choice_no_replace", [] { return rnd::choice(key(4), 10, {5}, false); }},
      {"choice_no_replace_2d",
       [] {
         return rnd::choice(key(5), a65(), {2, 2}, false);
       }},
      {"choice_no_replace_axis1",
       [] { return rnd::choice(key(5), a65(), {3}, false, std::nullopt, 1); }},
      {"choice_p", [] { return rnd::choice(key(6), 5, {20}, true, p5()); }},
      {"choice_p_2d_axis1", [] { return rnd::choice(key(7), a65(), {4}, true, p5(), 1); }},
      {"choice_p_long", [] { return rnd::choice(key(8), 300, {1000}, true, p300()); }},
      {"choice_p_no_replace", [] { return rnd::choice(key(9), 10, {4}, false, p10()); }},
      {"choice_p_int_no_replace",
       [] {
         return rnd::choice(key(10), numpy::arange(4) * 10, {3}, false, numpy::array({1, 2, 3, 4}));
       }},
      {"choice_p_no_replace_2d",
       [] {
         return rnd::choice(key(11), a65(), {2}, false,
                            numpy::array({0.1f, 0.3f, 0.2f, 0.1f, 0.2f, 0.1f}));
       }},
      {"choice_none", [] { return rnd::choice(key(12), 5, {0}); }},
      {"choice_p_no_replace_long",
       [] { return rnd::choice(key(13), 200, {50}, false, lax::slice(p300(), {0}, {200})); }},
      {"normal_2000", [] { return rnd::normal(key(1), {2000}); }},
      {"uniform_range", [] { return rnd::uniform(key(42), {1000}, float32, -5.0, 5.0); }},
      {"uniform_range_array",
       [] {
         return rnd::uniform(key(43), {2, 3}, float32, numpy::array({-1.0f, 0.5f, 2.0f}), 10.0);
       }},
  };
}

// Compares x with a `dtype|shape|values` record, exactly: floats too, since parax rounds
// where XLA:CPU does (its FMAs, erf, erf_inv's log1p, cumsum's order; see random.cpp).
// The FMAs are emulated in float64, which could in theory double-round (about 2^-29 of
// values); no golden value hits that.
void expect_golden(const std::string& name, const Array& x) {
  const auto it = goldens().find(name);
  ASSERT_NE(it, goldens().end()) << "no golden for " << name;
  const std::vector<std::string> parts = split_on(it->second, '|');
  ASSERT_EQ(parts.size(), 3u) << name;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  Shape shape;
  if (!parts[1].empty()) {
    for (const std::string& d : split_on(parts[1], ',')) shape.push_back(std::stoll(d));
  }
  EXPECT_EQ(x.shape(), shape) << name;
  const std::vector<std::string> want =
      parts[2].empty() ? std::vector<std::string>{} : split_on(parts[2], ',');
  ASSERT_EQ(size_t(x.size()), want.size()) << name;
  if (is_floating(x.dtype())) {
    const std::vector<float> got = x.to_vector<float>();
    for (size_t i = 0; i < got.size(); ++i) {
      const float w = float(std::stod(want[i]));
      EXPECT_EQ(got[i], w) << name << "[" << i << "]: " << ulps(got[i], w) << " ulp";
    }
  } else if (x.dtype() == uint64) {
    const std::vector<uint64_t> got = x.to_vector<uint64_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], std::stoull(want[i])) << name << "[" << i << "]";
    }
  } else {
    const std::vector<int64_t> got = x.to_vector<int64_t>();
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(got[i], std::stoll(want[i])) << name << "[" << i << "]";
    }
  }
}

TEST(Samplers, MatchJaxInBothModes) {
  for (bool p : {true, false}) {
    Mode mode(p);
    for (const Sampler& s : samplers()) expect_golden((p ? "p/" : "o/") + s.name, s.draw());
  }
}

TEST(Samplers, MatchJaxWithX64) {
  X64 x64;
  for (bool p : {true, false}) {
    Mode mode(p);
    const std::string m = p ? "x64/p/" : "x64/o/";
    expect_golden(m + "randint_i64", rnd::randint(rnd::key(0), {3, 3}, 0, 8, int64));
    expect_golden(m + "randint_i64_wide",
                  rnd::randint(rnd::key(1), {6}, -(int64_t(1) << 40), int64_t(1) << 40, int64));
    expect_golden(m + "perm_int", rnd::permutation(rnd::key(0), 10));
    const auto u64 = [](uint64_t v) { return numpy::array(v); };
    expect_golden(m + "randint_u64",
                  rnd::randint(rnd::key(2), {6}, u64(0), u64(~uint64_t(0)), uint64));
    expect_golden(m + "randint_u64_top", rnd::randint(rnd::key(3), {4}, u64(uint64_t(1) << 63),
                                                      u64(~uint64_t(0)), uint64));
    expect_golden(m + "randint_i8", rnd::randint(rnd::key(4), {10}, -100, 100, int8));
    expect_golden(
        m + "randint_i8_wrapped_bounds",
        rnd::randint(rnd::key(5), {6}, -(int64_t(1) << 40), (int64_t(1) << 40) + 7, int8));
    expect_golden(m + "randint_u16", rnd::randint(rnd::key(6), {8}, 0, 70000, uint16));
    expect_golden(m + "randint_i32", rnd::randint(rnd::key(7), {5}, -7, 7, int32));
    expect_golden(m + "randint_u32_full",
                  rnd::randint(rnd::key(8), {5}, 0, int64_t(1) << 32, uint32));
    expect_golden(m + "randint_default", rnd::randint(rnd::key(9), {5}, 0, 10));
    expect_golden(m + "randint_vmap_i16", vmap([](const rnd::Key& k) {
                    return rnd::randint(k, {3}, -5, 5, int16);
                  })(rnd::split(rnd::key(10), 2)));
    const int64_t big = int64_t(1) << 40;
    expect_golden(m + "randint_vmap_i64", vmap([big](const rnd::Key& k) {
                    return rnd::randint(k, {3}, -big, big);
                  })(rnd::split(rnd::key(11), 2)));
  }
}

// testPRNGValues' randint, asserted by JAX's own tests (ORIGINAL mode).
TEST(Original, RandintPrngValues) {
  Mode mode(false);
  EXPECT_EQ(rnd::randint(rnd::key(0), {3, 3}, 0, 8).to_vector<int32_t>(),
            (std::vector<int32_t>{2, 1, 3, 6, 1, 5, 6, 3, 4}));
  // _RANDOM_VALUES_CASES' randint, key(adler32("randintthreefry2x32")) (still JAX 0.10.2's).
  EXPECT_EQ(rnd::randint(rnd::key(1319372649), {5}, 0, 10, int32).to_vector<int32_t>(),
            (std::vector<int32_t>{0, 5, 7, 7, 5}));
  X64 x64;
  EXPECT_EQ(rnd::randint(rnd::key(0), {3, 3}, 0, 8, int64).to_vector<int64_t>(),
            (std::vector<int64_t>{7, 2, 6, 2, 1, 0, 6, 7, 7}));
}

// JAX's test_randint_bounds, test_randint_out_of_range and test_randint_narrow_int_bias
// (tests/random_lax_test.py) for 8- and 16-bit dtypes, in both modes.
TEST(Samplers, RandintNarrowDtypes) {
  for (bool p : {true, false}) {
    Mode mode(p);
    for (DType t : {int8, uint8, int16, uint16}) {
      const bool is_signed = t == int8 || t == int16;
      const int64_t bits = t == int8 || t == uint8 ? 8 : 16;
      const int64_t lo = is_signed ? -(int64_t(1) << (bits - 1)) : 0;
      const int64_t hi = lo + (int64_t(1) << bits) - 1;
      // Bounds beyond the dtype clip to it, maxval to one past the top.
      EXPECT_EQ(rnd::randint(rnd::key(1701), {10}, lo - 12345, hi + 12345, t).to_string(),
                rnd::randint(rnd::key(1701), {10}, lo, hi + 1, t).to_string())
          << dtype_name(t);
      // The modulo over 64 bits of int32 draws leaves no visible bias.
      const std::vector<int64_t> data =
          rnd::randint(rnd::key(7534892), {100000}, 0, 100, t).to_vector<int64_t>();
      std::vector<int64_t> counts(100);
      for (int64_t v : data) counts[size_t(v)]++;
      for (size_t b = 0; b < counts.size(); ++b) {
        EXPECT_NEAR(counts[b], 1000, 150) << dtype_name(t) << " bin " << b;
      }
    }
    EXPECT_EQ(rnd::randint(rnd::key(0), {10}, 255, 256, uint8).to_vector<int64_t>(),
              std::vector<int64_t>(10, 255));
    const std::vector<int64_t> full =
        rnd::randint(rnd::key(0), {1000}, -128, 128, int8).to_vector<int64_t>();
    EXPECT_NE(std::count(full.begin(), full.end(), -128), 0);
    EXPECT_NE(std::count(full.begin(), full.end(), 127), 0);
    const std::vector<int64_t> clipped =
        rnd::randint(rnd::key(0), {1000}, -1000, 1000, uint8).to_vector<int64_t>();
    EXPECT_NE(std::count(clipped.begin(), clipped.end(), 0), 0);
    EXPECT_NE(std::count(clipped.begin(), clipped.end(), 255), 0);
  }
}

TEST(Samplers, ErrorsAsJax) {
  using rnd::key;
  const std::map<std::string, std::function<void()>> cases = {
      {"choice_empty_population", [] { rnd::choice(key(0), 0, {3}); }},
      {"choice_too_many", [] { rnd::choice(key(0), 3, {5}, false); }},
      {"choice_too_many_2d",
       [] {
         rnd::choice(key(0), a65(), {2, 4}, false);
       }},
      {"choice_bad_p", [] { rnd::choice(key(0), 5, {2}, true, numpy::ones({4}) / 4); }},
      {"choice_bad_p_2d",
       [] {
         rnd::choice(key(0), a2d(), {2}, true, numpy::ones({2, 2}) / 4, 1);
       }},
      {"choice_bad_axis", [] { rnd::choice(key(0), a2d(), {2}, true, std::nullopt, 2); }},
      {"permutation_float_scalar", [] { rnd::permutation(key(0), 2.5); }},
      {"permutation_bad_axis", [] { rnd::permutation(key(0), a65(), 2); }},
      {"randint_float_dtype", [] { rnd::randint(key(0), {2}, 0, 5, float32); }},
      {"randint_bool_dtype", [] { rnd::randint(key(0), {2}, 0, 2, bool_); }},
      {"randint_float_dtype_bad_shape",
       [] { rnd::randint(key(0), {2}, numpy::zeros({3}, int32), 5, float32); }},
      {"randint_i8_bad_shape",
       [] { rnd::randint(key(0), {2}, numpy::zeros({3}, int32), 5, int8); }},
      {"randint_bad_shape",
       [] {
         rnd::randint(key(0), {2}, numpy::zeros({3, 2}, int32), 5);
       }},
      {"randint_incompatible", [] { rnd::randint(key(0), {2}, numpy::zeros({3}, int32), 5); }},
      {"truncated_normal_int_dtype",
       [] { rnd::truncated_normal(key(0), -1.0, 1.0, Shape{2}, int32); }},
      {"truncated_normal_bad_shape",
       [] { rnd::truncated_normal(key(0), numpy::zeros({3}), 1.0, Shape{2}); }},
  };
  for (const auto& [name, f] : cases) {
    EXPECT_EQ(testing::error_record_of(f), goldens().at("err/" + name)) << name;
  }
  EXPECT_THROW(rnd::choice(rnd::split(rnd::key(0)), 5, {2}), ValueError);
}

// Each sampler traced by jit gives the eager draws, in both modes.
TEST(Samplers, JitMatchesEager) {
  for (bool p : {true, false}) {
    Mode mode(p);
    auto f = jit([](const rnd::Key& k, const Array& a, const Array& probs) {
      return std::vector<Array>{
          rnd::randint(k, {7}, -3, 9),
          rnd::randint(k, {5}, -300, 70000, uint16),
          rnd::truncated_normal(k, -1.0, 2.5, Shape{6}),
          rnd::permutation(k, a, 1),
          rnd::permutation(k, a, 1, true),
          rnd::choice(k, a, {4}, true, std::nullopt, 1),
          rnd::choice(k, a, {2}, false),
          rnd::choice(k, a, {3}, true, probs, 1),
          rnd::choice(k, a, {3}, false, probs, 1),
      };
    });
    const rnd::Key k = rnd::key(17);
    const Array a = a65();
    const std::vector<Array> jitted = f(k, a, p5());
    const std::vector<Array> eager = {
        rnd::randint(k, {7}, -3, 9),
        rnd::randint(k, {5}, -300, 70000, uint16),
        rnd::truncated_normal(k, -1.0, 2.5, Shape{6}),
        rnd::permutation(k, a, 1),
        rnd::permutation(k, a, 1, true),
        rnd::choice(k, a, {4}, true, std::nullopt, 1),
        rnd::choice(k, a, {2}, false),
        rnd::choice(k, a, {3}, true, p5(), 1),
        rnd::choice(k, a, {3}, false, p5(), 1),
    };
    ASSERT_EQ(jitted.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(jitted[i].shape(), eager[i].shape()) << i;
      EXPECT_EQ(jitted[i].to_string(), eager[i].to_string()) << i;
    }
  }
}

// Draws laid out over 8 devices, and samples of a sharded population, equal the
// single-device ones.
TEST(Sharded, SamplersMatchUnsharded) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const NamedSharding rows(mesh, P("a"));
  for (bool p : {true, false}) {
    Mode mode(p);
    const rnd::Key k = rnd::key(99);
    JitOptions options;
    options.out_shardings = {NamedSharding(mesh, P("a", "b"))};
    auto draw = jit(
        [](const rnd::Key& key) {
          const Array r = rnd::randint(key, {16, 8}, 0, 1000);
          const Array r8 = rnd::randint(key, {16, 8}, -100, 100, int8);
          return lax::add(
              lax::convert_element_type(lax::add(r, lax::convert_element_type(r8, int32)), float32),
              rnd::truncated_normal(key, -2.0, 2.0, Shape{16, 8}));
        },
        options);
    const Array r = rnd::randint(k, {16, 8}, 0, 1000);
    const Array r8 = rnd::randint(k, {16, 8}, -100, 100, int8);
    const Array want = lax::add(
        lax::convert_element_type(lax::add(r, lax::convert_element_type(r8, int32)), float32),
        rnd::truncated_normal(k, -2.0, 2.0, Shape{16, 8}));
    const Array got = draw(k);
    EXPECT_EQ(got.to_vector<float>(), want.to_vector<float>());
    EXPECT_EQ(got.sharding().to_string(), NamedSharding(mesh, P("a", "b")).to_string());

    const Array x = numpy::reshape(numpy::arange(64 * 3, float32), {64, 3});
    const Array xs = device_put(x, rows);
    EXPECT_EQ(rnd::permutation(k, xs).to_vector<float>(),
              rnd::permutation(k, x).to_vector<float>());
    EXPECT_EQ(rnd::choice(k, xs, {5}).to_vector<float>(),
              rnd::choice(k, x, {5}).to_vector<float>());
    EXPECT_EQ(rnd::choice(k, xs, {5}, false).to_vector<float>(),
              rnd::choice(k, x, {5}, false).to_vector<float>());
  }
}

// Statistical sanity beyond the goldens: ranges, uniqueness and frequencies.
TEST(Samplers, Distributions) {
  const std::vector<int32_t> r = rnd::randint(rnd::key(0), {5000}, -3, 4).to_vector<int32_t>();
  std::map<int32_t, int> counts;
  for (int32_t v : r) counts[v]++;
  EXPECT_EQ(counts.size(), 7u);
  for (const auto& [v, c] : counts) EXPECT_NEAR(c, 5000 / 7, 120) << v;
  const std::vector<float> t =
      rnd::truncated_normal(rnd::key(1), -0.5, 1.5, Shape{5000}).to_vector<float>();
  for (float v : t) {
    EXPECT_GT(v, -0.5f);
    EXPECT_LT(v, 1.5f);
  }
  std::vector<int32_t> perm = rnd::permutation(rnd::key(2), 3000).to_vector<int32_t>();
  std::sort(perm.begin(), perm.end());
  for (int32_t i = 0; i < 3000; ++i) EXPECT_EQ(perm[size_t(i)], i);
  const std::vector<int32_t> c =
      rnd::choice(rnd::key(3), 4, {8000}, true, numpy::array({0.1f, 0.2f, 0.3f, 0.4f}))
          .to_vector<int32_t>();
  std::vector<int> freq(4);
  for (int32_t v : c) freq[size_t(v)]++;
  for (int i = 0; i < 4; ++i) EXPECT_NEAR(freq[size_t(i)], 800 * (i + 1), 150) << i;
}

// A 64-bit dtype given to a sampler is honoured with x64 off (README, "dtypes"; the header's
// rule for every sampler), drawing the values JAX draws with x64 on. JAX 0.4.35 instead
// truncates it to the 32-bit type with a UserWarning ("Explicitly requested dtype ... is not
// available, and will be truncated to dtype ...").
using Draws = std::vector<std::pair<std::string, std::function<Array()>>>;

void expect_same_with_x64_off_and_on(const Draws& draws) {
  // Raw 64-bit words: equal draws are equal bit for bit (NaN included).
  auto words64 = [](const Array& x) {
    if (x.dtype() != DType::float64) return x.to_vector<uint64_t>();
    std::vector<uint64_t> out;
    for (double v : x.to_vector<double>()) out.push_back(std::bit_cast<uint64_t>(v));
    return out;
  };
  for (bool partitionable : {true, false}) {
    Mode mode(partitionable);
    for (const auto& [name, draw] : draws) {
      SCOPED_TRACE(name + (partitionable ? " (partitionable)" : " (original)"));
      const Array off = draw();
      std::vector<uint64_t> on;
      DType on_dtype;
      {
        X64 x64;
        const Array x = draw();
        on = words64(x);
        on_dtype = x.dtype();
      }
      EXPECT_EQ(off.dtype(), on_dtype);
      EXPECT_EQ(dtype_itemsize(off.dtype()), 8);
      EXPECT_EQ(words64(off), on);
    }
  }
}

TEST(Samplers, GivenSixtyFourBitDtypeIgnoresX64) {
  const DType f64 = DType::float64;
  const DType i64 = DType::int64;
  const Shape s = {6};
  const rnd::Key k = rnd::key(42);
  const Array alpha = numpy::array({0.3f, 1.7f, 4.1f});
  const Array mean = numpy::array({0.5f, -1.25f});
  const Array cov = numpy::array({{2.0f, 0.3f}, {0.3f, 1.1f}});
  expect_same_with_x64_off_and_on({
      {"bits", [&] { return rnd::bits(k, s, DType::uint64); }},
      {"normal", [&] { return rnd::normal(k, s, f64); }},
      {"randint", [&] { return rnd::randint(k, s, -3, 1000003, i64); }},
      {"randint_wide", [&] { return rnd::randint(k, s, 0, int64_t(1) << 40, i64); }},
      {"randint_u64", [&] { return rnd::randint(k, s, 5, 77, DType::uint64); }},
      {"dirichlet", [&] { return rnd::dirichlet(k, alpha, Shape{2}, f64); }},
      {"exponential", [&] { return rnd::exponential(k, s, f64); }},
      {"gumbel_low", [&] { return rnd::gumbel(k, s, f64, "low"); }},
      {"gumbel_high", [&] { return rnd::gumbel(k, s, f64, "high"); }},
      {"laplace", [&] { return rnd::laplace(k, s, f64); }},
      {"logistic", [&] { return rnd::logistic(k, s, f64); }},
      {"cauchy", [&] { return rnd::cauchy(k, s, f64); }},
      {"rademacher", [&] { return rnd::rademacher(k, s, i64); }},
      {"maxwell", [&] { return rnd::maxwell(k, s, f64); }},
      {"multivariate_normal",
       [&] { return rnd::multivariate_normal(k, mean, cov, Shape{3}, f64); }},
      {"orthogonal", [&] { return rnd::orthogonal(k, 3, {}, f64); }},
      {"poisson", [&] { return rnd::poisson(k, 3.3, s, i64); }},
      {"poisson_large", [&] { return rnd::poisson(k, 23.3, s, i64); }},
      {"generalized_normal_p_1_3", [&] { return rnd::generalized_normal(k, 1.3, s, f64); }},
      {"ball_p_1_3", [&] { return rnd::ball(k, 3, 1.3, Shape{2}, f64); }},
      // Parameters that float32 holds exactly.
      {"uniform", [&] { return rnd::uniform(k, s, f64, 0.25, 0.75); }},
      {"truncated_normal", [&] { return rnd::truncated_normal(k, -0.5, 1.5, s, f64); }},
      {"gamma", [&] { return rnd::gamma(k, 0.75, s, f64); }},
      {"loggamma", [&] { return rnd::loggamma(k, 2.5, s, f64); }},
      {"beta", [&] { return rnd::beta(k, 0.25, 1.25, s, f64); }},
      {"pareto", [&] { return rnd::pareto(k, 1.5, s, f64); }},
      {"t", [&] { return rnd::t(k, 2.5, s, f64); }},
      {"chisquare", [&] { return rnd::chisquare(k, 3.0, s, f64); }},
      {"f", [&] { return rnd::f(k, 2.0, 5.0, s, f64); }},
      {"double_sided_maxwell", [&] { return rnd::double_sided_maxwell(k, 0.25, 1.5, s, f64); }},
      {"weibull_min", [&] { return rnd::weibull_min(k, 1.5, 2.5, s, f64); }},
      {"generalized_normal", [&] { return rnd::generalized_normal(k, 1.5, s, f64); }},
      {"ball", [&] { return rnd::ball(k, 3, 1.5, Shape{2}, f64); }},
      {"triangular", [&] { return rnd::triangular(k, 0.125, 0.375, 0.875, s, f64); }},
      {"lognormal", [&] { return rnd::lognormal(k, 0.5, s, f64); }},
      {"geometric", [&] { return rnd::geometric(k, 0.25, s, i64); }},
      {"binomial", [&] { return rnd::binomial(k, 10.0, 0.25, s, f64); }},
      {"binomial_large", [&] { return rnd::binomial(k, 90.0, 0.25, s, f64); }},
      {"rayleigh", [&] { return rnd::rayleigh(k, 0.75, s, f64); }},
      {"wald", [&] { return rnd::wald(k, 1.5, s, f64); }},
  });
}

// The same with parameters given as C++ doubles that float32 cannot hold (0.7, 1.3): with
// x64 off a C++ double becomes a weak float32 array (numpy/operators.cpp, scalar_array), so
// these samplers compute with the rounded parameter where JAX with x64 computes with the
// double (geometric and binomial round to the same integers here). Disabled until weak
// literals keep their exact value.
TEST(Samplers, DISABLED_GivenSixtyFourBitDtypeIgnoresX64WithCppDoubleParameters) {
  const DType f64 = DType::float64;
  const DType i64 = DType::int64;
  const Shape s = {6};
  const rnd::Key k = rnd::key(42);
  expect_same_with_x64_off_and_on({
      {"uniform", [&] { return rnd::uniform(k, s, f64, 0.1, 0.7); }},
      {"truncated_normal", [&] { return rnd::truncated_normal(k, -0.3, 1.9, s, f64); }},
      {"gamma", [&] { return rnd::gamma(k, 0.7, s, f64); }},
      {"loggamma", [&] { return rnd::loggamma(k, 2.3, s, f64); }},
      {"beta", [&] { return rnd::beta(k, 0.3, 1.3, s, f64); }},
      {"pareto", [&] { return rnd::pareto(k, 1.3, s, f64); }},
      {"t", [&] { return rnd::t(k, 2.3, s, f64); }},
      {"chisquare", [&] { return rnd::chisquare(k, 3.1, s, f64); }},
      {"f", [&] { return rnd::f(k, 2.1, 5.3, s, f64); }},
      {"double_sided_maxwell", [&] { return rnd::double_sided_maxwell(k, 0.1, 1.3, s, f64); }},
      {"weibull_min", [&] { return rnd::weibull_min(k, 1.1, 2.3, s, f64); }},
      {"triangular", [&] { return rnd::triangular(k, 0.1, 0.35, 0.9, s, f64); }},
      {"lognormal", [&] { return rnd::lognormal(k, 0.3, s, f64); }},
      {"geometric", [&] { return rnd::geometric(k, 0.3, s, i64); }},
      {"binomial", [&] { return rnd::binomial(k, 10.0, 0.3, s, f64); }},
      {"binomial_large", [&] { return rnd::binomial(k, 90.0, 0.3, s, f64); }},
      {"rayleigh", [&] { return rnd::rayleigh(k, 0.7, s, f64); }},
      {"wald", [&] { return rnd::wald(k, 1.1, s, f64); }},
  });
}

}  // namespace
}  // namespace parax
