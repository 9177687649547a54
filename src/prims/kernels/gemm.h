// The one place floating GEMMs go: float32 to OpenBLAS or oneDNN's sgemm, whichever uses
// the CPU's whole vector width (chosen once per process), float64 to OpenBLAS. Every call
// runs on the calling thread alone; callers split the work over parax's pool.
#pragma once

#include <cstdint>
#include <string_view>

namespace parax::prims::kernels {

enum class GemmLibrary { kOpenBlas, kOneDnn };

// Widest float vector, in bits, of the ISA the CPU supports (and the OS saves): 512 with
// avx512f, 256 with AVX2+FMA, else 128.
struct CpuVectorWidth {
  int bits = 128;
};

// Returns the vector width OpenBLAS's kernels for `core` (openblas_get_corename) use; 128
// for a core it does not name.
int openblas_core_bits(std::string_view core);

// Chooses the float32 GEMM library: `requested` ("openblas", "onednn", or empty for
// automatic, as PARAX_GEMM), else oneDNN when OpenBLAS's core is narrower than the CPU
// (OpenBLAS too old to know it) and oneDNN is built in, else OpenBLAS. Throws ValueError for
// another `requested`, or "onednn" without oneDNN.
GemmLibrary choose_gemm_library(CpuVectorWidth cpu, std::string_view openblas_core,
                                std::string_view requested, bool have_onednn);

// The process's choice: this CPU, OpenBLAS's core and PARAX_GEMM, decided at the first call.
GemmLibrary gemm_library();
const char* gemm_library_name(GemmLibrary library);
CpuVectorWidth cpu_vector_width();
const char* openblas_core_name();

// C = A B + beta C, row-major: A is m x k (stored k x m when ta), B is k x n (n x k when tb),
// C is m x n with leading dimension ldc. float32 goes to `library`, else to the process's
// choice.
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a, int64_t lda,
          const float* b, int64_t ldb, float beta, float* c, int64_t ldc);
void gemm(bool ta, bool tb, int64_t m, int64_t n, int64_t k, const double* a, int64_t lda,
          const double* b, int64_t ldb, double beta, double* c, int64_t ldc);
void gemm(GemmLibrary library, bool ta, bool tb, int64_t m, int64_t n, int64_t k, const float* a,
          int64_t lda, const float* b, int64_t ldb, float beta, float* c, int64_t ldc);

}  // namespace parax::prims::kernels
