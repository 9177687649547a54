// parax_bench: measures the machine's limits and parax's workloads in one run, then prints
// a summary with their ratios and the seed workloads' targets. Usage:
//   parax_bench [--results_md=PATH] [Google Benchmark flags, e.g. --benchmark_filter=dot]
#include <sched.h>

#include <algorithm>
#include <fstream>
#include <iostream>
#include <map>
#include <string>
#include <thread>
#include <vector>

#include <parax/parax.h>

#include "bench.h"

namespace parax_bench {

double Measurement::best() const {
  return seconds.empty() ? 0 : *std::min_element(seconds.begin(), seconds.end());
}

double Measurement::median() const {
  if (seconds.empty()) return 0;
  std::vector<double> s = seconds;
  std::sort(s.begin(), s.end());
  const size_t n = s.size();
  return n % 2 ? s[n / 2] : 0.5 * (s[n / 2 - 1] + s[n / 2]);
}

namespace {
std::map<std::string, Measurement>& store() {
  static std::map<std::string, Measurement> m;
  return m;
}
}  // namespace

Measurement& measurement(const std::string& key) { return store()[key]; }

const Measurement* find_measurement(const std::string& key) {
  auto it = store().find(key);
  return it == store().end() ? nullptr : &it->second;
}

int num_cores() {
  cpu_set_t set;
  if (sched_getaffinity(0, sizeof set, &set) == 0) return std::max(1, CPU_COUNT(&set));
  return int(std::max(1u, std::thread::hardware_concurrency()));
}

std::string pass_name(const std::string& key, bool again) {
  if (!again) return key;
  const size_t slash = key.find('/');
  return key.substr(0, slash) + "_again" + key.substr(slash);
}

void show_rate(benchmark::State& state, const std::string& key, const char* counter, double work,
               double scale) {
  Measurement& m = measurement(key);
  m.work = work;
  if (m.ok()) state.counters[counter] = m.best_rate() * scale;
}

}  // namespace parax_bench

int main(int argc, char** argv) {
  // Our flags are removed before Google Benchmark sees the arguments, since it rejects flags
  // it does not know. --single_core_probe and --sgemm_probe are internal: the run starts this
  // binary again with them to measure one core (single_core.cpp) and OpenBLAS's Haswell
  // kernels (limits.cpp).
  std::string results_md;
  std::string probe_out;
  std::string sgemm_probe_out;
  std::vector<char*> args;
  for (int i = 0; i < argc; ++i) {
    const std::string arg = argv[i];
    if (arg.rfind("--results_md=", 0) == 0) {
      results_md = arg.substr(arg.find('=') + 1);
    } else if (arg.rfind("--sgemm_probe=", 0) == 0) {
      sgemm_probe_out = arg.substr(arg.find('=') + 1);
    } else if (arg.rfind("--single_core_probe=", 0) == 0) {
      probe_out = arg.substr(arg.find('=') + 1);
    } else {
      args.push_back(argv[i]);
    }
  }
  int n = int(args.size());
  benchmark::Initialize(&n, args.data());
  if (benchmark::ReportUnrecognizedArguments(n, args.data())) return 1;
  parax::config::set_num_cpu_devices(8);
  if (!probe_out.empty()) return parax_bench::run_single_core_probe(probe_out);
  if (!sgemm_probe_out.empty()) return parax_bench::run_sgemm_probe(sgemm_probe_out);
#ifndef NDEBUG
  std::cerr << "warning: parax_bench was built without NDEBUG; configure with "
               "-DCMAKE_BUILD_TYPE=Release for meaningful numbers\n";
#endif

  parax_bench::register_limit_benchmarks(false);
  parax_bench::register_single_core_probe(false);
  parax_bench::register_workload_benchmarks();
  parax_bench::register_limit_benchmarks(true);
  parax_bench::register_single_core_probe(true);
  if (!parax_bench::kHasGrad) {
    std::cout << "parax/mlp_grad_step: skipped: needs grad (PARAX_HAS_GRAD)\n";
  }
  benchmark::RunSpecifiedBenchmarks();
  benchmark::Shutdown();

  const std::string md = parax_bench::summary_markdown();
  std::cout << "\n" << md;
  if (!results_md.empty()) {
    std::ofstream out(results_md);
    out << md;
    if (!out) {
      std::cerr << "parax_bench: cannot write " << results_md << "\n";
      return 1;
    }
    std::cout << "\nwrote " << results_md << "\n";
  }
  return 0;
}
