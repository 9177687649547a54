// The comparison of a computed array with a golden `dtype|weak|shape|values` record (what
// tools/*.py write for one array; support/golden.h reads the files). Shared by every test
// that checks arrays against JAX's records, each with its own tolerances.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <string>
#include <vector>

#include <parax/array.h>
#include <parax/dtype.h>

#include "support/golden.h"

namespace parax::testing {

// How far a float may sit from JAX's value: |got - want| <= rtol * |want| + atol, with rtol
// by dtype (halves carry fewer digits, and JAX's kernels are XLA's where parax's are its
// own).
struct RecordTolerance {
  double rtol = 2e-5;
  double atol = 1e-6;
  double float16_rtol = 2e-3;
  double bfloat16_rtol = 1e-2;
};

// A shape as the records write it: dimensions joined by ',' ("" for a scalar).
inline std::string shape_field(const Shape& shape) {
  std::string out;
  for (size_t d = 0; d < shape.size(); ++d) out += (d ? "," : "") + std::to_string(shape[d]);
  return out;
}

// Expects x to match `record`: dtype, weak type and shape exactly; integers, booleans, NaN and
// infinities exactly; other floats within `tol`. `name` labels failures.
inline void expect_record(const std::string& name, const Array& x, const std::string& record,
                          const RecordTolerance& tol) {
  const std::vector<std::string> parts = split_fields(record, '|');
  ASSERT_EQ(parts.size(), 4u) << name << ": " << record;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  EXPECT_EQ(x.weak_type() ? "w" : "s", parts[1]) << name;
  ASSERT_EQ(shape_field(x.shape()), parts[2]) << name;
  const std::vector<std::string> want = split_fields(parts[3], ',');
  const std::vector<double> got = x.to_vector<double>();
  ASSERT_EQ(got.size(), parts[3].empty() ? 0 : want.size()) << name;
  const double rtol = x.dtype() == DType::bfloat16  ? tol.bfloat16_rtol
                      : x.dtype() == DType::float16 ? tol.float16_rtol
                                                    : tol.rtol;
  for (size_t k = 0; k < got.size(); ++k) {
    const double expected = std::stod(want[k]);
    if (std::isnan(expected)) {
      EXPECT_TRUE(std::isnan(got[k])) << name << "[" << k << "] = " << got[k];
    } else if (std::isinf(expected) || !is_floating(x.dtype())) {
      EXPECT_EQ(got[k], expected) << name << "[" << k << "]";
    } else {
      EXPECT_NEAR(got[k], expected, rtol * std::abs(expected) + tol.atol)
          << name << "[" << k << "]";
    }
  }
}

}  // namespace parax::testing
