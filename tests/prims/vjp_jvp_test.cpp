// The third leg of the gradient sweep, after jvp against finite differences and transpose
// by the dot-product test: reverse mode against forward mode, through the public API, at
// every row of the other two legs. For the row's operands x, a random tangent t and a
// random cotangent c, <c, J t> from parax::jvp must equal <J^T c, t> from parax::vjp
// (linearize, then transpose), with t in each differentiated operand alone and in all at
// once; eagerly, staged under jit, and through a jitted function (a pjit equation).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <random>
#include <set>
#include <string>
#include <string_view>
#include <tuple>
#include <vector>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/grad.h"
#include "parax/jit.h"
#include "parax/numpy.h"
#include "prims/grad_cases.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Prim;
using sweep::GradCase;

// float64 rows: jax_enable_x64 on for each test.
using VjpJvp = testing::WithX64;

std::mt19937& rng() {
  static std::mt19937 gen(314159);
  return gen;
}

Array random_like(const Array& x) {
  std::normal_distribution<double> normal;
  std::vector<double> v(size_t(x.size()));
  for (double& e : v) e = normal(rng());
  return numpy::array(v, x.shape(), x.dtype());
}

std::vector<double> values(const Array& x) { return x.astype(DType::float64).to_vector<double>(); }

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

enum class Mode { eager, staged, through_pjit };

std::string mode_name(Mode m) {
  return m == Mode::eager ? "eager" : m == Mode::staged ? "under jit" : "of a jitted f";
}

using Arrays = std::vector<Array>;
using Fn = std::function<Arrays(const Arrays&)>;
using Fn2 = std::function<Arrays(const Arrays&, const Arrays&)>;

// Runs jvp and vjp of f (the primitive as a function of its differentiated operands) the
// way `mode` says; each jitted function is traced and compiled once per row.
class Derivatives {
 public:
  Derivatives(const GradCase& c, Mode mode) : c_(c), mode_(mode) {
    for (size_t i = 0; i < c.operands.size(); ++i) {
      if (c.diff[i] && is_floating(c.operands[i].dtype())) which_.push_back(i);
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

  const GradCase& c_;
  Mode mode_;
  std::vector<size_t> which_;
  // The primitive applied to xs in the differentiated positions and to the row's operands
  // elsewhere (closed over: constants under tracing).
  Fn f_ = [this](const Arrays& xs) {
    Arrays in = c_.operands;
    for (size_t k = 0; k < which_.size(); ++k) in[which_[k]] = xs[k];
    return core::bind(c_.prim, in, c_.params);
  };
  Jitted<Fn> jitted_f_ = jit(f_);
  Jitted<Fn2> staged_jvp_ =
      jit(Fn2([this](const Arrays& xs, const Arrays& ts) { return forward(f_, xs, ts); }));
  Jitted<Fn2> staged_vjp_ =
      jit(Fn2([this](const Arrays& xs, const Arrays& cs) { return backward(f_, xs, cs); }));
};

void check(const GradCase& c, Mode mode) {
  SCOPED_TRACE(c.name + ", " + mode_name(mode));
  const Derivatives d(c, mode);
  ASSERT_FALSE(d.which().empty()) << "a row with no floating operand to differentiate";
  Arrays xs, ts;
  for (size_t i : d.which()) {
    xs.push_back(c.operands[i]);
    ts.push_back(random_like(c.operands[i]));
  }
  const Arrays outs = core::bind(c.prim, c.operands, c.params);
  Arrays cs;
  for (const Array& y : outs) {
    cs.push_back(is_floating(y.dtype()) ? random_like(y) : numpy::zeros(y.shape(), y.dtype()));
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

std::vector<GradCase> all_cases() {
  std::vector<GradCase> cases = sweep::elementwise_grad_cases();
  for (GradCase& c : sweep::structural_grad_cases()) cases.push_back(std::move(c));
  return cases;
}

TEST_F(VjpJvp, Eager) {
  for (const GradCase& c : all_cases()) check(c, Mode::eager);
}

TEST_F(VjpJvp, UnderJit) {
  for (const GradCase& c : all_cases()) check(c, Mode::staged);
}

// pjit differentiates by its own rules (the jvp, split and transpose of its program); this
// is pjit's row.
TEST_F(VjpJvp, OfAJittedFunction) {
  for (const GradCase& c : all_cases()) check(c, Mode::through_pjit);
}

// Primitives with no row, and why, by printed name (so that the rows of primitives still
// being added can be listed before they land).
const std::map<std::string_view, std::string_view>& skipped() {
  static constexpr std::string_view kIntegers =
      "integer and boolean operands only: nothing to differentiate (their zero tangents are "
      "checked in ElementwiseGrad.PiecewiseConstantAndNonFloatResultsHaveZeroTangents)";
  static constexpr std::string_view kBooleans =
      "boolean operands only (zero tangent: StructuralGrad.ZeroTangentPrimitives)";
  static constexpr std::string_view kNamedAxis =
      "a named-axis collective: binds only inside vmap or shard_map, where its axis exists";
  static const std::map<std::string_view, std::string_view> reasons = {
      {"not", kIntegers},
      {"and", kIntegers},
      {"or", kIntegers},
      {"xor", kIntegers},
      {"shift_left", kIntegers},
      {"shift_right_logical", kIntegers},
      {"shift_right_arithmetic", kIntegers},
      {"reduce_and", kBooleans},
      {"reduce_or", kBooleans},
      {"iota", "no operands"},
      {"random_bits", "a uint32 key in, integer bits out: nothing to differentiate"},
      {"fusion", "compiler-internal: the fusion pass makes it from differentiated programs"},
      {"shard-slice", "compiler-internal: only in the per-device programs reshard makes"},
      {"psum", kNamedAxis},
      {"pmax", kNamedAxis},
      {"pmin", kNamedAxis},
      {"all_gather", kNamedAxis},
      {"reduce_scatter", kNamedAxis},
      {"ppermute", kNamedAxis},
      {"all_to_all", kNamedAxis},
      {"axis_index", kNamedAxis},
      {"shard_map", "holds a per-device program over mesh axes: not one device's primitive"},
      {"manual-enter", "compiler-internal: marks where an inlined shard_map begins"},
      {"manual-exit", "compiler-internal: marks where an inlined shard_map ends"},
  };
  return reasons;
}

// The sweep is complete against the primitive list: every primitive has rows here, or a
// reason above. The collectives (trait kCollective) are made only by the partitioner's
// reshard, after differentiation, in per-device programs.
TEST_F(VjpJvp, EveryPrimitiveHasRowsOrAReason) {
  std::set<Prim> covered;
  for (const GradCase& c : all_cases()) covered.insert(c.prim);
  covered.insert(Prim::pjit);  // every row in OfAJittedFunction
  for (int i = 0; i < core::kNumPrims; ++i) {
    const Prim p = Prim(i);
    if (core::has_trait(p, core::kCollective)) continue;
    const bool skip = skipped().count(core::prim_name(p)) == 1;
    EXPECT_TRUE(covered.count(p) == 1 || skip)
        << core::prim_name(p) << ": add rows to elementwise_grad_test.cpp or "
        << "structural_grad_test.cpp, or a reason to skipped()";
    EXPECT_FALSE(covered.count(p) == 1 && skip) << core::prim_name(p) << " has rows now";
  }
}

}  // namespace
}  // namespace parax
