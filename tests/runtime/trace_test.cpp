// profiler traces: the file parses as Chrome trace-event JSON with a track per device and
// per thread, each device's kernels and collectives (group, bytes, engine time), tracing,
// compiling, executing and transfers, and the caller's own annotations.
#include <gtest/gtest.h>

#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>

#include "parax/parax.h"
#include "parax/profiler.h"

namespace parax {
namespace {

namespace jnp = numpy;
namespace fs = std::filesystem;

nlohmann::json read_json(const std::string& path) {
  std::ifstream in(path);
  return nlohmann::json::parse(in);
}

TEST(Trace, RecordsEachDevicesKernelsAndCollectivesAndTheirPhases) {
  const std::string path =
      (fs::temp_directory_path() / ("parax-trace-" + std::to_string(::getpid()) + ".json"))
          .string();
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array a = device_put(jnp::ones({8, 16}), NamedSharding(mesh, P(None, "x")));
  const Array b = device_put(jnp::ones({16, 8}), NamedSharding(mesh, P("x", None)));
  auto f = jit([](const Array& l, const Array& r) { return jnp::sin(jnp::dot(l, r)); },
               {.name = "traced_step"});
  EXPECT_FALSE(profiler::is_tracing());
  profiler::start_trace(path);
  EXPECT_TRUE(profiler::is_tracing());
  const std::vector<float> want = jnp::sin(jnp::full({8, 8}, 16.0f)).to_vector<float>();
  {
    profiler::TraceAnnotation step("my step");
    EXPECT_EQ(f(a, b).to_vector<float>(), want);
  }
  EXPECT_EQ(profiler::stop_trace(), path);
  EXPECT_FALSE(profiler::is_tracing());
  EXPECT_EQ(profiler::stop_trace(), "");

  const nlohmann::json trace = read_json(path);
  fs::remove(path);
  std::map<int, std::string> tracks;                           // tid -> name
  std::map<std::string, std::multiset<std::string>> on_track;  // track name -> event names
  std::set<std::string> categories;
  int collectives = 0;
  for (const auto& e : trace.at("traceEvents")) {
    EXPECT_EQ(e.at("pid"), 0);
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      tracks[e.at("tid")] = e.at("args").at("name");
    }
  }
  for (const auto& e : trace.at("traceEvents")) {
    if (e.at("ph") != "X") continue;
    EXPECT_GE(e.at("dur").get<int64_t>(), 0);
    categories.insert(e.at("cat"));
    on_track[tracks.at(e.at("tid"))].insert(e.at("name"));
    if (e.at("cat") == "collective") {
      ++collectives;
      EXPECT_EQ(e.at("name"), "all-reduce");
      EXPECT_EQ(e.at("args").at("bytes"), 8 * 8 * 4);
      EXPECT_EQ(e.at("args").at("mesh_axes"), "0");
      EXPECT_EQ(e.at("args").at("engine_us"), 0);  // one process: nothing waits for peers
    }
    if (e.at("cat") == "kernel" && e.at("name") == "dot_general") {
      EXPECT_EQ(e.at("args").at("shapes"), "f32[8,2], f32[2,8] -> f32[8,8]");
      EXPECT_EQ(e.at("args").at("bytes"), (16 + 16 + 64) * 4);
    }
  }
  EXPECT_EQ(collectives, 8);
  for (int d = 0; d < 8; ++d) {
    const std::multiset<std::string>& names = on_track["CPU " + std::to_string(d)];
    EXPECT_EQ(names.count("dot_general"), 1u) << d;
    EXPECT_EQ(names.count("all-reduce"), 1u) << d;
  }
  for (const char* cat :
       {"trace", "compile", "execute", "kernel", "collective", "transfer", "user"}) {
    EXPECT_TRUE(categories.count(cat)) << cat;
  }
  bool annotated = false, traced = false, compiled = false;
  for (const auto& [name, names] : on_track) {
    if (name.rfind("thread ", 0) != 0) continue;
    annotated = annotated || names.count("my step");
    traced = traced || names.count("trace traced_step");
    compiled = compiled || names.count("compile traced_step");
  }
  EXPECT_TRUE(annotated && traced && compiled);
}

TEST(Trace, DiscardingWritesNothing) {
  const std::string path =
      (fs::temp_directory_path() / ("parax-discard-" + std::to_string(::getpid()) + ".json"))
          .string();
  profiler::start_trace(path);
  jnp::sin(jnp::ones({4})).block_until_ready();
  profiler::discard_trace();
  EXPECT_FALSE(profiler::is_tracing());
  EXPECT_FALSE(fs::exists(path));
  EXPECT_EQ(profiler::stop_trace(), "");
}

TEST(Trace, AnUnwritablePathRaisesWhenStopping) {
  profiler::start_trace("/nonexistent-dir/trace.json");
  jnp::sin(jnp::ones({4})).block_until_ready();
  EXPECT_THROW(profiler::stop_trace(), RuntimeError);
  EXPECT_FALSE(profiler::is_tracing());
}

}  // namespace
}  // namespace parax

namespace parax {
namespace {

TEST(MemoryStats, CountEachDevicesOwnBuffers) {
  const std::vector<Device> ds = devices();
  ASSERT_EQ(ds.size(), 8u);
  const std::map<std::string, int64_t> before3 = ds[3].memory_stats();
  const std::map<std::string, int64_t> before4 = ds[4].memory_stats();
  for (const char* key :
       {"bytes_in_use", "peak_bytes_in_use", "num_allocs", "largest_alloc_size", "bytes_limit"}) {
    EXPECT_TRUE(before3.count(key)) << key;
  }
  EXPECT_GT(before3.at("bytes_limit"), int64_t(1) << 30);
  constexpr int64_t kBytes = 1 << 20;
  {
    const Array x = device_put(numpy::zeros({kBytes / 4}), ds[3]);
    x.block_until_ready();
    const std::map<std::string, int64_t> during = ds[3].memory_stats();
    EXPECT_EQ(during.at("bytes_in_use") - before3.at("bytes_in_use"), kBytes);
    EXPECT_GE(during.at("peak_bytes_in_use"), during.at("bytes_in_use"));
    EXPECT_GE(during.at("largest_alloc_size"), kBytes);
    EXPECT_GE(during.at("num_allocs"), before3.at("num_allocs") + 1);
    EXPECT_EQ(ds[4].memory_stats().at("bytes_in_use"), before4.at("bytes_in_use"));
  }
  EXPECT_EQ(ds[3].memory_stats().at("bytes_in_use"), before3.at("bytes_in_use"));
  EXPECT_GE(ds[3].memory_stats().at("peak_bytes_in_use"), before3.at("bytes_in_use") + kBytes);
}

}  // namespace
}  // namespace parax
