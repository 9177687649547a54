// The machine's own limits, measured in the same run as the workloads: float32 FMA peak of
// the widest vector ISA (and AVX2's beside it on an AVX-512 CPU), streaming memory bandwidth,
// and sgemm by each library parax can send GEMMs to: OpenBLAS with the core it chose, OpenBLAS
// held to Haswell's AVX2 kernels (what it runs on a CPU newer than itself; a child process,
// since OpenBLAS reads OPENBLAS_CORETYPE once) and oneDNN. They run first; the summary divides
// the workloads by them.
#include <cblas.h>
#include <spawn.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <fstream>
#include <functional>
#include <memory>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <utility>
#include <vector>

#include "bench.h"

#if PARAX_BENCH_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

#if defined(__x86_64__) || defined(__i386__)
#include <emmintrin.h>
#define PARAX_BENCH_X86 1
#endif

extern char** environ;

namespace parax_bench {

#ifdef PARAX_BENCH_AVX2
float fma_loop_avx2(long iters, float a_value, float b_value);  // fma_avx2.cpp
#endif
#ifdef PARAX_BENCH_AVX512
float fma_loop_avx512(long iters, float a_value, float b_value);  // fma_avx512.cpp
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

bool has_avx512() {
#if defined(PARAX_BENCH_AVX512)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f");
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

enum class Isa { kWidest, kAvx2 };

// Runs the widest available loop (or AVX2's) for `iters` rounds; returns the flops it did.
double fma_loop(long iters, Isa isa) {
  // Volatile operands keep the compiler from folding the recurrence; a < 1 keeps the
  // accumulators bounded and away from denormals.
  volatile float a = 0.999999f;
  volatile float b = 1e-3f;
  static volatile float sink = 0;
#ifdef PARAX_BENCH_AVX512
  if (isa == Isa::kWidest && has_avx512()) {
    sink = sink + fma_loop_avx512(iters, a, b);
    return double(iters) * 12 * 16 * 2;
  }
#endif
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

const char* isa_label(Isa isa) {
  if (isa == Isa::kWidest && has_avx512()) return "AVX-512 FMA";
  return has_avx2_fma() ? "AVX2 FMA" : "baseline mul+add (no AVX2/FMA)";
}

void bm_fma(benchmark::State& state, int threads, Isa isa) {
  const std::string key = isa == Isa::kAvx2 ? fma_avx2_key(threads) : fma_key(threads);
  constexpr long kIters = 50'000'000;  // ~0.1 s per thread at 100 GFLOP/s
  fma_loop(kIters / 10, isa);          // wake the core up to its sustained clock
  double flops = 0;
  time_loop(state, key, [&] {
    std::vector<double> done(size_t(threads), 0.0);
    run_threads(threads, [&](int t) { done[size_t(t)] = fma_loop(kIters, isa); });
    flops = 0;
    for (double f : done) flops += f;
  });
  show_rate(state, key, "GFLOP/s", flops, 1e-9);
  state.SetLabel(isa_label(isa));
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

void openblas_sgemm(int64_t n, const float* a, const float* b, float* c) {
  const int in = int(n);
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0f, a, in, b, in, 0.0f, c,
              in);
}

#if PARAX_BENCH_HAVE_DNNL
void onednn_sgemm(int64_t n, const float* a, const float* b, float* c) {
  if (dnnl_sgemm('N', 'N', n, n, n, 1.0f, a, n, b, n, 0.0f, c, n) != dnnl_success) {
    throw std::runtime_error("dnnl_sgemm failed");
  }
}
#endif

// The library's own threads for this call only: parax keeps OpenBLAS and oneDNN's OpenMP at
// one thread and splits GEMMs over its pool, so the limit is the library at its best and
// parax gets 1 back.
class LibraryThreads {
 public:
  explicit LibraryThreads(int threads) {
    openblas_set_num_threads(threads);
#if PARAX_BENCH_HAVE_DNNL
    omp_set_num_threads(threads);
#endif
  }
  ~LibraryThreads() {
    openblas_set_num_threads(1);
#if PARAX_BENCH_HAVE_DNNL
    omp_set_num_threads(1);
#endif
  }
};

// The n x n operands of an sgemm limit, the same for every candidate.
struct SgemmOperands {
  explicit SgemmOperands(int64_t n) : a(size_t(n * n)), b(size_t(n * n)), c(size_t(n * n)) {
    for (size_t i = 0; i < a.size(); ++i) {
      a[i] = float(i % 17) * 0.01f;
      b[i] = float(i % 13) * 0.01f;
    }
  }
  std::vector<float> a, b, c;
};

void bm_sgemm(benchmark::State& state, const std::string& library, int64_t n, int threads) {
  const std::string key = sgemm_key(library, n, threads);
  guarded(state, {key}, [&] {
    auto sgemm = openblas_sgemm;
#if PARAX_BENCH_HAVE_DNNL
    if (library == kOneDnn) sgemm = onednn_sgemm;
#else
    if (library == kOneDnn) throw std::runtime_error("built without oneDNN");
#endif
    SgemmOperands ops(n);
    float* a = ops.a.data();
    float* b = ops.b.data();
    float* c = ops.c.data();
    LibraryThreads scope(threads);
    // A small warm-up starts the library's threads and buffers without a full-size extra call.
    sgemm(std::min<int64_t>(n, 1024), a, b, c);
    time_loop(state, key, [&] { sgemm(n, a, b, c); });
    show_rate(state, key, "GFLOP/s", 2.0 * double(n) * double(n) * double(n), 1e-9);
    state.SetLabel(library == kOneDnn ? "oneDNN"
                                      : std::string("OpenBLAS ") + openblas_get_corename());
  });
}

std::vector<int64_t> sgemm_sizes() { return {4096, kBig}; }

// Runs this binary again with OPENBLAS_CORETYPE=Haswell as the sgemm probe, which writes its
// "key seconds..." lines to `out_path`; returns its exit status (or -1).
int spawn_haswell_probe(const std::string& out_path) {
  const std::string flag = "--sgemm_probe=" + out_path;
  char exe[] = "/proc/self/exe";
  std::vector<char*> argv = {exe, const_cast<char*>(flag.c_str()), nullptr};
  std::vector<std::string> env_strings = {"OPENBLAS_CORETYPE=Haswell"};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "OPENBLAS_CORETYPE=", 18) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> env;
  for (std::string& e : env_strings) env.push_back(e.data());
  env.push_back(nullptr);
  pid_t pid = 0;
  if (posix_spawn(&pid, exe, nullptr, nullptr, argv.data(), env.data()) != 0) return -1;
  int status = 0;
  if (waitpid(pid, &status, 0) != pid || !WIFEXITED(status)) return -1;
  return WEXITSTATUS(status);
}

void bm_haswell_sgemm_probe(benchmark::State& state) {
  const int cores = num_cores();
  std::vector<std::string> keys;
  for (int64_t n : sgemm_sizes()) keys.push_back(sgemm_key(kOpenBlasHaswell, n, cores));
  const std::string path = "/tmp/parax_bench_sgemm_probe." + std::to_string(getpid());
  for (auto _ : state) {
    const auto t0 = std::chrono::steady_clock::now();
    const int status = spawn_haswell_probe(path);
    state.SetIterationTime(
        std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
    std::ifstream in(path);
    int found = 0;
    for (std::string line; std::getline(in, line); ++found) {
      std::istringstream fields(line);
      std::string key;
      double work = 0;
      fields >> key >> work;
      Measurement& m = measurement(key);
      m.work = work;
      for (double sec; fields >> sec;) m.seconds.push_back(sec);
    }
    if (status != 0 || found != int(keys.size())) {
      const std::string why = "sgemm probe failed (exit status " + std::to_string(status) + ")";
      for (const std::string& key : keys) measurement(key).error = why;
      state.SkipWithError(why.c_str());
    }
  }
  std::remove(path.c_str());
}

}  // namespace

int run_sgemm_probe(const std::string& out_path) {
  const int cores = num_cores();
  std::ofstream out(out_path);
  for (int64_t n : sgemm_sizes()) {
    const std::string key = sgemm_key(kOpenBlasHaswell, n, cores);
    SgemmOperands ops(n);
    float* a = ops.a.data();
    float* b = ops.b.data();
    float* c = ops.c.data();
    LibraryThreads scope(cores);
    openblas_sgemm(std::min<int64_t>(n, 1024), a, b, c);
    out << key << " " << 2.0 * double(n) * double(n) * double(n);
    for (int i = 0; i < (n > 4096 ? 2 : 3); ++i) {
      const auto t0 = std::chrono::steady_clock::now();
      openblas_sgemm(n, a, b, c);
      out << " " << std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    }
    out << "\n";
  }
  out.flush();
  return out && std::string(openblas_get_corename()) == "Haswell" ? 0 : 1;
}

void register_limit_benchmarks(bool again) {
  const int cores = num_cores();
  for (int threads : {1, cores}) {
    benchmark::RegisterBenchmark(pass_name(fma_key(threads), again).c_str(), bm_fma, threads,
                                 Isa::kWidest)
        ->UseManualTime()
        ->Iterations(5)
        ->Unit(benchmark::kMillisecond);
    if (has_avx512() && has_avx2_fma()) {
      benchmark::RegisterBenchmark(pass_name(fma_avx2_key(threads), again).c_str(), bm_fma, threads,
                                   Isa::kAvx2)
          ->UseManualTime()
          ->Iterations(5)
          ->Unit(benchmark::kMillisecond);
    }
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
  for (const std::string& library : sgemm_libraries()) {
    for (int64_t n : sgemm_sizes()) {
      const std::string key = sgemm_key(library, n, cores);
      if (library == kOpenBlasHaswell) {
        // The child process measures every size; it runs once, in the first pass.
        if (!again && n == sgemm_sizes().front()) {
          benchmark::RegisterBenchmark(
              pass_name("limits/openblas_haswell_sgemm_probe", again).c_str(),
              bm_haswell_sgemm_probe)
              ->UseManualTime()
              ->Iterations(1)
              ->Unit(benchmark::kMillisecond);
        }
        continue;
      }
      benchmark::RegisterBenchmark(pass_name(key, again).c_str(), bm_sgemm, library, n, cores)
          ->UseManualTime()
          ->Iterations(n > 4096 ? 2 : 3)
          ->Unit(benchmark::kMillisecond);
    }
  }
}

}  // namespace parax_bench
