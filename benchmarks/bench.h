// Shared by the benchmark files: a store of timings that the final summary reads, and a
// timing loop for Google Benchmark's manual-time mode.
#pragma once

#include <benchmark/benchmark.h>

#include <chrono>
#include <cstdint>
#include <string>
#include <type_traits>
#include <vector>

namespace parax_bench {

// The timed iterations of one measurement, kept for the summary's ratios.
struct Measurement {
  std::vector<double> seconds;  // one entry per timed iteration
  std::string error;            // why the measurement failed, if it did
  double work = 0;              // flops, bytes or elements per iteration (show_rate sets it)
  double executed_flops = 0;    // flops the compiled program runs on all devices, if known
  double best() const;          // 0 when nothing was timed
  double median() const;
  double best_rate() const { return work / best(); }
  bool ok() const { return error.empty() && !seconds.empty(); }
};

// Returns the measurement stored under `key`, creating it empty.
Measurement& measurement(const std::string& key);
// Returns the measurement under `key`, or nullptr when that benchmark did not run.
const Measurement* find_measurement(const std::string& key);

// Returns the number of cores this process may run on (its affinity mask).
int num_cores();

// Runs `fn` once per benchmark iteration and records its wall time under `key`. Whatever
// fn returns is destroyed after the clock stops, so freeing big results is not timed.
template <class F>
void time_loop(benchmark::State& state, const std::string& key, F&& fn) {
  using Clock = std::chrono::steady_clock;
  Measurement& m = measurement(key);
  for (auto _ : state) {
    const auto t0 = Clock::now();
    if constexpr (std::is_void_v<std::invoke_result_t<F&>>) {
      fn();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      state.SetIterationTime(s);
      m.seconds.push_back(s);
    } else {
      auto keep = fn();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      state.SetIterationTime(s);
      m.seconds.push_back(s);
    }
  }
}

// Records `work` per iteration under `key` and shows work / best time (times `scale`) as a
// counter in the console line.
void show_rate(benchmark::State& state, const std::string& key, const char* counter, double work,
               double scale);

// Runs `body`; on an exception, marks the benchmark and the measurements under `keys` as
// failed, so the summary says why instead of the whole run aborting.
template <class F>
void guarded(benchmark::State& state, const std::vector<std::string>& keys, F&& body) {
  try {
    body();
  } catch (const std::exception& e) {
    for (const std::string& key : keys) measurement(key).error = e.what();
    state.SkipWithError(e.what());
  }
}

// Registration, in the order the run needs: the limits and parax's single-core ceilings
// first, so the summary has them, then the workloads, then the limits and ceilings again. A
// shared host can lend this machine less for a while; the limits keep the best of both.
void register_limit_benchmarks(bool again);
void register_single_core_probe(bool again);
void register_workload_benchmarks();
// The in-cache ceiling benchmarks, which run in the probe process (single_core.cpp).
void register_ceiling_benchmarks();
// The sgemm probe's main (limits.cpp): run with OPENBLAS_CORETYPE=Haswell, it measures
// OpenBLAS's sgemm at every size and writes the times to `out_path`. Returns the exit status.
int run_sgemm_probe(const std::string& out_path);
// The probe's main: confines the process to one CPU, runs the ceiling benchmarks and writes
// their times to `out_path`. Returns the exit status.
int run_single_core_probe(const std::string& out_path);
// Returns the Google Benchmark name for `key` ("limits/..."), renamed for the second pass.
std::string pass_name(const std::string& key, bool again);
// Prints the summary (limits, workloads, ratios, targets) and returns it as markdown.
std::string summary_markdown();

// Keys of the measurements, shared by the registration and the summary (they are also the
// Google Benchmark names, so --benchmark_filter selects them).
inline std::string threads_suffix(int threads) { return "/threads:" + std::to_string(threads); }
inline std::string fma_key(int threads) { return "limits/fma_peak" + threads_suffix(threads); }
// AVX2's peak, measured beside the widest ISA's on an AVX-512 CPU.
inline std::string fma_avx2_key(int threads) {
  return "limits/fma_peak_avx2" + threads_suffix(threads);
}
inline std::string stream_key(const std::string& kernel, int threads) {
  return "limits/stream_" + kernel + threads_suffix(threads);
}
// The sgemm candidates: OpenBLAS with the core it chose for this CPU, OpenBLAS held to
// Haswell's AVX2 kernels (OPENBLAS_CORETYPE=Haswell, measured by a child process) and
// oneDNN's dnnl_sgemm, which dispatches on ISA flags.
inline const std::string kOpenBlas = "openblas";
inline const std::string kOpenBlasHaswell = "openblas_haswell";
inline const std::string kOneDnn = "onednn";
inline std::vector<std::string> sgemm_libraries() { return {kOpenBlas, kOpenBlasHaswell, kOneDnn}; }
inline std::string sgemm_key(const std::string& library, int64_t n, int threads) {
  return "limits/" + library + "_sgemm/" + std::to_string(n) + threads_suffix(threads);
}
inline std::string workload_key(const std::string& name, const std::string& layout) {
  return "parax/" + name + "/" + layout;
}
inline std::string cache_key(const std::string& op, int64_t elements) {
  return "parax/" + op + "_in_cache/" + std::to_string(elements) + "/devices:1";
}

// The MLP's three layouts, as in the tutorial.
inline constexpr const char* kMlpSingle = "single";
inline constexpr const char* kMlpDataParallel = "dp8";            // P('batch'), params P()
inline constexpr const char* kMlpDataTensorParallel = "dp4_tp2";  // mesh (4, 2), W2, W3 split

// Whether parax::grad is built (PARAX_HAS_GRAD); without it the gradient step is reported as
// skipped.
#ifdef PARAX_HAS_GRAD
inline constexpr bool kHasGrad = true;
#else
inline constexpr bool kHasGrad = false;
#endif

// Sizes shared by the registration and the summary.
inline constexpr int64_t kBig = 8192;          // the headline 8192x8192 arrays
inline constexpr int64_t kCacheBlock = 16384;  // elements of the in-cache ceiling block
inline constexpr int64_t kTinyBlock = 64;      // 8x8, the fixed-cost / dispatch probe
inline const std::vector<int64_t> kMlpLayers = {784, 1024, 1024, 1024, 10};
inline constexpr int64_t kMlpBatch = 8192;

// The MLP's GEMM flops: forward 2*B*sum(in*out); the gradient step adds dW (the same) and
// dX (the same without layer 0).
inline double mlp_forward_flops() {
  double f = 0;
  for (size_t i = 0; i + 1 < kMlpLayers.size(); ++i) {
    f += 2.0 * double(kMlpBatch) * double(kMlpLayers[i]) * double(kMlpLayers[i + 1]);
  }
  return f;
}
inline double mlp_grad_flops() {
  const double first = 2.0 * double(kMlpBatch) * double(kMlpLayers[0]) * double(kMlpLayers[1]);
  return 3 * mlp_forward_flops() - first;
}

}  // namespace parax_bench
