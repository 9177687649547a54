// What custom_derivatives_test.cpp and jacobian_test.cpp share: the golden records of
// tools/make_custom_derivative_goldens.py and the check of one case's leaves (dtype, weak
// type, shape, values) or error against them.
#pragma once

#include <gtest/gtest.h>

#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <parax/parax.h>

#include "support/golden.h"
#include "support/golden_record.h"

namespace parax::custom_derivative_golden {

namespace jnp = numpy;
using Leaves = std::vector<Array>;
using Case = std::function<Leaves()>;

inline const std::map<std::string, std::string>& goldens() {
  static const auto* g =
      new std::map<std::string, std::string>(testing::read_golden("custom_derivative_cases.txt"));
  return *g;
}

// Every dtype's floats within 2e-5 plus 2e-6.
inline constexpr testing::RecordTolerance kTolerance{
    .rtol = 2e-5, .atol = 2e-6, .float16_rtol = 2e-5, .bfloat16_rtol = 2e-5};

// Runs `fn` and compares with the golden records of `name`.
inline void check(const std::string& name, const Case& fn) {
  SCOPED_TRACE(name);
  const auto& g = goldens();
  Leaves out;
  std::string error;
  try {
    out = fn();
  } catch (const Error& e) {
    error = testing::error_record(e);
  }
  if (auto it = g.find(name); it != g.end()) {
    EXPECT_EQ(error, it->second);
    return;
  }
  ASSERT_TRUE(error.empty()) << error;
  ASSERT_TRUE(g.count(name + "#n")) << "no golden for " << name;
  ASSERT_EQ(std::to_string(out.size()), g.at(name + "#n"));
  for (size_t k = 0; k < out.size(); ++k) {
    const std::string key = name + "[" + std::to_string(k) + "]";
    testing::expect_record(key, out[k], g.at(key), kTolerance);
  }
}

// The case names the golden file holds under `prefix`.
inline std::set<std::string> golden_cases(const std::vector<std::string>& prefixes) {
  std::set<std::string> out;
  for (const auto& [key, text] : goldens()) {
    for (const std::string& prefix : prefixes) {
      if (key.rfind(prefix, 0) != 0) continue;
      out.insert(key.substr(0, std::min(key.find('#'), key.find('['))));
    }
  }
  return out;
}

template <class M>
std::set<std::string> names_of(const M& cases) {
  std::set<std::string> out;
  for (const auto& [name, fn] : cases) out.insert(name);
  return out;
}

template <class T>
Leaves L(const T& tree) {
  return tree::leaves(tree);
}

inline Array f32(float v) { return jnp::full({}, v, DType::float32); }
inline Array vec(std::vector<float> v) { return jnp::array(v); }

}  // namespace parax::custom_derivative_golden
