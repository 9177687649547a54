// fma(a, b, c) = a * b + c with one rounding. Not one of lax's primitives: XLA:CPU
// contracts a multiply feeding an add into an FMA, so JAX's samplers (uniform's scaling,
// erf_inv's Horner steps) round that way, and bit-exact random numbers need it. float32
// and float64; rank-0 operands broadcast.
#include <cmath>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

std::vector<Aval> fma_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 3, "operands of fma");
  const Shape shape = elementwise_shape("fma", in);
  check_same_dtypes("fma", in);
  if (in[0].dtype != DType::float32 && in[0].dtype != DType::float64) {
    throw TypeError("fma requires float32 or float64 operands, got " +
                    std::string(dtype_name(in[0].dtype)) + ".");
  }
  return {Aval{shape, in[0].dtype, all_weak(in)}};
}

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

void fma_kernel(const KernelCall& c) {
  if (c.out_avals[0].dtype == DType::float32) return fma_typed<float>(c);
  fma_typed<double>(c);
}

// d(a b + c) = da b + a db + dc.
std::vector<Array> fma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array> outs, const Params&) {
  const Shape& shape = outs[0].shape();
  Array t;
  if (tangents[0].valid()) t = broadcast_to(lax::mul(tangents[0], primals[1]), shape);
  if (tangents[1].valid()) t = add_tangents(t, broadcast_to(lax::mul(primals[0], tangents[1]), shape));
  if (tangents[2].valid()) t = add_tangents(t, broadcast_to(tangents[2], shape));
  return {t};
}

}  // namespace

extern const PrimRules fma_rules = {.abstract_eval = &fma_eval,
                                    .sharding_rule = &elementwise_sharding_rule,
                                    .kernel = &fma_kernel,
                                    .jvp = &fma_jvp,
                                    .batch = &elementwise_batch<core::Prim::fma>};

}  // namespace parax::prims
