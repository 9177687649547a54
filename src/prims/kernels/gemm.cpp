// Debian's OpenBLAS picks its kernels by CPU model, so a CPU newer than the library (Zen 5
// under 0.3.21) gets the last model it knows, with half the vector width. oneDNN's sgemm
// picks its kernels by ISA flags instead; it serves float32 when OpenBLAS's core is
// narrower than the CPU. oneDNN here runs on OpenMP, whose team would fight parax's pool,
// so each call runs with the calling thread's OpenMP limit at 1, as conv_dnnl.cpp does.
#include "prims/kernels/gemm.h"

#include <cblas.h>

#include <algorithm>
#include <array>
#include <cctype>
#include <cstdlib>
#include <mutex>
#include <string>

#include "parax/errors.h"

#if PARAX_HAVE_DNNL
#include <omp.h>

#include <oneapi/dnnl/dnnl.h>
#endif

namespace parax::prims::kernels {
namespace {

constexpr bool kHaveOneDnn = PARAX_HAVE_DNNL != 0;

std::string lower(std::string_view s) {
  std::string out(s);
  for (char& ch : out) ch = char(std::tolower(static_cast<unsigned char>(ch)));
  return out;
}

void blas_single_threaded() {
  // Parallelism comes from parax's pool; OpenBLAS's own threads would oversubscribe it.
  static std::once_flag once;
  std::call_once(once, [] { openblas_set_num_threads(1); });
}

CBLAS_TRANSPOSE op(bool t) { return t ? CblasTrans : CblasNoTrans; }

void openblas_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                    const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  blas_single_threaded();
  cblas_sgemm(CblasRowMajor, op(ta), op(tb), blasint(m), blasint(n), blasint(k), 1.0f, a,
              blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

#if PARAX_HAVE_DNNL
void onednn_sgemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
                  const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  const int saved = omp_get_max_threads();
  if (saved != 1) omp_set_num_threads(1);
  const dnnl_status_t status =
      dnnl_sgemm(ta ? 'T' : 'N', tb ? 'T' : 'N', m, n, k, 1.0f, a, lda, b, ldb, beta, c, ldc);
  if (saved != 1) omp_set_num_threads(saved);
  if (status != dnnl_success) {
    throw Error("[dot_general] oneDNN's sgemm failed (status " + std::to_string(int(status)) +
                ") on M=" + std::to_string(m) + ", N=" + std::to_string(n) +
                ", K=" + std::to_string(k));
  }
}
#endif

}  // namespace

int openblas_core_bits(std::string_view core) {
  // OpenBLAS's x86-64 core names (driver/others/dynamic.c) with AVX-512 or AVX kernels; the
  // older ones are SSE.
  static constexpr std::array<std::string_view, 3> k512 = {"skylakex", "cooperlake",
                                                           "sapphirerapids"};
  static constexpr std::array<std::string_view, 7> k256 = {
      "haswell", "zen", "sandybridge", "bulldozer", "piledriver", "steamroller", "excavator"};
  const std::string name = lower(core);
  if (std::find(k512.begin(), k512.end(), name) != k512.end()) return 512;
  if (std::find(k256.begin(), k256.end(), name) != k256.end()) return 256;
  return 128;
}

GemmLibrary choose_gemm_library(CpuVectorWidth cpu, std::string_view openblas_core,
                                std::string_view requested, bool have_onednn) {
  if (requested == "openblas") return GemmLibrary::kOpenBlas;
  if (requested == "onednn") {
    if (!have_onednn) {
      throw ValueError(
          "[PARAX_GEMM] onednn requested, but parax was built without oneDNN; "
          "expected openblas, or install libdnnl-dev and rebuild");
    }
    return GemmLibrary::kOneDnn;
  }
  if (!requested.empty()) {
    throw ValueError("[PARAX_GEMM] unknown GEMM library '" + std::string(requested) +
                     "'; expected openblas or onednn (or unset, to choose by CPU)");
  }
  if (have_onednn && openblas_core_bits(openblas_core) < cpu.bits) return GemmLibrary::kOneDnn;
  return GemmLibrary::kOpenBlas;
}

CpuVectorWidth cpu_vector_width() {
  CpuVectorWidth w;
#if defined(__x86_64__) || defined(__i386__)
  // libgcc's checks include the OS saving the vector state (XCR0), not only CPUID.
  __builtin_cpu_init();
  if (__builtin_cpu_supports("avx512f")) {
    w.bits = 512;
  } else if (__builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma")) {
    w.bits = 256;
  }
#endif
  return w;
}

const char* openblas_core_name() { return openblas_get_corename(); }

GemmLibrary gemm_library() {
  static const GemmLibrary library = [] {
    const char* env = std::getenv("PARAX_GEMM");
    return choose_gemm_library(cpu_vector_width(), openblas_core_name(), env ? env : "",
                               kHaveOneDnn);
  }();
  return library;
}

const char* gemm_library_name(GemmLibrary library) {
  return library == GemmLibrary::kOneDnn ? "onednn" : "openblas";
}

void gemm(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
#if PARAX_HAVE_DNNL
  if (library == GemmLibrary::kOneDnn) {
    onednn_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
    return;
  }
#else
  (void)library;
#endif
  openblas_sgemm(ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc) {
  gemm(gemm_library(), ta, tb, m, n, k, a, lda, b, ldb, beta, c, ldc);
}

void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc) {
  blas_single_threaded();
  cblas_dgemm(CblasRowMajor, op(ta), op(tb), blasint(m), blasint(n), blasint(k), 1.0, a,
              blasint(lda), b, blasint(ldb), beta, c, blasint(ldc));
}

}  // namespace parax::prims::kernels
