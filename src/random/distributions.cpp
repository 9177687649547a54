// parax::random's distributions beyond uniform and normal: jax/_src/random's samplers
// written with the same lax operations in the same order, so that keys give JAX's draws.
// Where XLA:CPU rounds differently from a plain lax op (its own float32 log and log1p, a
// multiply feeding an add contracted to one FMA), the float32 path does as XLA does.
#include <bit>
#include <cmath>
#include <cstdint>
#include <limits>
#include <numbers>
#include <optional>

#include "base/promotion.h"
#include "lax/promote.h"
#include "parax/config.h"
#include "parax/control_flow.h"
#include "parax/grad.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/linalg.h"
#include "parax/numpy.h"
#include "parax/random.h"
#include "parax/special.h"
#include "parax/vmap.h"
#include "random/random_internal.h"
#include "random/xla_cpu_math.h"

namespace parax::random {
namespace {

using detail::single_key;

Array cst(double v, DType t) { return frontend::scalar(v, t); }

// A Python float in JAX: weak, float64 with x64. A sampler given a 64-bit dtype draws
// JAX's x64 values whatever x64 says (README, "dtypes"), so its host-computed constants
// and C++-number parameters are float64 then.
DType weak_float_dtype(DType t) {
  return dtype_itemsize(t) == 8 ? DType::float64 : base::default_float_dtype();
}

Array weak_cst(double v, DType t) { return frontend::scalar(v, weak_float_dtype(t), true); }

// p as an inexact array; a C++ number becomes float64 for a 64-bit sampler dtype t.
Array inexact_param(const ArrayLike& p, DType t) {
  const Array pa = frontend::promote_dtypes_inexact({p.array()})[0];
  if (!frontend::is_literal(p.array()) || weak_float_dtype(t) != DType::float64) return pa;
  return frontend::convert(pa, DType::float64, true);
}

// The sampler's float dtype: JAX's default, or the one given, which must be floating.
DType float_dtype(const char* name, std::optional<DType> dtype) {
  const DType t = dtype.value_or(base::default_float_dtype());
  if (!is_floating(t)) {
    throw ValueError(std::string("dtype argument to `") + name + "` must be a float dtype, got " +
                     std::string(dtype_name(t)));
  }
  return t;
}

// JAX's _check_broadcast_shapes: the params' broadcast shape, or `shape` checked.
Shape sample_shape(const char* name, const std::optional<Shape>& shape,
                   const std::vector<Shape>& params) {
  if (!shape) return params.empty() ? Shape{} : frontend::broadcast_shapes("", params);
  if (!params.empty()) detail::check_shape(name, *shape, params);
  return *shape;
}

// x's value broadcast to like's shape (fma_f32 takes operands of one shape).
Array full(const Array& like, double v) {
  return lax::broadcast_in_dim(frontend::scalar(v, like.dtype()), like.shape(), {});
}

Array to_dtype(const ArrayLike& x, DType t) { return frontend::convert(x.array(), t); }

Array broadcast_to(const Array& x, const Shape& shape) {
  return x.shape() == shape ? x : frontend::broadcast_to(x, shape);
}

// ---- XLA:CPU's arithmetic ----

// log and log1p as XLA:CPU computes them: its own float32 routines; halves run in float32
// and round back.
Array xla_log(const Array& x) {
  const DType t = x.dtype();
  if (t == DType::float64) return lax::log(x);
  if (t == DType::float32) return xla_cpu::log_f32(x);
  return lax::convert_element_type(xla_cpu::log_f32(lax::convert_element_type(x, DType::float32)),
                                   t);
}
Array xla_log1p(const Array& x) {
  const DType t = x.dtype();
  if (t == DType::float64) return lax::log1p(x);
  if (t == DType::float32) return xla_cpu::log1p_f32(x);
  return lax::convert_element_type(xla_cpu::log1p_f32(lax::convert_element_type(x, DType::float32)),
                                   t);
}

// XLA:CPU's float32 exp (checked against JAX 0.10.2 on 230k inputs): Cephes' range
// reduction by ln 2 in two FMA steps and its degree-5 polynomial by FMAs, scaled by 2^m;
// results below the smallest normal flush to zero, as XLA:CPU runs with denormals off.
Array exp_xla_f32(const Array& x) {
  const DType t = DType::float32;
  static constexpr float kP[] = {1.9875691500E-4f, 1.3981999507E-3f, 8.3334519073E-3f,
                                 4.1665795894E-2f, 1.6666665459E-1f, 5.0000001201E-1f};
  constexpr double kHi = 88.72283935546875;
  const Array xc = lax::clamp(cst(-104.0, t), x, cst(kHi, t));
  const Array m = lax::floor(xla_cpu::fma_f32(xc, cst(1.44269504088896341, t), full(xc, 0.5)));
  Array r = xla_cpu::fma_f32(m, full(m, -0.693359375), xc);
  r = xla_cpu::fma_f32(m, full(m, 2.12194440e-4), r);
  const Array r2 = lax::mul(r, r);
  Array y = full(r, double(kP[0]));
  for (size_t i = 1; i < std::size(kP); ++i) y = xla_cpu::fma_f32(y, r, full(r, double(kP[i])));
  y = lax::add(xla_cpu::fma_f32(y, r2, r), cst(1.0, t));
  // 2^m in two exact halves, so that only the last product rounds.
  const Array m1 = lax::floor(lax::mul(m, cst(0.5, t)));
  Array res = lax::mul(lax::mul(y, lax::exp2(m1)), lax::exp2(lax::sub(m, m1)));
  res = lax::select(lax::lt(res, cst(detail::finfo_tiny(t), t)), numpy::zeros_like(res), res);
  return lax::select(lax::gt(x, cst(kHi, t)), numpy::full_like(res, INFINITY), res);
}

Array xla_exp(const Array& x) {
  const DType t = x.dtype();
  if (t == DType::float64) return lax::exp(x);
  if (t == DType::float32) {
    static const auto jitted = jit(exp_xla_f32);
    return jitted(x);
  }
  return lax::convert_element_type(xla_exp(lax::convert_element_type(x, DType::float32)), t);
}

// ---- glibc's tanf, which XLA:CPU calls for a float32 tan ----
// XLA lowers tan to llvm.tan, a call to the process's libm tanf: for JAX on Debian 12
// (glibc 2.36) fdlibm's float kernel after a double-precision reduction by pi/2. It is not
// correctly rounded (3 % of results differ from the rounded exact value), so cauchy
// reproduces it operation by operation (checked against that tanf on 340k arguments in
// (-pi/2, pi/2), all equal). glibc >= 2.41 ships a correctly rounded tanf instead.

Array f32c(uint32_t bits) { return cst(double(std::bit_cast<float>(bits)), DType::float32); }

// v with all but the top 12 bits of its significand cleared (glibc's `i & 0xfffff000`),
// by exact power-of-two scalings: lax has no bitcast. Requires: 2^-63 <= |v| < 2^64.
Array trunc_significand_12(const Array& v) {
  const DType t = DType::float32;
  Array m = lax::abs(v);
  Array scale = full(v, 1.0);
  for (int k : {32, 16, 8, 4, 2, 1}) {
    const Array big = lax::ge(m, cst(std::ldexp(1.0, k), t));
    m = lax::select(big, lax::mul(m, cst(std::ldexp(1.0, -k), t)), m);
    scale = lax::select(big, lax::mul(scale, cst(std::ldexp(1.0, k), t)), scale);
  }
  for (int k : {32, 16, 8, 4, 2, 1}) {
    const Array small = lax::lt(m, cst(std::ldexp(1.0, 1 - k), t));
    m = lax::select(small, lax::mul(m, cst(std::ldexp(1.0, k), t)), m);
    scale = lax::select(small, lax::mul(scale, cst(std::ldexp(1.0, -k), t)), scale);
  }
  // m in [1, 2): 1 + 11 fraction bits kept.
  const Array cut = lax::mul(lax::floor(lax::mul(m, cst(2048.0, t))), cst(1.0 / 2048, t));
  return lax::mul(lax::mul(lax::sign(v), cut), scale);
}

// fdlibm's __kernel_tanf(x, y, iy): tan(x + y) for iy = 1, -1 / tan(x + y) for iy = -1
// (iy_odd true), |x + y| <= pi/4, each float operation rounded as written.
Array kernel_tanf(Array x, Array y, const Array& iy_odd) {
  const DType t = DType::float32;
  static constexpr uint32_t kT[] = {0x3eaaaaab, 0x3e088889, 0x3d5d0dd1, 0x3cb327a4, 0x3c11371f,
                                    0x3b6b6916, 0x3abede48, 0x3a1a26c8, 0x398137b9, 0x38a3f445,
                                    0x3895c07a, 0xb79bae5f, 0x37d95384};
  auto T = [](int i) { return f32c(kT[i]); };
  const Array one = cst(1, t), zero = numpy::zeros_like(x);
  const Array iy = lax::select(iy_odd, full(x, -1.0), full(x, 1.0));
  const Array negative =
      lax::bitwise_or(lax::lt(x, zero), lax::eq(lax::div(one, x), full(x, -INFINITY)));
  const Array ax = lax::abs(x);
  const Array tiny = lax::lt(ax, cst(std::ldexp(1.0, -13), t));
  const Array big = lax::ge(ax, f32c(0x3f2ca140));  // |x| >= 0.6744
  // Near pi/4: tan(pi/4 - x') for x' = pi/4 - |x|, accurately.
  const Array xs = lax::select(negative, lax::neg(x), x);
  const Array ys = lax::select(negative, lax::neg(y), y);
  const Array xr = lax::add(lax::sub(f32c(0x3f490fda), xs), lax::sub(f32c(0x33222168), ys));
  x = lax::select(big, xr, x);
  y = lax::select(big, zero, y);
  const Array z = lax::mul(x, x);
  Array w = lax::mul(z, z);
  Array r = T(11);
  for (int k : {9, 7, 5, 3, 1}) r = lax::add(T(k), lax::mul(w, r));
  Array v = T(12);
  for (int k : {10, 8, 6, 4, 2}) v = lax::add(T(k), lax::mul(w, v));
  v = lax::mul(z, v);
  const Array s = lax::mul(z, x);
  r = lax::add(y, lax::mul(z, lax::add(lax::mul(s, lax::add(r, v)), y)));
  r = lax::add(r, lax::mul(T(0), s));
  w = lax::add(x, r);
  const Array sign = lax::select(negative, full(x, -1.0), full(x, 1.0));
  const Array q = lax::sub(lax::div(lax::mul(w, w), lax::add(w, iy)), r);
  const Array big_result = lax::mul(sign, lax::sub(iy, lax::mul(cst(2, t), lax::sub(x, q))));
  // -1 / (x + r) accurately, from 12-bit heads of w and of -1 / w.
  const Array zt = trunc_significand_12(lax::select(tiny, full(x, 1.0), w));
  const Array vt = lax::sub(r, lax::sub(zt, x));
  const Array a = lax::div(cst(-1, t), w);
  const Array tt = trunc_significand_12(lax::select(tiny, full(x, 1.0), a));
  const Array st = lax::add(one, lax::mul(tt, zt));
  const Array inv = lax::add(tt, lax::mul(a, lax::add(st, lax::mul(tt, vt))));
  Array out = lax::select(iy_odd, inv, w);
  out = lax::select(big, big_result, out);
  const Array big_tiny =
      lax::mul(lax::mul(sign, iy), lax::sub(one, lax::mul(lax::mul(cst(2, t), iy), x)));
  out = lax::select(lax::bitwise_and(big, lax::lt(lax::abs(x), cst(std::ldexp(1.0, -13), t))),
                    big_tiny, out);
  const Array tiny_result = lax::select(iy_odd, lax::div(cst(-1, t), x), x);
  return lax::select(tiny, tiny_result, out);
}

// glibc 2.36's tanf for |x| < 120 (its fast reduction's range; cauchy's arguments lie in
// (-pi/2, pi/2)): |x| <= pi/4 goes to the kernel as is; else x - n pi/2 in double, split
// into float head and tail.
Array tan_glibc_f32_impl(const Array& x) {
  const DType d = DType::float64;
  const Array zero_f = numpy::zeros_like(x);
  const Array no = lax::ne(zero_f, zero_f);  // false, x's shape
  const Array direct = kernel_tanf(x, zero_f, no);
  const Array dx = lax::convert_element_type(x, d);
  const Array r = lax::mul(dx, cst(0x1.45F306DC9C883p+23, d));       // 2/pi, prescaled by 2^24
  const Array rt = lax::mul(lax::sign(r), lax::floor(lax::abs(r)));  // (int32_t)r
  const Array n = lax::floor(lax::div(lax::add(rt, cst(0x800000, d)), cst(0x1000000, d)));
  const Array rem = lax::sub(dx, lax::mul(n, cst(0x1.921FB54442D18p0, d)));
  const Array y0 = lax::convert_element_type(rem, DType::float32);
  const Array y1 =
      lax::convert_element_type(lax::sub(rem, lax::convert_element_type(y0, d)), DType::float32);
  const Array odd =
      lax::ne(lax::sub(n, lax::mul(cst(2, d), lax::floor(lax::mul(n, cst(0.5, d))))), cst(0, d));
  const Array reduced = kernel_tanf(y0, y1, odd);
  const Array out = lax::select(lax::le(lax::abs(x), f32c(0x3f490fda)), direct, reduced);
  return lax::select(lax::is_finite(x), out, full(x, NAN));
}

Array tan_glibc_f32(const Array& x) {
  static const auto jitted = jit(tan_glibc_f32_impl);
  return jitted(x);
}

// a / b as XLA computes it: its simplifier turns a division by a broadcast value into a
// multiplication by the broadcast reciprocal (checked on pareto's draws, 0.10.2).
Array xla_divide(const Array& a, const Array& b) {
  const std::vector<Array> ab = frontend::promote_dtypes_inexact({a, b});
  const Shape s = frontend::broadcast_shapes("", std::vector<Shape>{ab[0].shape(), ab[1].shape()});
  if (ab[1].shape() == s) return numpy::divide(ab[0], ab[1]);
  return numpy::multiply(ab[0], lax::div(cst(1, ab[1].dtype()), ab[1]));
}

// x^y as XLA:CPU computes it: float32 (and halves, through float32) call the process's
// libm powf, glibc's double-precision algorithm rounded once to float, which is the
// correctly rounded power but in vanishingly rare cases; a float64 power rounded to
// float32 gives the same. float64 stays parax's pow.
Array xla_pow(const Array& x, const ArrayLike& y) {
  const Array p = numpy::power(x, y);  // dtype and broadcasting as jnp.power's
  const DType t = p.dtype();
  if (!is_floating(t) || t == DType::float64) return p;
  const DType d = DType::float64;
  const Array xd = lax::convert_element_type(broadcast_to(x, p.shape()), d);
  const Array yd = lax::convert_element_type(broadcast_to(y.array(), p.shape()), d);
  const Array r = lax::convert_element_type(lax::pow(xd, yd), DType::float32);
  return t == DType::float32 ? r : lax::convert_element_type(r, t);
}

// a * b + c, one FMA in float32 (XLA contracts it), two roundings otherwise.
Array mul_add(const Array& a, const Array& b, const Array& c) {
  if (a.dtype() == DType::float32) {
    const Shape s =
        frontend::broadcast_shapes("", std::vector<Shape>{a.shape(), b.shape(), c.shape()});
    return xla_cpu::fma_f32(broadcast_to(a, s), broadcast_to(b, s), broadcast_to(c, s));
  }
  return lax::add(lax::mul(a, b), c);
}

double finfo_eps(DType t) {
  switch (t) {
    case DType::float64:
      return std::ldexp(1.0, -52);
    case DType::float16:
      return std::ldexp(1.0, -10);
    case DType::bfloat16:
      return std::ldexp(1.0, -7);
    default:
      return std::ldexp(1.0, -23);
  }
}
int finfo_nmant(DType t) {
  switch (t) {
    case DType::float64:
      return 52;
    case DType::float16:
      return 10;
    case DType::bfloat16:
      return 7;
    default:
      return 23;
  }
}

// ---- gamma ----

// Marsaglia and Tsang's sampler for one key and one alpha (JAX's _gamma_one): the same
// splits and loops, so that each draw is JAX's. alpha < 1 is boosted to alpha + 1 and
// scaled back by U^(1/alpha), or in log space by log(U)/alpha.
Array gamma_one(const Array& key_words, const Array& alpha, bool log_space) {
  const DType t = alpha.dtype();
  const Array zero = cst(0, t), one = cst(1, t), minus_one = cst(-1, t), two = cst(2, t);
  const Array boost_mask = lax::ge(alpha, one);
  const Array boosted = lax::select(boost_mask, alpha, lax::add(alpha, one));
  const Array d = lax::sub(boosted, cst(1.0 / 3.0, t));
  const Array c = lax::div(cst(1.0 / 3.0, t), lax::sqrt(d));

  using State = std::vector<Array>;  // key words, X, V, U
  auto cond_fn = [&](const State& s) {
    const Array &x = s[1], &v = s[2], &u = s[3];
    // U >= 1 - 0.0331 X^2 (one FMA on CPU) and log U >= X/2 + d (1 - V + log V).
    const Array squeeze = mul_add(lax::neg(cst(0.0331, t)), lax::mul(x, x), one);
    const Array bound =
        lax::add(lax::mul(x, cst(0.5, t)), lax::mul(d, lax::add(lax::sub(one, v), xla_log(v))));
    return lax::bitwise_and(lax::ge(u, squeeze), lax::ge(xla_log(u), bound));
  };
  auto body_fn = [&](const State& s) {
    const Key keys = split(Key(s[0]), 3);
    // Draw normals until v = 1 + x c is positive.
    auto next = [&](const State& kxv) {
      const Key ks = split(Key(kxv[0]));
      const Array x = normal(ks[1], {}, t);
      return State{ks[0].data(), x, mul_add(x, c, one)};
    };
    const State xv = lax::while_loop([&](const State& kxv) { return lax::le(kxv[2], zero); }, next,
                                     State{keys[1].data(), zero, minus_one});
    const Array &x = xv[1], &v = xv[2];
    return State{keys[0].data(), lax::mul(x, x), lax::mul(lax::mul(v, v), v),
                 uniform(keys[2], {}, t)};
  };
  const Key ks = split(Key(key_words));
  const State out = lax::while_loop(cond_fn, body_fn, State{ks[0].data(), zero, one, two});
  const Array& v = out[2];
  if (log_space) {
    // log U as -Exponential, from log1p(-u), as JAX computes it.
    const Array log_samples = lax::neg(exponential(ks[1], {}, t));
    const Array log_boost = lax::select(lax::bitwise_or(boost_mask, lax::eq(log_samples, zero)),
                                        zero, lax::mul(log_samples, lax::div(one, alpha)));
    return lax::add(lax::add(xla_log(d), xla_log(v)), log_boost);
  }
  const Array samples = lax::sub(one, uniform(ks[1], {}, t));
  const Array boost = lax::select(boost_mask, one, lax::pow(samples, lax::div(one, alpha)));
  return lax::mul(lax::mul(d, v), boost);
}

// JAX's random_gamma primitive: one key per element (split in a's row-major order), the
// samplers vectorized over them.
Array gamma_impl(const Key& key, const Array& a, bool log_space) {
  const int64_t n = a.size();
  if (n == 0) return a;
  const Key keys = split(key, n);
  const Array flat = lax::reshape(a, {n});
  const Array samples = vmap([log_space](const Array& k, const Array& alpha) {
    return gamma_one(k, alpha, log_space);
  })(keys.data(), flat);
  return lax::reshape(samples, a.shape());
}

// The sample's derivative in a, JAX's jvp of random_gamma (implicit reparameterization):
// sample + (a - stop_gradient(a)) * g has the sample's value and derivative g.
Array with_gamma_grad(const Array& sample, const Array& a, bool log_space) {
  const Array s = stop_gradient(sample);
  const Array alpha = stop_gradient(a);
  Array g;
  if (log_space) {
    // d log(x) = dx / x, with x = exp(log x) (a zero replaced by the smallest normal).
    Array x = lax::exp(s);
    x = lax::select(
        lax::eq(x, cst(0, x.dtype())),
        lax::broadcast_in_dim(cst(detail::finfo_tiny(x.dtype()), x.dtype()), x.shape(), {}), x);
    g = lax::div(lax::random_gamma_grad(alpha, x), x);
  } else {
    g = lax::random_gamma_grad(alpha, s);
  }
  // A non-finite g would turn the zero term into NaN; its derivative is left at zero.
  const Array finite = lax::is_finite(g);
  g = lax::select(finite, g, numpy::zeros_like(g));
  return lax::add(s, lax::mul(lax::sub(a, alpha), g));
}

Array gamma_sample(const char* name, const Key& key, const ArrayLike& a,
                   const std::optional<Shape>& shape, std::optional<DType> dtype, bool log_space) {
  single_key(key, name);
  const DType t = float_dtype("gamma", dtype);
  Array alpha = a.array();
  Shape s = alpha.shape();
  if (shape) {
    detail::check_shape("gamma", *shape, {alpha.shape()});
    s = *shape;
  }
  alpha = broadcast_to(to_dtype(alpha, t), s);
  // The sampler runs on stop_gradient(alpha): its derivative is the implicit one below.
  return with_gamma_grad(gamma_impl(key, stop_gradient(alpha), log_space), alpha, log_space);
}

// jax.nn.softmax along the last axis.
Array softmax_last(const Array& x) {
  const int64_t last = x.ndim() - 1;
  const Array m = stop_gradient(numpy::max(x, last, true));
  const Array e = xla_exp(numpy::subtract(x, m));
  return xla_divide(e, numpy::sum(e, last, true));
}

// ---- gumbel's "highest" mode in float32: 64 random bits per draw ----

Array u32c(uint32_t v) { return frontend::scalar_int(int64_t(v), DType::uint32); }

// The number of leading zero bits of uint32 values (32 for 0), by halving steps.
Array count_leading_zeros(Array x) {
  Array n = lax::broadcast_in_dim(u32c(0), x.shape(), {});
  const Array zero = lax::eq(x, u32c(0));
  for (uint32_t s : {16u, 8u, 4u, 2u, 1u}) {
    const Array empty = lax::eq(lax::shift_right_logical(x, u32c(32 - s)), u32c(0));
    n = lax::select(empty, lax::add(n, u32c(s)), n);
    x = lax::select(empty, lax::shift_left(x, u32c(s)), x);
  }
  return lax::select(zero, lax::broadcast_in_dim(u32c(32), n.shape(), {}), n);
}

// JAX's _safe_int_to_float: the 64-bit fixed-point fraction hi:lo in (0, 1) as the float32
// holding its leading 24 bits (truncated). JAX assembles the float from bit fields; here
// its significand and power of two are scaled exactly, as lax has no bitcast.
Array safe_int_to_float(const Array& hi, const Array& lo) {
  const Array hiclz = count_leading_zeros(hi);
  const Array loclz = count_leading_zeros(lo);
  const Array hi_empty = lax::eq(hiclz, u32c(32));
  const Array zeros = lax::broadcast_in_dim(u32c(0), hi.shape(), {});
  // Shifts by 32 or more give 0 (XLA's semantics), spelled out for clarity.
  const Array hi_part = lax::select(hi_empty, zeros, lax::shift_left(hi, hiclz));
  const Array lo_right = lax::select(lax::eq(hiclz, u32c(0)), zeros,
                                     lax::shift_right_logical(lo, lax::sub(u32c(32), hiclz)));
  const Array lo_left = lax::select(lax::eq(loclz, u32c(32)), zeros, lax::shift_left(lo, loclz));
  Array mantissa = lax::bitwise_or(hi_part, lax::select(hi_empty, lo_left, lo_right));
  mantissa = lax::bitwise_and(lax::shift_right_logical(mantissa, u32c(8)), u32c((1u << 23) - 1));
  const Array clz = lax::select(hi_empty, lax::add(loclz, u32c(32)), hiclz);
  // (1 + mantissa 2^-23) 2^-(1 + clz), every step exact in float32.
  const DType f = DType::float32;
  Array value = lax::mul(lax::convert_element_type(lax::bitwise_or(mantissa, u32c(1u << 23)), f),
                         cst(std::ldexp(1.0, -24), f));
  for (uint32_t b : {64u, 32u, 16u, 8u, 4u, 2u, 1u}) {
    const Array set = lax::ne(lax::bitwise_and(clz, u32c(b)), u32c(0));
    value = lax::select(set, lax::mul(value, cst(std::ldexp(1.0, -int(b)), f)), value);
  }
  return value;
}

// JAX's float32 "highest" gumbel: u from 64 bits; below 1/2 -log(-log1p(-u)) from u
// itself, above from 1 - u (the 64-bit complement) through log, so no precision is lost.
Array gumbel_highest_f32(const Key& key, const Shape& shape) {
  Shape two = shape;
  two.insert(two.begin(), 2);
  const Array b = bits(key, two, DType::uint32);
  std::vector<int64_t> start(two.size(), 0);
  std::vector<int64_t> limit(two.begin(), two.end());
  limit[0] = 1;
  const Array hi = lax::reshape(lax::slice(b, start, limit), shape);
  start[0] = 1;
  limit[0] = 2;
  const Array lo = lax::reshape(lax::slice(b, start, limit), shape);
  // 2^64 - (hi:lo): ~lo + 1, and ~hi plus the carry when ~lo is all ones.
  const Array nlo = lax::bitwise_not(lo);
  const Array nhi =
      lax::add(lax::bitwise_not(hi),
               lax::convert_element_type(lax::eq(nlo, u32c(0xFFFFFFFFu)), DType::uint32));
  const Array neg_lo = lax::add(nlo, u32c(1));
  const Array flip = lax::lt(hi, u32c(1u << 31));
  const Array x = safe_int_to_float(lax::select(flip, hi, nhi), lax::select(flip, lo, neg_lo));
  const Array low_half = lax::neg(xla_log(lax::neg(xla_log1p(lax::neg(x)))));
  const Array high_half = lax::neg(xla_log(lax::neg(xla_log(x))));
  return lax::select(flip, low_half, high_half);
}

// JAX's Gumbel top-k: one noise draw of logits' shape; the k = prod(shape's prefix) largest
// perturbed logits of each distribution, in decreasing order, are its k distinct samples.
// The top k come from a stable sort on the negated values (lax.top_k's order: larger
// first, the lower index first among equals); the k axis then leads the result.
Array categorical_without_replacement(const Key& key, const Array& logits, int64_t ax,
                                      const Shape& shape, size_t n_prefix,
                                      const std::optional<std::string>& mode) {
  const Array noisy = numpy::add(logits, gumbel(key, logits.shape(), logits.dtype(), mode));
  const int64_t n = logits.shape()[size_t(ax)];
  const int64_t k = shape_size(Shape(shape.begin(), shape.begin() + int64_t(n_prefix)));
  if (k > n) {
    throw ValueError("Number of samples without replacement (" + std::to_string(k) +
                     ") cannot exceed number of categories (" + std::to_string(n) + ").");
  }
  const Shape batch(shape.begin() + int64_t(n_prefix), shape.end());
  Shape logits_batch = logits.shape();
  logits_batch.erase(logits_batch.begin() + ax);
  if (batch != logits_batch) {
    // JAX asserts this; a shape that only broadcasts against the batch has no such draws.
    throw ValueError(
        "categorical with replace=False needs shape to end with the logits' batch "
        "shape " +
        shape_str(logits_batch) + ", got shape " + shape_str(shape));
  }
  const Array moved = numpy::moveaxis(noisy, ax, -1);
  const int64_t last = moved.ndim() - 1;
  const Array index = lax::broadcasted_iota(DType::int32, moved.shape(), last);
  const Array sorted = lax::sort({lax::neg(moved), index}, last, true, 1)[1];
  std::vector<int64_t> start(size_t(moved.ndim()), 0);
  std::vector<int64_t> limit(moved.shape().begin(), moved.shape().end());
  limit.back() = k;
  const Array top = lax::slice(sorted, start, limit);  // batch + (k,)
  std::vector<int64_t> perm = {last};
  for (int64_t i = 0; i < last; ++i) perm.push_back(i);
  return lax::reshape(lax::transpose(top, perm), shape);
}

// How XLA:CPU runs the float32 einsum('...ij,...j->...i', factor, z) of
// multivariate_normal (checked against JAX 0.10.2). n = 1: its simplifier turns the dot
// into a multiply, folds normal's sqrt(2) into the factor and contracts the add:
// fma(erf_inv(u), factor * sqrt(2), mean). A plain matrix product with at least 8 rows
// (z's dimensions the factor lacks; the factor has no batch dimensions) runs YNNPACK's
// kernel: four lanes over j in blocks of 4 (FMAs across blocks), added pairwise, plus the
// remaining n mod 4 rounded products summed in order (checked for n <= 16). A smaller,
// matrix-vector or batched product is a loop of FMAs over j (n <= 7; wider ones are
// vectorized along j). Other cases run numpy::einsum, within a few ulp. Under vmap over 8
// or more keys JAX's product becomes YNNPACK's, while parax's stays per key.
enum class MvnDot { kMultiply, kYnnpack, kFmaChain, kEinsum };

MvnDot mvn_dot_kind(const Shape& cov_batch, const Shape& sample_shape, int64_t n) {
  if (n == 1) return MvnDot::kMultiply;
  bool batched = false;
  int64_t free = 1;  // z's rows per factor matrix
  const size_t off = sample_shape.size() - cov_batch.size();
  for (size_t d = 0; d < sample_shape.size(); ++d) {
    const bool shared = d >= off && cov_batch[d - off] > 1;
    batched = batched || shared;
    if (!shared) free *= sample_shape[d];
  }
  if (!batched && free >= 8) return n <= 16 ? MvnDot::kYnnpack : MvnDot::kEinsum;
  return n <= 7 ? MvnDot::kFmaChain : MvnDot::kEinsum;
}

Array mvn_f32(const Key& key, const Array& mean, const Array& factor, const Shape& ns,
              MvnDot kind) {
  const int64_t n = ns.back();
  const int64_t fd = factor.ndim();
  auto column = [&](int64_t j) {  // factor[..., :, j]
    std::vector<int64_t> start(size_t(fd), 0);
    std::vector<int64_t> limit(factor.shape().begin(), factor.shape().end());
    start.back() = j;
    limit.back() = j + 1;
    Shape s(factor.shape().begin(), factor.shape().end() - 1);
    return lax::reshape(lax::slice(factor, start, limit), s);
  };
  auto entry = [&](const Array& z, int64_t j) {  // z[..., j:j+1]
    std::vector<int64_t> start(ns.size(), 0);
    std::vector<int64_t> limit(ns.begin(), ns.end());
    start.back() = j;
    limit.back() = j + 1;
    return numpy::broadcast_to(lax::slice(z, start, limit), ns);
  };
  auto full = [&](const Array& x) { return numpy::broadcast_to(x, ns); };
  if (kind == MvnDot::kMultiply) {
    const Array e = detail::normal_erf_inv_f32(key, ns);
    const Array scaled = lax::mul(column(0), cst(std::sqrt(2.0), DType::float32));
    return xla_cpu::fma_f32(e, full(scaled), full(mean));
  }
  const Array z = normal(key, ns, DType::float32);
  auto product = [&](int64_t j) { return lax::mul(full(column(j)), entry(z, j)); };
  if (kind == MvnDot::kFmaChain) {
    Array acc = product(0);
    for (int64_t j = 1; j < n; ++j) acc = xla_cpu::fma_f32(full(column(j)), entry(z, j), acc);
    return numpy::add(mean, acc);
  }
  const int64_t main = n / 4 * 4;
  std::optional<Array> acc;
  if (main > 0) {
    std::vector<Array> lanes;
    for (int64_t l = 0; l < 4; ++l) lanes.push_back(product(l));
    for (int64_t j = 4; j < main; ++j) {
      lanes[size_t(j % 4)] = xla_cpu::fma_f32(full(column(j)), entry(z, j), lanes[size_t(j % 4)]);
    }
    acc = lax::add(lax::add(lanes[0], lanes[1]), lax::add(lanes[2], lanes[3]));
  }
  std::optional<Array> rest;
  for (int64_t j = main; j < n; ++j) rest = rest ? lax::add(*rest, product(j)) : product(j);
  const Array sum = acc && rest ? lax::add(*acc, *rest) : acc ? *acc : *rest;
  return numpy::add(mean, sum);
}

}  // namespace

Array gamma(const Key& key, const ArrayLike& a, OptionalShape shape, std::optional<DType> dtype) {
  return gamma_sample("gamma", key, a, shape, dtype, false);
}

Array loggamma(const Key& key, const ArrayLike& a, OptionalShape shape,
               std::optional<DType> dtype) {
  return gamma_sample("loggamma", key, a, shape, dtype, true);
}

Array beta(const Key& key, const ArrayLike& a, const ArrayLike& b, OptionalShape shape,
           std::optional<DType> dtype) {
  single_key(key, "beta");
  const DType t = float_dtype("beta", dtype);
  const Shape s = sample_shape("beta", shape, {a.array().shape(), b.array().shape()});
  const Key keys = split(key);
  const Array aa = broadcast_to(to_dtype(a, t), s);
  const Array bb = broadcast_to(to_dtype(b, t), s);
  const Array log_a = loggamma(keys[0], aa, s, t);
  const Array log_b = loggamma(keys[1], bb, s, t);
  // gamma_a / (gamma_a + gamma_b), scaled by the larger one to keep precision.
  const Array log_max = lax::max(log_a, log_b);
  const Array ga = xla_exp(lax::sub(log_a, log_max));
  const Array gb = xla_exp(lax::sub(log_b, log_max));
  return lax::div(ga, lax::add(ga, gb));
}

Array dirichlet(const Key& key, const ArrayLike& alpha, OptionalShape shape,
                std::optional<DType> dtype) {
  single_key(key, "dirichlet");
  const DType t = float_dtype("dirichlet", dtype);
  const Array al = alpha.array();
  if (al.ndim() < 1) {
    throw ValueError("dirichlet requires alpha.ndim >= 1, got alpha.ndim == " +
                     std::to_string(al.ndim()));
  }
  const Shape batch(al.shape().begin(), al.shape().end() - 1);
  Shape s = batch;
  if (shape) {
    detail::check_shape("dirichlet", *shape, {batch});
    s = *shape;
  }
  s.push_back(al.shape().back());
  return softmax_last(loggamma(key, to_dtype(al, t), s, t));
}

Array exponential(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "exponential");
  const DType t = float_dtype("exponential", dtype);
  // log1p(-u): u in [0, 1) keeps log's argument in (0, 1].
  return lax::neg(xla_log1p(lax::neg(uniform(key, shape, t))));
}

Array gumbel(const Key& key, const Shape& shape, std::optional<DType> dtype,
             std::optional<std::string> mode_arg) {
  single_key(key, "gumbel");
  const DType t = float_dtype("gumbel", dtype);
  const std::string mode =
      mode_arg.value_or(config::read("jax_high_dynamic_range_gumbel") ? "high" : "low");
  if (mode != "low" && mode != "high" && mode != "highest") {
    throw ValueError("Must provide valid mode for gumbel got: " + mode);
  }
  const double tiny = detail::finfo_tiny(t);
  if (mode == "low") {
    const Array u = uniform(key, shape, t, tiny, 1.0);
    return lax::neg(xla_log(lax::neg(xla_log(u))));
  }
  if (mode == "highest" && t == DType::float32) return gumbel_highest_f32(key, shape);
  // Two uniforms: the second refines the first below 1/2.
  Shape two = shape;
  two.insert(two.begin(), 2);
  const Array both = uniform(key, two, t, 0.0, 1.0);
  std::vector<int64_t> start(two.size(), 0);
  std::vector<int64_t> limit(two.begin(), two.end());
  limit[0] = 1;
  const Array high = lax::reshape(lax::slice(both, start, limit), shape);
  start[0] = 1;
  limit[0] = 2;
  const Array low = lax::reshape(lax::slice(both, start, limit), shape);
  const Array refined =
      lax::add(mul_add(cst(std::ldexp(1.0, -finfo_nmant(t)), t), low, high), cst(tiny, t));
  const Array x = lax::select(lax::ge(high, cst(0.5, t)), high, refined);
  return lax::neg(xla_log(lax::neg(xla_log1p(lax::neg(x)))));
}

Array categorical(const Key& key, const ArrayLike& logits, int64_t axis, OptionalShape shape,
                  bool replace, std::optional<std::string> mode) {
  single_key(key, "categorical");
  const Array l = logits.array();
  const int64_t nd = l.ndim();
  if (nd == 0) {
    throw ValueError("[random.categorical] logits must have at least one dimension, got shape ()");
  }
  const int64_t ax = frontend::canonicalize_axis(axis, nd);
  Shape batch = l.shape();
  batch.erase(batch.begin() + ax);
  Shape s = batch;
  if (shape) {
    try {
      detail::check_shape("categorical", *shape, {batch});
    } catch (const ValueError& e) {
      if (std::string(e.what()).rfind("Incompatible", 0) != 0) throw;
      // JAX's batch shape holds numpy integers (np.delete's), and its message shows them.
      std::string b = "(";
      for (size_t i = 0; i < batch.size(); ++i) {
        b += (i ? ", " : "") + std::string("np.int64(") + std::to_string(batch[i]) + ")";
      }
      b += batch.size() == 1 ? ",)" : ")";
      throw ValueError("Incompatible shapes for broadcasting: shapes=[" + shape_str(*shape) + ", " +
                       b + "]");
    }
    s = *shape;
  }
  const size_t n_prefix = s.size() - batch.size();
  if (!replace) return categorical_without_replacement(key, l, ax, s, n_prefix, mode);
  // Gumbel-max: argmax over the axis of logits plus Gumbel noise of the sample shape.
  Shape noise_shape(s.begin(), s.end());
  noise_shape.insert(noise_shape.begin() + int64_t(n_prefix) + ax, l.shape()[size_t(ax)]);
  Array expanded = l;
  if (n_prefix > 0) {
    Shape es(n_prefix, 1);
    es.insert(es.end(), l.shape().begin(), l.shape().end());
    expanded = lax::reshape(l, es);
  }
  const Array noisy = numpy::add(gumbel(key, noise_shape, l.dtype(), mode), expanded);
  return numpy::argmax(noisy, int64_t(n_prefix) + ax);
}

Array laplace(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "laplace");
  const DType t = float_dtype("laplace", dtype);
  // finfo.epsneg is half of eps; as a C++ double it would become a weak float32 with x64
  // off and round to -1.
  const Array u = uniform(key, shape, t, cst(-1.0 + finfo_eps(t) / 2, t), 1.0);
  return lax::mul(lax::sign(u), xla_log1p(lax::neg(lax::abs(u))));
}

Array logistic(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "logistic");
  const DType t = float_dtype("logistic", dtype);
  const Array x = uniform(key, shape, t, detail::finfo_tiny(t), 1.0);
  return lax::sub(xla_log(x), xla_log1p(lax::neg(x)));
}

Array cauchy(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "cauchy");
  const DType t = float_dtype("cauchy", dtype);
  const Array u = uniform(key, shape, t, finfo_eps(t), 1.0);
  const Array x = lax::mul(cst(std::numbers::pi, t), lax::sub(u, cst(0.5, t)));
  if (t == DType::float64) return lax::tan(x);
  if (t == DType::float32) return tan_glibc_f32(x);
  // Halves: XLA computes tan in float32 and rounds back.
  return lax::convert_element_type(tan_glibc_f32(lax::convert_element_type(x, DType::float32)), t);
}

Array pareto(const Key& key, const ArrayLike& b, OptionalShape shape, std::optional<DType> dtype) {
  single_key(key, "pareto");
  const DType t = float_dtype("pareto", dtype);
  const Shape s = sample_shape("pareto", shape, {b.array().shape()});
  const Array e = exponential(key, s, t);
  return xla_exp(xla_divide(e, to_dtype(b, t)));
}

Array t(const Key& key, const ArrayLike& df, OptionalShape shape, std::optional<DType> dtype) {
  single_key(key, "t");
  const DType dt = float_dtype("t", dtype);
  const Shape s = sample_shape("t", shape, {df.array().shape()});
  const Array d = to_dtype(df, dt);
  const Key keys = split(key);
  const Array n = normal(keys[0], s, dt);
  const Array half_df = lax::div(d, cst(2, dt));
  const Array g = gamma(keys[1], half_df, s, dt);
  return numpy::multiply(n, numpy::sqrt(numpy::divide(half_df, g)));
}

Array chisquare(const Key& key, const ArrayLike& df, OptionalShape shape,
                std::optional<DType> dtype) {
  single_key(key, "chisquare");
  const DType t = float_dtype("chisquare", dtype);
  const Shape s = sample_shape("chisquare", shape, {df.array().shape()});
  const Array half_df = lax::div(to_dtype(df, t), cst(2, t));
  const Array log_g = loggamma(key, half_df, s, t);
  return lax::mul(xla_exp(log_g), cst(2, t));
}

Array f(const Key& key, const ArrayLike& dfnum, const ArrayLike& dfden, OptionalShape shape,
        std::optional<DType> dtype) {
  single_key(key, "f");
  const DType t = float_dtype("f", dtype);
  const Shape s = sample_shape("f", shape, {dfnum.array().shape(), dfden.array().shape()});
  const Array num_df = to_dtype(dfnum, t);
  const Array den_df = to_dtype(dfden, t);
  const Key keys = split(key);  // [0] for the denominator, [1] for the numerator
  const Array chi2_num = chisquare(keys[1], num_df, s, t);
  const Array chi2_den = chisquare(keys[0], den_df, s, t);
  return numpy::divide(xla_divide(chi2_num, num_df), xla_divide(chi2_den, den_df));
}

Array rademacher(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "rademacher");
  const DType t = dtype.value_or(base::default_int_dtype());
  // p = 0.5 is a Python float in JAX: float64 with x64 (parax's bernoulli takes a weak p
  // as float32), so it is given here as a strong array of the default float dtype, or of
  // float64 for a 64-bit dtype, which draws as JAX does with x64 (README, "dtypes").
  const DType p_dtype = dtype_itemsize(t) == 8 ? DType::float64 : base::default_float_dtype();
  const Array half = cst(0.5, p_dtype);
  const Array b = lax::convert_element_type(bernoulli(key, half, shape), t);
  return lax::sub(lax::mul(cst(2, t), b), cst(1, t));
}

Array maxwell(const Key& key, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "maxwell");
  const DType t = float_dtype("maxwell", dtype);
  Shape s = shape;
  s.push_back(3);
  const Array x = normal(key, s, t);
  if (t != DType::float32) return lax::sqrt(numpy::sum(lax::mul(x, x), int64_t(s.size()) - 1));
  // jnp.linalg.norm over the 3 components as XLA:CPU's fused reduction adds them (checked
  // against JAX): x1^2 first, then x0 and x2 by FMAs.
  auto component = [&](int64_t i) {
    std::vector<int64_t> start(s.size(), 0);
    std::vector<int64_t> limit(s.begin(), s.end());
    start.back() = i;
    limit.back() = i + 1;
    return lax::reshape(lax::slice(x, start, limit), shape);
  };
  const Array x0 = component(0), x1 = component(1), x2 = component(2);
  return lax::sqrt(xla_cpu::fma_f32(x2, x2, xla_cpu::fma_f32(x0, x0, lax::mul(x1, x1))));
}

Array double_sided_maxwell(const Key& key, const ArrayLike& loc, const ArrayLike& scale,
                           const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "double_sided_maxwell");
  const DType t = float_dtype("double_sided_maxwell", dtype);
  const Shape params = frontend::broadcast_shapes(
      "", std::vector<Shape>{loc.array().shape(), scale.array().shape()});
  // JAX appends the parameters' shape to the sample shape (or uses it alone).
  Shape s = shape.empty() ? params : shape;
  s.insert(s.end(), params.begin(), params.end());
  const Key keys = split(key);
  const Array m = maxwell(keys[0], s, t);
  const Array sign = rademacher(keys[1], s, t);
  const Array sc = broadcast_to(to_dtype(scale, t), s);
  const Array lc = broadcast_to(to_dtype(loc, t), s);
  return mul_add(lax::mul(sign, m), sc, lc);
}

Array weibull_min(const Key& key, const ArrayLike& scale, const ArrayLike& concentration,
                  const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "weibull_min");
  const DType t = float_dtype("weibull_min", dtype);
  const Array u = uniform(key, shape, t, 0.0, 1.0);
  const Array e = lax::neg(xla_log1p(lax::neg(u)));
  // 1.0 / concentration: a C++ number is divided on the host, as Python divides a float.
  const Array c = concentration.array();
  const Array inv =
      frontend::is_literal(c) ? weak_cst(1.0 / c.item<double>(), t) : numpy::divide(1.0, c);
  return numpy::multiply(xla_pow(e, inv), scale);
}

Array generalized_normal(const Key& key, double p, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "generalized_normal");
  const DType t = dtype.value_or(base::default_float_dtype());
  const Key keys = split(key);
  const Array g = gamma(keys[0], weak_cst(1.0 / p, t), shape, t);
  const Array r = rademacher(keys[1], shape, t);
  return lax::mul(r, xla_pow(g, weak_cst(1.0 / p, t)));
}

Array ball(const Key& key, int64_t d, double p, const Shape& shape, std::optional<DType> dtype) {
  single_key(key, "ball");
  const DType t = dtype.value_or(base::default_float_dtype());
  const Key keys = split(key);
  Shape gs = shape;
  gs.push_back(d);
  const Array g = generalized_normal(keys[0], p, gs, t);
  const Array e = exponential(keys[1], shape, t);
  // An integral p is a Python int in JAX's default (p=2): integer_pow, else pow.
  const Array ag = lax::abs(g);
  const Array powered = p == std::floor(p) && std::abs(p) < 64 ? lax::integer_pow(ag, int64_t(p))
                                                               : xla_pow(ag, weak_cst(p, t));
  const Array sum = numpy::sum(powered, int64_t(gs.size()) - 1);
  const Array norm = xla_pow(lax::add(sum, e), weak_cst(1.0 / p, t));
  return lax::div(g, lax::broadcast_in_dim(norm, gs, [&] {
                    std::vector<int64_t> dims;
                    for (size_t i = 0; i < shape.size(); ++i) dims.push_back(int64_t(i));
                    return dims;
                  }()));
}

Array triangular(const Key& key, const ArrayLike& left, const ArrayLike& mode,
                 const ArrayLike& right, OptionalShape shape, std::optional<DType> dtype) {
  single_key(key, "triangular");
  const DType t = float_dtype("triangular", dtype);
  const Shape s = sample_shape("triangular", shape,
                               {left.array().shape(), mode.array().shape(), right.array().shape()});
  const Array l = broadcast_to(to_dtype(left, t), s);
  const Array r = broadcast_to(to_dtype(right, t), s);
  const Array m = broadcast_to(to_dtype(mode, t), s);
  const Array fc = lax::div(lax::sub(m, l), lax::sub(r, l));
  const Array u = uniform(key, s, t);
  const Array out1 = lax::add(l, lax::sqrt(lax::mul(lax::mul(u, lax::sub(r, l)), lax::sub(m, l))));
  const Array out2 = lax::sub(
      r, lax::sqrt(lax::mul(lax::mul(lax::sub(cst(1, t), u), lax::sub(r, l)), lax::sub(r, m))));
  return lax::select(lax::lt(u, fc), out1, out2);
}

Array lognormal(const Key& key, const ArrayLike& sigma, OptionalShape shape,
                std::optional<DType> dtype) {
  single_key(key, "lognormal");
  const DType t = float_dtype("lognormal", dtype);
  const Shape s = sample_shape("lognormal", shape, {sigma.array().shape()});
  return xla_exp(numpy::multiply(normal(key, s, t), to_dtype(sigma, t)));
}

Array geometric(const Key& key, const ArrayLike& p, OptionalShape shape,
                std::optional<DType> dtype) {
  single_key(key, "geometric");
  const DType t = dtype.value_or(base::default_int_dtype());
  if (!is_integer(t)) {
    throw ValueError("dtype argument to `geometric` must be an int dtype, got " +
                     std::string(dtype_name(t)));
  }
  const Shape s = sample_shape("geometric", shape, {p.array().shape()});
  const Array pa = inexact_param(p, t);
  const DType ft = pa.dtype();
  Array u = uniform(key, s, ft);
  u = lax::select(lax::eq(u, cst(0, ft)), numpy::ones_like(u), u);
  const Array log_u = xla_log(u);
  const Array log_q = broadcast_to(xla_log1p(lax::neg(pa)), s);
  const Array g = lax::add(lax::floor(lax::div(log_u, log_q)), cst(1, ft));
  return lax::convert_element_type(g, t);
}

Array multivariate_normal(const Key& key, const ArrayLike& mean, const ArrayLike& cov,
                          OptionalShape shape, std::optional<DType> dtype,
                          const std::string& method) {
  single_key(key, "multivariate_normal");
  const std::vector<Array> mc = frontend::promote_dtypes_inexact({mean.array(), cov.array()});
  const Array &mu = mc[0], &sigma = mc[1];
  if (method != "svd" && method != "eigh" && method != "cholesky") {
    throw ValueError("method must be one of {'svd', 'eigh', 'cholesky'}");
  }
  const DType t = dtype.value_or(mu.dtype());
  if (!is_floating(t)) {
    throw ValueError("dtype argument to `multivariate_normal` must be a float dtype, got " +
                     std::string(dtype_name(t)));
  }
  if (mu.ndim() < 1) {
    throw ValueError("multivariate_normal requires mean.ndim >= 1, got mean.ndim == " +
                     std::to_string(mu.ndim()));
  }
  if (sigma.ndim() < 2) {
    throw ValueError("multivariate_normal requires cov.ndim >= 2, got cov.ndim == " +
                     std::to_string(sigma.ndim()));
  }
  const int64_t n = mu.shape().back();
  const Shape& cs = sigma.shape();
  if (cs[cs.size() - 2] != n || cs.back() != n) {
    throw ValueError("multivariate_normal requires cov.shape == (..., n, n) for n=" +
                     std::to_string(n) + ", but got cov.shape == " + shape_str(cs) + ".");
  }
  const Shape mean_batch(mu.shape().begin(), mu.shape().end() - 1);
  const Shape cov_batch(cs.begin(), cs.end() - 2);
  // JAX checks a given shape under the name "normal".
  const Shape s = shape ? (detail::check_shape("normal", *shape, {mean_batch, cov_batch}), *shape)
                        : frontend::broadcast_shapes("", std::vector<Shape>{mean_batch, cov_batch});
  // A factor A with A A^T = cov: U sqrt(S), V sqrt(W) (columns scaled) or Cholesky's L.
  Array factor;
  if (method == "svd") {
    const auto usv = numpy::linalg::svd(sigma);
    factor = numpy::multiply(usv.U, numpy::expand_dims(numpy::sqrt(usv.S), {-2}));
  } else if (method == "eigh") {
    const auto wv = numpy::linalg::eigh(sigma);
    factor =
        numpy::multiply(wv.eigenvectors, numpy::expand_dims(numpy::sqrt(wv.eigenvalues), {-2}));
  } else {
    factor = numpy::linalg::cholesky(sigma);
  }
  Shape ns = s;
  ns.push_back(n);
  const MvnDot kind = mvn_dot_kind(cov_batch, s, n);
  if (t == DType::float32 && factor.dtype() == t && kind != MvnDot::kEinsum) {
    return mvn_f32(key, mu, factor, ns, kind);
  }
  const Array z = normal(key, ns, t);
  return numpy::add(mu, numpy::einsum("...ij,...j->...i", factor, z));
}

Array orthogonal(const Key& key, int64_t n, const Shape& shape, std::optional<DType> dtype,
                 std::optional<int64_t> m_arg) {
  single_key(key, "orthogonal");
  const int64_t m = m_arg.value_or(n);
  Shape zs = shape;
  zs.push_back(std::max(n, m));
  zs.push_back(std::min(n, m));
  const Array z = normal(key, zs, dtype.value_or(base::default_float_dtype()));
  const auto qr = numpy::linalg::qr(z);
  // Q's columns times the signs of R's diagonal: the Haar measure (Mezzadri 2007).
  const Array d = numpy::diagonal(qr.R, 0, -2, -1);
  const Array x = numpy::multiply(qr.Q, numpy::expand_dims(numpy::sign(d), {-2}));
  return n < m ? numpy::swapaxes(x, -1, -2) : x;
}

Array poisson(const Key& key, const ArrayLike& lam, OptionalShape shape,
              std::optional<DType> dtype) {
  const Array& kw = single_key(key, "poisson");
  const DType t = dtype.value_or(base::default_int_dtype());
  if (!is_integer(t)) {
    throw TypeError("poisson only accepts integer dtypes, got " + std::string(dtype_name(t)));
  }
  const Shape s = shape ? *shape : lam.array().shape();
  const Array l =
      lax::convert_element_type(broadcast_to(lam.array(), s), DType::float32);  // always f32
  const DType f = DType::float32;
  const Array use_knuth = lax::bitwise_or(lax::ne(l, l), lax::lt(l, cst(10, f)));
  const Array lam_knuth = lax::select(use_knuth, l, numpy::zeros_like(l));
  const Array lam_rej = lax::select(use_knuth, numpy::full_like(l, 1e5), l);
  const int bits = dtype_itemsize(t) * 8;
  const int64_t max_iters = is_unsigned_integer(t)
                                ? (bits >= 64 ? INT64_MAX : (int64_t(1) << bits) - 1)
                                : (bits >= 64 ? INT64_MAX : (int64_t(1) << (bits - 1)) - 1);
  const DType it = dtype_itemsize(t) >= 8 ? DType::int64 : DType::int32;
  const Array limit = frontend::scalar_int(
      std::min<int64_t>(max_iters, it == DType::int32 ? INT32_MAX : INT64_MAX), it);
  const Array zero_i = frontend::scalar_int(0, it);
  const Array one_i = frontend::scalar_int(1, it);

  // Knuth: count uniforms until their product falls below exp(-lam).
  using State = std::vector<Array>;
  const Array neg_lam_k = lax::neg(lam_knuth);
  auto knuth_body = [&](const State& c) {
    const Key ks = split(Key(c[2]));
    const Array k =
        lax::select(lax::gt(c[3], neg_lam_k), lax::add(c[1], frontend::scalar_int(1, t)), c[1]);
    const Array u = uniform(ks[1], s, f);
    return State{lax::add(c[0], one_i), k, ks[0].data(), lax::add(c[3], xla_log(u))};
  };
  auto knuth_cond = [&](const State& c) {
    const Array any = lax::reduce_or(lax::gt(c[3], neg_lam_k), [&] {
      std::vector<int64_t> axes;
      for (int64_t i = 0; i < int64_t(s.size()); ++i) axes.push_back(i);
      return axes;
    }());
    return lax::bitwise_and(any, lax::lt(c[0], limit));
  };
  const State kn = lax::while_loop(knuth_cond, knuth_body,
                                   State{zero_i, numpy::zeros(s, t), kw, numpy::zeros(s, f)});
  const Array knuth = lax::sub(kn[1], frontend::scalar_int(1, t));

  // Hormann's transformed rejection for lam >= 10.
  const Array log_lam = xla_log(lam_rej);
  const Array b = mul_add(cst(2.53, f), lax::sqrt(lam_rej), cst(0.931, f));
  const Array a = mul_add(cst(0.02483, f), b, cst(-0.059, f));
  const Array inv_alpha =
      lax::add(cst(1.1239, f), lax::div(cst(1.1328, f), lax::sub(b, cst(3.4, f))));
  const Array v_r = lax::sub(cst(0.9277, f), lax::div(cst(3.6224, f), lax::sub(b, cst(2, f))));
  auto rej_body = [&](const State& c) {
    const Key ks = split(Key(c[3]), 3);
    const Array u = lax::sub(uniform(ks[1], s, f), cst(0.5, f));
    const Array v = uniform(ks[2], s, f);
    const Array us = lax::sub(cst(0.5, f), lax::abs(u));
    const Array k = lax::floor(lax::add(
        mul_add(lax::add(lax::div(lax::mul(cst(2, f), a), us), b), u, lam_rej), cst(0.43, f)));
    const Array sv =
        xla_log(lax::div(lax::mul(v, inv_alpha), lax::add(lax::div(a, lax::mul(us, us)), b)));
    const Array tv =
        lax::sub(mul_add(k, log_lam, lax::neg(lam_rej)), lax::lgamma(lax::add(k, cst(1, f))));
    const Array accept1 = lax::bitwise_and(lax::ge(us, cst(0.07, f)), lax::le(v, v_r));
    const Array reject = lax::bitwise_or(
        lax::lt(k, cst(0, f)), lax::bitwise_and(lax::lt(us, cst(0.013, f)), lax::gt(v, us)));
    const Array accept2 = lax::le(sv, tv);
    const Array accept =
        lax::bitwise_or(accept1, lax::bitwise_and(lax::bitwise_not(reject), accept2));
    return State{lax::add(c[0], one_i), lax::select(accept, k, c[1]), lax::bitwise_or(c[2], accept),
                 ks[0].data()};
  };
  auto rej_cond = [&](const State& c) {
    std::vector<int64_t> axes;
    for (int64_t i = 0; i < int64_t(s.size()); ++i) axes.push_back(i);
    return lax::bitwise_and(lax::reduce_or(lax::bitwise_not(c[2]), axes), lax::lt(c[0], limit));
  };
  const State rj =
      lax::while_loop(rej_cond, rej_body,
                      State{zero_i, numpy::full_like(l, -1.0), numpy::zeros(s, DType::bool_), kw});
  const Array rejection = lax::convert_element_type(rj[1], t);
  const Array result = lax::select(use_knuth, knuth, rejection);
  return lax::select(lax::eq(l, cst(0, f)), numpy::zeros_like(result), result);
}

namespace {

Array all_axes_any(const Array& pred) {
  std::vector<int64_t> axes;
  for (int64_t i = 0; i < pred.ndim(); ++i) axes.push_back(i);
  return lax::reduce_or(pred, axes);
}

// JAX's _stirling_approx_tail: the tail of Stirling's series, tabulated up to 9 (looked up
// exactly by a chain of selects) and approximated, at min(k, 9), above.
Array stirling_tail(const Array& k) {
  static constexpr double kTail[] = {0.0810614667953272,  0.0413406959554092, 0.0276779256849983,
                                     0.02079067210376509, 0.0166446911898211, 0.0138761288230707,
                                     0.0118967099458917,  0.0104112652619720, 0.00925546218271273,
                                     0.00833056343336287};
  const DType t = k.dtype();
  const Array use_table = lax::le(k, cst(9, t));
  const Array kc = lax::clamp(cst(0, t), k, cst(9, t));
  const Array kp1 = lax::add(kc, cst(1, t));
  const Array kp1sq = lax::mul(kp1, kp1);
  const Array inner = lax::sub(cst(1.0 / 360, t), lax::div(cst(1.0 / 1260, t), kp1sq));
  const Array approx = lax::div(lax::sub(cst(1.0 / 12, t), lax::div(inner, kp1sq)), kp1);
  const Array index = lax::floor(kc);
  Array table = numpy::full_like(k, kTail[0]);
  for (int i = 1; i < 10; ++i) {
    table = lax::select(lax::eq(index, cst(i, t)), numpy::full_like(k, kTail[i]), table);
  }
  return lax::select(use_table, table, approx);
}

// Sums of geometric waiting times until they pass `count` (for count * p <= 10).
Array binomial_inversion(const Key& key, const Array& count, const Array& prob,
                         const Shape& shape) {
  const DType t = prob.dtype();
  const Array log1m = xla_log1p(lax::neg(prob));
  using State = std::vector<Array>;  // i, num_geom, geom_sum, key words
  auto body = [&](const State& c) {
    const Key ks = split(Key(c[3]));  // JAX: subkey, key = split(key)
    const Array more = lax::le(c[2], count);
    const Array num = lax::select(more, lax::add(c[1], cst(1, t)), c[1]);
    const Array u = uniform(ks[0], shape, t);
    const Array geom = lax::ceil(lax::div(xla_log(u), log1m));
    return State{lax::add(c[0], frontend::scalar_int(1, DType::int32)), num, lax::add(c[2], geom),
                 ks[1].data()};
  };
  auto cond = [&](const State& c) { return all_axes_any(lax::le(c[2], count)); };
  const State out =
      lax::while_loop(cond, body,
                      State{frontend::scalar_int(0, DType::int32), numpy::zeros(shape, t),
                            numpy::zeros(shape, t), key.data()});
  return lax::sub(out[1], cst(1, t));
}

// Hormann's BTRS transformed rejection (for count * p > 10).
Array binomial_btrs(const Key& key, const Array& count, const Array& prob, const Shape& shape) {
  const DType t = prob.dtype();
  const Array one = cst(1, t);
  const Array stddev = lax::sqrt(lax::mul(lax::mul(count, prob), lax::sub(one, prob)));
  const Array b = mul_add(cst(2.53, t), stddev, cst(1.15, t));
  const Array a = mul_add(cst(0.01, t), prob, mul_add(cst(0.0248, t), b, cst(-0.0873, t)));
  const Array c = mul_add(count, prob, cst(0.5, t));
  const Array v_r = lax::sub(cst(0.92, t), lax::div(cst(4.2, t), b));
  const Array r = lax::div(prob, lax::sub(one, prob));
  const Array alpha = lax::mul(lax::add(cst(2.83, t), lax::div(cst(5.1, t), b)), stddev);
  const Array m = lax::floor(lax::mul(lax::add(count, one), prob));
  const Array half = cst(0.5, t);
  using State = std::vector<Array>;  // i, k_out, accepted, key words
  auto body = [&](const State& st) {
    const Key ks = split(Key(st[3]), 3);
    const Array u = lax::sub(uniform(ks[1], shape, t), half);
    Array v = uniform(ks[2], shape, t);
    const Array us = lax::sub(half, lax::abs(u));
    const Array accept1 = lax::bitwise_and(lax::ge(us, cst(0.07, t)), lax::le(v, v_r));
    const Array k = lax::floor(mul_add(lax::add(lax::div(lax::mul(cst(2, t), a), us), b), u, c));
    const Array reject = lax::bitwise_or(lax::lt(k, cst(0, t)), lax::gt(k, count));
    v = xla_log(lax::div(lax::mul(v, alpha), lax::add(lax::div(a, lax::mul(us, us)), b)));
    const Array cm1 = lax::add(lax::sub(count, m), one);  // count - m + 1
    const Array ck1 = lax::add(lax::sub(count, k), one);  // count - k + 1
    // LLVM fuses the first of two products added (equal uses), then each next one.
    const Array l1 = xla_log(lax::div(lax::add(m, one), lax::mul(r, cm1)));
    const Array l2 = xla_log(lax::div(cm1, ck1));
    const Array l3 = xla_log(lax::div(lax::mul(r, ck1), lax::add(k, one)));
    Array ub = mul_add(lax::add(m, half), l1, lax::mul(lax::add(count, one), l2));
    ub = mul_add(lax::add(k, half), l3, ub);
    ub = lax::add(ub, stirling_tail(m));
    ub = lax::add(ub, stirling_tail(lax::sub(count, m)));
    ub = lax::sub(ub, stirling_tail(k));
    ub = lax::sub(ub, stirling_tail(lax::sub(count, k)));
    const Array accept2 = lax::le(v, ub);
    const Array accept =
        lax::bitwise_or(accept1, lax::bitwise_and(lax::bitwise_not(reject), accept2));
    return State{lax::add(st[0], frontend::scalar_int(1, DType::int32)),
                 lax::select(accept, k, st[1]), lax::bitwise_or(st[2], accept), ks[0].data()};
  };
  auto cond = [&](const State& st) { return all_axes_any(lax::bitwise_not(st[2])); };
  const State out =
      lax::while_loop(cond, body,
                      State{frontend::scalar_int(0, DType::int32), numpy::full_like(prob, -1.0),
                            numpy::zeros(shape, DType::bool_), key.data()});
  return out[1];
}

}  // namespace

Array binomial(const Key& key, const ArrayLike& n, const ArrayLike& p, OptionalShape shape,
               std::optional<DType> dtype) {
  single_key(key, "binomial");
  const DType t = dtype.value_or(base::default_float_dtype());
  if (!is_floating(t)) {
    throw ValueError("dtype argument to `binomial` must be a float dtype, got " +
                     std::string(dtype_name(t)));
  }
  const Shape s = sample_shape("binomial", shape, {n.array().shape(), p.array().shape()});
  const Array prob = broadcast_to(inexact_param(p, t), s);
  const DType pt = prob.dtype();
  Array count = broadcast_to(to_dtype(n, pt), s);
  const Array one = cst(1, pt);
  const Array p_lt_half = lax::lt(prob, cst(0.5, pt));
  Array q = lax::select(p_lt_half, prob, lax::sub(one, prob));
  const Array count_nan_or_neg = lax::bitwise_or(lax::ne(count, count), lax::lt(count, cst(0, pt)));
  const Array count_inf = lax::eq(lax::abs(count), cst(INFINITY, pt));
  const Array q_is_nan = lax::ne(q, q);
  const Array q_l_0 = lax::lt(q, cst(0, pt));
  q = lax::select(lax::bitwise_or(q_is_nan, q_l_0), numpy::full_like(q, 0.01), q);
  const Array use_inversion =
      lax::bitwise_or(count_nan_or_neg, lax::le(lax::mul(count, q), cst(10, pt)));
  count = lax::floor(count);
  const Array count_inv = lax::select(use_inversion, count, numpy::zeros_like(count));
  const Array count_btrs = lax::select(use_inversion, numpy::full_like(count, 1e4), count);
  const Array q_btrs = lax::select(use_inversion, numpy::full_like(q, 0.5), q);
  Array samples = lax::select(use_inversion, binomial_inversion(key, count_inv, q, s),
                              binomial_btrs(key, count_btrs, q_btrs, s));
  samples = lax::convert_element_type(samples, t);
  const Array invalid = lax::bitwise_or(lax::bitwise_or(q_l_0, q_is_nan), count_nan_or_neg);
  samples = lax::select(invalid, numpy::full_like(samples, NAN), samples);
  samples = lax::select(lax::bitwise_and(count_inf, lax::bitwise_not(invalid)),
                        numpy::full_like(samples, INFINITY), samples);
  const Array keep = lax::bitwise_or(lax::bitwise_or(p_lt_half, count_nan_or_neg),
                                     lax::bitwise_or(q_is_nan, count_inf));
  return lax::select(keep, samples, lax::sub(lax::convert_element_type(count, t), samples));
}

Array rayleigh(const Key& key, const ArrayLike& scale, OptionalShape shape,
               std::optional<DType> dtype) {
  single_key(key, "rayleigh");
  const DType t = float_dtype("rayleigh", dtype);
  const Shape s = sample_shape("rayleigh", shape, {scale.array().shape()});
  const Array u = uniform(key, s, t);
  const Array sc = broadcast_to(to_dtype(scale, t), s);
  return lax::mul(sc, lax::sqrt(lax::mul(xla_log(u), cst(-2, t))));
}

Array wald(const Key& key, const ArrayLike& mean, OptionalShape shape, std::optional<DType> dtype) {
  single_key(key, "wald");
  const DType t = float_dtype("wald", dtype);
  const Shape s = sample_shape("wald", shape, {mean.array().shape()});
  const Key keys = split(key);
  const Array mu = broadcast_to(to_dtype(mean, t), s);
  const Array v = normal(keys[0], s, t);
  const Array z = uniform(keys[1], s, t);
  const Array y = lax::integer_pow(v, 2);
  const Array y_sq = lax::integer_pow(y, 2);
  const Array mu_sq = lax::integer_pow(mu, 2);
  // sqrt(4 mu y + mu^2 y^2), its two products added by one FMA on CPU.
  const Array sqrt_term = lax::sqrt(mul_add(lax::mul(cst(4, t), mu), y, lax::mul(mu_sq, y_sq)));
  // mu + mu^2 y / 2 - (mu / 2) sqrt_term, the last product fused into the subtraction.
  const Array x = mul_add(lax::neg(lax::div(mu, cst(2, t))), sqrt_term,
                          lax::add(mu, lax::div(lax::mul(mu_sq, y), cst(2, t))));
  return lax::select(lax::le(z, lax::div(mu, lax::add(mu, x))), x, lax::div(mu_sq, x));
}

}  // namespace parax::random
