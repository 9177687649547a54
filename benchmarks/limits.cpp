// The machine's own limits, measured in the same run as the workloads: float32 FMA peak,
// streaming memory bandwidth and OpenBLAS's sgemm. They run first; the summary divides the
// workloads by them.
#include <cblas.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <memory>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define PARAX_BENCH_X86 1
#endif

namespace parax_bench {

#ifdef PARAX_BENCH_AVX2
float fma_loop_avx2(long iters, float a_value, float b_value);  // fma_avx2.cpp
#endif

namespace {

// Runs body(t) for t in [0, threads) on that many threads (the caller is thread 0).
void run_threads(int threads, const std::function<void(int)>& body) {
  std::vector<std::thread> pool;
  for (int t = 1; t < threads; ++t) pool.emplace_back(body, t);
  body(0);
  for (auto& th : pool) th.join();
}

// ---- FMA peak ---------------------------------------------------------------------------

bool has_avx2_fma() {
#if defined(PARAX_BENCH_AVX2)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#else
  return false;
#endif
}

// Without AVX2+FMA: 12 independent multiply-add chains of the baseline ISA (SSE2 on x86-64,
// scalar elsewhere). It measures what such a machine sustains, not its absolute peak.
float mul_add_loop_baseline(long iters, float a_value, float b_value, double* flops) {
#ifdef PARAX_BENCH_X86
  const __m128 a = _mm_set1_ps(a_value);
  const __m128 b = _mm_set1_ps(b_value);
  __m128 c[12];
  for (int j = 0; j < 12; ++j) c[j] = _mm_set1_ps(0.1f * float(j));
  for (long i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = _mm_add_ps(_mm_mul_ps(c[j], a), b);
  }
  for (int j = 1; j < 12; ++j) c[0] = _mm_add_ps(c[0], c[j]);
  *flops = double(iters) * 12 * 4 * 2;
  return _mm_cvtss_f32(c[0]);
#else
  float c[12];
  for (int j = 0; j < 12; ++j) c[j] = 0.1f * float(j);
  for (long i = 0; i < iters; ++i) {
    for (int j = 0; j < 12; ++j) c[j] = c[j] * a_value + b_value;
  }
  *flops = double(iters) * 12 * 2;
  return c[0] + c[11];
#endif
}

// Runs the widest available loop for `iters` rounds; returns the flops it did.
double fma_loop(long iters) {
  // Volatile operands keep the compiler from folding the recurrence; a < 1 keeps the
  // accumulators bounded and away from denormals.
  volatile float a = 0.999999f;
  volatile float b = 1e-3f;
  static volatile float sink = 0;
#ifdef PARAX_BENCH_AVX2
  if (has_avx2_fma()) {
    sink = sink + fma_loop_avx2(iters, a, b);
    return double(iters) * 12 * 8 * 2;
  }
#endif
  double flops = 0;
  sink = sink + mul_add_loop_baseline(iters, a, b, &flops);
  return flops;
}

void bm_fma(benchmark::State& state, int threads) {
  const std::string key = fma_key(threads);
  constexpr long kIters = 50'000'000;  // ~0.1 s per thread at 100 GFLOP/s
  fma_loop(kIters / 10);               // wake the core up to its sustained clock
  double flops = 0;
  time_loop(state, key, [&] {
    std::vector<double> done(size_t(threads), 0.0);
    run_threads(threads, [&](int t) { done[size_t(t)] = fma_loop(kIters); });
    flops = 0;
    for (double f : done) flops += f;
  });
  show_rate(state, key, "GFLOP/s", flops, 1e-9);
  state.SetLabel(has_avx2_fma() ? "AVX2 FMA" : "baseline mul+add (no AVX2/FMA)");
}

// ---- STREAM ------------------------------------------------------------------------------

constexpr size_t kStreamFloats = size_t(256) << 20 >> 2;  // 256 MiB of float32 per array
constexpr size_t kLine = 16;                              // floats per 64-byte cache line

struct FreeDeleter {
  void operator()(float* p) const { std::free(p); }
};
using Buffer = std::unique_ptr<float[], FreeDeleter>;

Buffer aligned_floats(size_t n) {
  return Buffer(static_cast<float*>(std::aligned_alloc(64, n * sizeof(float))));
}

// [begin, end) of thread t's slice, whole cache lines so stores stay 16-byte aligned.
std::pair<size_t, size_t> slice(size_t n, int threads, int t) {
  const size_t lines = n / kLine;
  const size_t per = (lines + size_t(threads) - 1) / size_t(threads);
  const size_t begin = std::min(lines, per * size_t(t)) * kLine;
  const size_t end = std::min(lines, per * size_t(t + 1)) * kLine;
  return {begin, end};
}

// Non-temporal stores skip the read-for-ownership of the destination, which is what a
// kernel writing a fresh output can do; STREAM counts only the explicit traffic.
void copy_nt(const float* a, float* c, size_t begin, size_t end) {
#ifdef PARAX_BENCH_X86
  for (size_t i = begin; i < end; i += kLine) {
    for (size_t j = 0; j < kLine; j += 4) _mm_stream_ps(c + i + j, _mm_load_ps(a + i + j));
  }
  _mm_sfence();
#else
  std::memcpy(c + begin, a + begin, (end - begin) * sizeof(float));
#endif
}

void triad_nt(float* a, const float* b, const float* c, float s, size_t begin, size_t end) {
#ifdef PARAX_BENCH_X86
  const __m128 sv = _mm_set1_ps(s);
  for (size_t i = begin; i < end; i += kLine) {
    for (size_t j = 0; j < kLine; j += 4) {
      const __m128 v = _mm_add_ps(_mm_load_ps(b + i + j), _mm_mul_ps(sv, _mm_load_ps(c + i + j)));
      _mm_stream_ps(a + i + j, v);
    }
  }
  _mm_sfence();
#else
  for (size_t i = begin; i < end; ++i) a[i] = b[i] + s * c[i];
#endif
}

void bm_stream(benchmark::State& state, const std::string& kernel, int threads) {
  const std::string key = stream_key(kernel, threads);
  const size_t n = kStreamFloats;
  Buffer a = aligned_floats(n), b = aligned_floats(n), c = aligned_floats(n);
  // First touch by the threads that will stream the slices, so pages are mapped before
  // timing (and on their NUMA node, where there is more than one). Values vary by index:
  // pages of one repeated value could be merged by the hypervisor and read from cache.
  run_threads(threads, [&](int t) {
    auto [begin, end] = slice(n, threads, t);
    for (size_t i = begin; i < end; ++i) {
      a[i] = float(i & 0xffff);
      b[i] = float(i % 1009);
      c[i] = float(i % 997);
    }
  });
  const bool is_copy = kernel == "copy_nt";
  auto pass = [&] {
    run_threads(threads, [&](int t) {
      auto [begin, end] = slice(n, threads, t);
      if (is_copy) {
        copy_nt(a.get(), c.get(), begin, end);
      } else {
        triad_nt(a.get(), b.get(), c.get(), 3.0f, begin, end);
      }
    });
  };
  pass();
  time_loop(state, key, pass);
  const double bytes = double(n) * sizeof(float) * (is_copy ? 2 : 3);
  show_rate(state, key, "GB/s", bytes, 1e-9);
}

// ---- sgemm -------------------------------------------------------------------------------

void sgemm(int64_t n, const float* a, const float* b, float* c) {
  const int in = int(n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0f, a, in, b, in, 0.0f, c,
              in);
}

// OpenBLAS's own threads for this call only: parax keeps OpenBLAS at one thread and splits
// GEMMs over its pool, so the limit is the library at its best and parax gets 1 back.
class BlasThreads {
 public:
  explicit BlasThreads(int threads) { openblas_set_num_threads(threads); }
  ~BlasThreads() { openblas_set_num_threads(1); }
};

void bm_sgemm(benchmark::State& state, int64_t n, int threads) {
  const std::string key = sgemm_key(n, threads);
  const size_t count = size_t(n * n);
  std::vector<float> a(count), b(count), c(count);
  for (size_t i = 0; i < count; ++i) {
    a[i] = float(i % 17) * 0.01f;
    b[i] = float(i % 13) * 0.01f;
  }
  BlasThreads scope(threads);
  // A small warm-up starts OpenBLAS's threads and buffers without a full-size extra call.
  sgemm(std::min<int64_t>(n, 1024), a.data(), b.data(), c.data());
  time_loop(state, key, [&] { sgemm(n, a.data(), b.data(), c.data()); });
  show_rate(state, key, "GFLOP/s", 2.0 * double(n) * double(n) * double(n), 1e-9);
  state.SetLabel(std::string("OpenBLAS ") + openblas_get_corename());
}

}  // namespace

void register_limit_benchmarks(bool again) {
  const int cores = num_cores();
  for (int threads : {1, cores}) {
    benchmark::RegisterBenchmark(pass_name(fma_key(threads), again).c_str(), bm_fma, threads)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    if (cores == 1) break;
  }
  for (const char* kernel : {"copy_nt", "triad_nt"}) {
    for (int threads : {1, cores}) {
      benchmark::RegisterBenchmark(pass_name(stream_key(kernel, threads), again).c_str(), bm_stream,
                                   std::string(kernel), threads)
          ->UseManualTime()
          ->Iterations(10)
          ->Unit(benchmark::kMillisecond);
      if (cores == 1) break;
    }
  }
  for (int64_t n : {int64_t(4096), kBig}) {
    benchmark::RegisterBenchmark(pass_name(sgemm_key(n, cores), again).c_str(), bm_sgemm, n, cores)
        ->UseManualTime()
        ->Iterations(n > 4096 ? 2 : 3)
        ->Unit(benchmark::kMillisecond);
  }
}

}  // namespace parax_bench
