// The kernel of fma: one rounding per element, through AVX2's FMA instruction where the
// CPU has it and libm's fma elsewhere.
#include "prims/kernels/fma.h"

#include <cmath>

#include "prims/elementwise.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

// The loop is compiled a second time for AVX2 + FMA, where std::fma becomes one
// (vectorized) instruction; elsewhere it is libm's correctly rounded fma.
template <class T>
void fma_loop(const T* a, int64_t sa, const T* b, int64_t sb, const T* c, int64_t sc, T* y,
              int64_t n) {
  for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a[i * sa], b[i * sb], c[i * sc]);
}

#if defined(__x86_64__) && defined(__GNUC__)
template <class T>
__attribute__((target("avx2,fma"))) void fma_loop_avx2(const T* a, int64_t sa, const T* b,
                                                       int64_t sb, const T* c, int64_t sc, T* y,
                                                       int64_t n) {
  if (sa == 1 && sb == 1 && sc == 1) {
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a[i], b[i], c[i]);
  } else {
    for (int64_t i = 0; i < n; ++i) y[i] = std::fma(a[i * sa], b[i * sb], c[i * sc]);
  }
}
const bool kHasFma = __builtin_cpu_supports("avx2") && __builtin_cpu_supports("fma");
#endif

template <class T>
void fma_typed(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  auto stride = [&](size_t k) { return c.in_avals[k].size() == n ? int64_t{1} : int64_t{0}; };
  const T *a = in_ptr<T>(c, 0), *b = in_ptr<T>(c, 1), *z = in_ptr<T>(c, 2);
  T* y = out_ptr<T>(c, 0);
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    const int64_t sa = stride(0), sb = stride(1), sc = stride(2);
#if defined(__x86_64__) && defined(__GNUC__)
    if (kHasFma) {
      return fma_loop_avx2(a + begin * sa, sa, b + begin * sb, sb, z + begin * sc, sc, y + begin,
                           end - begin);
    }
#endif
    fma_loop(a + begin * sa, sa, b + begin * sb, sb, z + begin * sc, sc, y + begin, end - begin);
  });
}

}  // namespace

void fma(const KernelCall& c) {
  if (c.out_avals[0].dtype == DType::float32) return fma_typed<float>(c);
  fma_typed<double>(c);
}

}  // namespace parax::prims::kernels
