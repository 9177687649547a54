// parax::random's distributions and the special functions against JAX's values in
// tests/golden/distribution_cases.txt (tools/make_distribution_goldens.py): every sampler
// in both threefry modes, several shapes, dtypes and broadcasts, key batches through vmap,
// jit, gradients of the gamma samplers, and the errors JAX raises. Also the primitives'
// own rules: jvp against finite differences, batching, fusion.
#include <gtest/gtest.h>

#include <bit>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <functional>
#include <map>
#include <sstream>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace rnd = random;
using rnd::key;

class Mode {
 public:
  explicit Mode(bool partitionable) { config::update("jax_threefry_partitionable", partitionable); }
  ~Mode() { config::update("jax_threefry_partitionable", true); }
};

class X64 {
 public:
  X64() { config::update("jax_enable_x64", true); }
  ~X64() { config::update("jax_enable_x64", false); }
};

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("distribution_cases.txt"));
  return *records;
}

std::vector<std::string> split_on(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.emplace_back();
  return parts;
}

// Distance in units in the last place between two doubles (of one precision's grid when
// both came from floats).
int64_t ulps(double a, double b, bool single) {
  if (single) {
    auto key32 = [](float f) {
      const int32_t i = std::bit_cast<int32_t>(f);
      return i < 0 ? int64_t(INT32_MIN) - int64_t(i) : int64_t(i);
    };
    return std::llabs(key32(float(a)) - key32(float(b)));
  }
  auto key64 = [](double f) {
    const int64_t i = std::bit_cast<int64_t>(f);
    return i < 0 ? INT64_MIN - i : i;
  };
  const int64_t d = key64(a) - key64(b);
  return d < 0 ? -d : d;
}

// Compares x with a `dtype|shape|values` record: exactly by default (max_ulps 0), NaN
// equal to NaN. Halves are compared in float32 (exact), float64 as doubles.
void expect_golden(const std::string& name, const Array& x, int64_t max_ulps = 0,
                   double abs_tol = 0) {
  const auto it = goldens().find(name);
  ASSERT_NE(it, goldens().end()) << "no golden for " << name;
  const std::vector<std::string> parts = split_on(it->second, '|');
  ASSERT_EQ(parts.size(), 3u) << name;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  Shape shape;
  if (!parts[1].empty()) {
    for (const std::string& d : split_on(parts[1], ',')) shape.push_back(std::stoll(d));
  }
  ASSERT_EQ(x.shape(), shape) << name;
  const std::vector<std::string> want =
      parts[2].empty() ? std::vector<std::string>{} : split_on(parts[2], ',');
  ASSERT_EQ(size_t(x.size()), want.size()) << name;
  if (is_floating(x.dtype())) {
    const bool f64 = x.dtype() == DType::float64;
    std::vector<double> got;
    if (f64) {
      got = x.to_vector<double>();
    } else {
      for (float v : x.to_vector<float>()) got.push_back(v);
    }
    int bad = 0;
    int64_t differ = 0, worst = 0;
    for (size_t i = 0; i < got.size(); ++i) {
      double w = std::stod(want[i]);
      if (!f64) w = double(float(w));
      if ((std::isnan(w) && std::isnan(got[i])) || got[i] == w) continue;
      ++differ;
      if (std::isfinite(w) && std::isfinite(got[i])) {
        worst = std::max(worst, ulps(got[i], w, !f64));
      }
    }
    if (differ > 0 && std::getenv("PARAX_DIST_REPORT") != nullptr) {
      std::printf("REPORT %s: %lld of %zu differ, worst %lld ulp\n", name.c_str(),
                  (long long)differ, got.size(), (long long)worst);
    }
    for (size_t i = 0; i < got.size() && bad < 5; ++i) {
      double w = std::stod(want[i]);
      if (!f64) w = double(float(w));
      if (std::isnan(w) && std::isnan(got[i])) continue;
      if (got[i] == w) continue;
      const bool near = std::isfinite(w) && std::isfinite(got[i]) &&
                        (ulps(got[i], w, !f64) <= max_ulps || std::abs(got[i] - w) <= abs_tol);
      if (!near) {
        ++bad;
        ADD_FAILURE() << name << "[" << i << "]: got " << got[i] << " want " << w << " ("
                      << ulps(got[i], w, !f64) << " ulp)";
      }
    }
  } else {
    const std::vector<int64_t> got = x.to_vector<int64_t>();
    int bad = 0;
    for (size_t i = 0; i < got.size() && bad < 5; ++i) {
      if (got[i] != std::stoll(want[i])) {
        ++bad;
        ADD_FAILURE() << name << "[" << i << "]: got " << got[i] << " want " << want[i];
      }
    }
  }
}

// Compares the distance of each draw of x (its last axis) from `mean` with the golden's:
// a covariance C = U L U^T with a repeated eigenvalue leaves U's columns for it free, and a
// draw is mean + U sqrt(L) z, whose distance |sqrt(L) z| no choice of U changes. The eigenvalues
// move by at most n u |C| (Weyl); with |C| below 4 times the smallest, and the product's own
// rounding, distances agree to 16 n u of themselves.
void expect_golden_radii(const std::string& name, const Array& x, const Array& mean) {
  const auto it = goldens().find(name);
  ASSERT_NE(it, goldens().end()) << "no golden for " << name;
  const std::vector<std::string> parts = split_on(it->second, '|');
  ASSERT_EQ(parts.size(), 3u) << name;
  const std::vector<std::string> want_text = split_on(parts[2], ',');
  const std::vector<float> got = x.to_vector<float>();
  const std::vector<float> m = mean.to_vector<float>();
  ASSERT_EQ(got.size(), want_text.size()) << name;
  const size_t n = m.size();
  ASSERT_EQ(got.size() % n, 0u) << name;
  for (size_t draw = 0; draw < got.size() / n; ++draw) {
    double got_r = 0, want_r = 0;
    for (size_t i = 0; i < n; ++i) {
      const double g = double(got[draw * n + i]) - m[i];
      const double w = double(float(std::stod(want_text[draw * n + i]))) - m[i];
      got_r += g * g;
      want_r += w * w;
    }
    got_r = std::sqrt(got_r);
    want_r = std::sqrt(want_r);
    EXPECT_LE(std::abs(got_r - want_r), 16.0 * double(n) * 0x1p-24 * want_r)
        << name << " draw " << draw << ": distance " << got_r << " want " << want_r;
  }
}

Array f32s(std::vector<float> v) { return numpy::array(v); }
Array alpha3() { return f32s({0.3f, 1.0f, 4.5f}); }
Array alpha_grid() {
  return f32s({0.01f, 0.1f, 0.5f, 0.9f, 1.0f, 1.5f, 3.0f, 10.0f, 50.0f, 200.0f});
}
Array logits23() { return numpy::array({0.1f, -1.0f, 2.0f, 0.5f, 0.5f, 0.5f}).reshape({2, 3}); }
Array lam_grid() { return f32s({0.0f, 0.5f, 3.0f, 9.9f, 10.0f, 25.0f, 150.0f, 1000.0f}); }
Array mean3() { return f32s({1.0f, -2.0f, 0.5f}); }
Array cov3() {
  return f32s({2.0f, 0.3f, -0.4f, 0.3f, 1.0f, 0.2f, -0.4f, 0.2f, 0.5f}).reshape({3, 3});
}
Array mean23() { return f32s({0.0f, 1.0f, 2.0f, -1.0f, -2.0f, -3.0f}).reshape({2, 3}); }
Array cov233() {
  const Array second = f32s({1.0f, 0.5f, 0.0f, 0.5f, 2.0f, -0.7f, 0.0f, -0.7f, 3.0f});
  return numpy::concatenate({cov3().reshape({9}), second}).reshape({2, 3, 3});
}
Array logits10() { return f32s({0.3f, -1.2f, 2.0f, 0.0f, 0.7f, -0.5f, 1.1f, -2.0f, 0.4f, 0.9f}); }
// The generator's spd(n, batch): A A^T + n I with A's entries ((7 i + 3 j) mod 5 - 2) / 2,
// the b-th of a batch scaled by b + 1; exact in float32.
Array spd(int64_t n, int64_t batch = 1) {
  std::vector<float> v;
  for (int64_t b = 0; b < batch; ++b) {
    for (int64_t i = 0; i < n; ++i) {
      for (int64_t j = 0; j < n; ++j) {
        double c = i == j ? double(n) : 0.0;
        for (int64_t k = 0; k < n; ++k) {
          c += double((i * 7 + k * 3) % 5 - 2) / 2 * (double((j * 7 + k * 3) % 5 - 2) / 2);
        }
        v.push_back(float(c * double(b + 1)));
      }
    }
  }
  return batch > 1 ? f32s(v).reshape({batch, n, n}) : f32s(v).reshape({n, n});
}
Array mean_of(int64_t n) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(float(i % 3) - 1.0f);
  return f32s(v);
}
// ((7 i) mod 13) / 4 - 1.5, exact in float32, as the generator builds it.
Array logits_3d() {
  std::vector<float> v;
  for (int i = 0; i < 60; ++i) v.push_back(float((i * 7) % 13) / 4.0f - 1.5f);
  return f32s(v).reshape({4, 5, 3});
}

constexpr DType f32 = DType::float32;
constexpr DType f16 = DType::float16;
constexpr DType bf16 = DType::bfloat16;

// Draws over a batch of 4 keys split from key(0), through vmap.
template <class F>
Array over_keys(F fn) {
  return vmap([fn](const rnd::Key& k) { return fn(k); })(rnd::split(key(0), 4));
}

struct Case {
  std::string name;
  std::function<Array()> draw;
  int64_t max_ulps = 0;  // 0: bit for bit
  double abs_tol = 0;    // or this far apart (see factor_tol)
  // Draws of multivariate_normal whose covariance has a repeated eigenvalue: the
  // eigenvectors (and so each draw's direction) are LAPACK's free choice; compare each
  // draw's distance from this mean, which they do not change (see expect_golden_radii).
  std::function<Array()> radii_mean;
};

// Results made from a LAPACK factorization (QR, Cholesky, eigh, SVD) differ between CPUs:
// LAPACK runs on the BLAS kernels OpenBLAS picks for each, and each sums in its own order.
// A backward-stable factorization of an n x n matrix C is exact for C + dC with |dC| <= c n^2
// u |C| (u = 2^-24), so its factors move by about kappa(C) n^2 u. The matrices here have
// kappa below 64 (the Gaussian ones of orthogonal at most 37, the covariances below 10), and
// factors, and draws made from them, are below `scale` in magnitude.
double factor_tol(int64_t n, double scale = 1) { return 64.0 * double(n * n) * 0x1p-24 * scale; }
// A covariance's zero eigenvalue comes out as a rounding error of up to n u |C|, and its
// square root scales a normal draw (below 4 in magnitude): ones((2, 2)) has |C| = 2.
const double kSingularTol = 4.0 * std::sqrt(2.0 * 2.0 * 0x1p-24);

// The cases of make_distribution_goldens.py's CASES, in its order, with the ulp each may
// be off (0: bit for bit). parax reproduces what XLA:CPU (JAX 0.10.2) computes in float32:
// its own log, log1p, exp and erf_inv, glibc's tanf (cauchy) and powf (weibull, through
// a float64 power), its FMA contractions, its rewrite of a division by a broadcast into a
// multiplication by the reciprocal (pareto), and the order of additions of
// multivariate_normal's small matrix products. One thing it cannot reproduce bounds the
// rest: Marsaglia-Tsang's c = 1 / (3 sqrt(d)), which XLA rewrites to a multiply by rsqrt,
// computed from the processor's reciprocal-square-root estimate (rsqrtss) and one Newton
// step -- machine-dependent, not the rounded 1/sqrt. Every gamma-based draw (gamma,
// loggamma, beta, dirichlet, chisquare, f, t, generalized_normal, ball) takes JAX's
// accept/reject path, its value within 32 ulp.
std::vector<Case> cases() {
  return {
      {"gamma_scalar", [] { return rnd::gamma(key(0), 2.5); }},
      {"gamma_grid", [] { return rnd::gamma(key(1), alpha_grid()); }, 32},
      {"gamma_shape",
       [] {
         return rnd::gamma(key(2), alpha3(), Shape{2, 3});
       },
       32},
      {"gamma_1000", [] { return rnd::gamma(key(3), 1.7, Shape{1000}); }, 32},
      {"gamma_small_alpha", [] { return rnd::gamma(key(4), 0.2, Shape{200}); }, 32},
      {"gamma_f16", [] { return rnd::gamma(key(5), 2.0, Shape{20}, f16); }},
      {"gamma_bf16", [] { return rnd::gamma(key(6), 0.7, Shape{20}, bf16); }},
      {"gamma_empty", [] { return rnd::gamma(key(7), 1.0, Shape{0}); }},
      {"loggamma_grid", [] { return rnd::loggamma(key(1), alpha_grid()); }, 32},
      {"loggamma_tiny", [] { return rnd::loggamma(key(8), 1e-3, Shape{100}); }, 32},
      {"loggamma_shape",
       [] {
         return rnd::loggamma(key(9), alpha3(), Shape{4, 3});
       },
       32},
      {"beta", [] { return rnd::beta(key(10), 0.5, 2.0, Shape{50}); }, 32},
      {"beta_bcast",
       [] {
         return rnd::beta(key(11), alpha3(), numpy::array({1.0f, 3.0f}).reshape({2, 1}));
       },
       32},
      {"dirichlet", [] { return rnd::dirichlet(key(12), alpha3()); }, 32},
      {"dirichlet_shape",
       [] {
         return rnd::dirichlet(key(13), f32s({0.1f, 1.0f, 5.0f, 2.0f}), Shape{6});
       },
       32},
      {"chisquare", [] { return rnd::chisquare(key(14), 3.0, Shape{50}); }, 32},
      {"chisquare_bcast", [] { return rnd::chisquare(key(15), alpha3()); }, 32},
      {"f", [] { return rnd::f(key(16), 4.0, 7.0, Shape{50}); }, 32},
      {"t", [] { return rnd::t(key(17), 5.0, Shape{50}); }, 32},
      {"t_bcast",
       [] {
         return rnd::t(key(18), alpha3(), Shape{2, 3});
       },
       32},
      {"generalized_normal", [] { return rnd::generalized_normal(key(19), 1.5, {40}); }, 32},
      {"generalized_normal_p2",
       [] {
         return rnd::generalized_normal(key(20), 2.0, {3, 4});
       },
       32},
      {"ball", [] { return rnd::ball(key(21), 3, 2, {10}); }, 32},
      {"ball_p1", [] { return rnd::ball(key(22), 4, 1, {5}); }, 32},
      {"exponential", [] { return rnd::exponential(key(30), {1000}); }},
      {"exponential_f16", [] { return rnd::exponential(key(31), {50}, f16); }},
      {"exponential_bf16", [] { return rnd::exponential(key(32), {50}, bf16); }},
      {"exponential_scalar", [] { return rnd::exponential(key(33)); }},
      {"gumbel", [] { return rnd::gumbel(key(34), {1000}); }},
      {"gumbel_high", [] { return rnd::gumbel(key(35), {200}, std::nullopt, "high"); }},
      {"gumbel_2d",
       [] {
         return rnd::gumbel(key(36), {3, 5});
       }},
      {"laplace", [] { return rnd::laplace(key(37), {1000}); }},
      {"laplace_f16", [] { return rnd::laplace(key(38), {50}, f16); }},
      {"logistic", [] { return rnd::logistic(key(39), {1000}); }},
      {"cauchy", [] { return rnd::cauchy(key(40), {1000}); }},
      {"pareto", [] { return rnd::pareto(key(41), 3.0, Shape{200}); }},
      {"pareto_bcast", [] { return rnd::pareto(key(42), alpha3()); }},
      {"weibull", [] { return rnd::weibull_min(key(43), 2.0, 1.5, {200}); }},
      {"maxwell", [] { return rnd::maxwell(key(44), {200}); }},
      {"double_sided_maxwell", [] { return rnd::double_sided_maxwell(key(45), 1.0, 2.0, {100}); }},
      {"double_sided_maxwell_params",
       [] {
         return rnd::double_sided_maxwell(key(46), f32s({0.0f, 1.0f}), 2.0);
       }},
      {"triangular", [] { return rnd::triangular(key(47), -1.0, 0.5, 2.0, Shape{200}); }},
      {"triangular_bcast",
       [] {
         return rnd::triangular(key(48), f32s({0.0f, -2.0f}), 0.5, 3.0);
       }},
      {"lognormal", [] { return rnd::lognormal(key(49), 0.5, Shape{200}); }},
      {"lognormal_default", [] { return rnd::lognormal(key(50)); }},
      {"rademacher", [] { return rnd::rademacher(key(51), {50}); }},
      {"rademacher_f32", [] { return rnd::rademacher(key(52), {10}, f32); }},
      {"geometric", [] { return rnd::geometric(key(53), 0.3, Shape{200}); }},
      {"geometric_bcast",
       [] {
         return rnd::geometric(key(54), f32s({0.05f, 0.5f, 0.95f}));
       }},
      {"categorical", [] { return rnd::categorical(key(55), logits23()); }},
      {"categorical_axis0", [] { return rnd::categorical(key(56), logits23(), 0); }},
      {"categorical_shape",
       [] {
         return rnd::categorical(key(57), logits23(), -1, Shape{4, 2});
       }},
      {"categorical_1d",
       [] {
         return rnd::categorical(key(58), numpy::log(f32s({0.1f, 0.2f, 0.7f})), -1, Shape{500});
       }},
      {"poisson_grid", [] { return rnd::poisson(key(60), lam_grid()); }},
      {"poisson_small", [] { return rnd::poisson(key(61), 2.5, Shape{300}); }},
      {"poisson_large", [] { return rnd::poisson(key(62), 40.0, Shape{300}); }},
      {"poisson_shape",
       [] {
         return rnd::poisson(key(63), f32s({1.0f, 20.0f}), Shape{3, 2});
       }},
      {"binomial", [] { return rnd::binomial(key(64), 20.0, 0.3, Shape{200}); }},
      {"binomial_btrs", [] { return rnd::binomial(key(65), 100.0, 0.4, Shape{200}); }},
      {"binomial_high_p", [] { return rnd::binomial(key(66), 50.0, 0.9, Shape{100}); }},
      {"binomial_grid",
       [] {
         return rnd::binomial(key(67),
                              f32s({0.0f, 5.0f, 30.0f, 1000.0f, -1.0f, INFINITY, NAN, 7.5f}),
                              f32s({0.5f, 0.2f, 0.7f, 0.05f, 0.5f, 0.3f, 0.5f, 0.6f}));
       }},
      {"binomial_bad_p",
       [] {
         return rnd::binomial(key(68), 10.0, f32s({-0.1f, NAN, 1.0f, 0.0f}));
       }},
      {"rayleigh", [] { return rnd::rayleigh(key(69), 2.0, Shape{200}); }},
      {"wald",
       [] {
         return rnd::wald(key(75), f32s({0.5f, 1.0f, 3.0f}), Shape{4, 3});
       }},
      // multivariate_normal: a factorization of the covariance (LAPACK's), then a 3x3
      // product per draw, its order of additions XLA's; draws below 8 in magnitude.
      {"mvn", [] { return rnd::multivariate_normal(key(80), mean3(), cov3()); }, 0,
       factor_tol(3, 8)},
      {"mvn_shape", [] { return rnd::multivariate_normal(key(81), mean3(), cov3(), Shape{50}); }, 0,
       factor_tol(3, 8)},
      {"mvn_eigh",
       [] {
         return rnd::multivariate_normal(key(82), mean3(), cov3(), Shape{50}, std::nullopt, "eigh");
       },
       0, factor_tol(3, 8)},
      {"mvn_svd",
       [] {
         return rnd::multivariate_normal(key(83), mean3(), cov3(), Shape{50}, std::nullopt, "svd");
       },
       0, factor_tol(3, 8)},
      {"mvn_mean_batch",
       [] {
         return rnd::multivariate_normal(key(84), mean23(), cov3(), Shape{4, 2});
       },
       0, factor_tol(3, 8)},
      {"mvn_cov_batch", [] { return rnd::multivariate_normal(key(85), mean3(), cov233()); }, 0,
       factor_tol(3, 8)},
      {"mvn_cov_batch_eigh",
       [] {
         return rnd::multivariate_normal(key(86), mean23(), cov233(), Shape{5, 2}, std::nullopt,
                                         "eigh");
       },
       0, factor_tol(3, 8)},
      {"mvn_dim1",
       [] {
         return rnd::multivariate_normal(key(87), f32s({3.0f}), f32s({4.0f}).reshape({1, 1}),
                                         Shape{20});
       }},
      {"mvn_singular_cholesky",
       [] {
         return rnd::multivariate_normal(key(0), numpy::zeros({2}), numpy::ones({2, 2}), Shape{10});
       }},
      {"mvn_singular_eigh",
       [] {
         return rnd::multivariate_normal(key(0), numpy::zeros({2}), numpy::ones({2, 2}), Shape{10},
                                         std::nullopt, "eigh");
       },
       0, kSingularTol},
      {"mvn_singular_svd",
       [] {
         return rnd::multivariate_normal(key(0), numpy::zeros({2}), numpy::ones({2, 2}), Shape{10},
                                         std::nullopt, "svd");
       },
       0, kSingularTol},
      // spd(n) is n I plus a matrix of rank 5: draws below 16 in magnitude, and from n = 6
      // on the eigenvalue n repeats (compared by distance, eigh and svd).
      {"mvn_n5", [] { return rnd::multivariate_normal(key(120), mean_of(5), spd(5), Shape{20}); },
       0, factor_tol(5, 16)},
      {"mvn_n8", [] { return rnd::multivariate_normal(key(121), mean_of(8), spd(8), Shape{9}); }, 0,
       factor_tol(8, 16)},
      {"mvn_n6_few",
       [] { return rnd::multivariate_normal(key(122), mean_of(6), spd(6), Shape{3}); }, 0,
       factor_tol(6, 16)},
      {"mvn_n7_batch", [] { return rnd::multivariate_normal(key(123), mean_of(7), spd(7, 2)); }, 0,
       factor_tol(7, 16)},
      {"mvn_n16_eigh",
       [] {
         return rnd::multivariate_normal(key(124), mean_of(16), spd(16), Shape{10}, std::nullopt,
                                         "eigh");
       },
       0, 0, [] { return mean_of(16); }},
      {"mvn_n13_svd",
       [] {
         return rnd::multivariate_normal(key(125), mean_of(13), spd(13), Shape{2, 6}, std::nullopt,
                                         "svd");
       },
       0, 0, [] { return mean_of(13); }},
      // orthogonal: QR of normals, columns signed by R's diagonal
      {"orthogonal", [] { return rnd::orthogonal(key(90), 3); }, 0, factor_tol(3)},
      {"orthogonal_shape", [] { return rnd::orthogonal(key(91), 4, {2}); }, 0, factor_tol(4)},
      {"orthogonal_wide", [] { return rnd::orthogonal(key(92), 2, {3}, std::nullopt, 4); }, 0,
       factor_tol(4)},
      {"orthogonal_tall", [] { return rnd::orthogonal(key(93), 4, {}, std::nullopt, 2); }, 0,
       factor_tol(4)},
      {"orthogonal_batch2",
       [] {
         return rnd::orthogonal(key(94), 5, {2, 3});
       },
       0, factor_tol(5)},
      {"orthogonal_1", [] { return rnd::orthogonal(key(95), 1, {4}); }},
      {"orthogonal_0", [] { return rnd::orthogonal(key(96), 0, {2}, std::nullopt, 3); }},
      // categorical without replacement (Gumbel top-k), and mode "high"
      {"categorical_noreplace",
       [] { return rnd::categorical(key(100), logits10(), -1, Shape{4}, false); }},
      {"categorical_noreplace_all",
       [] { return rnd::categorical(key(101), logits10(), -1, Shape{10}, false); }},
      {"categorical_noreplace_axis0",
       [] {
         return rnd::categorical(key(102), numpy::transpose(logits23()), 0, Shape{2, 2}, false);
       }},
      {"categorical_noreplace_3d",
       [] {
         return rnd::categorical(key(103), logits_3d(), 1, Shape{2, 2, 4, 3}, false);
       }},
      {"categorical_noreplace_high",
       [] { return rnd::categorical(key(104), logits10(), -1, Shape{3}, false, "high"); }},
      {"categorical_high",
       [] {
         return rnd::categorical(key(105), logits23(), -1, Shape{6, 2}, true, "high");
       }},
      {"categorical_high_1d",
       [] {
         return rnd::categorical(key(106), numpy::log(f32s({0.1f, 0.2f, 0.7f})), -1, Shape{300},
                                 true, "high");
       }},
      {"gumbel_high_2d",
       [] {
         return rnd::gumbel(key(107), {4, 6}, std::nullopt, "high");
       }},
      {"gumbel_high_f16", [] { return rnd::gumbel(key(108), {50}, f16, "high"); }},
      {"gumbel_highest_bf16", [] { return rnd::gumbel(key(108), {50}, bf16, "highest"); }},
      {"gumbel_highest", [] { return rnd::gumbel(key(110), {1000}, std::nullopt, "highest"); }},
      {"gumbel_highest_2d",
       [] {
         return rnd::gumbel(key(111), {3, 7}, std::nullopt, "highest");
       }},
      {"categorical_highest",
       [] {
         return rnd::categorical(key(112), logits23(), -1, Shape{6, 2}, true, "highest");
       }},
      {"categorical_noreplace_highest",
       [] { return rnd::categorical(key(113), logits10(), -1, Shape{5}, false, "highest"); }},
      {"beta_small_params", [] { return rnd::beta(key(0), 0.0001, 0.0002, Shape{100}); }, 32},
      {"dirichlet_small_alpha",
       [] { return rnd::dirichlet(key(0), numpy::ones({3}) * 0.00001, Shape{100}); }, 32},
      {"poisson_zeros",
       [] {
         return rnd::poisson(key(0),
                             numpy::concatenate({numpy::zeros({10}), numpy::ones({10}) * 20}),
                             Shape{2, 20});
       }},
      {"poisson_corner_cases",
       [] {
         return rnd::poisson(key(0), f32s({-1, 0, NAN}), Shape{3});
       }},
      {"gamma_vs_loggamma_a", [] { return rnd::gamma(key(0), 0.1, Shape{100}); }, 32},
      {"loggamma_vs_gamma_a", [] { return rnd::loggamma(key(0), 0.1, Shape{100}); }, 32},
      {"vmap_gamma",
       [] { return over_keys([](const rnd::Key& k) { return rnd::gamma(k, 1.3, Shape{3}); }); }},
      {"vmap_exponential",
       [] { return over_keys([](const rnd::Key& k) { return rnd::exponential(k, {2}); }); }},
      {"vmap_poisson",
       [] { return over_keys([](const rnd::Key& k) { return rnd::poisson(k, 5.0, Shape{3}); }); }},
      {"vmap_categorical",
       [] { return over_keys([](const rnd::Key& k) { return rnd::categorical(k, logits23()); }); }},
      {"vmap_beta",
       [] { return over_keys([](const rnd::Key& k) { return rnd::beta(k, 2.0, 3.0); }); }},
      {"vmap_binomial",
       [] {
         return over_keys([](const rnd::Key& k) { return rnd::binomial(k, 40.0, 0.5, Shape{3}); });
       }},
      {"vmap_dirichlet",
       [] { return over_keys([](const rnd::Key& k) { return rnd::dirichlet(k, alpha3()); }); }, 32},
      // JAX's vmap folds the 4 keys into the product's rows (8: YNNPACK's order); parax
      // draws per key (2 rows: XLA's FMA loop), so a few values differ in the last bits.
      {"vmap_mvn",
       [] {
         return over_keys([](const rnd::Key& k) {
           return rnd::multivariate_normal(k, mean3(), cov3(), Shape{2});
         });
       },
       8, factor_tol(3, 8)},
      {"vmap_mvn_svd",
       [] {
         return over_keys([](const rnd::Key& k) {
           return rnd::multivariate_normal(k, mean3(), cov3(), std::nullopt, std::nullopt, "svd");
         });
       },
       0, factor_tol(3, 8)},
      {"vmap_orthogonal",
       [] { return over_keys([](const rnd::Key& k) { return rnd::orthogonal(k, 3); }); }, 0,
       factor_tol(3)},
      {"vmap_categorical_noreplace",
       [] {
         return over_keys([](const rnd::Key& k) {
           return rnd::categorical(k, logits10(), -1, Shape{3}, false);
         });
       }},
      {"vmap_gumbel_highest",
       [] {
         return over_keys(
             [](const rnd::Key& k) { return rnd::gumbel(k, {3}, std::nullopt, "highest"); });
       }},
      {"vmap_gumbel_high",
       [] {
         return over_keys(
             [](const rnd::Key& k) { return rnd::gumbel(k, {3}, std::nullopt, "high"); });
       }},
  };
}

class Distributions : public ::testing::TestWithParam<Case> {};

TEST_P(Distributions, MatchJaxInBothModes) {
  const Case& c = GetParam();
  for (bool p : {true, false}) {
    Mode mode(p);
    const std::string name = (p ? "p/" : "o/") + c.name;
    if (c.radii_mean) {
      expect_golden_radii(name, c.draw(), c.radii_mean());
    } else {
      expect_golden(name, c.draw(), c.max_ulps, c.abs_tol);
    }
  }
}

INSTANTIATE_TEST_SUITE_P(Jax, Distributions, ::testing::ValuesIn(cases()),
                         [](const ::testing::TestParamInfo<Case>& info) {
                           return info.param.name;
                         });

TEST(DistributionsX64, MatchJax) {
  X64 x64;
  const DType f64 = DType::float64;
  for (bool p : {true, false}) {
    Mode mode(p);
    const std::string m = p ? "x64/p/" : "x64/o/";
    // XLA's float64 log, log1p and exp are not reproduced (parax's are more accurate):
    // values within 512 ulp (or 1e-15 absolute), the same draws.
    expect_golden(m + "gamma_f64", rnd::gamma(key(0), numpy::array({0.5, 2.0, 7.0}), Shape{2, 3}),
                  512, 1e-15);
    expect_golden(m + "loggamma_f64", rnd::loggamma(key(1), 0.3, Shape{20}), 512, 1e-15);
    expect_golden(m + "exponential_f64", rnd::exponential(key(2), {50}), 512, 1e-15);
    expect_golden(m + "gumbel_f64", rnd::gumbel(key(3), {50}), 512, 1e-15);
    expect_golden(m + "beta_f64", rnd::beta(key(4), 2.0, 5.0, Shape{20}), 512, 1e-15);
    expect_golden(m + "poisson_i64", rnd::poisson(key(5), numpy::array({3.0, 30.0}), Shape{4, 2}));
    expect_golden(m + "rademacher_i64", rnd::rademacher(key(6), {10}));
    expect_golden(m + "binomial_f64", rnd::binomial(key(8), 60.0, 0.3, Shape{50}));
    expect_golden(m + "laplace_f64", rnd::laplace(key(7), {50}, f64), 512, 1e-15);
    // float64 normals (XLA's erfInv64, not reproduced) are a few ulp off, and so are
    // the samplers built on them; top-k is exact, and the float32 QR within factor_tol.
    const Array mean = mean3().astype(f64);
    const Array cov = cov3().astype(f64);
    expect_golden(m + "mvn_f64", rnd::multivariate_normal(key(9), mean, cov, Shape{20}), 512,
                  1e-14);
    expect_golden(m + "mvn_eigh_f64",
                  rnd::multivariate_normal(key(10), mean, cov, Shape{20}, std::nullopt, "eigh"),
                  512, 1e-14);
    expect_golden(m + "mvn_svd_f32_dtype",
                  rnd::multivariate_normal(key(11), mean, cov, Shape{5}, f32, "svd"), 512, 1e-14);
    expect_golden(m + "orthogonal_f64", rnd::orthogonal(key(12), 4, {2}), 1024, 1e-14);
    expect_golden(m + "orthogonal_f32", rnd::orthogonal(key(13), 3, {}, f32), 0, factor_tol(3));
    expect_golden(m + "gumbel_high_f64", rnd::gumbel(key(14), {50}, std::nullopt, "high"), 512,
                  1e-15);
    expect_golden(m + "gumbel_highest_f64", rnd::gumbel(key(14), {50}, std::nullopt, "highest"),
                  512, 1e-15);
    expect_golden(m + "categorical_noreplace_f64",
                  rnd::categorical(key(15), logits10().astype(f64), -1, Shape{5}, false));
    expect_golden(m + "vmap_mvn_f64", vmap([&](const rnd::Key& k) {
                    return rnd::multivariate_normal(k, mean, cov);
                  })(rnd::split(key(16), 3)),
                  512, 1e-14);
  }
}

// jit traces each sampler into one program that draws what the eager call draws.
TEST(Distributions, JitMatchesEager) {
  for (bool p : {true, false}) {
    Mode mode(p);
    auto sample = [](const rnd::Key& k, const Array& a) {
      return std::vector<Array>{rnd::gamma(k, a),       rnd::loggamma(k, a),
                                rnd::beta(k, a, 2.0),   rnd::dirichlet(k, a),
                                rnd::poisson(k, a),     rnd::exponential(k, {3}),
                                rnd::categorical(k, a), rnd::t(k, a)};
    };
    const rnd::Key k = key(99);
    const Array a = f32s({0.4f, 2.0f, 12.0f});
    const std::vector<Array> jitted = jit(sample)(k, a);
    const std::vector<Array> eager = sample(k, a);
    ASSERT_EQ(jitted.size(), eager.size());
    for (size_t i = 0; i < eager.size(); ++i) {
      EXPECT_EQ(jitted[i].to_string(), eager[i].to_string()) << i;
    }
  }
}

// Each key of a batch draws what it draws alone: vmap over keys is a loop over keys.
TEST(Distributions, VmapOverKeysIsALoop) {
  const rnd::Key keys = rnd::split(key(3), 3);
  const Array batched = vmap([](const rnd::Key& k) { return rnd::gamma(k, 0.6, Shape{4}); })(keys);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(batched[i].to_string(), rnd::gamma(keys[i], 0.6, Shape{4}).to_string()) << i;
  }
}

// Gradients of samples with respect to their parameters, as JAX's implicit
// reparameterization gives them (random_gamma_grad's series and continued fraction).
TEST(Distributions, GradsMatchJax) {
  for (bool p : {true, false}) {
    Mode mode(p);
    const std::string m = p ? "p/" : "o/";
    auto sum_of = [](const std::function<Array(const Array&)>& f) {
      return grad([f](const Array& x) { return numpy::sum(f(x)); });
    };
    expect_golden(m + "grad_gamma",
                  sum_of([](const Array& x) { return rnd::gamma(key(70), x); })(alpha_grid()), 64,
                  1e-6);
    expect_golden(m + "grad_loggamma",
                  sum_of([](const Array& x) { return rnd::loggamma(key(71), x); })(alpha_grid()),
                  64, 1e-6);
    expect_golden(m + "grad_beta",
                  sum_of([](const Array& x) { return rnd::beta(key(72), x, 2.0); })(alpha_grid()),
                  64, 1e-6);
    expect_golden(m + "grad_dirichlet", sum_of([](const Array& x) {
                    return rnd::dirichlet(key(73), x) * numpy::arange(3.0);
                  })(alpha3()),
                  64, 1e-6);
    expect_golden(m + "grad_gamma_shape", sum_of([](const Array& x) {
                    return rnd::gamma(key(74), x, Shape{5});
                  })(numpy::array(2.0f)),
                  64, 1e-6);
  }
}

TEST(Distributions, ErrorsAsJax) {
  const std::map<std::string, std::function<void()>> errors = {
      {"gamma_int_dtype", [] { rnd::gamma(key(0), 1.0, Shape{2}, DType::int32); }},
      {"gamma_bad_shape", [] { rnd::gamma(key(0), numpy::ones({3}), Shape{2}); }},
      {"gamma_key_batch", [] { rnd::gamma(rnd::split(key(0), 3), 1.0); }},
      {"exponential_int", [] { rnd::exponential(key(0), {2}, DType::int32); }},
      {"exponential_key_batch", [] { rnd::exponential(rnd::split(key(0), 2), {2}); }},
      {"gumbel_mode", [] { rnd::gumbel(key(0), {2}, std::nullopt, "bad"); }},
      {"categorical_shape", [] { rnd::categorical(key(0), logits23(), -1, Shape{3}); }},
      {"dirichlet_scalar", [] { rnd::dirichlet(key(0), 1.0); }},
      {"beta_bad_shape", [] { rnd::beta(key(0), numpy::ones({3}), 1.0, Shape{2}); }},
      {"poisson_key_batch", [] { rnd::poisson(rnd::split(key(0), 2), 1.0); }},
      {"geometric_float_dtype", [] { rnd::geometric(key(0), 0.5, Shape{2}, f32); }},
      {"lgamma_int", [] { lax::lgamma(numpy::array(int32_t(2))); }},
      {"binomial_int_dtype", [] { rnd::binomial(key(0), 10.0, 0.5, Shape{2}, DType::int32); }},
      {"mvn_mean_scalar", [] { rnd::multivariate_normal(key(0), 1.0, cov3()); }},
      {"mvn_cov_1d", [] { rnd::multivariate_normal(key(0), mean3(), mean3()); }},
      {"mvn_cov_shape", [] { rnd::multivariate_normal(key(0), mean3(), numpy::eye(2)); }},
      {"mvn_method",
       [] { rnd::multivariate_normal(key(0), mean3(), cov3(), std::nullopt, std::nullopt, "qr"); }},
      {"mvn_int_dtype",
       [] { rnd::multivariate_normal(key(0), mean3(), cov3(), std::nullopt, DType::int32); }},
      {"mvn_bad_shape", [] { rnd::multivariate_normal(key(0), mean23(), cov3(), Shape{3}); }},
      {"mvn_key_batch", [] { rnd::multivariate_normal(rnd::split(key(0), 2), mean3(), cov3()); }},
      {"orthogonal_int_dtype", [] { rnd::orthogonal(key(0), 3, {}, DType::int32); }},
      {"orthogonal_key_batch", [] { rnd::orthogonal(rnd::split(key(0), 2), 3); }},
      {"categorical_noreplace_too_many",
       [] {
         rnd::categorical(key(0), logits23(), -1, Shape{4, 2}, false);
       }},
      {"categorical_mode",
       [] { rnd::categorical(key(0), logits23(), -1, std::nullopt, true, "middle"); }},
  };
  for (const auto& [name, f] : errors) {
    EXPECT_EQ(testing::error_record_of(f), goldens().at("err/" + name)) << name;
  }
}

// Every sampler takes a single key, as JAX's: a key array of any rank is JAX's ValueError
// naming the sampler, and vmap (nested for deeper key arrays) maps over keys.
TEST(Distributions, KeyBatchesRaiseAndVmapMapsOverThem) {
  using Draw = std::function<Array(const rnd::Key&)>;
  const std::vector<std::pair<std::string, Draw>> samplers = {
      {"gamma", [](const rnd::Key& k) { return rnd::gamma(k, 1.5); }},
      {"loggamma", [](const rnd::Key& k) { return rnd::loggamma(k, 0.5); }},
      {"beta", [](const rnd::Key& k) { return rnd::beta(k, 1.5, 2.0); }},
      {"dirichlet", [](const rnd::Key& k) { return rnd::dirichlet(k, alpha3()); }},
      {"exponential", [](const rnd::Key& k) { return rnd::exponential(k); }},
      {"gumbel", [](const rnd::Key& k) { return rnd::gumbel(k); }},
      {"categorical", [](const rnd::Key& k) { return rnd::categorical(k, logits23()); }},
      {"laplace", [](const rnd::Key& k) { return rnd::laplace(k); }},
      {"logistic", [](const rnd::Key& k) { return rnd::logistic(k); }},
      {"cauchy", [](const rnd::Key& k) { return rnd::cauchy(k); }},
      {"pareto", [](const rnd::Key& k) { return rnd::pareto(k, 2.0); }},
      {"t", [](const rnd::Key& k) { return rnd::t(k, 3.0); }},
      {"chisquare", [](const rnd::Key& k) { return rnd::chisquare(k, 3.0); }},
      {"f", [](const rnd::Key& k) { return rnd::f(k, 3.0, 4.0); }},
      {"rademacher", [](const rnd::Key& k) { return rnd::rademacher(k); }},
      {"maxwell", [](const rnd::Key& k) { return rnd::maxwell(k); }},
      {"double_sided_maxwell",
       [](const rnd::Key& k) { return rnd::double_sided_maxwell(k, 0.0, 1.0); }},
      {"weibull_min", [](const rnd::Key& k) { return rnd::weibull_min(k, 1.0, 2.0); }},
      {"generalized_normal", [](const rnd::Key& k) { return rnd::generalized_normal(k, 1.5); }},
      {"ball", [](const rnd::Key& k) { return rnd::ball(k, 3); }},
      {"triangular", [](const rnd::Key& k) { return rnd::triangular(k, 0.0, 0.5, 1.0); }},
      {"lognormal", [](const rnd::Key& k) { return rnd::lognormal(k); }},
      {"geometric", [](const rnd::Key& k) { return rnd::geometric(k, 0.3); }},
      {"poisson", [](const rnd::Key& k) { return rnd::poisson(k, 4.0); }},
      {"binomial", [](const rnd::Key& k) { return rnd::binomial(k, 20.0, 0.3); }},
      {"rayleigh", [](const rnd::Key& k) { return rnd::rayleigh(k, 1.0); }},
      {"wald", [](const rnd::Key& k) { return rnd::wald(k, 1.0); }},
      {"multivariate_normal",
       [](const rnd::Key& k) { return rnd::multivariate_normal(k, mean3(), cov3()); }},
      {"orthogonal", [](const rnd::Key& k) { return rnd::orthogonal(k, 2); }},
  };
  const rnd::Key keys = rnd::split(key(5), Shape{2, 3});
  for (const auto& [name, draw] : samplers) {
    try {
      draw(keys);
      ADD_FAILURE() << name << ": no error";
    } catch (const ValueError& e) {
      EXPECT_EQ(std::string(e.what()), name +
                                           " accepts a single key, but was given a key array of "
                                           "shape (2, 3) != (). Use jax.vmap for batching.");
    }
    const Array nested = vmap([&](const rnd::Key& row) { return vmap(draw)(row); })(keys);
    for (int64_t i = 0; i < 2; ++i) {
      for (int64_t j = 0; j < 3; ++j) {
        EXPECT_EQ(nested[i][j].to_string(), draw(keys[i][j]).to_string()) << name;
      }
    }
  }
}

// grad composes with jit and vmap: per-key gradients of gamma samples, jitted.
TEST(Distributions, GradOfGammaUnderJitAndVmap) {
  const Array a = f32s({0.5f, 2.0f, 9.0f});
  auto per_key = [&](const rnd::Key& k) {
    return grad([&](const Array& x) { return numpy::sum(rnd::gamma(k, x)); })(a);
  };
  const rnd::Key keys = rnd::split(key(8), 3);
  const Array batched = jit([&](const rnd::Key& ks) { return vmap(per_key)(ks); })(keys);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(batched[i].to_string(), per_key(keys[i]).to_string()) << i;
  }
}

// Large draws stay fast: the samplers' loops run vectorized over all elements.
TEST(Distributions, LargeDrawsAreVectorized) {
  const auto start = std::chrono::steady_clock::now();
  const Array g = rnd::gamma(key(1), 0.7, Shape{100000});
  const Array p = rnd::poisson(key(2), 30.0, Shape{100000});
  const Array b = rnd::binomial(key(3), 100.0, 0.3, Shape{100000});
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  // Means within 1 % of a, lam and n p (100000 draws: a few standard errors).
  EXPECT_NEAR(numpy::mean(g).item<float>(), 0.7, 0.007);
  EXPECT_NEAR(numpy::mean(lax::convert_element_type(p, f32)).item<float>(), 30.0, 0.3);
  EXPECT_NEAR(numpy::mean(b).item<float>(), 30.0, 0.3);
  EXPECT_LT(seconds, 30.0);
  std::printf("gamma, poisson, binomial of 100000 each: %.2f s\n", seconds);
}

// JAX's testGammaGradType: the vjp of gamma(a) / y runs, its cotangents float32.
TEST(Distributions, GammaGradType) {
  const Array a = numpy::array(1.0f);
  const Array y = numpy::array(3.0f);
  auto [out, pullback] =
      vjp([](const Array& x,
             const Array& d) { return lax::div(rnd::gamma(key(0), x, std::nullopt, f32), d); },
          a, y);
  const auto [da, dy] = pullback(numpy::ones_like(out));
  EXPECT_EQ(da.dtype(), f32);
  EXPECT_EQ(dy.dtype(), f32);
  EXPECT_TRUE(std::isfinite(da.item<float>()));
}

// JAX's testOrthogonal: q q^T = I_n when n <= m, q^T q = I_m when n >= m, shape
// (*shape, n, m), for every n, m up to 4 and batch shapes (), (5,), (10, 5).
TEST(Distributions, OrthogonalIsOrthogonal) {
  for (int64_t n = 0; n < 5; ++n) {
    for (int64_t m = 0; m < 5; ++m) {
      for (const Shape& shape : {Shape{}, Shape{5}, Shape{10, 5}}) {
        const Array q = rnd::orthogonal(key(0), n, shape, f32, m);
        Shape want = shape;
        want.push_back(n);
        want.push_back(m);
        ASSERT_EQ(q.shape(), want);
        ASSERT_EQ(q.dtype(), f32);
        const Array qt = numpy::swapaxes(q, -1, -2);
        auto near_identity = [&](const Array& p, int64_t k) {
          const Array eye = numpy::broadcast_to(numpy::eye(k), p.shape());
          return numpy::max(numpy::abs(p - eye)).item<float>() < 1e-5f;
        };
        if (n <= m && n > 0) {
          EXPECT_TRUE(near_identity(numpy::matmul(q, qt), n)) << n << m;
        }
        if (n >= m && m > 0) {
          EXPECT_TRUE(near_identity(numpy::matmul(qt, q), m)) << n << m;
        }
      }
    }
  }
}

// JAX's testMultivariateNormalShapes: the result's shape is shape + (dim,) for batches of
// mean and cov (broadcast) and every method.
TEST(Distributions, MultivariateNormalShapes) {
  for (int64_t dim : {1, 2, 4}) {
    for (const Shape& mean_batch : {Shape{}, Shape{3}, Shape{2, 3}}) {
      for (const Shape& cov_batch : {Shape{}, Shape{3}, Shape{2, 3}}) {
        for (const Shape& prefix : {Shape{}, Shape{1}, Shape{5}}) {
          for (const char* method : {"cholesky", "svd", "eigh"}) {
            Shape ms = mean_batch, cs = cov_batch;
            ms.push_back(dim);
            cs.push_back(dim);
            cs.push_back(dim);
            const Array mean = rnd::normal(key(1), ms);
            const Array a = rnd::normal(key(2), cs);
            const Array cov = numpy::matmul(a, numpy::swapaxes(a, -1, -2)) + numpy::eye(dim) * 1e-3;
            Shape shape = prefix;
            const Shape& eff = mean_batch.size() > cov_batch.size() ? mean_batch : cov_batch;
            shape.insert(shape.end(), eff.begin(), eff.end());
            const Array x =
                rnd::multivariate_normal(key(0), mean, cov, shape, std::nullopt, method);
            Shape want = shape;
            want.push_back(dim);
            EXPECT_EQ(x.shape(), want) << method;
          }
        }
      }
    }
  }
}

// JAX's testMultivariateNormalCovariance: 100000 draws have the covariance asked for.
TEST(Distributions, MultivariateNormalCovariance) {
  const Array cov = f32s({0.19f, 0.00f, -0.13f, 0.00f, 0.00f, 0.29f, 0.00f, -0.23f, -0.13f, 0.00f,
                          0.39f, 0.00f, 0.00f, -0.23f, 0.00f, 0.49f})
                        .reshape({4, 4});
  for (const char* method : {"cholesky", "eigh", "svd"}) {
    const Array x = rnd::multivariate_normal(key(0), numpy::zeros({4}), cov, Shape{100000},
                                             std::nullopt, method);
    const Array centered = x - numpy::mean(x, 0);
    const Array sample_cov = numpy::matmul(numpy::transpose(centered), centered) / 99999.0f;
    EXPECT_LT(numpy::max(numpy::abs(sample_cov - cov)).item<float>(), 1e-2f) << method;
  }
}

// JAX's testCategoricalWithoutReplacement: prod(prefix) distinct categories per
// distribution, or JAX's ValueError when there are fewer categories than that.
TEST(Distributions, CategoricalWithoutReplacement) {
  for (const Shape& logits_shape : {Shape{7}, Shape{8, 9}, Shape{10, 11, 12}}) {
    for (const Shape& prefix : {Shape{2}, Shape{3, 4}, Shape{5, 6}}) {
      const rnd::Key keys = rnd::split(key(0), 3);
      const Array logits = rnd::normal(keys[1], logits_shape);
      const int64_t nd = int64_t(logits_shape.size());
      const int64_t axis = rnd::randint(keys[2], {}, -nd, nd).item<int64_t>();
      Shape dists = logits_shape;
      const int64_t ax = axis < 0 ? axis + nd : axis;
      dists.erase(dists.begin() + ax);
      const int64_t n_categories = logits_shape[size_t(ax)];
      Shape shape = prefix;
      shape.insert(shape.end(), dists.begin(), dists.end());
      const int64_t k = shape_size(prefix);
      if (n_categories < k) {
        EXPECT_THROW(rnd::categorical(keys[0], logits, axis, shape, false), ValueError);
        continue;
      }
      const Array out = rnd::categorical(keys[0], logits, axis, shape, false);
      ASSERT_EQ(out.shape(), shape);
      const std::vector<int64_t> v = out.to_vector<int64_t>();
      const int64_t per = shape_size(dists);
      for (int64_t d = 0; d < per; ++d) {
        std::vector<bool> seen(size_t(n_categories), false);
        for (int64_t i = 0; i < k; ++i) {
          const int64_t c = v[size_t(i * per + d)];
          ASSERT_TRUE(c >= 0 && c < n_categories) << c;
          EXPECT_FALSE(seen[size_t(c)]) << "category " << c << " drawn twice";
          seen[size_t(c)] = true;
        }
      }
    }
  }
}

// JAX's test_categorical_shape_argument: the shape argument broadcasts against logits
// with size-1 batch dimensions, for every axis.
TEST(Distributions, CategoricalShapeArgument) {
  for (const Shape& base : {Shape{3, 4}, Shape{3, 1}, Shape{1, 4}}) {
    for (int64_t axis : {-3, -2, -1, 0, 1, 2}) {
      Shape logits_shape = base;
      const int64_t pos = ((axis % 3) + 3) % 3;
      logits_shape.insert(logits_shape.begin() + pos, 10);
      const Array out = rnd::categorical(key(0), numpy::ones(logits_shape), axis, Shape{3, 4});
      EXPECT_EQ(out.shape(), (Shape{3, 4}));
      for (const char* mode : {"low", "high"}) {
        EXPECT_EQ(rnd::categorical(key(0), numpy::ones(logits_shape), axis, Shape{3, 4}, true, mode)
                      .shape(),
                  (Shape{3, 4}));
      }
    }
  }
}

// gumbel's default mode follows jax_high_dynamic_range_gumbel, and categorical's with it.
TEST(Distributions, GumbelModeFlag) {
  const std::string low = rnd::gumbel(key(3), {5}).to_string();
  const std::string high = rnd::gumbel(key(3), {5}, std::nullopt, "high").to_string();
  config::update("jax_high_dynamic_range_gumbel", true);
  const std::string flagged = rnd::gumbel(key(3), {5}).to_string();
  const std::string cat = rnd::categorical(key(4), logits23(), -1, Shape{6, 2}).to_string();
  config::update("jax_high_dynamic_range_gumbel", false);
  EXPECT_NE(low, high);
  EXPECT_EQ(flagged, high);
  EXPECT_EQ(cat, rnd::categorical(key(4), logits23(), -1, Shape{6, 2}, true, "high").to_string());
}

// The new samplers under jit, grad and vmap: jit draws what eager draws; gradients flow
// to mean and cov through the factorization; vmap over keys is a loop over keys.
TEST(Distributions, MultivariateNormalAndOrthogonalUnderTransforms) {
  for (const char* method : {"cholesky", "eigh", "svd"}) {
    auto draw = [method](const rnd::Key& k, const Array& mean, const Array& cov) {
      return rnd::multivariate_normal(k, mean, cov, Shape{4}, std::nullopt, method);
    };
    EXPECT_EQ(jit(draw)(key(5), mean3(), cov3()).to_string(),
              draw(key(5), mean3(), cov3()).to_string())
        << method;
    // d/dmean of sum(x) is the number of draws, for every component.
    const Array g =
        grad([&](const Array& m) { return numpy::sum(draw(key(5), m, cov3())); })(mean3());
    EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{4, 4, 4})) << method;
    const Array gc =
        grad([&](const Array& c) { return numpy::sum(draw(key(5), mean3(), c)); })(cov3());
    EXPECT_TRUE(numpy::all(numpy::isfinite(gc)).item<bool>()) << method;
  }
  const rnd::Key keys = rnd::split(key(6), 3);
  const Array batched = vmap([](const rnd::Key& k) { return rnd::orthogonal(k, 3, {2}); })(keys);
  const Array cats = vmap([](const rnd::Key& k) {
    return rnd::categorical(k, logits10(), -1, Shape{4}, false, "high");
  })(keys);
  for (int64_t i = 0; i < 3; ++i) {
    EXPECT_EQ(batched[i].to_string(), rnd::orthogonal(keys[i], 3, {2}).to_string());
    EXPECT_EQ(cats[i].to_string(),
              rnd::categorical(keys[i], logits10(), -1, Shape{4}, false, "high").to_string());
  }
  EXPECT_EQ(jit([](const rnd::Key& k) { return rnd::orthogonal(k, 4); })(key(7)).to_string(),
            rnd::orthogonal(key(7), 4).to_string());
}

// ---- the special functions ----

// numpy's linspace in float64, rounded to float32 (as the generator's inputs are made).
Array linspace(double a, double b, int64_t n) {
  std::vector<float> v;
  const double step = (b - a) / double(n - 1);
  for (int64_t i = 0; i < n; ++i) v.push_back(float(double(i) * step + a));
  v.back() = float(b);
  return numpy::array(v);
}

TEST(Special, ValuesMatchJax) {
  const Array xs_lgamma =
      f32s({-3.5f, -2.25f, -0.5f, -1e-3f, 1e-6f, 0.1f, 0.5f,     1.0f,      1.5f, 2.0f, 3.3f,
            7.0f,  12.5f,  40.0f, 170.0f, 1e4f,  3e6f, INFINITY, -INFINITY, NAN,  -2.0f});
  const Array xs_digamma = f32s({-3.5f, -2.25f, -0.5f, 1e-6f, 0.1f, 0.5f, 1.0f, 1.5f, 2.0f, 3.3f,
                                 7.0f, 12.5f, 40.0f, 1e4f, 0.0f, -1.0f, NAN});
  const Array ms = f32s({1, 1, 1, 2, 2, 3, 4, 1, 2, 0, 1.5f, -1});
  const Array xs_poly =
      f32s({0.5f, 2.0f, 10.0f, 1.5f, 7.0f, 3.0f, 2.5f, -1.5f, 0.25f, 3.0f, 2.0f, 2.0f});
  const Array ig_a = f32s({0.1f, 0.5f, 1.0f, 1.0f, 2.0f, 3.0f, 5.0f, 10.0f, 10.0f, 0.5f, 50.0f,
                           2.0f, 0.0f, 1.0f, -1.0f, 20.0f, 1e-3f});
  const Array ig_x = f32s({0.05f, 0.3f, 0.5f, 3.0f, 1.5f, 10.0f, 4.0f, 9.0f, 15.0f, 0.0f, 45.0f,
                           INFINITY, 1.0f, -1.0f, 1.0f, 0.5f, 100.0f});
  const Array rg_a = f32s({0.1f, 0.5f, 1.0f, 2.0f, 3.0f, 5.0f, 10.0f, 10.0f, 50.0f, 0.3f, 1.5f});
  const Array rg_x = f32s({0.01f, 0.3f, 0.5f, 1.5f, 10.0f, 4.0f, 9.0f, 15.0f, 45.0f, 2.0f, 0.0f});
  // XLA computes these in float32 with its own log, log1p and sin: a few ulp apart.
  expect_golden("special/lgamma", lax::lgamma(xs_lgamma), 8);
  expect_golden("special/digamma", lax::digamma(xs_digamma), 8);
  expect_golden("special/polygamma", lax::polygamma(ms, xs_poly), 16);
  expect_golden("special/igamma", lax::igamma(ig_a, ig_x), 16, 1e-6);
  expect_golden("special/igamma_grad_a",
                lax::igamma_grad_a(lax::slice(ig_a, {0}, {12}), lax::slice(ig_x, {0}, {12})), 64,
                1e-6);
  expect_golden("special/random_gamma_grad", lax::random_gamma_grad(rg_a, rg_x), 64, 1e-6);
  expect_golden("special/lgamma_range", lax::lgamma(linspace(-9.9, 30, 400)), 16, 1e-6);
  expect_golden("special/digamma_range", lax::digamma(linspace(-9.9, 30, 400)), 64, 1e-5);
  expect_golden("special/igamma_range",
                lax::igamma(linspace(0.1, 20, 200), linspace(20, 0.05, 200)), 128, 1e-6);
  expect_golden("special/lgamma_f16",
                lax::lgamma(lax::convert_element_type(f32s({0.5f, 1.5f, 3.0f, 10.0f}), f16)));
  const Array xs3 = f32s({0.5f, 2.0f, 7.5f});
  const Array ys3 = f32s({1.0f, 2.5f, 3.0f});
  expect_golden("special/grad_lgamma",
                vmap(grad([](const Array& x) { return lax::lgamma(x); }))(xs3), 8);
  expect_golden("special/grad_digamma",
                vmap(grad([](const Array& x) { return lax::digamma(x); }))(xs3), 8);
  const auto igamma_of = [](const Array& a, const Array& x) { return lax::igamma(a, x); };
  expect_golden("special/grad_igamma_x", vmap(grad(igamma_of, argnums<1>))(xs3, ys3), 8);
  expect_golden("special/grad_igamma_a", vmap(grad(igamma_of, argnums<0>))(xs3, ys3), 64, 1e-6);
  expect_golden("special/gammaln", scipy::special::gammaln(f32s({0.5f, 4.0f, 10.0f})), 8);
  expect_golden("special/gammainc", scipy::special::gammainc(2.0, f32s({0.5f, 4.0f})), 16);
}

// The rules' errors: polygamma is not differentiable in m; igamma_grad_a and
// random_gamma_grad have no derivative rule (JAX's text for a primitive without one).
TEST(Special, RuleErrors) {
  const Array x = f32s({1.5f, 2.5f});
  EXPECT_THROW(
      jvp([&](const Array& m) { return lax::polygamma(m, x); }, std::tuple{x}, std::tuple{x}),
      ValueError);
  try {
    jvp([&](const Array& a) { return lax::random_gamma_grad(a, x); }, std::tuple{x}, std::tuple{x});
    ADD_FAILURE() << "no error";
  } catch (const NotImplementedError& e) {
    EXPECT_STREQ(e.what(), "Differentiation rule for 'random_gamma_grad' not implemented");
  }
  EXPECT_THROW(
      jvp([&](const Array& a) { return lax::igamma_grad_a(a, x); }, std::tuple{x}, std::tuple{x}),
      NotImplementedError);
  // Integer operands are JAX's TypeError.
  EXPECT_THROW(lax::igamma(numpy::array({1, 2}), numpy::array({1, 2})), TypeError);
}

TEST(Special, ValuesMatchJaxWithX64) {
  X64 x64;
  const Array xs = numpy::array({-2.5, 0.1, 1.5, 30.0, 1e5});
  expect_golden("x64/special/lgamma_f64", lax::lgamma(xs), 64, 1e-14);
  expect_golden("x64/special/digamma_f64", lax::digamma(xs), 64, 1e-14);
  const Array a = numpy::array({0.5, 2.0, 10.0});
  const Array v = numpy::array({0.3, 5.0, 9.0});
  expect_golden("x64/special/igamma_f64", lax::igamma(a, v), 64, 1e-14);
  expect_golden("x64/special/random_gamma_grad_f64", lax::random_gamma_grad(a, v), 64, 1e-14);
}

// JAX's testGammaVsLogGamma: gamma and exp(loggamma) draw the same samples.
TEST(Distributions, GammaIsExpOfLoggamma) {
  for (double a : {0.1, 1.0, 10.0}) {
    const std::vector<float> g = rnd::gamma(key(1), a, Shape{100}).to_vector<float>();
    const std::vector<float> lg =
        numpy::exp(rnd::loggamma(key(1), a, Shape{100})).to_vector<float>();
    for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], lg[i], 1e-5 * (1 + g[i])) << a;
  }
}

// The special functions fuse with the elementwise ops around them and run sharded like
// any elementwise primitive: jit over 8 devices gives the eager values.
TEST(Special, JitAndShardedMatchEager) {
  const Array a = numpy::linspace(0.5, 6.0, 64, true, f32).reshape({8, 8});
  const Array x = numpy::linspace(0.1, 9.0, 64, true, f32).reshape({8, 8});
  auto f = [](const Array& u, const Array& v) {
    return lax::add(lax::igamma(u, lax::mul(v, 1.0f)),
                    lax::add(lax::lgamma(u), lax::random_gamma_grad(u, v)));
  };
  const Array eager = f(a, x);
  const auto mesh = make_mesh({8}, {"d"});
  const Array as = device_put(a, NamedSharding(mesh, P("d", None)));
  const Array xs = device_put(x, NamedSharding(mesh, P("d", None)));
  const Array jitted = jit(f)(as, xs);
  EXPECT_EQ(jitted.to_vector<float>(), eager.to_vector<float>());
}

}  // namespace
}  // namespace parax
