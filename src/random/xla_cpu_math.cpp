// XLA:CPU's float32 arithmetic reproduced with lax ops (xla_cpu_math.h).
#include "random/xla_cpu_math.h"

#include <cmath>
#include <span>

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::random::xla_cpu {
namespace {

Array f32(double v) { return frontend::scalar(v, DType::float32); }

// Horner's rule from the leading coefficient, one FMA a step: c[0] x^k + ... + c[k].
Array horner_fma(std::span<const float> c, const Array& x) {
  Array p = f32(double(c[0]));  // rank 0: broadcasts against x in the first step
  for (size_t i = 1; i < c.size(); ++i) p = fma_f32(x, p, f32(double(c[i])));
  return p;
}

// XLA:CPU's reduce-window sum along the last axis: output i adds the `window` elements
// [i, i + window) of x padded with `pad_lo` elements in front. The window loop runs 256
// bits wide with reassociation: lane j adds elements j, j + L, ... in order (lane 0 from
// the init value 0, the others from -0), then lanes are added pairwise, halves first.
Array window_sums(const Array& x, int64_t window, int64_t pad_lo) {
  const DType t = x.dtype();
  const int64_t last = x.ndim() - 1;
  const int64_t n_out = x.shape().back() + pad_lo - window + 1;
  // Padding is -0: adding it changes nothing, as XLA's masked-out lanes do not.
  std::vector<lax::PadConfig> config(size_t(x.ndim()));
  config.back().low = pad_lo;
  const Array padded = lax::pad(x, frontend::scalar(-0.0, t), config);
  std::vector<Array> lanes(size_t(32 / dtype_itemsize(t)), frontend::scalar(-0.0, t));
  lanes[0] = frontend::scalar(0.0, t);
  std::vector<int64_t> start(size_t(x.ndim()), 0);
  Shape limit = padded.shape();
  for (int64_t k = 0; k < window; ++k) {
    start[size_t(last)] = k;
    limit[size_t(last)] = k + n_out;
    Array& lane = lanes[size_t(k) % lanes.size()];
    lane = lax::add(lane, lax::slice(padded, start, limit));
  }
  for (size_t h = lanes.size() / 2; h >= 1; h /= 2) {
    for (size_t j = 0; j < h; ++j) lanes[j] = lax::add(lanes[j], lanes[j + h]);
  }
  return lanes[0];
}

}  // namespace

Array fma_f32(const Array& a, const Array& b, const Array& c) {
  return core::bind1(core::Prim::fma, {a, b, c});
}

// XLA:CPU's f32 erf (its elemental emitter's EmitErfF32): an odd rational approximation,
// +-1 beyond |x| = 3.8325. Checked against JAX 0.4.35 on 400k inputs, all equal.
Array erf_f32(const Array& x) {
  static constexpr float kP[] = {0.00022905065861350646f, 0.0034082910107109506f,
                                 0.050955695062380861f, 0.18520832239976145f, 1.128379143519084f};
  static constexpr float kQ[] = {-1.1791602954361697e-7f,
                                 0.000023547966471313185f,
                                 0.0010179625278914885f,
                                 0.014070470171167667f,
                                 0.11098505178285362f,
                                 0.49746925110067538f,
                                 1.0f};
  const Array x2 = lax::mul(x, x);
  const Array r = lax::div(lax::mul(x, horner_fma(kP, x2)), horner_fma(kQ, x2));
  return lax::select(lax::ge(lax::abs(x), f32(3.832506856900711)), lax::sign(x), r);
}

// XLA:CPU's f32 log: Cephes' logf polynomial in the mantissa, with its multiply-adds
// contracted to FMAs. XLA splits v into mantissa and exponent by its bits; lax has no
// bitcast, so the split is done by exact power-of-two scalings. Checked against JAX
// 0.4.35 on 200k inputs, all equal.
Array log_f32(const Array& v) {
  // v = mantissa * 2^exponent with the mantissa in [0.5, 1); subnormals count as 2^-126.
  Array mantissa = lax::max(v, f32(std::ldexp(1.0, -126)));
  Array exponent = numpy::zeros_like(v);
  for (int k : {64, 32, 16, 8, 4, 2, 1}) {
    const Array big = lax::ge(mantissa, f32(std::ldexp(1.0, k)));
    mantissa = lax::select(big, lax::mul(mantissa, f32(std::ldexp(1.0, -k))), mantissa);
    exponent = lax::select(big, lax::add(exponent, f32(k)), exponent);
  }
  const Array big = lax::ge(mantissa, f32(1.0));
  mantissa = lax::select(big, lax::mul(mantissa, f32(0.5)), mantissa);
  exponent = lax::select(big, lax::add(exponent, f32(1.0)), exponent);
  for (int k : {64, 32, 16, 8, 4, 2, 1}) {
    const Array small = lax::lt(mantissa, f32(std::ldexp(1.0, -k)));
    mantissa = lax::select(small, lax::mul(mantissa, f32(std::ldexp(1.0, k))), mantissa);
    exponent = lax::select(small, lax::sub(exponent, f32(k)), exponent);
  }
  // Below sqrt(1/2), x = 2 * mantissa - 1 and one less in the exponent; else mantissa - 1.
  const Array zeros = numpy::zeros_like(v);
  const Array low = lax::lt(mantissa, f32(0.70710677f));
  const Array x = lax::add(lax::sub(mantissa, f32(1.0)), lax::select(low, mantissa, zeros));
  const Array e = lax::sub(exponent, lax::select(low, numpy::ones_like(v), zeros));
  const Array z = lax::mul(x, x);
  const Array x3 = lax::mul(z, x);
  const Array y1 = fma_f32(fma_f32(x, f32(0.070376836f), f32(-0.1151461f)), x, f32(0.116769984f));
  const Array y2 = fma_f32(fma_f32(x, f32(-0.12420141f), f32(0.14249323f)), x, f32(-0.16668057f));
  const Array y3 = fma_f32(fma_f32(x, f32(0.20000714f), f32(-0.24999994f)), x, f32(0.3333333f));
  Array y = fma_f32(fma_f32(y1, x3, y2), x3, y3);
  y = fma_f32(y, x3, lax::mul(f32(-0.00021219444f), e));
  Array r = lax::add(fma_f32(f32(-0.5), z, x), y);
  r = fma_f32(f32(0.6933594f), e, r);
  // log(0) = -inf, log(inf) = inf, NaN below 0 and for NaN.
  r = lax::select(lax::gt(v, f32(0.0)), r, numpy::full_like(v, NAN));
  r = lax::select(lax::eq(v, f32(INFINITY)), v, r);
  return lax::select(lax::eq(v, f32(0.0)), numpy::full_like(v, -INFINITY), r);
}

// XLA:CPU's f32 log1p for m in (-1, 0] (erf_inv's -x^2): Cephes' rational approximation
// m - m^2/2 + m^3 P(m)/Q(m) for |m| < sqrt(2) - 1, else log(1 + m).
Array log1p_f32(const Array& m) {
  static constexpr float kP[] = {4.527e-05f, 0.49854103f, 6.5787325f, 29.911919f,
                                 60.94967f,  57.112965f,  20.039553f};
  static constexpr float kQ[] = {1.0f,       15.062909f, 83.04757f, 221.7624f,
                                 309.09872f, 216.42789f, 60.11866f};
  const Array m2 = lax::mul(m, m);
  const Array ratio = lax::div(horner_fma(kP, m), horner_fma(kQ, m));
  // XLA's kernel contracts the m^2 / 2 product, not the rational term's (JAX 0.10.2).
  const Array near_zero =
      lax::add(m, fma_f32(lax::neg(m2), f32(0.5), lax::mul(lax::mul(m, m2), ratio)));
  const Array far = log_f32(lax::add(m, f32(1.0)));
  return lax::select(lax::lt(lax::abs(m), f32(0.41421357f)), near_zero, far);
}

namespace {
// XLA's f32 erf_inv (StableHLO's erfInv32, Giles' polynomial), as XLA:CPU runs it
// (reference/jax-random.md §8.2-8.3): the Horner steps contracted to FMAs, and XLA's own
// log1p, which a correctly rounded one would miss in about 1 % of results by an ulp.
// lax::erf_inv is more accurate than XLA's and would differ in the last bits.
Array erf_inv_unfused(const Array& x) {
  static constexpr float kA[] = {2.81022636e-08f,  3.43273939e-07f, -3.5233877e-06f,
                                 -4.39150654e-06f, 0.00021858087f,  -0.00125372503f,
                                 -0.00417768164f,  0.246640727f,    1.50140941f};
  static constexpr float kB[] = {-0.000200214257f, 0.000100950558f, 0.00134934322f,
                                 -0.00367342844f,  0.00573950773f,  -0.0076224613f,
                                 0.00943887047f,   1.00167406f,     2.83297682f};
  const Array w = lax::neg(log1p_f32(lax::mul(x, lax::neg(x))));
  const Array pa = horner_fma(kA, lax::sub(w, f32(2.5)));
  const Array pb = horner_fma(kB, lax::sub(lax::sqrt(w), f32(3.0)));
  const Array p = lax::select(lax::lt(w, f32(5.0)), pa, pb);
  // erf_inv(+-1) = +-inf, reached by truncated_normal with an infinite bound.
  return lax::select(lax::eq(lax::abs(x), f32(1.0)), lax::mul(x, f32(INFINITY)), lax::mul(p, x));
}
}  // namespace

// One compiled program per shape: erf_inv's ~60 elementwise steps then run fused, tile by
// tile, instead of one pass over the array each when called eagerly.
Array erf_inv_f32(const Array& x) {
  static const auto jitted = [] {
    JitOptions options;
    options.name = "erf_inv";
    return jit(erf_inv_unfused, options);
  }();
  return jitted(x);
}

// jnp.cumsum of a float32 or float64 vector as XLA:CPU computes it (checked against JAX
// 0.4.35 for every length to 300 and some to 70000): JAX lowers cumsum to a reduce-window,
// which XLA rewrites, beyond 16 elements, into scans of blocks of 16 plus the scan of the
// block totals, recursively. parax's cumsum kernel adds in float64 and would differ.
Array cumsum(const Array& x) {
  constexpr int64_t kBase = 16;  // the base length of XLA's ReduceWindowRewriter
  const DType t = x.dtype();
  const int64_t n = x.size();
  if (n <= kBase) return n == 0 ? x : window_sums(x, n, n - 1);
  const int64_t rows = (n + kBase - 1) / kBase;
  const Array blocks = lax::reshape(
      lax::pad(x, frontend::scalar(0.0, t), {{0, rows * kBase - n, 0}}), {rows, kBase});
  const Array scans = window_sums(blocks, kBase, kBase - 1);
  const Array totals = lax::reshape(lax::slice(scans, {0, kBase - 1}, {rows, kBase}), {rows});
  // The sum of all blocks before each one.
  const Array before = rows <= kBase ? lax::slice(window_sums(totals, rows, rows), {0}, {rows})
                                     : lax::pad(lax::slice(cumsum(totals), {0}, {rows - 1}),
                                                frontend::scalar(0.0, t), {{1, 0, 0}});
  const Array sums = lax::add(scans, lax::broadcast_in_dim(before, {rows, kBase}, {0}));
  return lax::slice(lax::reshape(sums, {rows * kBase}), {0}, {n});
}

}  // namespace parax::random::xla_cpu
