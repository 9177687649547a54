// Shared by the parax_nn_tests files: the inputs of tools/make_nn_goldens.py, and the
// comparison of computed cases with its records in tests/golden/nn_cases.txt (dtype, weak
// type and shape exactly, values within a tolerance: JAX's kernels are XLA's, parax's
// SLEEF's; errors by kind and text).
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <limits>
#include <sstream>
#include <string>
#include <vector>

#include "core/program_trace.h"
#include "parax/parax.h"
#include "support/golden.h"
#include "support/golden_record.h"

namespace parax::nn_testing {

namespace jnp = parax::numpy;

inline constexpr float kNan = std::numeric_limits<float>::quiet_NaN();
inline constexpr float kInf = std::numeric_limits<float>::infinity();

// The inputs, in the order of the golden script.
struct Inputs {
  Array X = jnp::array({{-2.5f, -1.0f, 0.0f, 0.5f, 3.0f}, {1.5f, -0.25f, 2.0f, -3.0f, 0.0f}});
  Array XH = X.astype(DType::float16);
  Array XB = X.astype(DType::bfloat16);
  Array W = jnp::array({{0.5f, -1.0f, 2.0f, 1.5f, -0.5f}, {1.0f, 0.25f, -2.0f, 0.75f, 3.0f}});
  Array R6 = jnp::array({-1.0f, 0.0f, 3.0f, 6.0f, 7.5f, 5.5f});
  Array V = jnp::array({0.1f, 0.5f, -0.7f, 0.9f, -0.95f});
  Array G = jnp::array({1.0f, 1.5f, 2.0f, 10.0f, 1e20f});
  Array BIG = jnp::array({-3.0f, -1e-3f, 0.0f, 2.5f, 1e20f, -1e25f});
  Array NANS =
      jnp::array({{1.0f, kNan, 3.0f, kNan}, {kNan, kNan, kNan, kNan}, {2.0f, -1.0f, kNan, 5.0f}});
  Array INFS = jnp::array(
      {{-kInf, -kInf, -kInf}, {0.0f, -kInf, 1.0f}, {kInf, 1.0f, 2.0f}, {-kInf, kInf, 0.5f}});
  Array I = jnp::array({{3, 1, 2}, {0, -4, 5}});
  Array LABELS = jnp::array({0, 2, 1, 3, -1});
  Array M = jnp::arange(12, DType::float32).reshape({3, 4});
  Array T3 = jnp::arange(24, DType::float32).reshape({2, 3, 4});
  Array P = jnp::array(
      {{1.5f, 0.5f, -2.0f, 0.0f}, {-1.0f, 2.0f, 0.25f, -0.5f}, {0.0f, 3.0f, 1.0f, -1.5f}});
  Array TIES =
      jnp::array({{1.0f, 3.0f, 3.0f, 2.0f, 5.0f, 5.0f}, {0.0f, 0.0f, -1.0f, 4.0f, 4.0f, 1.0f}});
  Array ZEROS = jnp::array({{2.0f, 0.0f, 3.0f, -1.0f}, {0.0f, 0.0f, 1.5f, 2.0f}});
  Array SORTED = jnp::array({-1.0f, 0.0f, 0.0f, 2.0f, 3.5f, kNan});
  Array Q = jnp::array({{0.0f, 2.0f, -5.0f}, {kNan, 3.0f, 4.0f}});
  Array A1 = jnp::array({1.0f, 2.0f, 3.0f});
  Array B1 = jnp::array({4.0f, 5.0f});
  Array IM = jnp::arange(12, DType::int32).reshape({3, 4});
  Array W4 = lax::slice(W, {0, 0}, {2, 4});
  Array P2 = lax::slice(P, {0, 0}, {2, 4});
  Array SPECIAL = jnp::array({0.0f, 1e-8f, kInf, -kInf, kNan, -2.0f});
  Array X4 = jnp::array({5.5f, 1.3f, -4.2f, 0.9f});
  Array M4 = jnp::array({true, false, true, true});
  Array MASK5 = jnp::array({true, false, true, true, false});
  Array L5 = jnp::array({1.0f, -2.0f, 3.5f, 0.5f, -1.0f});

  std::vector<Array*> all() {
    return {&X,  &XH,     &XB, &W,  &R6,      &V,    &G,     &BIG,    &NANS, &INFS,
            &I,  &LABELS, &M,  &T3, &P,       &TIES, &ZEROS, &SORTED, &Q,    &A1,
            &B1, &IM,     &W4, &P2, &SPECIAL, &X4,   &M4,    &MASK5,  &L5};
  }
};

using Outputs = std::vector<Array>;
struct Case {
  std::string name;
  std::function<Outputs()> fn;
};

#define NN_CASE(name, ...)                                                \
  ::parax::nn_testing::Case {                                             \
    name, [=]() -> ::parax::nn_testing::Outputs { return {__VA_ARGS__}; } \
  }
#define NN_CASES(name, ...)                                             \
  ::parax::nn_testing::Case {                                           \
    name, [=]() -> ::parax::nn_testing::Outputs { return __VA_ARGS__; } \
  }

// Floats within 2e-5 (halves: their precision) plus a small absolute slack: JAX's kernels
// are XLA's, parax's SLEEF's.
inline constexpr testing::RecordTolerance kTolerance{
    .rtol = 2e-5, .atol = 1e-6, .float16_rtol = 2e-3, .bfloat16_rtol = 1e-2};

inline const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("nn_cases.txt"));
  return *records;
}

// Runs every case: a case that JAX rejects must raise JAX's error; otherwise `check(name,
// k, out, record)` compares its k-th result with its record. Returns how many cases
// matched a record. `context` is appended to failures (" when traced").
template <class Check>
int run_cases(const std::vector<Case>& cases, const char* context, bool require_all, Check check) {
  const auto& g = goldens();
  int checked = 0;
  for (const Case& c : cases) {
    SCOPED_TRACE(c.name);
    std::string error;
    Outputs outs;
    try {
      outs = c.fn();
    } catch (const Error& e) {
      error = testing::error_record(e);
    }
    auto err = g.find(c.name);
    if (err != g.end()) {
      EXPECT_EQ(error, err->second);
      ++checked;
      continue;
    }
    if (!error.empty()) {
      ADD_FAILURE() << c.name << " threw " << error << context;
      continue;
    }
    if (require_all) {
      EXPECT_TRUE(g.count(c.name + "#0")) << "no golden for " << c.name;
    }
    for (size_t k = 0; k < outs.size(); ++k) {
      const std::string name = c.name + "#" + std::to_string(k);
      auto it = g.find(name);
      if (it == g.end()) {
        if (require_all) ADD_FAILURE() << c.name << " has more results than JAX's " << k;
        break;
      }
      check(name, outs[k], it->second);
    }
    if (require_all) {
      EXPECT_FALSE(g.count(c.name + "#" + std::to_string(outs.size()))) << c.name;
    }
    ++checked;
  }
  return checked;
}

// Runs every case and compares it with its golden records; returns how many matched a record.
inline int check_cases(const std::vector<Case>& cases) {
  return run_cases(cases, "", true,
                   [](const std::string& name, const Array& out, const std::string& record) {
                     testing::expect_record(name, out, record, kTolerance);
                   });
}

// Runs every case on traced inputs (each input an argument of one program being traced):
// every result must have JAX's dtype, weak type and shape without a value being read, and
// errors must not depend on tracing. Returns how many matched a record.
template <class MakeCases>
int check_traced_types(MakeCases make_cases) {
  Inputs in;
  core::ProgramTrace trace;
  for (Array* x : in.all()) *x = trace.new_arg(core::aval_of(*x));
  const std::vector<Case> cases = make_cases(in);
  core::TraceScope scope(trace);
  return run_cases(cases, " when traced", false,
                   [](const std::string& name, const Array& out, const std::string& record) {
                     std::vector<std::string> parts = testing::split_fields(record, '|');
                     const core::Aval& a = core::aval_of(out);
                     EXPECT_EQ(std::string(dtype_name(a.dtype)) + "|" + (a.weak_type ? "w" : "s") +
                                   "|" + testing::shape_field(a.shape),
                               parts[0] + "|" + parts[1] + "|" + parts[2])
                         << name;
                   });
}

// Returns sum(f(x) * w), the scalar whose gradient the golden script takes.
template <class F>
auto weighted_sum(F f, Array w) {
  return [f, w](const Array& x) { return jnp::sum(f(x) * w); };
}

// The cases of nn_test.cpp and numpy/functions_test.cpp.
std::vector<Case> nn_cases(const Inputs& in);
std::vector<Case> numpy_cases(const Inputs& in);

}  // namespace parax::nn_testing
