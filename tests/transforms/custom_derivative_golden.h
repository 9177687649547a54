// What custom_derivatives_test.cpp and jacobian_test.cpp share: the golden records of
// tools/make_custom_derivative_goldens.py and the check of one case's leaves (dtype, weak
// type, shape, values) or error against them.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <string>
#include <tuple>
#include <vector>

#include <parax/parax.h>

#include "support/golden.h"

namespace parax::custom_derivative_golden {

namespace jnp = numpy;
using Leaves = std::vector<Array>;
using Case = std::function<Leaves()>;

inline const std::map<std::string, std::string>& goldens() {
  static const auto* g =
      new std::map<std::string, std::string>(testing::read_golden("custom_derivative_cases.txt"));
  return *g;
}

inline void expect_leaf(const std::string& name, const Array& x, const std::string& record) {
  std::vector<std::string> parts = testing::split_fields(record, '|');
  ASSERT_EQ(parts.size(), 4u) << name;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  EXPECT_EQ(x.weak_type() ? "w" : "s", parts[1]) << name;
  std::string shape;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    shape += (d ? "," : "") + std::to_string(x.shape()[d]);
  }
  EXPECT_EQ(shape, parts[2]) << name;
  std::vector<std::string> want = testing::split_fields(parts[3], ',');
  std::vector<double> got = x.to_vector<double>();
  ASSERT_EQ(got.size(), parts[3].empty() ? 0 : want.size()) << name;
  for (size_t k = 0; k < got.size(); ++k) {
    const double expected = std::stod(want[k]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got[k])) << name << "[" << k << "]";
    } else {
      EXPECT_NEAR(got[k], expected, 2e-5 * std::abs(expected) + 2e-6) << name << "[" << k << "]";
    }
  }
}

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
    expect_leaf(key, out[k], g.at(key));
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
