// Fused and unfused programs agree: every elementwise row of the sweep, run inside a fused
// chain (tile by tile) and alone (one-equation executable), gives the same bits; scalars
// broadcast, tails are handled, and intermediates used later leave the fusion.
#include <gtest/gtest.h>

#include <cmath>
#include <cstring>
#include <random>

#include "core/trace.h"
#include "parax/parax.h"
#include "prims/prim_table.h"
#include "runtime/buffer.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;

Array random_array(Shape shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  const size_t n = size_t(shape_size(shape));
  if (dtype == DType::bool_) {
    std::vector<bool> v(n);
    for (size_t i = 0; i < n; ++i) v[i] = gen() % 2;
    return numpy::array(v, shape);
  }
  std::uniform_real_distribution<float> dist(is_floating(dtype) ? 0.05f : 0.0f, 7.0f);
  std::vector<float> v(n);
  for (float& x : v) x = is_floating(dtype) ? dist(gen) / 8.0f : std::floor(dist(gen));
  return numpy::array(v, shape, dtype);
}

std::vector<uint8_t> bytes_of(const Array& x) {
  HostArray h = device_get(x);
  return h.bytes;
}

// The fuse leg of the primitive sweep: each elementwise row of prims/prim_table.cpp with the
// fuse leg, on arrays of several tiles with a ragged tail (rank-0 operands stay scalars).
TEST(Fusion, EveryElementwisePrimitiveGivesTheSameBitsFusedAndAlone) {
  const Shape shape{3, 10007};
  int checked = 0;
  for (const prim_table::Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kFuse)) continue;
    std::vector<Array> in;
    for (size_t k = 0; k < c.operands.size(); ++k) {
      const prim_table::Operand& o = c.operands[k];
      std::mt19937 rng(uint32_t(7 + k));
      in.push_back(prim_table::draw(o, o.shape.empty() ? Shape{} : shape, rng));
    }
    const std::string& what = c.name;
    Array alone = core::bind1(c.prim, in, c.params);
    auto fused = jit([&](const std::vector<Array>& args) {
      // op, then a second elementwise op so the two fuse; copy keeps the bits.
      return core::bind1(Prim::copy, {core::bind1(c.prim, args, c.params)});
    });
    EXPECT_NE(fused.lower(in).compile().as_text().find("fusion["), std::string::npos) << what;
    Array got = fused(in);
    EXPECT_EQ(got.dtype(), alone.dtype()) << what;
    EXPECT_TRUE(bytes_of(got) == bytes_of(alone)) << what;
    ++checked;
  }
  EXPECT_GT(checked, 60);
}

TEST(Fusion, IntermediatesUsedLaterLeaveTheFusion) {
  auto x = random_array({1000, 9}, DType::float32, 1);
  auto f = jit([](const Array& v) {
    Array a = numpy::sin(v) * 2.0f;
    Array b = numpy::exp(a) + 1.0f;
    return std::make_pair(b, numpy::sum(a));  // `a` is needed after the chain
  });
  auto text = f.lower(x).compile().as_text();
  EXPECT_NE(text.find("fusion["), std::string::npos) << text;
  auto [b, s] = f(x);
  Array a = numpy::sin(x) * 2.0f;
  EXPECT_TRUE(bytes_of(b) == bytes_of(numpy::exp(a) + 1.0f));
  // The fused sum adds tile by tile: the same value up to rounding.
  EXPECT_NEAR(s.item<float>(), numpy::sum(a).item<float>(), 1e-5f * std::abs(s.item<float>()));
}

// Results of 32 MiB and more are computed into tile buffers and streamed out around the
// caches: the same bits as unfused, also for a streamed result the chain reads on and one
// a fused reduction consumes.
TEST(Fusion, ResultsLargerThanTheCachesAreStreamedOutWithTheSameBits) {
  const Shape shape{1031, 8221};  // 33.9 MB of float32, ragged against the 4096-element tile
  auto x = random_array(shape, DType::float32, 5);
  auto f = jit([](const Array& v) {
    Array a = numpy::sin(v) * 2.0f;
    Array b = numpy::exp(a) - v;
    return std::make_tuple(a, b, numpy::max(b, 1));
  });
  auto text = f.lower(x).compile().as_text();
  EXPECT_NE(text.find("fusion["), std::string::npos) << text;
  auto [a, b, m] = f(x);
  Array want_a = numpy::sin(x) * 2.0f;
  Array want_b = numpy::exp(want_a) - x;
  EXPECT_TRUE(bytes_of(a) == bytes_of(want_a));
  EXPECT_TRUE(bytes_of(b) == bytes_of(want_b));
  EXPECT_TRUE(bytes_of(m) == bytes_of(numpy::max(want_b, 1)));
}

TEST(Fusion, AReductionOverTrailingAxesJoinsTheChain) {
  for (Shape shape : {Shape{1000, 9}, Shape{3, 10007}, Shape{64, 64, 8}, Shape{0, 5}}) {
    auto x = random_array(shape, DType::float32, 3);
    for (const std::vector<int64_t>& axes :
         {std::vector<int64_t>{int64_t(shape.size()) - 1}, std::vector<int64_t>{}}) {
      auto f = jit([&](const Array& v) {
        Array y = numpy::cos(v) * 3.0f;
        return std::make_pair(axes.empty() ? numpy::max(y) : numpy::max(y, axes[0]),
                              axes.empty() ? numpy::sum(y) : numpy::sum(y, axes[0]));
      });
      const std::string what = shape_str(shape) + (axes.empty() ? " all" : " last");
      if (shape_size(shape) == 0 && axes.empty()) continue;  // max of nothing is an error
      auto text = f.lower(x).compile().as_text();
      EXPECT_NE(text.find("fusion["), std::string::npos) << what << text;
      auto [mx, sm] = f(x);
      Array y = numpy::cos(x) * 3.0f;
      Array want_max = axes.empty() ? numpy::max(y) : numpy::max(y, axes[0]);
      Array want_sum = axes.empty() ? numpy::sum(y) : numpy::sum(y, axes[0]);
      EXPECT_TRUE(bytes_of(mx) == bytes_of(want_max)) << what;  // order-independent
      auto got = sm.to_vector<float>();
      auto want = want_sum.to_vector<float>();
      ASSERT_EQ(got.size(), want.size()) << what;
      for (size_t i = 0; i < got.size(); ++i) {
        EXPECT_NEAR(got[i], want[i], 1e-5f * (1 + std::abs(want[i]))) << what << " at " << i;
      }
    }
  }
}

TEST(Fusion, BroadcastsJoinAndReadTheirOperandInPlace) {
  struct Bcast {
    Shape in, out;
    std::vector<int64_t> dims;
  };
  for (const Bcast& b :
       {Bcast{{37}, {300, 37}, {1}}, Bcast{{300}, {300, 37}, {0}},
        Bcast{{1, 37}, {300, 37}, {0, 1}}, Bcast{{5, 1, 7}, {5, 600, 7}, {0, 1, 2}},
        Bcast{{6}, {4, 6, 500}, {1}}, Bcast{{300, 37}, {300, 37}, {0, 1}}}) {
    auto small = random_array(b.in, DType::float32, 5);
    auto big = random_array(b.out, DType::float32, 6);
    auto run = [&](const Array& s, const Array& x) {
      Array y = core::bind1(Prim::broadcast_in_dim, {s},
                            Params{{"shape", b.out}, {"broadcast_dimensions", b.dims}});
      return numpy::maximum(y * x + 1.0f, 0.5f);
    };
    auto fused = jit(run);
    const std::string what = shape_str(b.in) + " -> " + shape_str(b.out);
    auto text = fused.lower(small, big).compile().as_text();
    EXPECT_NE(text.find("broadcast_in_dim"), std::string::npos) << what;
    EXPECT_EQ(text.find("\n    d:"), std::string::npos) << what << ": one fusion only\n" << text;
    EXPECT_TRUE(bytes_of(fused(small, big)) == bytes_of(run(small, big))) << what;
  }
}

TEST(Fusion, FilledOperandsBecomeScalars) {
  // A rank-0 value broadcast into an elementwise operand (max's jvp fills ones and twos) is
  // passed as the value itself: nothing is filled in memory, and the bits do not change.
  for (Shape shape : {Shape{300, 37}, Shape{5000}, Shape{3}}) {
    auto x = random_array(shape, DType::float32, 7) - 0.4f;
    auto run = [&](const Array& v) {
      auto fill = [&](float c) {
        return core::bind1(
            Prim::broadcast_in_dim, {numpy::array(c)},
            Params{{"shape", shape}, {"broadcast_dimensions", std::vector<int64_t>{}}});
      };
      Array ones = fill(1.0f), twos = fill(2.0f);
      Array picked = lax::select_n(lax::gt(v, 0.0f), {ones, twos});
      Array swapped = lax::select_n(lax::le(v, 0.0f), {v, twos});
      return picked * v + swapped + ones;
    };
    auto fused = jit(run);
    const std::string what = shape_str(shape);
    auto text = fused.lower(x).compile().as_text();
    EXPECT_EQ(text.find("broadcast_in_dim"), std::string::npos) << what << "\n" << text;
    EXPECT_TRUE(bytes_of(fused(x)) == bytes_of(run(x))) << what;
  }
}

TEST(Fusion, AChainHoldsOnlyItsInputAndOutput) {
  const int64_t n = 2048;
  auto x = device_put(numpy::ones({n, n}), devices()[0]);
  auto chain = jit([](Array v) {
    for (int i = 0; i < 10; ++i) v = numpy::tanh(v) * 0.5f + 0.25f;
    return v;
  });
  chain(x).block_until_ready();
  runtime::reset_peak_memory();
  const int64_t before = runtime::memory_stats().live_bytes;
  Array y = chain(x);
  const int64_t peak = runtime::memory_stats().peak_bytes - before;
  EXPECT_LE(peak, n * n * 4 + (int64_t(1) << 20)) << "peak " << peak;
}

}  // namespace
}  // namespace parax
