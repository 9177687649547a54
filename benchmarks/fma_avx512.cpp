// The AVX-512 FMA peak loop, the only file compiled with -mavx512f. As in fma_avx2.cpp it
// includes nothing but the intrinsics header, so no library code carries AVX-512
// instructions. Call it only after __builtin_cpu_supports("avx512f").
#include <immintrin.h>

namespace parax_bench {

// Runs `iters` rounds of 12 independent 16-lane FMAs (384 flops per round) and returns a
// value that depends on all of them. Twelve accumulators cover the FMA latency (4 cycles)
// times two 512-bit FMA ports.
float fma_loop_avx512(long iters, float a_value, float b_value) {
  const __m512 a = _mm512_set1_ps(a_value);
  const __m512 b = _mm512_set1_ps(b_value);
  __m512 c0 = _mm512_set1_ps(0.0f), c1 = _mm512_set1_ps(0.1f), c2 = _mm512_set1_ps(0.2f);
  __m512 c3 = _mm512_set1_ps(0.3f), c4 = _mm512_set1_ps(0.4f), c5 = _mm512_set1_ps(0.5f);
  __m512 c6 = _mm512_set1_ps(0.6f), c7 = _mm512_set1_ps(0.7f), c8 = _mm512_set1_ps(0.8f);
  __m512 c9 = _mm512_set1_ps(0.9f), c10 = _mm512_set1_ps(1.0f), c11 = _mm512_set1_ps(1.1f);
  for (long i = 0; i < iters; ++i) {
    c0 = _mm512_fmadd_ps(c0, a, b);
    c1 = _mm512_fmadd_ps(c1, a, b);
    c2 = _mm512_fmadd_ps(c2, a, b);
    c3 = _mm512_fmadd_ps(c3, a, b);
    c4 = _mm512_fmadd_ps(c4, a, b);
    c5 = _mm512_fmadd_ps(c5, a, b);
    c6 = _mm512_fmadd_ps(c6, a, b);
    c7 = _mm512_fmadd_ps(c7, a, b);
    c8 = _mm512_fmadd_ps(c8, a, b);
    c9 = _mm512_fmadd_ps(c9, a, b);
    c10 = _mm512_fmadd_ps(c10, a, b);
    c11 = _mm512_fmadd_ps(c11, a, b);
  }
  __m512 s = _mm512_add_ps(_mm512_add_ps(_mm512_add_ps(c0, c1), _mm512_add_ps(c2, c3)),
                           _mm512_add_ps(_mm512_add_ps(c4, c5), _mm512_add_ps(c6, c7)));
  s = _mm512_add_ps(s, _mm512_add_ps(_mm512_add_ps(c8, c9), _mm512_add_ps(c10, c11)));
  // Summed through memory: GCC 12's _mm512_reduce_add_ps warns of an uninitialized value
  // inside its own header.
  alignas(64) float lanes[16];
  _mm512_store_ps(lanes, s);
  float total = 0.0f;
  for (float lane : lanes) total += lane;
  return total;
}

}  // namespace parax_bench
