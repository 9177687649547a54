// parax's per-core compute ceiling, measured in a child process confined to one CPU. The
// library may spread even a 16 Ki block over its pool, and its pool is sized once per
// process, so only a process that sees one CPU from the start measures one core.
#include <sched.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <sstream>
#include <string>
#include <vector>

#include "bench.h"

extern char** environ;

namespace parax_bench {
namespace {

const std::vector<std::string>& probe_keys() {
  static const std::vector<std::string> keys = {
      cache_key("sin", kTinyBlock), cache_key("sin", kCacheBlock), cache_key("chain10", kTinyBlock),
      cache_key("chain10", kCacheBlock)};
  return keys;
}

// Runs this binary again as the probe; returns its exit status (or -1).
int spawn_probe(const std::string& out_path) {
  const std::string flag = "--single_core_probe=" + out_path;
  char exe[] = "/proc/self/exe";
  std::vector<char*> argv = {exe, const_cast<char*>(flag.c_str()), nullptr};
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), environ) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

// Reads "key seconds..." lines into the measurements; returns how many keys it found.
int merge_probe_file(const std::string& path) {
  std::ifstream in(path);
  std::string line;
  int found = 0;
  while (std::getline(in, line)) {
    std::istringstream fields(line);
    std::string key;
    fields >> key;
    Measurement& m = measurement(key);
    for (double s; fields >> s;) m.seconds.push_back(s);
    ++found;
  }
  return found;
}

void bm_single_core_probe(benchmark::State& state) {
  const std::string path = "/tmp/parax_bench_probe." + std::to_string(getpid());
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const int status = spawn_probe(path);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    if (status != 0 || merge_probe_file(path) != int(probe_keys().size())) {
      const std::string why =
          "single-core probe failed (exit status " + std::to_string(status) + ")";
      for (const std::string& key : probe_keys()) measurement(key).error = why;
      state.SkipWithError(why.c_str());
      break;
    }
  }
  std::remove(path.c_str());
  show_rate(state, cache_key("sin", kCacheBlock), "sin 16Ki Melem/s", double(kCacheBlock), 1e-6);
  show_rate(state, cache_key("chain10", kCacheBlock), "chain10 16Ki Melem/s", double(kCacheBlock),
            1e-6);
}

}  // namespace

void register_single_core_probe(bool again) {
  benchmark::RegisterBenchmark(pass_name("parax/in_cache_ceilings/cores:1", again).c_str(),
                               bm_single_core_probe)
      ->UseManualTime()
      ->Iterations(1)
      ->Unit(benchmark::kMillisecond);
}

int run_single_core_probe(const std::string& out_path) {
  cpu_set_t all;
  if (sched_getaffinity(0, sizeof all, &all) != 0) return 2;
  cpu_set_t one;
  CPU_ZERO(&one);
  for (int cpu = 0; cpu < CPU_SETSIZE; ++cpu) {
    if (CPU_ISSET(cpu, &all)) {
      CPU_SET(cpu, &one);
      break;
    }
  }
  if (sched_setaffinity(0, sizeof one, &one) != 0) return 2;
  register_ceiling_benchmarks();
  // The probe's numbers come back through the file and show up as counters of the parent's
  // benchmark; a second console table would only interleave with the parent's.
  class Silent : public benchmark::BenchmarkReporter {
    bool ReportContext(const Context&) override { return true; }
    void ReportRuns(const std::vector<Run>&) override {}
  } silent;
  benchmark::RunSpecifiedBenchmarks(&silent);
  std::ofstream out(out_path);
  out.precision(9);
  for (const std::string& key : probe_keys()) {
    const Measurement* m = find_measurement(key);
    if (m == nullptr || !m->ok()) return 3;
    out << key;
    for (double s : m->seconds) out << ' ' << s;
    out << '\n';
  }
  return out ? 0 : 3;
}

}  // namespace parax_bench
