// The float32 GEMM dispatch: which library the CPU's flags and OpenBLAS's core choose, and
// that OpenBLAS and oneDNN agree within the rounding error bound of a float32 dot product.
#include "prims/kernels/gemm.h"

#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <random>
#include <string>
#include <vector>

#include "parax/errors.h"

namespace parax::prims::kernels {
namespace {

TEST(GemmDispatch, CoreWidths) {
  EXPECT_EQ(openblas_core_bits("SkylakeX"), 512);
  EXPECT_EQ(openblas_core_bits("Cooperlake"), 512);
  EXPECT_EQ(openblas_core_bits("sapphirerapids"), 512);
  EXPECT_EQ(openblas_core_bits("Haswell"), 256);
  EXPECT_EQ(openblas_core_bits("Zen"), 256);
  EXPECT_EQ(openblas_core_bits("Sandybridge"), 256);
  EXPECT_EQ(openblas_core_bits("Nehalem"), 128);
  EXPECT_EQ(openblas_core_bits("Prescott"), 128);
  EXPECT_EQ(openblas_core_bits(""), 128);
}

TEST(GemmDispatch, WideCpuWithNarrowOpenBlasCoreTakesOneDnn) {
  // Zen 5 under OpenBLAS 0.3.21: AVX-512 flags, Haswell (or Zen) kernels.
  EXPECT_EQ(choose_gemm_library({512}, "Haswell", "", true), GemmLibrary::kOneDnn);
  EXPECT_EQ(choose_gemm_library({512}, "Zen", "", true), GemmLibrary::kOneDnn);
  EXPECT_EQ(choose_gemm_library({256}, "Nehalem", "", true), GemmLibrary::kOneDnn);
}

TEST(GemmDispatch, OpenBlasKeepsCpusItKnows) {
  EXPECT_EQ(choose_gemm_library({512}, "SkylakeX", "", true), GemmLibrary::kOpenBlas);
  EXPECT_EQ(choose_gemm_library({256}, "Haswell", "", true), GemmLibrary::kOpenBlas);
  EXPECT_EQ(choose_gemm_library({256}, "Zen", "", true), GemmLibrary::kOpenBlas);
  EXPECT_EQ(choose_gemm_library({128}, "Nehalem", "", true), GemmLibrary::kOpenBlas);
  // Without oneDNN there is nothing wider to go to.
  EXPECT_EQ(choose_gemm_library({512}, "Haswell", "", false), GemmLibrary::kOpenBlas);
}

TEST(GemmDispatch, RequestOverridesTheCpu) {
  EXPECT_EQ(choose_gemm_library({512}, "Haswell", "openblas", true), GemmLibrary::kOpenBlas);
  EXPECT_EQ(choose_gemm_library({512}, "SkylakeX", "onednn", true), GemmLibrary::kOneDnn);
  try {
    choose_gemm_library({512}, "SkylakeX", "mkl", true);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[PARAX_GEMM] unknown GEMM library 'mkl'; expected openblas or onednn (or unset, "
              "to choose by CPU)");
  }
  try {
    choose_gemm_library({512}, "SkylakeX", "onednn", false);
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[PARAX_GEMM] onednn requested, but parax was built without oneDNN; expected "
              "openblas, or install libdnnl-dev and rebuild");
  }
}

TEST(GemmDispatch, ThisProcessFollowsTheRule) {
  const char* env = std::getenv("PARAX_GEMM");
  const GemmLibrary expected = choose_gemm_library(cpu_vector_width(), openblas_core_name(),
                                                   env ? env : "", PARAX_TEST_HAVE_DNNL != 0);
  EXPECT_EQ(gemm_library(), expected)
      << "CPU " << cpu_vector_width().bits << " bits, OpenBLAS core " << openblas_core_name();
  // ctest runs this binary again with OPENBLAS_CORETYPE=Haswell: on an AVX-512 CPU that is
  // the unrecognised-CPU case, which must leave OpenBLAS.
  const char* core = std::getenv("OPENBLAS_CORETYPE");
  if (core && std::string(core) == "Haswell" && !env && cpu_vector_width().bits == 512 &&
      PARAX_TEST_HAVE_DNNL) {
    EXPECT_EQ(gemm_library(), GemmLibrary::kOneDnn);
  }
}

struct Case {
  bool ta, tb;
  int64_t m, n, k, pad;  // pad: extra leading-dimension elements past each row
  float beta;
};

// C = A B + beta C by both libraries against a double reference. A float32 dot product of
// length k with float32 accumulation is within gamma_k * sum |a_i b_i| of the exact value
// (gamma_k = k u / (1 - k u), u = 2^-24), and so within twice that of the other library;
// beta C adds one rounding of |beta c|.
TEST(GemmDispatch, LibrariesAgreeWithinRoundingBound) {
  if (!PARAX_TEST_HAVE_DNNL) GTEST_SKIP() << "built without oneDNN";
  std::mt19937 rng(7);
  std::uniform_real_distribution<float> dist(-1.0f, 1.0f);
  const std::vector<Case> cases = {
      {false, false, 37, 53, 71, 0, 0.0f}, {true, false, 64, 48, 129, 3, 0.0f},
      {false, true, 129, 17, 64, 5, 1.0f}, {true, true, 8, 300, 33, 1, 0.0f},
      {false, false, 1, 1, 1000, 0, 0.0f}, {false, false, 250, 250, 250, 7, 1.0f},
      {false, true, 513, 31, 1, 0, 0.0f}};
  for (const Case& c : cases) {
    const int64_t a_rows = c.ta ? c.k : c.m, a_cols = c.ta ? c.m : c.k;
    const int64_t b_rows = c.tb ? c.n : c.k, b_cols = c.tb ? c.k : c.n;
    const int64_t lda = a_cols + c.pad, ldb = b_cols + c.pad, ldc = c.n + c.pad;
    std::vector<float> a(size_t(a_rows * lda)), b(size_t(b_rows * ldb)), c0(size_t(c.m * ldc));
    for (float& v : a) v = dist(rng);
    for (float& v : b) v = dist(rng);
    for (float& v : c0) v = dist(rng);
    auto at = [&](int64_t i, int64_t p) { return double(c.ta ? a[p * lda + i] : a[i * lda + p]); };
    auto bt = [&](int64_t p, int64_t j) { return double(c.tb ? b[j * ldb + p] : b[p * ldb + j]); };
    std::vector<float> out[2] = {c0, c0};
    gemm(GemmLibrary::kOpenBlas, c.ta, c.tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, c.beta,
         out[0].data(), ldc);
    gemm(GemmLibrary::kOneDnn, c.ta, c.tb, c.m, c.n, c.k, a.data(), lda, b.data(), ldb, c.beta,
         out[1].data(), ldc);
    const double u = std::ldexp(1.0, -24);
    const double gamma = double(c.k + 1) * u / (1 - double(c.k + 1) * u);
    for (int64_t i = 0; i < c.m; ++i) {
      for (int64_t j = 0; j < ldc; ++j) {
        const size_t at_ij = size_t(i * ldc + j);
        if (j >= c.n) {  // the padding past each row stays untouched
          EXPECT_EQ(out[0][at_ij], c0[at_ij]);
          EXPECT_EQ(out[1][at_ij], c0[at_ij]);
          continue;
        }
        double exact = double(c.beta) * double(c0[at_ij]);
        double magnitude = std::abs(exact);
        for (int64_t p = 0; p < c.k; ++p) {
          exact += at(i, p) * bt(p, j);
          magnitude += std::abs(at(i, p) * bt(p, j));
        }
        for (int lib = 0; lib < 2; ++lib) {
          ASSERT_LE(std::abs(double(out[lib][at_ij]) - exact), gamma * magnitude)
              << (lib ? "oneDNN" : "OpenBLAS") << " at (" << i << ", " << j << ") of m=" << c.m
              << " n=" << c.n << " k=" << c.k << " ta=" << c.ta << " tb=" << c.tb;
        }
        ASSERT_LE(std::abs(double(out[0][at_ij]) - double(out[1][at_ij])), 2 * gamma * magnitude);
      }
    }
  }
}

}  // namespace
}  // namespace parax::prims::kernels
