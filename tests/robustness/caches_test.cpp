// Caches and memory under long runs. The eager executable cache, jit's trace
// caches and the executables of jit programs are bounded (least recently used evicted,
// sizes set through config), a jit object's programs die with it, and freed device
// buffers go back to the system: 10,000 eager ops on distinct shapes stay under 300 MiB.
// Its own process (parax_memory_tests), so the RSS read here is this test's alone.
#include <gtest/gtest.h>
#include <unistd.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

int64_t rss_bytes() {
  long pages = 0, resident = 0;
  FILE* f = std::fopen("/proc/self/statm", "r");
  if (f == nullptr) return -1;
  if (std::fscanf(f, "%ld %ld", &pages, &resident) != 2) resident = -1;
  std::fclose(f);
  return int64_t(resident) * int64_t(sysconf(_SC_PAGESIZE));
}

constexpr int64_t kMiB = int64_t(1) << 20;

// Under AddressSanitizer buffers come from malloc (for its redzones) and its quarantine
// holds freed memory: the buffer cache and RSS bounds are not this build's to check.
#if defined(__SANITIZE_ADDRESS__)
constexpr bool kAsan = true;
#else
constexpr bool kAsan = false;
#endif

// Restores an integer setting at the end of a test.
class SettingGuard {
 public:
  SettingGuard(std::string name, int64_t value)
      : name_(std::move(name)), old_(config::read_int(name_)) {
    config::update(name_, value);
  }
  ~SettingGuard() { config::update(name_, old_); }

 private:
  std::string name_;
  int64_t old_;
};

// A long run with the default settings: every op has a new shape (from 256 B to 1.6 MB, so
// both malloc's sizes and mapped blocks churn), so every one compiles. Unbounded, the eager
// cache would keep all 20,000 executables and freed blocks of every size would stay cached
// or stranded in the heap, taking RSS to 14 GB.
TEST(Caches, TenThousandEagerOpsOnDistinctShapesStayUnder300MiB) {
  const int64_t capacity = config::read_int("parax_eager_cache_size");
  ASSERT_EQ(capacity, 4096);
  const auto before = debug::cache_info("eager");
  const int64_t ops = kAsan ? 2000 : 10000;  // sanitized ops are slow
  for (int64_t i = 0; i < ops; ++i) {
    Array x = jnp::broadcast_to(jnp::array(1.0f), {i + 1, 40});
    Array y = jnp::sin(x);
    if (i % 1000 == 999) {
      EXPECT_NEAR(y.to_vector<float>()[size_t(i)], std::sin(1.0f), 1e-6);
      EXPECT_LE(debug::cache_info("eager").size, capacity);
    }
  }
  const auto after = debug::cache_info("eager");
  EXPECT_EQ(after.capacity, capacity);
  EXPECT_LE(after.size, capacity);
  EXPECT_GE(after.misses - before.misses, 2 * ops);  // broadcast and sin: all compiled
  EXPECT_GE(after.evictions - before.evictions, after.misses - before.misses - capacity);
  if (kAsan) return;
  const auto blocks = debug::buffer_cache_info();
  EXPECT_LE(blocks.cached_bytes, blocks.capacity_bytes);
  EXPECT_GT(blocks.reused, 0);  // size classes: distinct shapes still share blocks
  const int64_t rss = rss_bytes();
  EXPECT_LT(rss, 300 * kMiB) << "RSS " << rss / kMiB << " MiB";
  if (std::getenv("PARAX_TEST_VERBOSE")) {
    std::printf("rss %lld MiB cached %lld reused %lld mapped %lld released %lld\n",
                (long long)(rss / kMiB), (long long)blocks.cached_bytes, (long long)blocks.reused,
                (long long)blocks.mapped, (long long)blocks.released);
  }
}

TEST(Caches, EagerCacheSizeKnobBoundsTheCache) {
  SettingGuard g("parax_eager_cache_size", 16);
  EXPECT_EQ(config::read_int("parax_eager_cache_size"), 16);
  const auto before = debug::cache_info("eager");
  for (int64_t i = 0; i < 100; ++i) {
    Array y = jnp::cos(jnp::zeros({i + 3, 7}));
    EXPECT_LE(debug::cache_info("eager").size, 16);
    EXPECT_FLOAT_EQ(y.to_vector<float>()[0], 1.0f);
  }
  const auto after = debug::cache_info("eager");
  EXPECT_EQ(after.capacity, 16);
  EXPECT_EQ(after.size, 16);
  EXPECT_GE(after.evictions - before.evictions, 100 - 16);  // cos's (zeros is a host copy)
  // The most recent entry is still there: running it again is a hit, not a compile.
  Array again = jnp::cos(jnp::zeros({102, 7}));
  const auto last = debug::cache_info("eager");
  EXPECT_EQ(last.misses, after.misses);
  EXPECT_GT(last.hits, after.hits);
  EXPECT_FLOAT_EQ(again.to_vector<float>()[5], 1.0f);
  // Zero keeps nothing, and results stay right.
  config::update("parax_eager_cache_size", 0);
  EXPECT_FLOAT_EQ(jnp::cos(jnp::zeros({3})).to_vector<float>()[2], 1.0f);
  EXPECT_EQ(debug::cache_info("eager").size, 0);
}

TEST(Caches, ConfigKnobErrors) {
  EXPECT_THROW_MSG(config::update("parax_eager_cache_size", -1), ValueError,
                   "config option parax_eager_cache_size must be a non-negative integer; got -1");
  EXPECT_THROW_MSG(config::update("parax_jit_cache_size", true), TypeError,
                   "config option parax_jit_cache_size takes an integer, not a bool");
  EXPECT_THROW_MSG(config::update("jax_enable_x64", 1), TypeError,
                   "config option jax_enable_x64 takes a bool, not an integer");
  EXPECT_THROW_MSG(config::read_int("jax_enable_x64"), TypeError,
                   "config option jax_enable_x64 takes a bool, not an integer");
  EXPECT_THROW_MSG(config::update("parax_no_such_cache", 3), ValueError,
                   "Unrecognized config option: parax_no_such_cache");
  EXPECT_THROW_MSG(debug::cache_info("pjit"), ValueError,
                   "[cache_info] unknown cache 'pjit'; expected 'eager', 'jit_trace' or "
                   "'jit_compile'");
  EXPECT_EQ(config::read_int("parax_jit_cache_size"), 1024);
  EXPECT_EQ(config::read_int("parax_buffer_cache_bytes"), int64_t(1) << 30);
  // Other integer types are accepted.
  config::update("parax_jit_cache_size", 1024u);
  config::update("parax_jit_cache_size", static_cast<short>(7));
  EXPECT_EQ(config::read_int("parax_jit_cache_size"), 7);
  config::update("parax_jit_cache_size", 1024);
}

TEST(Caches, JitTraceAndCompileCachesAreBoundedPerObject) {
  SettingGuard g("parax_jit_cache_size", 8);
  auto f = jit([](const Array& x) { return jnp::sin(x) * 2.0f; });
  const auto traces0 = debug::cache_info("jit_trace");
  const auto exes0 = debug::cache_info("jit_compile");
  for (int64_t n = 1; n <= 50; ++n) {
    Array y = f(jnp::zeros({n}));
    EXPECT_LE(f.cache_size(), 8);
    EXPECT_EQ(y.shape(), Shape({n}));
  }
  EXPECT_EQ(f.cache_size(), 8);
  const auto traces1 = debug::cache_info("jit_trace");
  EXPECT_EQ(traces1.capacity, 8);
  EXPECT_EQ(traces1.size - traces0.size, 8);
  EXPECT_EQ(traces1.misses - traces0.misses, 50);
  EXPECT_EQ(traces1.evictions - traces0.evictions, 42);
  // The evicted traces' programs died, and their executables with them.
  const auto exes1 = debug::cache_info("jit_compile");
  EXPECT_EQ(exes1.size - exes0.size, 8);
  EXPECT_GE(exes1.evictions - exes0.evictions, 42);
  // A recent signature is a hit; the first one was evicted and traces again.
  f(jnp::zeros({50}));
  EXPECT_EQ(debug::cache_info("jit_trace").hits, traces1.hits + 1);
  f(jnp::zeros({1}));
  EXPECT_EQ(debug::cache_info("jit_trace").misses, traces1.misses + 1);
  EXPECT_EQ(f.cache_size(), 8);
}

TEST(Caches, OneProgramKeepsBoundedExecutablesAcrossSignatures) {
  // One trace, two argument layouts (uncommitted, committed): each compiles, and with room
  // for one executable they evict each other.
  SettingGuard g("parax_jit_cache_size", 1);
  auto f = jit([](const Array& x) { return x + 1.0f; });
  Array x = jnp::zeros({4});
  Array committed = device_put(x, devices()[0]);
  f(x);
  const auto before = debug::cache_info("jit_compile");
  f(x);
  EXPECT_EQ(debug::cache_info("jit_compile").hits, before.hits + 1);
  for (int k = 0; k < 3; ++k) {
    EXPECT_FLOAT_EQ(f(committed).to_vector<float>()[0], 1.0f);
    EXPECT_FLOAT_EQ(f(x).to_vector<float>()[0], 1.0f);
  }
  EXPECT_EQ(f.cache_size(), 1);
  const auto after = debug::cache_info("jit_compile");
  EXPECT_EQ(after.capacity, 1);
  EXPECT_EQ(after.size, before.size);
  EXPECT_EQ(after.misses - before.misses, 6);
  EXPECT_EQ(after.evictions - before.evictions, 6);
}

TEST(Caches, JitProgramsAreFreedWhenTheJitDies) {
  const auto traces0 = debug::cache_info("jit_trace");
  const auto exes0 = debug::cache_info("jit_compile");
  {
    auto f = jit([](const Array& x) { return jnp::exp(x); });
    auto g = f;  // a copy shares the caches
    for (int64_t n = 1; n <= 5; ++n) f(jnp::zeros({n, 2}));
    EXPECT_EQ(g.cache_size(), 5);
    EXPECT_EQ(debug::cache_info("jit_trace").size - traces0.size, 5);
    EXPECT_EQ(debug::cache_info("jit_compile").size - exes0.size, 5);
  }
  EXPECT_EQ(debug::cache_info("jit_trace").size, traces0.size);
  EXPECT_EQ(debug::cache_info("jit_compile").size, exes0.size);
  // Many short-lived jit objects leave nothing behind.
  const int64_t rss0 = rss_bytes();
  for (int i = 0; i < 2000; ++i) {
    auto h = jit([i](const Array& x) { return x * float(i); });
    EXPECT_FLOAT_EQ(h(jnp::ones({3})).to_vector<float>()[1], float(i));
  }
  EXPECT_EQ(debug::cache_info("jit_trace").size, traces0.size);
  EXPECT_EQ(debug::cache_info("jit_compile").size, exes0.size);
  if (!kAsan) {
    EXPECT_LT(rss_bytes() - rss0, 32 * kMiB);
  }
  // Differentiating through one jit again and again leaves a bounded number of programs.
  auto h = jit([](const Array& x) { return jnp::sin(x); });
  Array x = jnp::ones({5});
  for (int i = 0; i < 200; ++i) {
    Array g = grad([&](const Array& y) { return jnp::sum(h(y)); })(x);
    EXPECT_FLOAT_EQ(g.to_vector<float>()[4], std::cos(1.0f));
  }
  EXPECT_LE(debug::cache_info("jit_compile").size - exes0.size, 4);
  EXPECT_LE(debug::cache_info("jit_trace").size - traces0.size, 4);
}

TEST(Caches, RetracesOnConfigChangesAreBounded) {
  SettingGuard g("parax_jit_cache_size", 4);
  auto f = jit([](const Array& x) { return x * 3.0f; });
  const bool x64 = config::read("jax_enable_x64");
  for (int i = 0; i < 20; ++i) {
    config::update("jax_enable_x64", i % 2 == 0);  // a new epoch: every call retraces
    EXPECT_FLOAT_EQ(f(jnp::ones({2})).to_vector<float>()[0], 3.0f);
    EXPECT_LE(f.cache_size(), 4);
  }
  config::update("jax_enable_x64", x64);
  EXPECT_EQ(f.cache_size(), 4);
}

TEST(Caches, BufferCacheIsBoundedAndReturnsMemory) {
  if (kAsan) GTEST_SKIP() << "buffers come from malloc under AddressSanitizer";
  debug::clear_caches();
  const int64_t rss0 = rss_bytes();
  {
    SettingGuard g("parax_buffer_cache_bytes", 64 * kMiB);
    // Freed blocks of one size class are reused, not mapped again.
    { Array a = jnp::ones({1 << 20}); }
    const auto b0 = debug::buffer_cache_info();
    { Array a = jnp::ones({(1 << 20) - 16}); }  // 16 floats smaller: the same class
    const auto b1 = debug::buffer_cache_info();
    EXPECT_EQ(b1.reused, b0.reused + 1);
    EXPECT_EQ(b1.mapped, b0.mapped);
    // Many sizes: the cache never holds more than its cap.
    for (int64_t i = 1; i <= 40; ++i) {
      Array a = jnp::broadcast_to(jnp::array(1.0f), {i * 300000});  // 1.2 MB .. 48 MB
      EXPECT_FLOAT_EQ(a.to_vector<float>()[size_t(i)], 1.0f);
      EXPECT_LE(debug::buffer_cache_info().cached_bytes, 64 * kMiB);
    }
    const auto b2 = debug::buffer_cache_info();
    EXPECT_EQ(b2.capacity_bytes, 64 * kMiB);
    EXPECT_GT(b2.released, b1.released);
    EXPECT_LT(rss_bytes() - rss0, 160 * kMiB);
    // A block bigger than the cap goes straight back.
    { Array big = jnp::broadcast_to(jnp::array(1.0f), {int64_t(80) << 20 >> 2}); }
    EXPECT_LE(debug::buffer_cache_info().cached_bytes, 64 * kMiB);
  }
  // With the default cap a 200 MB array's block is kept; clearing returns it.
  { Array a = jnp::broadcast_to(jnp::array(1.0f), {50'000'000}); }
  EXPECT_GE(debug::buffer_cache_info().cached_bytes, 200'000'000);
  debug::clear_caches();
  EXPECT_EQ(debug::buffer_cache_info().cached_bytes, 0);
  EXPECT_EQ(debug::cache_info("eager").size, 0);
  EXPECT_LT(rss_bytes() - rss0, 48 * kMiB);
}

}  // namespace
}  // namespace parax
