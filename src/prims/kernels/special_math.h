// Scalar kernels of the special functions, following the algorithms XLA and JAX use so
// that values agree to the compute type's rounding: StableHLO's CHLO decompositions of
// lgamma and digamma (Lanczos' approximation with Euler's reflection), a Hurwitz zeta for
// polygamma, and jax/_src/lax/special.py's incomplete gamma series and continued fraction
// (also giving igamma's derivative in a and the gamma sampler's implicit gradient).
// Where XLA:CPU contracts a product into the add after it, so do these (std::fma).
// C is float for float32 and the halves (XLA upcasts them), double for float64.
#pragma once

#include <cmath>
#include <limits>
#include <numbers>

namespace parax::prims::kernels {

inline constexpr double kLanczosGamma = 7;
inline constexpr double kBaseLanczosCoeff = 0.99999999999980993227684700473478;
inline constexpr double kLanczosCoefficients[8] = {
    676.520368121885098567009190444019, -1259.13921672240287047156078755283,
    771.3234287776530788486528258894,   -176.61502916214059906584551354,
    12.507343278686904814458936853,     -0.13857109526572011689554707,
    9.984369578019570859563e-6,         1.50563273514931155834e-7};

template <class C>
C lgamma_xla(C x) {
  const C half = C(0.5);
  const C one = C(1);
  const bool reflect = x < half;
  const C z = reflect ? -x : x - one;
  C a = C(kBaseLanczosCoeff);
  for (int i = 0; i < 8; ++i) a = a + C(kLanczosCoefficients[i]) / (z + C(i + 1));
  // log(t) = log(g + 1/2) + log1p(z / (g + 1/2)), and (z + 1/2) log(t) - t written so
  // that it does not overflow for large t.
  const C lanczos_plus_half = C(kLanczosGamma + 0.5);
  const C t = lanczos_plus_half + z;
  const C log_t = C(std::log(kLanczosGamma + 0.5)) + std::log1p(z / lanczos_plus_half);
  // XLA:CPU contracts the product into the add that follows it (one FMA), as here.
  const C r_factor = (z + half) - t / log_t;
  C result =
      std::fma(r_factor, log_t, C((std::log(2.0) + std::log(std::numbers::pi)) / 2)) + std::log(a);
  // Reflection: log(pi) - lgamma(1 - x) - log|sin(pi x)|, with sin taken of the reduced
  // fractional part so that integers give exactly log(0).
  const C abs_x = std::abs(x);
  const C abs_frac = abs_x - std::floor(abs_x);
  const C reduced = half < abs_frac ? one - abs_frac : abs_frac;
  const C denom = std::log(std::sin(C(std::numbers::pi) * reduced));
  const C reflection =
      std::isfinite(denom) ? (C(std::log(std::numbers::pi)) - denom) - result : -denom;
  result = reflect ? reflection : result;
  return std::isinf(x) ? std::numeric_limits<C>::infinity() : result;
}

template <class C>
C digamma_xla(C x) {
  const C half = C(0.5);
  const bool reflect = x < half;
  const C z = reflect ? -x : x - C(1);
  C a = C(kBaseLanczosCoeff);
  C b = C(0);
  for (int i = 0; i < 8; ++i) {
    const C zt = z + C(i + 1);
    const C coeff = C(kLanczosCoefficients[i]);
    a = a + coeff / zt;
    b = b - coeff / (zt * zt);
  }
  const C lanczos_plus_half = C(kLanczosGamma + 0.5);
  const C t = lanczos_plus_half + z;
  const C log_t = C(std::log(kLanczosGamma + 0.5)) + std::log1p(z / lanczos_plus_half);
  C result = (log_t + b / a) - C(kLanczosGamma) / t;
  // digamma(x) = digamma(1 - x) - pi cot(pi x), with x shifted into [-0.5, 0.5].
  const C reduced = x + std::abs(std::floor(x + half));
  const C pi = C(std::numbers::pi);
  const C reflection = result - pi * std::cos(pi * reduced) / std::sin(pi * reduced);
  result = reflect ? reflection : result;
  // Poles at zero and the negative integers.
  if (x <= C(0) && x == std::floor(x)) return std::numeric_limits<C>::quiet_NaN();
  return result;
}

// The Hurwitz zeta function sum_k (k + q)^-x by Euler-Maclaurin summation (Cephes' zeta),
// in double.
inline double hurwitz_zeta(double x, double q) {
  static constexpr double kA[] = {12.0,
                                  -720.0,
                                  30240.0,
                                  -1209600.0,
                                  47900160.0,
                                  -1.8924375803183791606e9,
                                  7.47242496e10,
                                  -2.950130727918164224e12,
                                  1.1646782814350067249e14,
                                  -4.5979787224074726105e15,
                                  1.8152105401943546773e17,
                                  -7.1661652561756670113e18};
  constexpr double kEps = std::numeric_limits<double>::epsilon();
  if (std::isnan(x) || std::isnan(q)) return std::numeric_limits<double>::quiet_NaN();
  if (x == 1) return std::numeric_limits<double>::infinity();
  if (x < 1) return std::numeric_limits<double>::quiet_NaN();
  if (q <= 0) {
    if (q == std::floor(q)) return std::numeric_limits<double>::infinity();
    if (x != std::floor(x)) return std::numeric_limits<double>::quiet_NaN();
  }
  double s = std::pow(q, -x);
  double a = q;
  double b = 0;
  int i = 0;
  while (i < 9 || a <= 9) {
    ++i;
    a += 1;
    b = std::pow(a, -x);
    s += b;
    if (std::abs(b / s) < kEps) return s;
  }
  const double w = a;
  s += b * w / (x - 1);
  s -= 0.5 * b;
  double fac = 1;
  double k = 0;
  for (double coeff : kA) {
    fac *= x + k;
    b /= w;
    const double t = fac * b / coeff;
    s += t;
    if (std::abs(t / s) < kEps) break;
    k += 1;
    fac *= x + k;
    b /= w;
    k += 1;
  }
  return s;
}

// polygamma(m, x) = (-1)^(m+1) m! zeta(m + 1, x); m = 0 is digamma; NaN unless m is a
// non-negative integer.
template <class C>
C polygamma_xla(C m, C x) {
  if (!(m >= C(0)) || m != std::floor(m)) return std::numeric_limits<C>::quiet_NaN();
  if (m == C(0)) return digamma_xla(x);
  const double n = double(m);
  const double sign = std::fmod(n, 2.0) == 0 ? -1.0 : 1.0;
  return C(sign * std::exp(std::lgamma(n + 1)) * hurwitz_zeta(n + 1, double(x)));
}

// What the incomplete gamma loops return: the value, its derivative in a, or the gamma
// sampler's implicit derivative -(dP/da) / (dP/dx).
enum class IgammaMode { kValue, kDerivative, kSampleDerivative };

// The power series of P(a, x) for x < 1 or x <= a. `enabled` false runs no step (JAX's
// vectorized loop keeps such elements at their initial values).
template <class C>
C igamma_series(C ax, C x, C a, bool enabled, IgammaMode mode) {
  constexpr C kEps = std::numeric_limits<C>::epsilon();
  C r = a, c = C(1), ans = C(1), dc_da = C(0), dans_da = C(0);
  for (int64_t step = 0; enabled && step < 1000000; ++step) {
    r = r + C(1);
    dc_da = std::fma(dc_da, x / r, -((c * x) / (r * r)));
    dans_da = dans_da + dc_da;
    c = c * (x / r);
    ans = ans + c;
    enabled = mode == IgammaMode::kValue ? c / ans > kEps : std::abs(dc_da / dans_da) > kEps;
  }
  if (mode == IgammaMode::kValue) return (ans * ax) / a;
  const C dlogax_da = std::log(x) - digamma_xla(a + C(1));
  const C sum = std::fma(ans, dlogax_da, dans_da);
  if (mode == IgammaMode::kDerivative) return ax * sum / a;
  return -sum * x / a;
}

// The continued fraction of Q(a, x) = 1 - P(a, x), at most 2000 steps.
template <class C>
C igammac_continued_fraction(C ax, C x, C a, bool enabled, IgammaMode mode) {
  constexpr C kEps = std::numeric_limits<C>::epsilon();
  C y = C(1) - a;
  C z = x + y + C(1);
  C c = C(0);
  C pkm2 = C(1), qkm2 = x, pkm1 = x + C(1), qkm1 = z * x;
  C ans = pkm1 / qkm1;
  C dpkm2_da = C(0), dqkm2_da = C(0), dpkm1_da = C(0), dqkm1_da = -x;
  C dans_da = (dpkm1_da - ans * dqkm1_da) / qkm1;
  while (enabled && c < C(2000)) {
    c = c + C(1);
    y = y + C(1);
    z = z + C(2);
    const C yc = y * c;
    const C pk = std::fma(pkm1, z, -(pkm2 * yc));
    const C qk = std::fma(qkm1, z, -(qkm2 * yc));
    const bool qk_nonzero = qk != C(0);
    const C r = pk / qk;
    const C t = qk_nonzero ? std::abs((ans - r) / r) : C(1);
    ans = qk_nonzero ? r : ans;
    const C dpk_da = std::fma(pkm2, c, std::fma(-dpkm2_da, yc, std::fma(dpkm1_da, z, -pkm1)));
    const C dqk_da = std::fma(qkm2, c, std::fma(-dqkm2_da, yc, std::fma(dqkm1_da, z, -qkm1)));
    const C dans_da_new = qk_nonzero ? std::fma(-ans, dqk_da, dpk_da) / qk : dans_da;
    const C grad_conditional = qk_nonzero ? std::abs(dans_da_new - dans_da) : C(1);
    pkm2 = pkm1;
    pkm1 = pk;
    qkm2 = qkm1;
    qkm1 = qk;
    dpkm2_da = dpkm1_da;
    dqkm2_da = dqkm1_da;
    dpkm1_da = dpk_da;
    dqkm1_da = dqk_da;
    if (std::abs(pk) > C(1) / kEps) {
      pkm2 *= kEps;
      pkm1 *= kEps;
      qkm2 *= kEps;
      qkm1 *= kEps;
      dpkm2_da *= kEps;
      dqkm2_da *= kEps;
      dpkm1_da *= kEps;
      dqkm1_da *= kEps;
    }
    dans_da = dans_da_new;
    enabled = mode == IgammaMode::kValue ? t > kEps : grad_conditional > kEps;
  }
  if (mode == IgammaMode::kValue) return ans * ax;
  const C dlogax_da = std::log(x) - digamma_xla(a);
  const C sum = std::fma(ans, dlogax_da, dans_da);
  if (mode == IgammaMode::kDerivative) return ax * sum;
  return -sum * x;
}

// x^a e^-x / Gamma(a), and whether its log underflows.
template <class C>
C igamma_prefactor(C a, C x, bool* underflow) {
  const C log_ax = std::fma(a, std::log(x), -x) - lgamma_xla(a);
  *underflow = log_ax < -std::log(std::numeric_limits<C>::max());
  return std::exp(log_ax);
}

// JAX's igamma: the regularized lower incomplete gamma function P(a, x).
template <class C>
C igamma_xla(C a, C x) {
  const bool is_nan = std::isnan(a) || std::isnan(x);
  const bool x_is_inf = x == std::numeric_limits<C>::infinity();
  const bool x_is_zero = x == C(0);
  const bool domain_error = x < C(0) || a < C(0) || (a == C(0) && x_is_zero) || is_nan;
  const bool use_igammac = x >= C(1) && x > a;
  bool underflow = false;
  const C ax = igamma_prefactor(a, x, &underflow);
  const bool enabled = !(x_is_zero || domain_error || underflow || x_is_inf);
  C out = use_igammac ? C(1) - igammac_continued_fraction(ax, x, a, enabled, IgammaMode::kValue)
                      : igamma_series(ax, x, a, enabled, IgammaMode::kValue);
  if (x_is_zero) out = C(0);
  if (x_is_inf) out = C(1);
  if (domain_error) out = std::numeric_limits<C>::quiet_NaN();
  return out;
}

// JAX's igamma_grad_a (mode kDerivative) and random_gamma_grad (kSampleDerivative).
template <class C>
C igamma_derivative_xla(C a, C x, IgammaMode mode) {
  const bool is_nan = std::isnan(a) || std::isnan(x);
  const bool x_is_zero = x == C(0);
  const bool domain_error = x < C(0) || a <= C(0);
  const bool use_igammac = x > C(1) && x > a;
  bool underflow = false;
  const C ax = igamma_prefactor(a, x, &underflow);
  const bool enabled = !(x_is_zero || domain_error || underflow || is_nan);
  C out = use_igammac ? -igammac_continued_fraction(ax, x, a, enabled, mode)
                      : igamma_series(ax, x, a, enabled, mode);
  if (x_is_zero) out = C(0);
  if (domain_error || is_nan) out = std::numeric_limits<C>::quiet_NaN();
  return out;
}

}  // namespace parax::prims::kernels
