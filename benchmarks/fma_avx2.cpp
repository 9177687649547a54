// The FMA peak loop, the only file compiled with -mavx2 -mfma. It includes nothing but the
// intrinsics header: an inline library function instantiated here would carry AVX2 code,
// and the linker could pick that copy for callers on machines without AVX2. Call it only
// after __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma").
#include <immintrin.h>

namespace parax_bench {

// Runs `iters` rounds of 12 independent 8-lane FMAs (192 flops per round) and returns a
// value that depends on all of them, so the loop cannot be dropped. Twelve accumulators
// cover the FMA latency (4 cycles) times the two FMA ports with room to spare.
float fma_loop_avx2(long iters, float a_value, float b_value) {
  const __m256 a = _mm256_set1_ps(a_value);
  const __m256 b = _mm256_set1_ps(b_value);
  __m256 c0 = _mm256_set1_ps(0.0f), c1 = _mm256_set1_ps(0.1f), c2 = _mm256_set1_ps(0.2f);
  __m256 c3 = _mm256_set1_ps(0.3f), c4 = _mm256_set1_ps(0.4f), c5 = _mm256_set1_ps(0.5f);
  __m256 c6 = _mm256_set1_ps(0.6f), c7 = _mm256_set1_ps(0.7f), c8 = _mm256_set1_ps(0.8f);
  __m256 c9 = _mm256_set1_ps(0.9f), c10 = _mm256_set1_ps(1.0f), c11 = _mm256_set1_ps(1.1f);
  for (long i = 0; i < iters; ++i) {
    c0 = _mm256_fmadd_ps(c0, a, b);
    c1 = _mm256_fmadd_ps(c1, a, b);
    c2 = _mm256_fmadd_ps(c2, a, b);
    c3 = _mm256_fmadd_ps(c3, a, b);
    c4 = _mm256_fmadd_ps(c4, a, b);
    c5 = _mm256_fmadd_ps(c5, a, b);
    c6 = _mm256_fmadd_ps(c6, a, b);
    c7 = _mm256_fmadd_ps(c7, a, b);
    c8 = _mm256_fmadd_ps(c8, a, b);
    c9 = _mm256_fmadd_ps(c9, a, b);
    c10 = _mm256_fmadd_ps(c10, a, b);
    c11 = _mm256_fmadd_ps(c11, a, b);
  }
  __m256 s = _mm256_add_ps(_mm256_add_ps(_mm256_add_ps(c0, c1), _mm256_add_ps(c2, c3)),
                           _mm256_add_ps(_mm256_add_ps(c4, c5), _mm256_add_ps(c6, c7)));
  s = _mm256_add_ps(s, _mm256_add_ps(_mm256_add_ps(c8, c9), _mm256_add_ps(c10, c11)));
  return _mm256_cvtss_f32(s);
}

}  // namespace parax_bench
