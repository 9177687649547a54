// The gradient legs of the primitive sweep, over the rows of prims/prim_table.cpp (float64
// unless a row keeps its dtypes):
//   jvp        each rule against central finite differences, with the tangent in each
//              differentiated operand alone and in all at once;
//   transpose  each rule by the dot-product test <ct, L(t)> == <L^T(ct), t>, for each set
//              of linear operands of the row, with typed placeholders and, where the row
//              says so, untyped ones;
//   vjp        reverse mode (linearize + transpose) against forward mode through the
//              public API, <c, J t> == <J^T c, t>: eagerly, staged under jit, and through a
//              jitted function (a pjit equation).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <memory>
#include <random>
#include <string>
#include <tuple>
#include <vector>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/grad.h"
#include "parax/jit.h"
#include "parax/numpy.h"
#include "prims/prim_table.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Prim;
using prim_table::Case;
using Arrays = std::vector<Array>;

using GradLegs = testing::WithX64;

std::vector<double> values(const Array& x) { return x.astype(DType::float64).to_vector<double>(); }

// Returns a random array of x's type: multiples of 2^-10 in [-1, 1], exact in float32 and
// float64, so that conversions between them are exact.
Array random_like(const Array& x, std::mt19937& rng) {
  std::uniform_int_distribution<int> u(-1024, 1024);
  std::vector<double> v(size_t(x.size()));
  for (double& e : v) e = u(rng) / 1024.0;
  return numpy::array(v, x.shape(), x.dtype());
}

// An inner product and the size of what it summed (sum of |a_k b_k|), for a tolerance
// relative to the terms rather than to a result that may cancel to near zero.
struct Dot {
  double value = 0;
  double scale = 0;
  void add(const Array& a, const Array& b) {
    const std::vector<double> u = values(a), v = values(b);
    ASSERT_EQ(u.size(), v.size());
    for (size_t k = 0; k < u.size(); ++k) {
      value += u[k] * v[k];
      scale += std::abs(u[k] * v[k]);
    }
  }
};

Arrays operands_of(const Case& c, std::mt19937& rng) {
  Arrays xs;
  for (size_t i = 0; i < c.operands.size(); ++i) xs.push_back(prim_table::draw_for_grad(c, i, rng));
  return xs;
}

// Returns x + a * t, computed on the host.
Array axpy(const Array& x, double a, const Array& t) {
  std::vector<double> v = values(x);
  const std::vector<double> w = values(t);
  for (size_t i = 0; i < v.size(); ++i) v[i] += a * w[i];
  return numpy::array(v, x.shape(), x.dtype());
}

// ---- jvp ------------------------------------------------------------------------------

void check_jvp(const Case& c, const Arrays& xs, const std::vector<bool>& perturbed,
               std::mt19937& rng) {
  const std::vector<Array> outs = core::bind(c.prim, xs, c.params);
  Arrays t(xs.size());
  for (size_t i = 0; i < xs.size(); ++i) {
    if (perturbed[i]) t[i] = random_like(xs[i], rng);
  }
  ASSERT_NE(core::rules(c.prim).jvp, nullptr);
  const Arrays got = core::rules(c.prim).jvp(xs, t, outs, c.params);
  ASSERT_EQ(got.size(), outs.size());
  constexpr double kEps = 1e-6;
  Arrays plus(xs), minus(xs);
  for (size_t i = 0; i < t.size(); ++i) {
    if (!t[i].valid()) continue;
    plus[i] = axpy(xs[i], kEps, t[i]);
    minus[i] = axpy(xs[i], -kEps, t[i]);
  }
  const Arrays hi = core::bind(c.prim, plus, c.params);
  const Arrays lo = core::bind(c.prim, minus, c.params);
  for (size_t o = 0; o < outs.size(); ++o) {
    // Piecewise constant (or stop_gradient): a symbolic zero, whatever differences say.
    if (c.zero_tangent || !is_floating(outs[o].dtype())) {
      EXPECT_FALSE(got[o].valid()) << "result " << o << ": a symbolic zero expected";
      continue;
    }
    const std::vector<double> h = values(hi[o]), l = values(lo[o]);
    std::vector<double> g(h.size(), 0.0);
    if (got[o].valid()) {
      EXPECT_EQ(got[o].shape(), outs[o].shape());
      EXPECT_EQ(got[o].dtype(), outs[o].dtype());
      g = values(got[o]);
    }
    ASSERT_EQ(g.size(), h.size());
    double scale = 1;
    for (size_t k = 0; k < h.size(); ++k) scale = std::max(scale, std::abs(h[k] - l[k]) / kEps);
    for (size_t k = 0; k < h.size(); ++k) {
      EXPECT_NEAR(g[k], (h[k] - l[k]) / (2 * kEps), 1e-6 * scale)
          << "result " << o << "[" << k << "]";
    }
  }
}

TEST_F(GradLegs, JvpMatchesFiniteDifferences) {
  int checked = 0;
  for (const Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kJvp)) continue;
    SCOPED_TRACE(c.name);
    std::mt19937 rng(7);
    const Arrays xs = operands_of(c, rng);
    const std::vector<bool> diff = prim_table::diff_of(c);
    const size_t n = xs.size();
    // The tangent in operand `only` alone, then in all of them.
    for (size_t only = 0; only <= n; ++only) {
      if (only < n && !diff[only]) continue;
      SCOPED_TRACE(only == n ? std::string("tangent in all")
                             : "tangent in " + std::to_string(only));
      std::vector<bool> perturbed(n);
      for (size_t i = 0; i < n; ++i) perturbed[i] = diff[i] && (only == n || i == only);
      check_jvp(c, xs, perturbed, rng);
      ++checked;
    }
  }
  EXPECT_GT(checked, 200);
}

// ---- transpose ----------------------------------------------------------------------

// blank: pass the linear operands as symbolic (invalid) placeholders instead of typed ones.
void check_transpose(const Case& c, const Arrays& xs, const std::vector<bool>& linear, bool blank,
                     std::mt19937& rng) {
  const size_t n = xs.size();
  Arrays t(n), in(xs), placeholders(xs);
  std::unique_ptr<bool[]> flags(new bool[n]);
  for (size_t i = 0; i < n; ++i) {
    flags[i] = linear[i];
    if (!linear[i] && c.fixed == prim_table::Fixed::zero && is_floating(xs[i].dtype())) {
      in[i] = numpy::zeros(xs[i].shape(), xs[i].dtype());
    }
    if (!linear[i]) continue;
    t[i] = random_like(xs[i], rng);
    in[i] = t[i];
    if (blank) placeholders[i] = Array();
  }
  const Arrays y = core::bind(c.prim, in, c.params);
  Arrays ct(y.size());
  double lhs = 0;
  for (size_t o = c.first_linear_out; o < y.size(); ++o) {
    ct[o] = random_like(y[o], rng);
    Dot d;
    d.add(ct[o], y[o]);
    lhs += d.value;
  }
  ASSERT_NE(core::rules(c.prim).transpose, nullptr);
  const Arrays back = core::rules(c.prim).transpose(
      ct, placeholders, std::span<const bool>(flags.get(), n), c.params);
  ASSERT_EQ(back.size(), n);
  double rhs = 0;
  for (size_t i = 0; i < n; ++i) {
    if (!linear[i]) {
      EXPECT_FALSE(back[i].valid()) << "operand " << i;
      continue;
    }
    ASSERT_TRUE(back[i].valid()) << "operand " << i;
    EXPECT_EQ(back[i].shape(), t[i].shape()) << "operand " << i;
    EXPECT_EQ(back[i].dtype(), t[i].dtype()) << "operand " << i;
    Dot d;
    d.add(back[i], t[i]);
    rhs += d.value;
  }
  EXPECT_NEAR(lhs, rhs, 1e-9 * std::max(1.0, std::abs(lhs)));
}

TEST_F(GradLegs, TransposesPassTheDotProductTest) {
  int checked = 0;
  for (const Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kTranspose)) continue;
    std::mt19937 rng(11);
    const Arrays xs = operands_of(c, rng);
    std::vector<std::vector<bool>> sets = c.linear;
    if (sets.empty()) sets.push_back(prim_table::diff_of(c));
    for (const std::vector<bool>& linear : sets) {
      for (bool blank : {false, true}) {
        if (blank && !c.blank) continue;
        SCOPED_TRACE(c.name + " linear in " + ::testing::PrintToString(linear) +
                     (blank ? " (no placeholders)" : ""));
        check_transpose(c, xs, linear, blank, rng);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 80);
}

// ---- vjp against jvp ------------------------------------------------------------------

enum class Mode { eager, staged, through_pjit };

std::string mode_name(Mode m) {
  return m == Mode::eager ? "eager" : m == Mode::staged ? "under jit" : "of a jitted f";
}

using Fn = std::function<Arrays(const Arrays&)>;
using Fn2 = std::function<Arrays(const Arrays&, const Arrays&)>;

// Runs jvp and vjp of f (the primitive as a function of its differentiated operands) the
// way `mode` says; each jitted function is traced and compiled once per row.
class Derivatives {
 public:
  Derivatives(const Case& c, Arrays operands, Mode mode)
      : c_(c), operands_(std::move(operands)), mode_(mode) {
    const std::vector<bool> diff = prim_table::diff_of(c);
    for (size_t i = 0; i < operands_.size(); ++i) {
      if (diff[i] && is_floating(operands_[i].dtype())) which_.push_back(i);
    }
  }
  Derivatives(const Derivatives&) = delete;  // the functions below hold `this`
  Derivatives& operator=(const Derivatives&) = delete;

  const std::vector<size_t>& which() const { return which_; }

  // Returns the output tangents at (xs, ts).
  Arrays jvp(const Arrays& xs, const Arrays& ts) const {
    switch (mode_) {
      case Mode::eager:
        return forward(f_, xs, ts);
      case Mode::staged:
        return staged_jvp_(xs, ts);
      case Mode::through_pjit:
        return forward(jitted_f_, xs, ts);
    }
    return {};
  }

  // Returns the operands' cotangents at xs for the output cotangents cs.
  Arrays vjp(const Arrays& xs, const Arrays& cs) const {
    switch (mode_) {
      case Mode::eager:
        return backward(f_, xs, cs);
      case Mode::staged:
        return staged_vjp_(xs, cs);
      case Mode::through_pjit:
        return backward(jitted_f_, xs, cs);
    }
    return {};
  }

 private:
  template <class F>
  static Arrays forward(const F& f, const Arrays& xs, const Arrays& ts) {
    return parax::jvp(f, std::make_tuple(xs), std::make_tuple(ts)).second;
  }
  template <class F>
  static Arrays backward(const F& f, const Arrays& xs, const Arrays& cs) {
    return std::get<0>(parax::vjp(f, xs).second(cs));
  }

  const Case& c_;
  Arrays operands_;
  Mode mode_;
  std::vector<size_t> which_;
  // The primitive applied to xs in the differentiated positions and to the row's operands
  // elsewhere (closed over: constants under tracing).
  Fn f_ = [this](const Arrays& xs) {
    Arrays in = operands_;
    for (size_t k = 0; k < which_.size(); ++k) in[which_[k]] = xs[k];
    return core::bind(c_.prim, in, c_.params);
  };
  Jitted<Fn> jitted_f_ = jit(f_);
  Jitted<Fn2> staged_jvp_ =
      jit(Fn2([this](const Arrays& xs, const Arrays& ts) { return forward(f_, xs, ts); }));
  Jitted<Fn2> staged_vjp_ =
      jit(Fn2([this](const Arrays& xs, const Arrays& cs) { return backward(f_, xs, cs); }));
};

void check_vjp(const Case& c, Mode mode) {
  SCOPED_TRACE(c.name + ", " + mode_name(mode));
  std::mt19937 rng(314159);
  const Arrays operands = operands_of(c, rng);
  const Derivatives d(c, operands, mode);
  ASSERT_FALSE(d.which().empty()) << "a row with no floating operand to differentiate";
  Arrays xs, ts;
  for (size_t i : d.which()) {
    xs.push_back(operands[i]);
    ts.push_back(random_like(operands[i], rng));
  }
  const Arrays outs = core::bind(c.prim, operands, c.params);
  Arrays cs;
  for (const Array& y : outs) {
    cs.push_back(is_floating(y.dtype()) ? random_like(y, rng) : numpy::zeros(y.shape(), y.dtype()));
  }
  const Arrays back = d.vjp(xs, cs);
  ASSERT_EQ(back.size(), xs.size());
  for (size_t k = 0; k < xs.size(); ++k) {
    EXPECT_EQ(back[k].shape(), xs[k].shape()) << "operand " << d.which()[k];
    EXPECT_EQ(back[k].dtype(), xs[k].dtype()) << "operand " << d.which()[k];
  }
  // t in operand `only` alone (others zero), then in all of them.
  const size_t n = xs.size();
  for (size_t only = 0; only <= n; ++only) {
    if (only == n && n == 1) break;  // "all" is the single operand again
    SCOPED_TRACE(only == n ? std::string("tangent in all operands")
                           : "tangent in operand " + std::to_string(d.which()[only]));
    Arrays t(ts);
    Dot rhs;
    for (size_t k = 0; k < n; ++k) {
      if (only != n && k != only) {
        t[k] = numpy::zeros(xs[k].shape(), xs[k].dtype());
        continue;
      }
      rhs.add(back[k], t[k]);
    }
    const Arrays jt = d.jvp(xs, t);
    ASSERT_EQ(jt.size(), outs.size());
    Dot lhs;
    for (size_t o = 0; o < outs.size(); ++o) {
      ASSERT_EQ(jt[o].shape(), outs[o].shape()) << "result " << o;
      ASSERT_EQ(jt[o].dtype(), outs[o].dtype()) << "result " << o;
      lhs.add(cs[o], jt[o]);
    }
    const double tol = 1e-10 * std::max(lhs.scale, rhs.scale);
    EXPECT_LE(std::abs(lhs.value - rhs.value), tol)
        << "<c, J t> = " << lhs.value << ", <J^T c, t> = " << rhs.value;
  }
}

void check_vjp_rows(Mode mode) {
  int checked = 0;
  for (const Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kVjp)) continue;
    check_vjp(c, mode);
    ++checked;
  }
  EXPECT_GT(checked, 100);
}

TEST_F(GradLegs, VjpMatchesJvpEagerly) { check_vjp_rows(Mode::eager); }

TEST_F(GradLegs, VjpMatchesJvpUnderJit) { check_vjp_rows(Mode::staged); }

TEST_F(GradLegs, VjpMatchesJvpOfAJittedFunction) { check_vjp_rows(Mode::through_pjit); }

}  // namespace
}  // namespace parax
