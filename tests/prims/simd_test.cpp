// The vectorized paths of the elementwise kernels (src/prims/simd*.cpp), on every Highway
// target this machine runs: max ulp error of each function against a long double reference
// over 1M random values in its typical range and over edge values (±0, ±inf, NaN,
// subnormals, overflow and underflow limits, huge arguments of sin/cos), held to the bound
// documented in simd_unary.cpp; exact ops bit for bit; ragged lengths, unaligned buffers,
// rank-0 operands, halves through float32 tiles. PARAX_SIMD_ULP_REPORT=1 prints the
// measured maxima.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <limits>
#include <random>
#include <string>
#include <vector>

#include "base/dtype_dispatch.h"
#include "core/rules.h"
#include "prims/kernels/simd.h"

namespace parax {
namespace {

using core::Aval;
using core::Params;
using core::Prim;
using Real = long double;

// ---- running a kernel on buffers at a chosen (mis)alignment -------------------------------

// Operands as raw bytes placed `offset` bytes into their allocation, so the kernel sees
// pointers off the vector alignment; guard bytes after the output catch overruns.
struct Buffer {
  Aval aval;
  std::vector<uint8_t> storage;
  size_t offset = 0;
  uint8_t* data() { return storage.data() + offset; }
  const uint8_t* data() const { return storage.data() + offset; }
};

template <class T>
Buffer buffer_of(const std::vector<T>& v, Shape shape, size_t offset = 0) {
  Buffer b{Aval{std::move(shape), dtype_of<T>(), false}, {}, offset};
  b.storage.assign(offset + v.size() * sizeof(T) + 64, 0xCD);
  if (!v.empty()) std::memcpy(b.data(), v.data(), v.size() * sizeof(T));  // data() may be null
  return b;
}
template <class T>
Buffer vec(const std::vector<T>& v, size_t offset = 0) {
  return buffer_of(v, Shape{int64_t(v.size())}, offset);
}
template <class T>
Buffer scalar(T v) {
  return buffer_of(std::vector<T>{v}, Shape{});
}

constexpr uint8_t kGuard = 0xAB;

// Runs p's kernel; the output starts `offset` bytes into its allocation.
template <class Out>
std::vector<Out> run(Prim p, const std::vector<Buffer>& in, const Params& params = {},
                     size_t offset = 0) {
  std::vector<Aval> in_avals;
  std::vector<const void*> in_ptrs;
  for (const Buffer& b : in) {
    in_avals.push_back(b.aval);
    in_ptrs.push_back(b.data());
  }
  const std::vector<Aval> out_avals = core::abstract_eval(p, in_avals, params);
  const size_t bytes = size_t(out_avals[0].nbytes());
  std::vector<uint8_t> out(offset + bytes + 64, kGuard);
  std::vector<void*> out_ptrs{out.data() + offset};
  const core::DeviceContext device{};
  core::rules(p).kernel(core::KernelCall{in_ptrs, in_avals, out_ptrs, out_avals, params, device});
  for (size_t i = 0; i < out.size(); ++i) {
    if (i < offset || i >= offset + bytes) {
      EXPECT_EQ(out[i], kGuard) << "byte " << i;
    }
  }
  std::vector<Out> values(bytes / sizeof(Out));
  if (bytes > 0) std::memcpy(values.data(), out.data() + offset, bytes);
  return values;
}

// ---- ulp error ------------------------------------------------------------------------------

constexpr double kWrong = std::numeric_limits<double>::infinity();

// |got - want| in units of T's spacing at `want` (subnormal spacing below the normal
// range). Special values must match exactly: NaN with NaN, infinity with the rounded
// reference's infinity, and zero with the reference's zero of the same sign.
template <class T>
double ulp_error(T got, Real want) {
  using L = std::numeric_limits<T>;
  if (std::isnan(want) || std::isnan(got)) return std::isnan(want) && std::isnan(got) ? 0 : kWrong;
  const T rounded = T(want);
  if (std::isinf(rounded) || std::isinf(got)) return got == rounded ? 0 : kWrong;
  if (want == 0 && got == 0) return std::signbit(got) == std::signbit(want) ? 0 : kWrong;
  const int exponent = std::max(std::ilogb(want), L::min_exponent - 1);
  const Real ulp = std::ldexp(Real(1), exponent - (L::digits - 1));
  return double(std::abs(Real(got) - want) / ulp);
}

// ---- targets --------------------------------------------------------------------------------

// The compiled targets this CPU runs, best first.
std::vector<std::string> targets() { return prims::simd::targets_for_test(); }

// Restores the machine's best target when a test ends.
struct TargetScope {
  explicit TargetScope(const std::string& name) {
    EXPECT_TRUE(prims::simd::use_target_for_test(name.c_str())) << name;
  }
  ~TargetScope() { prims::simd::use_target_for_test(""); }
};

bool report() {
  const char* env = std::getenv("PARAX_SIMD_ULP_REPORT");
  return env != nullptr && std::string(env) == "1";
}

// ---- inputs ---------------------------------------------------------------------------------

// Uniform in [lo, hi].
struct Uniform {
  double lo, hi;
};
// |x| log-uniform in [lo, hi], with a random sign if `signed_`.
struct LogUniform {
  double lo, hi;
  bool signed_;
};
struct Range {
  bool log = false;
  double lo = 0, hi = 0;
  bool signed_ = false;
  Range(Uniform u) : lo(u.lo), hi(u.hi) {}  // NOLINT: tables read better implicit
  Range(LogUniform u) : log(true), lo(u.lo), hi(u.hi), signed_(u.signed_) {}  // NOLINT
};

template <class T>
std::vector<T> random_values(const std::vector<Range>& ranges, size_t n, uint64_t seed) {
  std::mt19937_64 rng(seed);
  std::uniform_real_distribution<double> unit(0, 1);
  std::vector<T> out;
  out.reserve(n);
  for (size_t i = 0; i < n; ++i) {
    const Range& r = ranges[i % ranges.size()];
    if (!r.log) {
      out.push_back(T(r.lo + (r.hi - r.lo) * unit(rng)));
    } else {
      const double m = std::exp(std::log(r.lo) + (std::log(r.hi) - std::log(r.lo)) * unit(rng));
      out.push_back(T(r.signed_ && unit(rng) < 0.5 ? -m : m));
    }
  }
  return out;
}

template <class T>
std::vector<T> edge_values(const std::vector<double>& extra) {
  using L = std::numeric_limits<T>;
  std::vector<T> v = {T(0),
                      T(-0.0),
                      L::infinity(),
                      -L::infinity(),
                      L::quiet_NaN(),
                      L::denorm_min(),
                      -L::denorm_min(),
                      L::min(),
                      -L::min(),
                      L::max(),
                      -L::max(),
                      T(1),
                      T(-1),
                      T(0.5),
                      T(-0.5),
                      T(2),
                      T(-2),
                      T(1e-30),
                      T(-1e-30),
                      T(1e30),
                      T(-1e30),
                      L::epsilon(),
                      T(3) * L::denorm_min()};
  for (double x : extra) {
    v.push_back(T(x));
    v.push_back(std::nextafter(T(x), T(0)));
    v.push_back(std::nextafter(T(x), L::infinity()));
    v.push_back(std::nextafter(T(x), -L::infinity()));
  }
  return v;
}

// ---- unary functions ------------------------------------------------------------------------

struct UnaryCase {
  Prim prim;
  Params params;
  Real (*ref)(Real);
  double f32_bound, f64_bound;  // max ulp error allowed (0.5: correctly rounded)
  std::vector<Range> ranges;
  std::vector<double> edges;  // extra edge values (each with its neighbours)
};

Real sign_ref(Real x) { return std::isnan(x) || x == 0 ? x : std::copysign(Real(1), x); }
Real round_even_ref(Real x) {
  const Real r = std::round(x);
  return std::abs(x - std::trunc(x)) == Real(0.5) ? 2 * std::round(x / 2) : r;
}

const Params kAway{{"rounding_method", int64_t(0)}};
const Params kEven{{"rounding_method", int64_t(1)}};

// Bounds, as simd_unary.cpp lists them: exact ops 0 (0.5 where the result rounds);
// Highway's documented maxima; SLEEF's 1.0 (u10) or 3.5 (u35); rsqrt and logistic carry
// sqrt's and exp's error through their extra roundings.
const std::vector<UnaryCase>& unary_cases() {
  static const std::vector<UnaryCase> cases = {
      {Prim::neg, {}, [](Real x) { return -x; }, 0, 0, {Uniform{-1e6, 1e6}}, {}},
      {Prim::abs, {}, [](Real x) { return std::abs(x); }, 0, 0, {Uniform{-1e6, 1e6}}, {}},
      {Prim::sign, {}, sign_ref, 0, 0, {Uniform{-10, 10}}, {}},
      {Prim::floor,
       {},
       [](Real x) { return std::floor(x); },
       0,
       0,
       {Uniform{-100, 100}, LogUniform{1e-3, 1e20, true}},
       {8388607.5, 4503599627370495.5}},
      {Prim::ceil,
       {},
       [](Real x) { return std::ceil(x); },
       0,
       0,
       {Uniform{-100, 100}, LogUniform{1e-3, 1e20, true}},
       {8388607.5, 4503599627370495.5}},
      {Prim::round,
       kAway,
       [](Real x) { return std::round(x); },
       0,
       0,
       {Uniform{-100, 100}, LogUniform{1e-3, 1e20, true}},
       {0.49999997, 2.5, 8388607.5}},
      {Prim::round,
       kEven,
       round_even_ref,
       0,
       0,
       {Uniform{-100, 100}, LogUniform{1e-3, 1e20, true}},
       {0.49999997, 2.5, 8388607.5}},
      {Prim::sqrt,
       {},
       [](Real x) { return std::sqrt(x); },
       0.5,
       0.5,
       {LogUniform{1e-38, 1e38, false}},
       {}},
      {Prim::rsqrt,
       {},
       [](Real x) { return 1 / std::sqrt(x); },
       1.5,
       1.5,
       {LogUniform{1e-38, 1e38, false}},
       {}},
      {Prim::exp,
       {},
       [](Real x) { return std::exp(x); },
       1,
       1,
       {Uniform{-87.3, 88.7}, Uniform{-104, 89}},
       {88.72283935546875, 709.782712893384, -87.33, -103.97, -745.13, -708.4}},
      {Prim::exp2,
       {},
       [](Real x) { return std::exp2(x); },
       1,
       1,
       {Uniform{-126, 127}, Uniform{-150, 129}},
       {128, -126, -149, 1024, -1074}},
      {Prim::log,
       {},
       [](Real x) { return std::log(x); },
       4,
       4,
       {LogUniform{1e-38, 1e38, false}, Uniform{0.5, 2}},
       {}},
      {Prim::log1p,
       {},
       [](Real x) { return std::log1p(x); },
       1,
       1,
       {Uniform{-0.999, 10}, LogUniform{1e-30, 1e30, false}},
       {-1, -0.5}},
      {Prim::expm1,
       {},
       [](Real x) { return std::expm1(x); },
       4,
       4,
       {Uniform{-20, 88.7}, LogUniform{1e-30, 1, true}},
       {88.72283935546875, 709.782712893384, -104, 0.34657359}},
      {Prim::sin,
       {},
       [](Real x) { return std::sin(x); },
       3,
       3,
       {Uniform{-39000, 39000}, Uniform{-4, 4}},
       {39000, 1e5, 3e7, 1e10, 3.14159265358979}},
      {Prim::cos,
       {},
       [](Real x) { return std::cos(x); },
       3,
       3,
       {Uniform{-39000, 39000}, Uniform{-4, 4}},
       {39000, 1e5, 3e7, 1e10, 1.5707963267949}},
      {Prim::tan,
       {},
       [](Real x) { return std::tan(x); },
       3.5,
       3.5,
       {Uniform{-1e4, 1e4}, Uniform{-2, 2}},
       {1.5707963267949, 1e10}},
      {Prim::asin, {}, [](Real x) { return std::asin(x); }, 3.5, 3.5, {Uniform{-1, 1}}, {1, -1}},
      {Prim::acos, {}, [](Real x) { return std::acos(x); }, 2, 2, {Uniform{-1, 1}}, {1, -1}},
      {Prim::atan,
       {},
       [](Real x) { return std::atan(x); },
       3,
       3,
       {LogUniform{1e-10, 1e10, true}},
       {}},
      {Prim::sinh,
       {},
       [](Real x) { return std::sinh(x); },
       3.5,
       3.5,
       {Uniform{-89, 89}},
       {89.415985, 710.475860}},
      {Prim::cosh,
       {},
       [](Real x) { return std::cosh(x); },
       3.5,
       3.5,
       {Uniform{-89, 89}},
       {89.415985, 710.475860}},
      {Prim::tanh,
       {},
       [](Real x) { return std::tanh(x); },
       4,
       4,
       {Uniform{-10, 10}, LogUniform{1e-30, 1e3, true}},
       {18.714973875, 0.625}},
      {Prim::cbrt,
       {},
       [](Real x) { return std::cbrt(x); },
       3.5,
       3.5,
       {LogUniform{1e-38, 1e38, true}},
       {}},
      // Below x = -88.7 (float32), exp(-x) overflows and the result flushes to 0 instead of
      // a subnormal, as in XLA; elementwise_test.cpp pins that.
      {Prim::logistic,
       {},
       [](Real x) { return 1 / (1 + std::exp(-x)); },
       3,
       3,
       {Uniform{-87, 100}, Uniform{-10, 10}},
       {-87}},
      {Prim::erf,
       {},
       [](Real x) { return std::erf(x); },
       1,
       1,
       {Uniform{-5, 5}, LogUniform{1e-30, 1, true}},
       {}},
  };
  return cases;
}

std::string case_name(const UnaryCase& u) {
  std::string name(core::prim_name(u.prim));
  if (u.params.has("rounding_method")) {
    name += u.params.get<int64_t>("rounding_method") == 0 ? "(away)" : "(even)";
  }
  return name;
}

struct Worst {
  double ulp = 0;
  Real x = 0;
};

template <class T>
Worst worst_error(const UnaryCase& u, const std::vector<T>& x, const std::vector<Real>& want) {
  const std::vector<T> got = run<T>(u.prim, {vec(x)}, u.params);
  Worst w;
  for (size_t i = 0; i < x.size(); ++i) {
    const double e = ulp_error(got[i], want[i]);
    if (e > w.ulp) w = {e, Real(x[i])};
  }
  return w;
}

template <class T>
void check_unary_accuracy(size_t samples) {
  const std::vector<std::string> names = targets();
  ASSERT_FALSE(names.empty());
  uint64_t seed = 1;
  for (const UnaryCase& u : unary_cases()) {
    const double bound = sizeof(T) == 4 ? u.f32_bound : u.f64_bound;
    const std::vector<T> random = random_values<T>(u.ranges, samples, seed++);
    const std::vector<T> edges = edge_values<T>(u.edges);
    std::vector<Real> want_random, want_edges;
    for (T v : random) want_random.push_back(u.ref(Real(v)));
    for (T v : edges) want_edges.push_back(u.ref(Real(v)));
    for (const std::string& target : names) {
      TargetScope scope(target);
      const Worst r = worst_error(u, random, want_random);
      const Worst e = worst_error(u, edges, want_edges);
      const std::string what =
          case_name(u) + " " + std::string(dtype_name(dtype_of<T>())) + " on " + target;
      EXPECT_LE(r.ulp, bound) << what << ": " << r.ulp << " ulp at x = " << double(r.x);
      EXPECT_LE(e.ulp, bound) << what << " (edges): " << e.ulp << " ulp at x = " << double(e.x);
      if (report()) {
        std::printf("%-12s %-8s %-7s random %.3f ulp (x=%.9g)  edges %.3f ulp (x=%.9g)\n",
                    case_name(u).c_str(), std::string(dtype_name(dtype_of<T>())).c_str(),
                    target.c_str(), r.ulp, double(r.x), e.ulp, double(e.x));
      }
    }
  }
}

bool has_avx512() {
#if defined(__x86_64__)
  __builtin_cpu_init();
  return __builtin_cpu_supports("avx512f") && __builtin_cpu_supports("avx512vl") &&
         __builtin_cpu_supports("avx512dq") && __builtin_cpu_supports("avx512bw");
#else
  return false;
#endif
}

// An AVX-512 CPU runs the kernels at its whole width (Highway's AVX3), and every test here
// loops over each target it runs, so each is held to the same bounds.
TEST(ElementwiseSimd, Avx512CpusRunTheirWidth) {
  const std::vector<std::string> names = targets();
  std::string list;
  for (const std::string& n : names) list += n + " ";
  std::printf("Highway targets this CPU runs: %s\n", list.c_str());
  ASSERT_FALSE(names.empty());
  EXPECT_EQ(std::string(prims::simd::target_name()), names.front());
  if (has_avx512()) {
    EXPECT_NE(std::find(names.begin(), names.end(), "AVX3"), names.end()) << list;
    EXPECT_TRUE(names.front() == "AVX3" || names.front() == "AVX3_DL") << list;
  }
}

TEST(ElementwiseSimd, Float32FunctionsWithinDocumentedUlp) { check_unary_accuracy<float>(1 << 20); }

TEST(ElementwiseSimd, Float64FunctionsWithinDocumentedUlp) {
  check_unary_accuracy<double>(1 << 17);
}

// Huge sin/cos arguments: Highway's range ends at 39000, SLEEF takes over beyond.
TEST(ElementwiseSimd, SinCosHugeArgumentsUseFullRangePath) {
  const std::vector<float> x = random_values<float>({LogUniform{1e-30, 1e30, true}}, 100000, 7);
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    for (Prim p : {Prim::sin, Prim::cos}) {
      const std::vector<float> got = run<float>(p, {vec(x)});
      double worst = 0;
      for (size_t i = 0; i < x.size(); ++i) {
        const Real want = p == Prim::sin ? std::sin(Real(x[i])) : std::cos(Real(x[i]));
        worst = std::max(worst, ulp_error(got[i], want));
      }
      EXPECT_LE(worst, 3) << core::prim_name(p) << " on " << target;
    }
  }
}

// ---- binary functions -----------------------------------------------------------------------

struct BinaryCase {
  Prim prim;
  Real (*ref)(Real, Real);
  double bound;
  Range a, b;
};

Real max_ref(Real a, Real b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<Real>::quiet_NaN();
  return a == b ? (std::signbit(a) ? b : a) : std::max(a, b);
}
Real min_ref(Real a, Real b) {
  if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<Real>::quiet_NaN();
  return a == b ? (std::signbit(a) ? a : b) : std::min(a, b);
}

const std::vector<BinaryCase>& binary_cases() {
  static const std::vector<BinaryCase> cases = {
      {Prim::add, [](Real a, Real b) { return a + b; }, 0.5, Uniform{-1e3, 1e3},
       LogUniform{1e-10, 1e10, true}},
      {Prim::sub, [](Real a, Real b) { return a - b; }, 0.5, Uniform{-1e3, 1e3},
       LogUniform{1e-10, 1e10, true}},
      {Prim::mul, [](Real a, Real b) { return a * b; }, 0.5, Uniform{-1e3, 1e3},
       LogUniform{1e-20, 1e20, true}},
      {Prim::div, [](Real a, Real b) { return a / b; }, 0.5, Uniform{-1e3, 1e3},
       LogUniform{1e-20, 1e20, true}},
      {Prim::max, max_ref, 0, Uniform{-10, 10}, Uniform{-10, 10}},
      {Prim::min, min_ref, 0, Uniform{-10, 10}, Uniform{-10, 10}},
      {Prim::pow, [](Real a, Real b) { return std::pow(a, b); }, 1, LogUniform{1e-3, 1e3, false},
       Uniform{-10, 10}},
      {Prim::atan2, [](Real a, Real b) { return std::atan2(a, b); }, 3.5,
       LogUniform{1e-10, 1e10, true}, LogUniform{1e-10, 1e10, true}},
  };
  return cases;
}

template <class T>
void check_binary_accuracy(size_t samples) {
  const std::vector<T> specials = edge_values<T>({});
  for (const BinaryCase& c : binary_cases()) {
    std::vector<T> a = random_values<T>({c.a}, samples, 11);
    std::vector<T> b = random_values<T>({c.b}, samples, 12);
    for (T x : specials) {  // every pair of special values
      for (T y : specials) {
        a.push_back(x);
        b.push_back(y);
      }
    }
    std::vector<Real> want;
    for (size_t i = 0; i < a.size(); ++i) want.push_back(c.ref(Real(a[i]), Real(b[i])));
    for (const std::string& target : targets()) {
      TargetScope scope(target);
      const std::vector<T> got = run<T>(c.prim, {vec(a), vec(b)});
      Worst w;
      size_t at = 0;
      for (size_t i = 0; i < a.size(); ++i) {
        const double e = ulp_error(got[i], want[i]);
        if (e > w.ulp) {
          w = {e, Real(a[i])};
          at = i;
        }
      }
      EXPECT_LE(w.ulp, c.bound) << core::prim_name(c.prim) << "(" << double(a[at]) << ", "
                                << double(b[at]) << ") in " << dtype_name(dtype_of<T>()) << " on "
                                << target << ": got " << double(got[at]);
      if (report()) {
        std::printf("%-12s %-8s %-7s %.3f ulp\n", std::string(core::prim_name(c.prim)).c_str(),
                    std::string(dtype_name(dtype_of<T>())).c_str(), target.c_str(), w.ulp);
      }
    }
  }
}

TEST(ElementwiseSimd, Float32BinaryOpsWithinBounds) { check_binary_accuracy<float>(1 << 18); }
TEST(ElementwiseSimd, Float64BinaryOpsWithinBounds) { check_binary_accuracy<double>(1 << 16); }

// ---- ragged lengths, unaligned buffers, rank-0 operands ---------------------------------------

template <class T>
bool same_bits(T a, T b) {
  return std::memcmp(&a, &b, sizeof(T)) == 0;
}

// Every length up to a few vectors, at every element offset within a vector: results equal
// the same kernel's on one element at a time, and nothing past the output is written.
template <class T>
void check_ragged(Prim p, const Params& params = {}) {
  const std::vector<T> pool = random_values<T>({Uniform{-3, 3}}, 64, 5);
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    for (size_t n = 0; n <= 37; ++n) {
      for (size_t shift = 0; shift < 8; ++shift) {
        const std::vector<T> x(pool.begin() + shift, pool.begin() + shift + n);
        const std::vector<T> got =
            run<T>(p, {vec(x, shift * sizeof(T))}, params, (7 - shift) * sizeof(T));
        ASSERT_EQ(got.size(), n);
        for (size_t i = 0; i < n; ++i) {
          const T one = run<T>(p, {vec(std::vector<T>{x[i]})}, params)[0];
          ASSERT_TRUE(same_bits(got[i], one))
              << core::prim_name(p) << " n=" << n << " shift=" << shift << " i=" << i << " on "
              << target;
        }
      }
    }
  }
}

TEST(ElementwiseSimd, RaggedLengthsAndUnalignedBuffers) {
  for (Prim p : {Prim::sin, Prim::exp, Prim::tan, Prim::neg, Prim::sqrt}) {
    check_ragged<float>(p);
    check_ragged<double>(p);
  }
  check_ragged<float>(Prim::round, kEven);
}

// Streamed stores (simd::Store::stream) write the bits ordinary stores write, at every
// alignment of the output and on both sides of the lengths where the loops prefetch, and
// nothing outside the output.
template <class T>
void check_streamed(size_t n, size_t shift) {
  using prims::simd::Store;
  const std::vector<T> x = random_values<T>({Uniform{-3, 3}}, n, 11);
  const std::vector<T> b = random_values<T>({Uniform{-3, 3}}, n, 12);
  const T guard = T(-7.25);
  std::vector<T> cached(n + 16, guard), streamed(n + 16, guard);
  const std::string what = std::string(sizeof(T) == 4 ? "f32" : "f64") + " n=" + std::to_string(n) +
                           " shift=" + std::to_string(shift);
  ASSERT_TRUE(prims::simd::unary(prims::simd::UnaryOp::sin, x.data(), cached.data() + shift,
                                 int64_t(n), Store::cached));
  ASSERT_TRUE(prims::simd::unary(prims::simd::UnaryOp::sin, x.data(), streamed.data() + shift,
                                 int64_t(n), Store::stream));
  EXPECT_EQ(0, std::memcmp(cached.data(), streamed.data(), cached.size() * sizeof(T)))
      << "sin " << what;
  const prims::simd::In<T> xa{x.data(), false}, ba{b.data(), false};
  ASSERT_TRUE(prims::simd::binary(prims::simd::BinaryOp::mul, xa, ba, cached.data() + shift,
                                  int64_t(n), Store::cached));
  ASSERT_TRUE(prims::simd::binary(prims::simd::BinaryOp::mul, xa, ba, streamed.data() + shift,
                                  int64_t(n), Store::stream));
  EXPECT_EQ(0, std::memcmp(cached.data(), streamed.data(), cached.size() * sizeof(T)))
      << "mul " << what;
  if constexpr (sizeof(T) == 4) {
    std::vector<T> copied(n + 16, guard);
    prims::simd::copy_streaming(x.data(), copied.data() + shift, int64_t(n));
    EXPECT_EQ(0, std::memcmp(x.data(), copied.data() + shift, n * sizeof(T))) << "copy " << what;
    for (size_t i = 0; i < shift; ++i) EXPECT_EQ(copied[i], guard) << "copy " << what;
    for (size_t i = n + shift; i < copied.size(); ++i) EXPECT_EQ(copied[i], guard) << what;
  }
}

TEST(ElementwiseSimd, StreamedStoresWriteTheCachedBits) {
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    SCOPED_TRACE(target);
    for (size_t n : {size_t(0), size_t(1), size_t(5), size_t(17), size_t(37), size_t(4095),
                     size_t(4096 + 33), size_t(20011)}) {
      for (size_t shift = 0; shift < 8; ++shift) {
        check_streamed<float>(n, shift);
        check_streamed<double>(n, shift);
      }
    }
  }
}

TEST(ElementwiseSimd, RankZeroOperandsBroadcast) {
  const std::vector<float> x = random_values<float>({Uniform{-3, 3}}, 1000 + 3, 9);
  const float s = 0.75f;
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    for (Prim p : {Prim::sub, Prim::div, Prim::max, Prim::pow, Prim::atan2}) {
      const std::vector<float> left = run<float>(p, {scalar(s), vec(x, 4)});
      const std::vector<float> right = run<float>(p, {vec(x, 4), scalar(s)});
      for (size_t i = 0; i < x.size(); ++i) {
        const Buffer xi = vec(std::vector{x[i]}), si = vec(std::vector{s});
        const float one_left = run<float>(p, {si, xi})[0];
        const float one_right = run<float>(p, {xi, si})[0];
        ASSERT_TRUE(same_bits(left[i], one_left)) << core::prim_name(p) << " " << i;
        ASSERT_TRUE(same_bits(right[i], one_right)) << core::prim_name(p) << " " << i;
      }
    }
    const std::vector<uint8_t> lt = run<uint8_t>(Prim::lt, {vec(x), scalar(s)});
    const std::vector<float> clamped = run<float>(Prim::clamp, {scalar(-1.f), vec(x), scalar(1.f)});
    for (size_t i = 0; i < x.size(); ++i) {
      ASSERT_EQ(lt[i], uint8_t(x[i] < s)) << i;
      ASSERT_EQ(clamped[i], std::min(std::max(x[i], -1.f), 1.f)) << i;
    }
    // A rank-0 operand of a one-element call, and a rank-0 result.
    EXPECT_EQ(run<float>(Prim::add, {scalar(1.5f), scalar(2.f)}), std::vector<float>{3.5f});
    EXPECT_EQ(run<float>(Prim::mul, {vec(std::vector<float>{3}), scalar(2.f)}),
              std::vector<float>{6});
  }
}

// ---- comparisons, clamp, select_n, convert ------------------------------------------------

TEST(ElementwiseSimd, ComparisonsClampAndSelectAreExact) {
  const std::vector<float> specials = edge_values<float>({});
  std::vector<float> a = random_values<float>({Uniform{-2, 2}}, 4099, 3);
  std::vector<float> b = random_values<float>({Uniform{-2, 2}}, 4099, 4);
  for (float x : specials) {
    for (float y : specials) {
      a.push_back(x);
      b.push_back(y);
    }
  }
  for (size_t i = 0; i < 64; ++i) b[i] = a[i];  // equal pairs
  std::vector<uint8_t> which(a.size());
  for (size_t i = 0; i < a.size(); ++i) which[i] = uint8_t(a[i] < b[i]);
  using Cmp = bool (*)(float, float);
  const std::pair<Prim, Cmp> ops[] = {
      {Prim::eq, [](float x, float y) { return x == y; }},
      {Prim::ne, [](float x, float y) { return x != y; }},
      {Prim::lt, [](float x, float y) { return x < y; }},
      {Prim::le, [](float x, float y) { return x <= y; }},
      {Prim::gt, [](float x, float y) { return x > y; }},
      {Prim::ge, [](float x, float y) { return x >= y; }},
  };
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    for (const auto& [p, cmp] : ops) {
      const std::vector<uint8_t> got = run<uint8_t>(p, {vec(a), vec(b)});
      for (size_t i = 0; i < a.size(); ++i) {
        ASSERT_EQ(got[i], uint8_t(cmp(a[i], b[i])))
            << core::prim_name(p) << "(" << a[i] << ", " << b[i] << ") on " << target;
      }
    }
    const std::vector<float> lo(a.size(), -1.f);
    const std::vector<float> clamped = run<float>(Prim::clamp, {vec(lo), vec(a), vec(b)});
    for (size_t i = 0; i < a.size(); ++i) {
      const Real want = min_ref(max_ref(a[i], -1), b[i]);
      ASSERT_EQ(ulp_error(clamped[i], want), 0) << "clamp " << a[i] << " " << b[i];
    }
    const Buffer w = buffer_of(which, Shape{int64_t(which.size())});
    Buffer wb = w;
    wb.aval.dtype = DType::bool_;
    const std::vector<float> sel = run<float>(Prim::select_n, {wb, vec(a), vec(b)});
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(same_bits(sel[i], which[i] ? b[i] : a[i])) << "select " << i;
    }
    // Every case width.
    std::vector<double> ad(a.begin(), a.end()), bd(b.begin(), b.end());
    const std::vector<double> seld = run<double>(Prim::select_n, {wb, vec(ad), vec(bd)});
    std::vector<uint16_t> ah(a.size()), bh(a.size());
    std::vector<int8_t> ai(a.size()), bi(a.size());
    for (size_t i = 0; i < a.size(); ++i) {
      ah[i] = uint16_t(i);
      bh[i] = uint16_t(~i);
      ai[i] = int8_t(i);
      bi[i] = int8_t(-int(i));
    }
    Buffer ahb = vec(ah), bhb = vec(bh);
    ahb.aval.dtype = bhb.aval.dtype = DType::float16;
    const std::vector<uint16_t> selh = run<uint16_t>(Prim::select_n, {wb, ahb, bhb});
    const std::vector<int8_t> seli = run<int8_t>(Prim::select_n, {wb, vec(ai), vec(bi)});
    for (size_t i = 0; i < a.size(); ++i) {
      ASSERT_TRUE(same_bits(seld[i], which[i] ? bd[i] : ad[i])) << "select f64 " << i;
      ASSERT_EQ(selh[i], which[i] ? bh[i] : ah[i]) << "select f16 " << i;
      ASSERT_EQ(seli[i], which[i] ? bi[i] : ai[i]) << "select i8 " << i;
    }
  }
}

template <class To, class From>
std::vector<To> convert(const std::vector<From>& x, DType to, DType from = dtype_of<From>()) {
  Buffer b = vec(x);
  b.aval.dtype = from;
  return run<To>(Prim::convert_element_type, {b}, Params{{"new_dtype", to}, {"weak_type", false}});
}

TEST(ElementwiseSimd, ConversionsMatchScalarSemantics) {
  std::vector<float> x = random_values<float>({LogUniform{1e-8, 1e12, true}}, 100003, 21);
  const std::vector<float> edges = edge_values<float>(
      {2147483648.0, 2147483520.0, 65504, 65520, 6e-8, 3.0e-5, 1.00390625, 1.01171875});
  x.insert(x.end(), edges.begin(), edges.end());
  std::vector<int32_t> ints;
  for (size_t i = 0; i < x.size(); ++i) ints.push_back(int32_t(uint32_t(i) * 2654435761u));
  std::vector<double> doubles(x.begin(), x.end());
  for (size_t i = 0; i < doubles.size(); i += 3) doubles[i] *= 1 + 1e-9;
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    const std::vector<int32_t> to_i32 = convert<int32_t>(x, DType::int32);
    const std::vector<float> from_i32 = convert<float>(ints, DType::float32);
    const std::vector<double> to_f64 = convert<double>(x, DType::float64);
    const std::vector<float> from_f64 = convert<float>(doubles, DType::float32);
    const std::vector<uint16_t> to_bf16 = convert<uint16_t>(x, DType::bfloat16);
    const std::vector<uint16_t> to_f16 = convert<uint16_t>(x, DType::float16);
    const std::vector<float> from_bf16 = convert<float>(to_bf16, DType::float32, DType::bfloat16);
    const std::vector<float> from_f16 = convert<float>(to_f16, DType::float32, DType::float16);
    for (size_t i = 0; i < x.size(); ++i) {
      const std::string at = std::to_string(x[i]) + " on " + target;
      const int32_t want_i32 = std::isnan(x[i])         ? 0
                               : x[i] >= 2147483648.0f  ? INT32_MAX
                               : x[i] <= -2147483648.0f ? INT32_MIN
                                                        : int32_t(x[i]);
      ASSERT_EQ(to_i32[i], want_i32) << at;
      ASSERT_TRUE(same_bits(from_i32[i], float(ints[i]))) << ints[i];
      ASSERT_TRUE(same_bits(to_f64[i], double(x[i]))) << at;
      ASSERT_TRUE(same_bits(from_f64[i], float(doubles[i])))
          << doubles[i] << " -> " << from_f64[i] << " on " << target;
      ASSERT_EQ(to_bf16[i], bfloat16_t(x[i]).bits) << at;
      ASSERT_EQ(to_f16[i], float16_t(x[i]).bits) << at;
      ASSERT_TRUE(same_bits(from_bf16[i], float(bfloat16_t::from_bits(to_bf16[i])))) << at;
      ASSERT_TRUE(same_bits(from_f16[i], float(float16_t::from_bits(to_f16[i])))) << at;
    }
  }
}

// Halves compute in float32 tiles: each result is the float32 kernel's, rounded once.
TEST(ElementwiseSimd, HalvesComputeThroughFloat32Tiles) {
  const std::vector<float> x = random_values<float>({Uniform{-6, 6}}, 5000 + 7, 31);
  const std::vector<float> y = random_values<float>({Uniform{-6, 6}}, 5000 + 7, 32);
  std::vector<uint16_t> xh, yh, xb, yb;
  std::vector<float> xhf, yhf, xbf, ybf;
  for (size_t i = 0; i < x.size(); ++i) {
    xh.push_back(float16_t(x[i]).bits);
    yh.push_back(float16_t(y[i]).bits);
    xb.push_back(bfloat16_t(x[i]).bits);
    yb.push_back(bfloat16_t(y[i]).bits);
    xhf.push_back(float(float16_t::from_bits(xh[i])));
    yhf.push_back(float(float16_t::from_bits(yh[i])));
    xbf.push_back(float(bfloat16_t::from_bits(xb[i])));
    ybf.push_back(float(bfloat16_t::from_bits(yb[i])));
  }
  auto typed = [](const std::vector<uint16_t>& v, DType t) {
    Buffer b = vec(v);
    b.aval.dtype = t;
    return b;
  };
  for (const std::string& target : targets()) {
    TargetScope scope(target);
    for (Prim p : {Prim::sin, Prim::exp, Prim::tanh, Prim::sqrt}) {
      const std::vector<float> hf = run<float>(p, {vec(xhf)});
      const std::vector<float> bf = run<float>(p, {vec(xbf)});
      const std::vector<uint16_t> h = run<uint16_t>(p, {typed(xh, DType::float16)});
      const std::vector<uint16_t> b = run<uint16_t>(p, {typed(xb, DType::bfloat16)});
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(h[i], float16_t(hf[i]).bits) << core::prim_name(p) << " f16 " << i;
        ASSERT_EQ(b[i], bfloat16_t(bf[i]).bits) << core::prim_name(p) << " bf16 " << i;
      }
    }
    for (Prim p : {Prim::add, Prim::mul, Prim::max, Prim::pow}) {
      const std::vector<float> hf = run<float>(p, {vec(xhf), vec(yhf)});
      const std::vector<uint16_t> h =
          run<uint16_t>(p, {typed(xh, DType::float16), typed(yh, DType::float16)});
      const std::vector<float> bf = run<float>(p, {vec(xbf), scalar(ybf[0])});
      Buffer yb0 = typed({yb[0]}, DType::bfloat16);
      yb0.aval.shape = {};
      const std::vector<uint16_t> b = run<uint16_t>(p, {typed(xb, DType::bfloat16), yb0});
      for (size_t i = 0; i < x.size(); ++i) {
        ASSERT_EQ(h[i], float16_t(hf[i]).bits) << core::prim_name(p) << " f16 " << i;
        ASSERT_EQ(b[i], bfloat16_t(bf[i]).bits) << core::prim_name(p) << " bf16 " << i;
      }
    }
    const std::vector<uint8_t> lt =
        run<uint8_t>(Prim::lt, {typed(xh, DType::float16), typed(yh, DType::float16)});
    for (size_t i = 0; i < x.size(); ++i) ASSERT_EQ(lt[i], uint8_t(xhf[i] < yhf[i])) << i;
  }
}

}  // namespace
}  // namespace parax
