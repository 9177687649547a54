// Seeded, time-bounded fuzzing of the public API: random meshes (bad ones included),
// specs, shapes (zero, negative, overflowing), dtypes, ops and transforms. Every case
// must end in a result or a parax::Error; any other exception fails the test with the
// case's seed, and a crash prints the case before the process dies.
//   PARAX_FUZZ_SEED     the master seed (default fixed, so runs repeat)
//   PARAX_FUZZ_SECONDS  the time budget (default 20)
//   PARAX_FUZZ_CASE     replay one case by the seed a failure printed
// Beside them, entry points drawn from support/first_calls.h run as the first parax call of
// a fresh child process (this binary re-executed), which must end with the right value or a
// parax::Error within PARAX_FUZZ_CASE_SECONDS:
//   PARAX_FUZZ_FIRST_CALL_SECONDS  their time budget (default 10)
//   PARAX_FUZZ_FIRST_CALL          name:seed, what a child runs (a failure prints it)
#include <gtest/gtest.h>

#include <fcntl.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <chrono>
#include <cmath>
#include <csignal>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <limits>
#include <random>
#include <sstream>
#include <stdexcept>
#include <string>
#include <thread>
#include <typeinfo>
#include <vector>

#include "parax/parax.h"
#include "support/first_calls.h"

extern char** environ;

namespace parax {
namespace {

namespace jnp = parax::numpy;

constexpr uint64_t kDefaultSeed = 20261124;

uint64_t env_u64(const char* name, uint64_t fallback) {
  const char* v = std::getenv(name);
  return v && *v ? std::strtoull(v, nullptr, 10) : fallback;
}

// One case's random source, and a log of what it drew (printed on failure).
class Fuzz {
 public:
  explicit Fuzz(uint64_t seed) : rng_(seed) {}

  int64_t pick(int64_t lo, int64_t hi) {
    return std::uniform_int_distribution<int64_t>(lo, hi)(rng_);
  }
  bool coin(double p = 0.5) { return std::bernoulli_distribution(p)(rng_); }
  template <class T>
  const T& one_of(const std::vector<T>& v) {
    return v[size_t(pick(0, int64_t(v.size()) - 1))];
  }

  // A dimension: mostly small, sometimes zero, negative or beyond any memory. Huge sizes
  // start at 2^40 so that nothing the fuzzer makes is ever really allocated.
  int64_t dim() {
    const int64_t r = pick(0, 99);
    if (r < 70) return pick(1, 4);
    if (r < 82) return 0;
    if (r < 88) return one_of<int64_t>({-1, -2, -7, std::numeric_limits<int64_t>::min()});
    return one_of<int64_t>({int64_t(1) << 40, int64_t(1) << 45, int64_t(1) << 62,
                            std::numeric_limits<int64_t>::max(),
                            std::numeric_limits<int64_t>::max() / 3});
  }
  Shape shape(int64_t max_rank = 3) {
    Shape s(size_t(pick(0, max_rank)));
    for (int64_t& d : s) d = dim();
    return s;
  }
  // A shape that makes a real (tiny) array.
  Shape small_shape(int64_t max_rank = 3) {
    Shape s(size_t(pick(0, max_rank)));
    for (int64_t& d : s) d = pick(0, 3) == 0 ? pick(0, 1) : pick(1, 4);
    return s;
  }
  DType dtype() {
    return one_of<DType>({DType::bool_, DType::int8, DType::int16, DType::int32, DType::int64,
                          DType::uint8, DType::uint16, DType::uint32, DType::uint64, DType::float16,
                          DType::bfloat16, DType::float32, DType::float64});
  }
  DType float_dtype() {
    return one_of<DType>({DType::float16, DType::bfloat16, DType::float32, DType::float64});
  }
  int64_t axis(int64_t rank) { return pick(-rank - 1, rank); }  // sometimes out of range

  // A tiny array with varied values.
  Array array(const Shape& s, DType t) {
    const int64_t n = shape_size(s);
    std::vector<float> v(static_cast<size_t>(n));
    for (float& x : v) x = float(pick(-8, 8)) * (coin(0.3) ? 0.37f : 1.0f);
    return jnp::array(v, s, t);
  }
  Array array() {
    if (coin(0.08)) {  // empty, but with a dimension no memory could hold were it not
      Shape s = small_shape(2);
      s.insert(s.begin() + pick(0, int64_t(s.size())), 0);
      s.insert(s.begin() + pick(0, int64_t(s.size())),
               one_of<int64_t>({int64_t(1) << 40, int64_t(1) << 58}));
      return jnp::zeros(s, coin(0.6) ? DType::float32 : DType::int8);
    }
    return array(small_shape(), coin(0.6) ? DType::float32 : dtype());
  }

  std::vector<std::string> names(size_t n) {
    std::vector<std::string> out;
    for (size_t i = 0; i < n; ++i) out.push_back(one_of<std::string>({"a", "b", "c", "a"}));
    return out;
  }
  Mesh mesh() {
    if (coin(0.7)) {  // usually a valid one, so the sharded paths get exercised
      return one_of<std::function<Mesh()>>({[] { return make_mesh({8}, {"a"}); },
                                            [] {
                                              return make_mesh({4, 2}, {"a", "b"});
                                            },
                                            [] {
                                              return make_mesh({2, 2, 2}, {"a", "b", "c"});
                                            },
                                            [] { return make_mesh({2}, {"a"}); },
                                            [] {
                                              return make_mesh({1, 8}, {"a", "b"});
                                            }})();
    }
    Shape sizes(size_t(pick(0, 3)));
    for (int64_t& s : sizes) s = one_of<int64_t>({-4, -2, -1, 0, 1, 2, 3, 4, 8, 16});
    const int64_t n = int64_t(sizes.size()) + (coin(0.8) ? 0 : pick(-1, 1));
    return make_mesh(sizes, names(size_t(std::max<int64_t>(0, n))));
  }
  PartitionSpec spec(int64_t rank) {
    std::vector<SpecEntry> entries;
    const int64_t n = std::max<int64_t>(0, rank + pick(-1, 1));
    for (int64_t i = 0; i < n && i < 8; ++i) {
      switch (pick(0, 6)) {
        case 0:
        case 1:
          entries.emplace_back(None);
          break;
        case 2:
          entries.emplace_back("a");
          break;
        case 3:
          entries.emplace_back("b");
          break;
        case 4:
          entries.emplace_back("c");
          break;
        case 5:
          entries.emplace_back(std::vector<std::string>{"a", "b"});
          break;
        default:
          entries.emplace_back(coin() ? "z" : "a");
      }
    }
    return PartitionSpec::from_entries(entries);
  }

 private:
  std::mt19937_64 rng_;
};

using Unary = std::function<Array(const Array&)>;

// Under jit a broadcast feeding a reduction fuses and never materialises, so a valid
// (2^45,) broadcast is a legitimately long loop, not a bug: traced shapes keep huge sizes
// only where their product overflows (and so is rejected while tracing).
Shape traced_shape(Shape s) {
  constexpr int64_t kHuge = int64_t(1) << 40;
  const auto huge = std::count_if(s.begin(), s.end(), [](int64_t d) { return d >= kHuge; });
  if (huge != 1) return s;
  for (int64_t& d : s) {
    if (s.size() == 1 || d < kHuge) {
      d = s.size() == 1 ? 3 : kHuge;
      break;
    }
  }
  return s;
}

// A random op of one array, its parameters drawn now (so tracing it is deterministic).
std::pair<std::string, Unary> unary(Fuzz& f, int64_t rank, bool traced = false) {
  const int64_t a = f.axis(rank);
  const int64_t b = f.axis(rank);
  switch (f.pick(0, 40)) {
    case 0:
      return {"sin", [](const Array& x) { return jnp::sin(x); }};
    case 1:
      return {"exp*2", [](const Array& x) { return jnp::exp(x) * 2; }};
    case 2:
      return {"sum", [a](const Array& x) { return jnp::sum(x * 2, a); }};
    case 3:
      return {"prod", [a](const Array& x) { return jnp::prod(x + 1, a); }};
    case 4:
      return {"max", [a](const Array& x) { return jnp::max(x, a); }};
    case 5:
      return {"min_all", [](const Array& x) { return jnp::min(x); }};
    case 6:
      return {"mean", [a](const Array& x) { return jnp::mean(x, a); }};
    case 7:
      return {"argmax", [a](const Array& x) { return jnp::argmax(x, a); }};
    case 8: {
      Shape s = f.shape(3);
      if (f.coin(0.3) && !s.empty()) s[size_t(f.pick(0, int64_t(s.size()) - 1))] = -1;
      return {"reshape" + shape_str(s), [s](const Array& x) { return jnp::reshape(x, s); }};
    }
    case 9: {
      std::vector<int64_t> perm;
      for (int64_t i = 0; i < rank; ++i) perm.push_back(i);
      if (f.coin(0.3)) perm.push_back(f.pick(-2, rank));
      std::shuffle(perm.begin(), perm.end(), std::mt19937(uint32_t(f.pick(0, 1000))));
      return {"transpose", [perm](const Array& x) { return jnp::transpose(x, perm); }};
    }
    case 10: {
      std::vector<int64_t> start, limit, strides;
      for (int64_t i = 0; i < rank + f.pick(-1, 1) && i < 6; ++i) {
        start.push_back(f.pick(-2, 4));
        limit.push_back(f.coin(0.1) ? f.dim() : f.pick(-1, 5));
        strides.push_back(f.coin(0.1) ? f.dim() : f.pick(1, 3));
      }
      return {"slice", [=](const Array& x) { return lax::slice(x, start, limit, strides); }};
    }
    case 11: {
      std::vector<lax::PadConfig> cfg;
      for (int64_t i = 0; i < rank + (f.coin(0.1) ? 1 : 0); ++i) {
        cfg.push_back({f.coin(0.2) ? f.dim() : f.pick(-3, 3), f.coin(0.2) ? f.dim() : f.pick(-3, 3),
                       f.coin(0.2) ? f.dim() : f.pick(0, 2)});
      }
      return {"pad", [cfg](const Array& x) {
                return lax::pad(x, jnp::array(0.0f).astype(x.dtype()), cfg);
              }};
    }
    case 12: {
      Shape reps = f.shape(3);
      return {"tile" + shape_str(reps), [reps](const Array& x) { return jnp::tile(x, reps); }};
    }
    case 13: {
      const int64_t n = f.coin(0.3) && !traced ? f.dim() : f.pick(-1, 3);
      const bool flat = f.coin(0.3);
      return {"repeat",
              [=](const Array& x) { return flat ? jnp::repeat(x, n) : jnp::repeat(x, n, a); }};
    }
    case 14: {
      Shape s = traced ? traced_shape(f.shape(4)) : f.shape(4);
      return {"broadcast_to" + shape_str(s),
              [s](const Array& x) { return jnp::broadcast_to(x, s); }};
    }
    case 15:
      return {"expand_dims", [a](const Array& x) { return jnp::expand_dims(x, a); }};
    case 16:
      return {"squeeze", [a](const Array& x) { return jnp::squeeze(x, a); }};
    case 17:
      return {"cumsum", [a](const Array& x) { return jnp::cumsum(x, a); }};
    case 18:
      return {"sort", [a](const Array& x) { return jnp::sort(x, a); }};
    case 19: {
      const DType t = f.dtype();
      return {"astype", [t](const Array& x) { return x.astype(t); }};
    }
    case 20:
      return {"concat", [a](const Array& x) { return jnp::concatenate({x, x}, a); }};
    case 21:
      return {"rev", [a, b](const Array& x) { return lax::rev(x, {a, b}); }};
    case 22: {
      std::vector<int64_t> sizes;
      for (int64_t i = 0; i < rank; ++i) sizes.push_back(f.coin(0.1) ? f.dim() : f.pick(0, 2));
      const int64_t at = f.pick(-3, 5);
      return {"dynamic_slice", [=](const Array& x) {
                std::vector<Array> starts(sizes.size(), jnp::array(int32_t(at)));
                return lax::dynamic_slice(x, starts, sizes);
              }};
    }
    case 23:
      return {"all", [a](const Array& x) { return jnp::all(x > 0, a); }};
    case 24:
      return {"swapaxes", [a, b](const Array& x) { return jnp::swapaxes(x, a, b); }};
    case 25:
      return {"index", [a](const Array& x) { return x[a]; }};
    case 26:
      return {"var", [a](const Array& x) { return jnp::var(x, a); }};
    // Indexing, nn, cumulative, padding, linear algebra, convolution and
    // pooling: out-of-range indices, odd shapes and dtypes must give results or errors.
    case 27:
      return {"take", [a](const Array& x) {
                return jnp::take(x, jnp::array(std::vector<int32_t>{-3, 0, 2, 7, 100}), a);
              }};
    case 28:
      return {"at.add", [](const Array& x) {
                return x.at(jnp::array(std::vector<int32_t>{-9, 0, 1, 1, 50})).add(1);
              }};
    case 29:
      return {"take_along_axis",
              [a](const Array& x) { return jnp::take_along_axis(x, jnp::argsort(x, a), a); }};
    case 30:
      return {"softmax", [a](const Array& x) { return nn::softmax(x, a); }};
    case 31:
      return {"log_softmax", [a](const Array& x) { return nn::log_softmax(x, a); }};
    case 32:
      return {"cumprod", [a](const Array& x) { return jnp::cumprod(x, a); }};
    case 33:
      return {"cummax", [a](const Array& x) { return lax::cummax(x, a); }};
    case 34: {
      const char* mode = f.pick(0, 1) ? "reflect" : "wrap";
      return {std::string("pad ") + mode,
              [mode](const Array& x) { return jnp::pad(x, int64_t{2}, mode); }};
    }
    case 35:
      return {"roll", [a](const Array& x) { return jnp::roll(x, 3, a); }};
    case 36:
      return {"linalg.inv", [](const Array& x) { return jnp::linalg::inv(x); }};
    case 37:
      return {"reduce_window max", [rank](const Array& x) {
                return lax::reduce_window(x, -INFINITY, lax::max,
                                          std::vector<int64_t>(size_t(rank), 2),
                                          std::vector<int64_t>(size_t(rank), 1), "VALID");
              }};
    case 38:
      return {"conv", [rank](const Array& x) {
                return lax::conv(
                    x, x, std::vector<int64_t>(size_t(std::max<int64_t>(rank - 2, 0)), 1), "SAME");
              }};
    case 39:
      return {"at.apply", [](const Array& x) {
                return x.at(jnp::array(std::vector<int32_t>{-9, 0, 1, 1, 50}))
                    .apply([](const Array& v) { return v * v; });
              }};
    case 40:
      return {"take_along_axis one_hot", [a](const Array& x) {
                return jnp::take_along_axis(x, jnp::argsort(x, a), a, "one_hot");
              }};
    default:
      return {"matmul", [](const Array& x) { return jnp::matmul(x, jnp::swapaxes(x, -1, -2)); }};
  }
}

// Control flow against the same computation unrolled in C++: a random cond, switch,
// fori_loop (static or traced bounds), while_loop, scan or map over a random shape and
// dtype, run eagerly and under jit, must give the unrolled values; a body that changes
// the carry's type must give a parax::Error. A mismatch throws std::logic_error, which
// the fuzz loop reports as a failure.
using Step = std::function<Array(const Array&, const Array&)>;  // (value, i or x) -> value

// A random step that keeps its first operand's shape and dtype.
std::pair<std::string, Step> cf_step(Fuzz& f, DType t, const Array& c) {
  const bool inexact = is_floating(t);
  switch (f.pick(0, inexact ? 5 : 3)) {
    case 0:
      return {"x+c", [c](const Array& x, const Array&) { return x + c; }};
    case 1:
      return {"max(x,c)-1", [c](const Array& x, const Array&) { return jnp::maximum(x, c) - 1; }};
    case 2:
      return {"x+i", [](const Array& x, const Array& i) { return x + i.astype(x.dtype()); }};
    case 3:
      return {"min(x*2,9)-c",
              [c](const Array& x, const Array&) { return jnp::minimum(x * 2, 9) - c; }};
    case 4:
      return {"tanh(x)*2+c", [c](const Array& x, const Array&) { return jnp::tanh(x) * 2 + c; }};
    default:
      return {"x*0.5+i",
              [](const Array& x, const Array& i) { return x * 0.5 + i.astype(x.dtype()); }};
  }
}

void expect_same(const std::string& what, const Array& got, const Array& want) {
  if (got.shape() != want.shape() || got.dtype() != want.dtype()) {
    throw std::logic_error(what + ": got " + std::string(dtype_name(got.dtype())) +
                           shape_str(got.shape()) + ", unrolled gives " +
                           std::string(dtype_name(want.dtype())) + shape_str(want.shape()));
  }
  const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
  const bool half = got.dtype() == DType::float16 || got.dtype() == DType::bfloat16;
  for (size_t k = 0; k < a.size(); ++k) {
    if (std::isnan(a[k]) && std::isnan(b[k])) continue;
    const double tol = is_floating(got.dtype()) ? (half ? 2e-2 : 1e-5) * (1 + std::abs(b[k])) : 0;
    if (!(std::abs(a[k] - b[k]) <= tol)) {
      throw std::logic_error(what + ": element " + std::to_string(k) + " is " +
                             std::to_string(a[k]) + ", unrolled gives " + std::to_string(b[k]));
    }
  }
}

// Runs `loop` eagerly and under jit on `args` and compares both with `unrolled`.
void check_loop(const std::string& what,
                const std::function<Array(const std::vector<Array>&)>& loop,
                const std::function<Array(const std::vector<Array>&)>& unrolled,
                const std::vector<Array>& args) {
  const Array want = unrolled(args);
  expect_same(what + " (eager)", loop(args), want);
  expect_same(what + " (jit)", jit(loop)(args), want);
}

std::pair<std::string, std::function<void()>> control_flow_case(Fuzz& f) {
  const DType t = f.one_of<DType>(
      {DType::float32, DType::float32, DType::int32, DType::float16, DType::bfloat16, DType::int8});
  const Array x = f.array(f.small_shape(2), t);
  const Array c = f.array(x.shape(), t);  // captured by the steps: a constant of the bodies
  auto [name_a, a] = cf_step(f, t, c);
  auto [name_b, b] = cf_step(f, t, c);
  const std::string of = " over " + std::string(dtype_name(t)) + shape_str(x.shape());
  const Array zero = jnp::array(int32_t(0));
  const int64_t which = f.pick(0, 7);
  if (f.coin(0.1)) {  // a body that changes the carry's type: JAX's TypeError
    const bool scalar = x.ndim() > 0 && x.shape()[0] > 0 && f.coin();
    return {"control flow with a bad carry" + of, [=] {
              auto bad = [scalar](const Array& v) {
                return scalar ? v[0]
                              : v.astype(v.dtype() == DType::int32 ? DType::float32 : DType::int32);
              };
              try {
                if (which % 2 == 0) {
                  (void)lax::fori_loop(
                      0, 2, [bad](const Array&, const Array& v) { return bad(v); }, x);
                } else {
                  (void)lax::scan(
                      [bad](const Array& v, const Array&) {
                        return std::pair{bad(v), v};
                      },
                      x, jnp::zeros({2}));
                }
              } catch (const TypeError&) {
                return;
              }
              throw std::logic_error("a carry that changes type gave no TypeError");
            }};
  }
  switch (which) {
    case 0: {  // cond on a traced predicate
      return {"cond " + name_a + "|" + name_b + of, [=] {
                auto loop = [a, b, zero](const std::vector<Array>& v) {
                  return lax::cond(
                      jnp::sum(v[0].astype(DType::float32)) > 0,
                      [a, zero](const Array& y) { return a(y, zero); },
                      [b, zero](const Array& y) { return b(y, zero); }, v[0]);
                };
                auto unrolled = [a, b, zero](const std::vector<Array>& v) {
                  const bool p = jnp::sum(v[0].astype(DType::float32)).item<float>() > 0;
                  return p ? a(v[0], zero) : b(v[0], zero);
                };
                check_loop("cond", loop, unrolled, {x});
              }};
    }
    case 1: {  // switch with 1 to 4 branches and an index possibly out of range
      const int64_t n = f.pick(1, 4);
      const int32_t index = int32_t(f.pick(-2, 5));
      std::vector<Step> steps{a, b};
      while (int64_t(steps.size()) < n) steps.push_back(cf_step(f, t, c).second);
      steps.resize(size_t(n));
      return {"switch(" + std::to_string(index) + ") of " + std::to_string(n) + of, [=] {
                std::vector<std::function<Array(const Array&)>> branches;
                for (const Step& s : steps) {
                  branches.push_back([s, zero](const Array& y) { return s(y, zero); });
                }
                auto loop = [branches](const std::vector<Array>& v) {
                  return lax::switch_(v[1], branches, v[0]);
                };
                auto unrolled = [branches, n](const std::vector<Array>& v) {
                  const int64_t i = std::clamp<int64_t>(v[1].item<int32_t>(), 0, n - 1);
                  return branches[size_t(i)](v[0]);
                };
                check_loop("switch", loop, unrolled, {x, jnp::array(index)});
              }};
    }
    case 2:
    case 3: {  // fori_loop with static (a scan) or traced (a while) bounds, maybe empty
      const int32_t lo = int32_t(f.pick(-2, 3)), hi = int32_t(f.pick(-2, 5));
      const bool traced = which == 3;
      return {std::string("fori_loop ") + (traced ? "traced " : "") + std::to_string(lo) + ".." +
                  std::to_string(hi) + " " + name_a + of,
              [=] {
                auto loop = [a, lo, hi, traced](const std::vector<Array>& v) {
                  auto body = [a](const Array& i, const Array& y) { return a(y, i); };
                  return traced ? lax::fori_loop(v[1], v[2], body, v[0])
                                : lax::fori_loop(lo, hi, body, v[0]);
                };
                auto unrolled = [a, lo, hi](const std::vector<Array>& v) {
                  Array y = v[0];
                  for (int32_t i = lo; i < hi; ++i) y = a(y, jnp::array(i));
                  return y;
                };
                check_loop("fori_loop", loop, unrolled, {x, jnp::array(lo), jnp::array(hi)});
              }};
    }
    case 4: {  // while_loop over a (counter, value) carry
      const int32_t n = int32_t(f.pick(0, 4));
      return {"while_loop x" + std::to_string(n) + " " + name_a + of, [=] {
                using Carry = std::pair<Array, Array>;
                auto loop = [a](const std::vector<Array>& v) {
                  return lax::while_loop([n = v[1]](const Carry& k) { return k.first < n; },
                                         [a](const Carry& k) {
                                           return Carry{k.first + 1, a(k.second, k.first)};
                                         },
                                         Carry{jnp::array(int32_t(0)), v[0]})
                      .second;
                };
                auto unrolled = [a](const std::vector<Array>& v) {
                  Array y = v[0];
                  for (int32_t i = 0; i < v[1].item<int32_t>(); ++i) y = a(y, jnp::array(i));
                  return y;
                };
                check_loop("while_loop", loop, unrolled, {x, jnp::array(n)});
              }};
    }
    case 5: {  // scan over xs, forward or reversed, unrolled or not, maybe empty
      const int64_t n = f.pick(0, 4);
      Shape s = x.shape();
      s.insert(s.begin(), n);
      const Array xs = f.array(s, t);
      const bool reverse = f.coin();
      const int64_t unroll = f.pick(1, 3);
      return {"scan x" + std::to_string(n) + (reverse ? " reversed " : " ") + name_a + "|" +
                  name_b + of,
              [=] {
                // Returns the carry and the ys, stacked: the pair flattened into one array.
                auto pack = [](const Array& carry, const Array& ys) {
                  return jnp::concatenate({jnp::reshape(carry, {-1}), jnp::reshape(ys, {-1})}, 0);
                };
                auto loop = [=](const std::vector<Array>& v) {
                  auto [carry, ys] = lax::scan(
                      [a, b](const Array& k, const Array& y) {
                        return std::pair{a(k, y), b(k, y)};
                      },
                      v[0], v[1], std::nullopt, reverse, unroll);
                  return pack(carry, ys);
                };
                auto unrolled = [=](const std::vector<Array>& v) {
                  Array k = v[0];
                  std::vector<Array> ys(static_cast<size_t>(n));
                  for (int64_t j = 0; j < n; ++j) {
                    const int64_t i = reverse ? n - 1 - j : j;
                    ys[size_t(i)] = b(k, v[1][i]);
                    k = a(k, v[1][i]);
                  }
                  return pack(k, n ? jnp::stack(ys) : jnp::zeros(s, t));
                };
                check_loop("scan", loop, unrolled, {x, xs});
              }};
    }
    case 6: {  // nested: a fori_loop whose body picks a step by cond, inside a scan
      const int64_t n = f.pick(0, 3);
      const int32_t trips = int32_t(f.pick(0, 3));
      Shape s = x.shape();
      s.insert(s.begin(), n);
      const Array xs = f.array(s, t);
      return {"scan of fori_loop of cond x" + std::to_string(n) + " " + name_a + "|" + name_b + of,
              [=] {
                auto inner = [a, b, trips](const Array& k, const Array& y) {
                  return lax::fori_loop(
                      0, trips,
                      [a, b, y](const Array& i, const Array& v) {
                        return lax::cond(
                            lax::rem(i, 2) == 0, [a, i](const Array& u) { return a(u, i); },
                            [b, y](const Array& u) { return b(u, y); }, v);
                      },
                      k);
                };
                auto loop = [inner](const std::vector<Array>& v) {
                  return lax::scan(
                             [inner](const Array& k, const Array& y) {
                               return std::pair{inner(k, y), k};
                             },
                             v[0], v[1])
                      .first;
                };
                auto unrolled = [a, b, n, trips](const std::vector<Array>& v) {
                  Array k = v[0];
                  for (int64_t j = 0; j < n; ++j) {
                    for (int32_t i = 0; i < trips; ++i) {
                      k = i % 2 == 0 ? a(k, jnp::array(i)) : b(k, v[1][j]);
                    }
                  }
                  return k;
                };
                check_loop("nested", loop, unrolled, {x, xs});
              }};
    }
    default: {  // map
      const int64_t n = f.pick(0, 4);
      Shape s = x.shape();
      s.insert(s.begin(), n);
      const Array xs = f.array(s, t);
      return {"map x" + std::to_string(n) + " " + name_a + of, [=] {
                auto loop = [a, zero](const std::vector<Array>& v) {
                  return lax::map([a, zero](const Array& y) { return a(y, zero); }, v[0]);
                };
                auto unrolled = [a, zero, n, s, t](const std::vector<Array>& v) {
                  std::vector<Array> ys;
                  for (int64_t i = 0; i < n; ++i) ys.push_back(a(v[0][i], zero));
                  return n ? jnp::stack(ys) : jnp::zeros(s, t);
                };
                check_loop("map", loop, unrolled, {xs});
              }};
    }
  }
}

// A random case: what it does, and the work itself.
std::pair<std::string, std::function<void()>> make_case(Fuzz& f) {
  switch (f.pick(0, 24)) {
    case 21:
    case 22:
      return control_flow_case(f);
    case 0: {  // creation with any shape
      const Shape s = f.shape(4);
      const DType t = f.dtype();
      const int64_t which = f.pick(0, 5);
      const int64_t d = f.axis(int64_t(s.size()));
      return {"create" + std::to_string(which) + shape_str(s), [=] {
                switch (which) {
                  case 0:
                    return (void)jnp::zeros(s, t);
                  case 1:
                    return (void)jnp::full(s, 2.5, t);
                  case 2:
                    return (void)lax::broadcasted_iota(t, s, d);
                  case 3:
                    return (void)jnp::eye(s.empty() ? 0 : s[0], s.size() > 1 ? s[1] : 1);
                  case 4:
                    return (void)lax::iota(t, s.empty() ? 1 : s[0]);
                  default:
                    return (void)jnp::linspace(0, 1, s.empty() ? 1 : s[0]);
                }
              }};
    }
    case 1:
    case 2:
    case 3: {  // an eager op
      const Array x = f.array();
      auto [name, op] = unary(f, x.ndim());
      return {"eager " + name + " of " + std::string(dtype_name(x.dtype())) + shape_str(x.shape()),
              [x, op] { (void)op(x).block_until_ready(); }};
    }
    case 4: {  // the same under jit
      const Array x = f.array();
      auto [name, op] = unary(f, x.ndim(), true);
      return {"jit " + name + " of " + shape_str(x.shape()),
              [x, op] { (void)jit(op)(x).block_until_ready(); }};
    }
    case 5: {  // grad of the op's sum
      const Array x = f.array(f.small_shape(), f.float_dtype());
      auto [name, op] = unary(f, x.ndim(), true);
      const bool jitted = f.coin();
      return {"grad " + name + " of " + shape_str(x.shape()), [=] {
                auto g = grad([op](const Array& v) { return jnp::sum(op(v).astype(v.dtype())); });
                (void)(jitted ? jit(g)(x) : g(x)).block_until_ready();
              }};
    }
    case 6: {  // vmap over a random axis
      const Array x = f.array();
      auto [name, op] = unary(f, std::max<int64_t>(0, x.ndim() - 1));
      const int in_axis = int(f.axis(x.ndim()));
      return {"vmap(" + std::to_string(in_axis) + ") " + name + " of " + shape_str(x.shape()), [=] {
                VmapOptions o;
                o.in_axes = in_axis;
                (void)vmap(op, o)(x).block_until_ready();
              }};
    }
    case 7:
    case 8: {  // device_put onto a random mesh and spec, then an op
      const Array x = f.array();
      const int64_t rank = x.ndim();
      auto [name, op] = unary(f, rank, true);
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      return {"device_put then " + name + " of " + shape_str(x.shape()), [=] {
                Fuzz g(seed);
                const Mesh m = g.mesh();
                const Array y = device_put(x, NamedSharding(m, g.spec(rank)));
                (void)op(y).block_until_ready();
                (void)jit(op)(y).block_until_ready();
              }};
    }
    case 9: {  // positional shardings reshaped at random
      const Shape s = f.shape(3);
      const Array x = f.array();
      return {"PositionalSharding.reshape" + shape_str(s), [=] {
                const PositionalSharding p = PositionalSharding(devices()).reshape(s);
                (void)device_put(x, p).block_until_ready();
              }};
    }
    case 10: {  // random numbers of any shape and dtype
      const Shape s = f.shape(3);
      const DType t = f.coin(0.7) ? f.float_dtype() : f.dtype();
      const int64_t which = f.pick(0, 4);
      return {"random" + std::to_string(which) + shape_str(s), [=] {
                const random::Key k = random::key(7);
                switch (which) {
                  case 0:
                    return (void)random::uniform(k, s, t);
                  case 1:
                    return (void)random::normal(k, s, t);
                  case 2:
                    return (void)random::bits(k, s);
                  case 3:
                    return (void)random::split(k, s);
                  default:
                    return (void)random::randint(k, s, 0, 10);
                }
              }};
    }
    case 11: {  // binary ops with broadcasting between two shapes
      const Array x = f.array();
      const Array y = f.coin(0.5) ? f.array(f.small_shape(), x.dtype()) : f.array();
      const int64_t which = f.pick(0, 3);
      return {"binary" + std::to_string(which) + shape_str(x.shape()) + shape_str(y.shape()), [=] {
                switch (which) {
                  case 0:
                    return (void)(x + y).block_until_ready();
                  case 1:
                    return (void)jnp::maximum(x, y).block_until_ready();
                  case 2:
                    return (void)jit([](Array p, Array q) { return p * q - 1; })(x, y);
                  default:
                    return (void)jnp::where(x > 0, x, y).block_until_ready();
                }
              }};
    }
    case 12: {  // grad of outputs that are not one scalar
      const Array x = f.array(f.small_shape(), DType::float32);
      const int64_t which = f.pick(0, 2);
      return {"grad of odd output " + std::to_string(which), [=] {
                if (which == 0) (void)grad([](Array) { return std::vector<Array>{}; })(x);
                if (which == 1) (void)grad([](Array v) { return v * 2; })(x);
                if (which == 2) (void)grad([](Array v) { return std::vector<Array>{v, v}; })(x);
              }};
    }
    case 13: {  // printing, and visualising shardings at any scale
      const Array x = f.array();
      const double scale = f.one_of<double>(
          {0.0, 0.3, 1.0, -1.0, 1e9, 1e300, std::numeric_limits<double>::quiet_NaN()});
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      return {"print " + shape_str(x.shape()), [=] {
                std::ostringstream os;
                os << x << x.sharding().to_string();
                Fuzz g(seed);
                const Array y = device_put(x, NamedSharding(g.mesh(), g.spec(x.ndim())));
                os << y;
                debug::VisualizeOptions o;
                o.use_color = false;
                o.scale = scale;
                debug::visualize_array_sharding(y, os, o);
                os << debug::sharding_svg(y, {.width = int(g.pick(-8, 2000))});
              }};
    }
    case 14: {  // shard_map with random specs, an op and a psum over a random axis
      const Array x = f.array();
      auto [name, op] = unary(f, x.ndim(), true);
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      const bool reduce = f.coin();
      return {"shard_map " + name + " of " + shape_str(x.shape()), [=] {
                Fuzz g(seed);
                const Mesh m = g.mesh();
                const std::string axis = g.one_of<std::string>({"a", "b", "z"});
                auto body = [=](Array v) {
                  Array r = op(v);
                  return reduce ? lax::psum(r, axis) : r;
                };
                (void)shard_map(body, m, g.spec(x.ndim()), g.spec(x.ndim()))(x).block_until_ready();
              }};
    }
    case 15: {  // pmap over a random axis
      const Array x = f.array();
      auto [name, op] = unary(f, std::max<int64_t>(0, x.ndim() - 1), true);
      const int in_axis = int(f.axis(x.ndim()));
      return {"pmap(" + std::to_string(in_axis) + ") " + name + " of " + shape_str(x.shape()), [=] {
                PmapOptions o;
                o.in_axes = in_axis;
                o.axis_name = "i";
                (void)pmap(op, o)(x).block_until_ready();
              }};
    }
    case 16: {  // a bare spec under a mesh context: device_put, a constraint in jit, lowering
      const Array x = f.array();
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      return {"use_mesh of " + shape_str(x.shape()), [=] {
                Fuzz g(seed);
                auto scope = sharding::use_mesh(g.mesh());
                const PartitionSpec p = g.spec(x.ndim()), q = g.spec(x.ndim());
                const Array y = device_put(x, p);
                auto f2 = jit([q](Array v) { return lax::with_sharding_constraint(v * 2, q); });
                (void)f2(y).block_until_ready();
                (void)f2.lower(ShapeDtypeStruct(x.shape(), x.dtype(), p)).compile().as_text();
                // The explicit spelling, and what the compiler says about either.
                auto f3 = jit([q](Array v) { return reshard(v + 1, q); });
                (void)f3(y).block_until_ready();
                (void)f3.lower(y).compile().explain().to_string();
                (void)f2.lower(y).compile().explain().to_string({.estimates = false});
              }};
    }
    case 17: {  // make_array_from_callback with blocks of the right or a wrong size
      const Shape s = f.coin(0.8) ? f.small_shape() : f.shape();
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      const int64_t skew = f.coin(0.8) ? 0 : f.pick(-2, 2);
      return {"make_array_from_callback" + shape_str(s), [=] {
                Fuzz g(seed);
                const NamedSharding n(g.mesh(), g.spec(int64_t(s.size())));
                (void)make_array_from_callback(s, n, [&](const Index& index) {
                  int64_t count = 1;
                  for (size_t d = 0; d < index.size(); ++d) {
                    const Slice& sl = index[d];
                    count *= (sl.stop ? *sl.stop : s[d]) - (sl.start ? *sl.start : 0);
                  }
                  // A block no test should allocate comes back short (parax's error).
                  if (count > (int64_t(1) << 20)) count = 1;
                  return std::vector<float>(size_t(std::max<int64_t>(0, count + skew)), 1.5f);
                }).block_until_ready();
              }};
    }
    case 18: {  // a grouped collective under pmap, with valid or broken groups
      const int64_t n = f.one_of<int64_t>({2, 4, 8});
      const Array x = f.array(Shape{n, f.pick(1, 3)}, DType::float32);
      std::vector<std::vector<int64_t>> groups;
      const int64_t size = f.one_of<int64_t>({1, 2, n, 3});
      for (int64_t i = 0; i < n; i += size) {
        std::vector<int64_t> grp;
        for (int64_t k = i; k < std::min(n, i + size); ++k) grp.push_back(f.coin(0.9) ? k : 0);
        groups.push_back(grp);
      }
      const int64_t which = f.pick(0, 3);
      return {"grouped collective " + std::to_string(which), [=] {
                PmapOptions o;
                o.axis_name = "i";
                (void)pmap(
                    [=](const Array& v) {
                      switch (which) {
                        case 0:
                          return lax::psum(v, "i", groups);
                        case 1:
                          return lax::pmax(v, "i", groups);
                        case 2:
                          return jnp::sum(lax::all_gather(v, "i", 0, false, groups), 0);
                        default:
                          return lax::pmean(v, "i", groups);
                      }
                    },
                    o)(x)
                    .block_until_ready();
              }};
    }
    case 19: {  // jvp with tangents of the primal's type, or of another
      const Array x = f.array();
      auto [name, op] = unary(f, x.ndim(), true);
      const Array t = f.coin(0.7) ? jnp::ones_like(x) : f.array();
      return {"jvp " + name + " of " + shape_str(x.shape()), [=] {
                auto [y, ty] = jvp(op, std::make_tuple(x), std::make_tuple(t));
                (void)ty.block_until_ready();
              }};
    }
    case 20: {  // device_put of a pytree with a pytree (or prefix) of shardings
      const Array x = f.array(), y = f.array();
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      const bool prefix = f.coin();
      return {"device_put tree", [=] {
                Fuzz g(seed);
                const Mesh m = g.mesh();
                const Sharding a = NamedSharding(m, g.spec(x.ndim()));
                const Sharding b = NamedSharding(m, g.spec(y.ndim()));
                const std::vector<Array> tree{x, y};
                const auto out = prefix
                                     ? device_put(tree, ShardingTree(a))
                                     : device_put(tree, ShardingTree(std::vector<Sharding>{a, b}));
                for (const Array& o : out) (void)o.block_until_ready();
              }};
    }
    case 24: {  // donation: the values of the undonated call; the argument deleted or kept
      const Array x = f.array();
      auto [name, op] = unary(f, x.ndim(), true);
      const int64_t how = f.pick(0, 3);  // 0-1: donate x; 2: x twice; 3: an argnum too many
      return {"donate" + std::to_string(how) + " " + name + " of " +
                  std::string(dtype_name(x.dtype())) + shape_str(x.shape()),
              [x, op, how] {
                const Array mine = jnp::copy(x);
                const Array want = jit(op)(mine);
                // An op of another result type leaves nothing to donate (JAX's warning).
                if (want.shape() != x.shape() || want.dtype() != x.dtype()) return;
                if (how == 2) {
                  auto twice = jit([op](const Array& a, const Array& b) { return op(a) + op(b); },
                                   JitOptions{.donate_argnums = {0}});
                  (void)twice(mine, mine);  // JAX's RuntimeError
                  throw std::logic_error("a buffer donated and passed again ran");
                }
                auto f = jit(op, JitOptions{.donate_argnums = how == 3 ? std::vector<int>{1}
                                                                       : std::vector<int>{0}});
                const Array got = f(mine);
                const std::vector<double> a = got.to_vector<double>(), b = want.to_vector<double>();
                for (size_t k = 0; k < a.size(); ++k) {  // the same program: the same bits
                  if (a[k] != b[k] && !(std::isnan(a[k]) && std::isnan(b[k]))) {
                    throw std::logic_error("donated: element " + std::to_string(k) + " is " +
                                           std::to_string(a[k]) + ", undonated gives " +
                                           std::to_string(b[k]));
                  }
                }
                if (!mine.is_deleted()) return;  // no output of its type and layout
                try {
                  (void)mine.to_vector<double>();
                } catch (const RuntimeError&) {
                  return;
                }
                throw std::logic_error("a donated array was read");
              }};
    }
    default: {  // meshes of any shape
      const uint64_t seed = uint64_t(f.pick(0, 1 << 30));
      return {"mesh", [seed] {
                Fuzz g(seed);
                const Mesh m = g.mesh();
                std::ostringstream os;
                os << m << m.repr();
                const Shape s = g.shape(3);
                const NamedSharding n(m, g.spec(int64_t(s.size())));
                (void)n.shard_shape(s);
                (void)n.devices_indices_map(s);
                const Array x = g.array();
                (void)device_put(x, NamedSharding(m, g.spec(x.ndim())));
              }};
    }
  }
}

// What the signal handler prints when a case crashes the process.
char g_current[512];

void on_crash(int sig) {
  const char head[] = "\nparax fuzz: crashed in case ";
  (void)!write(2, head, sizeof head - 1);
  (void)!write(2, g_current, strnlen(g_current, sizeof g_current));
  (void)!write(2, "\n", 1);
  std::signal(sig, SIG_DFL);
  std::raise(sig);
}

// A hang is a failure too: a watchdog thread aborts (printing the case) when one case
// runs longer than PARAX_FUZZ_CASE_SECONDS (default 30).
std::atomic<int64_t> g_case_started_ms{0};

int64_t now_ms() {
  return std::chrono::duration_cast<std::chrono::milliseconds>(
             std::chrono::steady_clock::now().time_since_epoch())
      .count();
}

void start_watchdog() {
  const int64_t limit_ms = int64_t(env_u64("PARAX_FUZZ_CASE_SECONDS", 30)) * 1000;
  std::thread([limit_ms] {
    while (true) {
      std::this_thread::sleep_for(std::chrono::milliseconds(200));
      const int64_t started = g_case_started_ms.load();
      if (started > 0 && now_ms() - started > limit_ms) {
        const char head[] = "\nparax fuzz: case timed out: ";
        (void)!write(2, head, sizeof head - 1);
        (void)!write(2, g_current, strnlen(g_current, sizeof g_current));
        (void)!write(2, "\n", 1);
        std::_Exit(3);
      }
    }
  }).detach();
}

int64_t g_errors = 0;  // cases that ended in a parax::Error (the rest gave a result)

// Runs one case; returns the failure text, or "" for a result or a parax::Error.
std::string run_case(uint64_t case_seed) {
  Fuzz f(case_seed);
  std::string what = "?";
  try {
    auto [name, work] = make_case(f);
    what = name;
    std::snprintf(g_current, sizeof g_current, "PARAX_FUZZ_CASE=%llu (%s)",
                  static_cast<unsigned long long>(case_seed), what.c_str());
    if (std::getenv("PARAX_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", g_current);
    g_case_started_ms = now_ms();
    work();
    g_case_started_ms = 0;
    return "";
  } catch (const Error& e) {
    g_case_started_ms = 0;
    ++g_errors;
    if (std::getenv("PARAX_FUZZ_VERBOSE")) std::fprintf(stderr, "  -> %s\n", e.what());
    return "";
  } catch (const std::exception& e) {
    g_case_started_ms = 0;
    return "PARAX_FUZZ_CASE=" + std::to_string(case_seed) + " (" + what + "): " + typeid(e).name() +
           ": " + e.what();
  } catch (...) {
    g_case_started_ms = 0;
    return "PARAX_FUZZ_CASE=" + std::to_string(case_seed) + " (" + what +
           "): a non-standard exception";
  }
}

TEST(Fuzz, PublicApiGivesAResultOrAParaxError) {
  for (int sig : {SIGSEGV, SIGABRT, SIGFPE, SIGBUS, SIGILL}) std::signal(sig, on_crash);
  start_watchdog();
  if (const uint64_t replay = env_u64("PARAX_FUZZ_CASE", 0)) {
    const std::string failure = run_case(replay);
    EXPECT_EQ(failure, "");
    return;
  }
  const uint64_t seed = env_u64("PARAX_FUZZ_SEED", kDefaultSeed);
  const double budget = double(env_u64("PARAX_FUZZ_SECONDS", 20));
  std::mt19937_64 master(seed);
  const auto start = std::chrono::steady_clock::now();
  int64_t cases = 0;
  int64_t failures = 0;
  while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() < budget) {
    const uint64_t case_seed = master();
    const std::string failure = run_case(case_seed);
    ++cases;
    if (!failure.empty()) {
      ++failures;
      ADD_FAILURE() << "seed " << seed << ", " << failure;
      if (failures >= 20) break;  // enough to act on
    }
  }
  std::printf(
      "parax fuzz: seed %llu, %lld cases in %.0f s (%lld results, %lld parax errors), "
      "%lld failures\n",
      static_cast<unsigned long long>(seed), static_cast<long long>(cases), budget,
      static_cast<long long>(cases - g_errors - failures), static_cast<long long>(g_errors),
      static_cast<long long>(failures));
  EXPECT_GT(cases, 0);
}

// Control flow alone, a fixed number of seeded cases (a few seconds): each checks its
// values against the unrolled computation, eager and under jit.
TEST(Fuzz, ControlFlowMatchesUnrolled) {
  std::mt19937_64 master(env_u64("PARAX_FUZZ_SEED", kDefaultSeed) + 14);
  const int64_t cases = int64_t(env_u64("PARAX_FUZZ_CONTROL_FLOW_CASES", 1000));
  for (int64_t i = 0; i < cases; ++i) {
    const uint64_t case_seed = master();
    Fuzz f(case_seed);
    auto [name, work] = control_flow_case(f);
    SCOPED_TRACE(name + ", case seed " + std::to_string(case_seed));
    if (std::getenv("PARAX_FUZZ_VERBOSE")) std::fprintf(stderr, "%s\n", name.c_str());
    try {
      work();
    } catch (const std::exception& e) {
      ADD_FAILURE() << e.what();
    }
  }
}

// Runs this binary again, its only test the first call `spec` ("name:seed"); returns the
// child's exit code, 128 + its signal, or -1 after killing it at `timeout_ms`.
int run_first_call_child(const std::string& spec, int64_t timeout_ms) {
  // Everything the child needs is made before fork: between fork and exec only
  // async-signal-safe calls are allowed (the parent has pool threads).
  std::vector<std::string> env_strings = {"PARAX_FUZZ_FIRST_CALL=" + spec};
  for (char** e = environ; *e != nullptr; ++e) {
    if (std::strncmp(*e, "PARAX_FUZZ_FIRST_CALL=", 22) != 0) env_strings.emplace_back(*e);
  }
  std::vector<char*> envp;
  for (std::string& e : env_strings) envp.push_back(e.data());
  envp.push_back(nullptr);
  std::string filter = "--gtest_filter=FuzzChild.FirstCallOfThisProcess";
  std::string self = "/proc/self/exe";
  char* argv[] = {self.data(), filter.data(), nullptr};
  const pid_t pid = fork();
  if (pid < 0) return -2;
  if (pid == 0) {
    const int null = open("/dev/null", O_WRONLY);
    if (null >= 0) dup2(null, 1);  // gtest's banner; the child's errors stay on stderr
    execve(argv[0], argv, envp.data());
    _exit(127);
  }
  const int64_t deadline = now_ms() + timeout_ms;
  int status = 0;
  while (waitpid(pid, &status, WNOHANG) == 0) {
    if (now_ms() > deadline) {
      kill(pid, SIGKILL);
      waitpid(pid, &status, 0);
      return -1;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(5));
  }
  if (WIFSIGNALED(status)) return 128 + WTERMSIG(status);
  return WIFEXITED(status) ? WEXITSTATUS(status) : -3;
}

TEST(Fuzz, FirstCallOfAFreshProcess) {
  std::mt19937_64 master(env_u64("PARAX_FUZZ_SEED", kDefaultSeed) + 27);
  const double budget = double(env_u64("PARAX_FUZZ_FIRST_CALL_SECONDS", 10));
  const int64_t timeout_ms = int64_t(env_u64("PARAX_FUZZ_CASE_SECONDS", 30)) * 1000;
  const auto& calls = testing::first_calls();
  const auto start = std::chrono::steady_clock::now();
  int64_t cases = 0;
  int64_t errors = 0;
  do {
    const testing::FirstCall& call = calls[size_t(master() % calls.size())];
    const std::string spec = call.name + ":" + std::to_string(master());
    const int code = run_first_call_child(spec, timeout_ms);
    ++cases;
    errors += code == testing::kParaxError;
    const bool ended_well = code == testing::kValue || code == testing::kParaxError;
    EXPECT_TRUE(ended_well && code == call.expected)
        << "PARAX_FUZZ_FIRST_CALL=" << spec << " ended with "
        << (code == -1 ? "a timeout" : "exit code " + std::to_string(code)) << ", expected "
        << int(call.expected) << " (0: a right value, 1: a parax::Error)";
  } while (std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count() <
           budget);
  std::printf("parax fuzz: %lld first calls in fresh processes (%lld parax errors)\n",
              static_cast<long long>(cases), static_cast<long long>(errors));
}

// A child of FirstCallOfAFreshProcess: the process's first parax call is the one named.
TEST(FuzzChild, FirstCallOfThisProcess) {
  const char* spec = std::getenv("PARAX_FUZZ_FIRST_CALL");
  if (spec == nullptr) GTEST_SKIP() << "runs as a child of Fuzz.FirstCallOfAFreshProcess";
  const std::string s = spec;
  const size_t colon = s.rfind(':');
  const testing::FirstCall& call = testing::first_call(s.substr(0, colon));
  std::exit(testing::run_first_call(call, std::strtoull(s.c_str() + colon + 1, nullptr, 10)));
}

}  // namespace
}  // namespace parax
