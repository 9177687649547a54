// lax.gather and the lax scatters against JAX's values, errors, gradients and shardings.
#include <gtest/gtest.h>

#include "parax/parax.h"

namespace px = parax;
namespace lax = parax::lax;

namespace {

TEST(Gather, Rows) {
  auto x = px::numpy::arange(12.0f).reshape({4, 3});
  auto idx = px::numpy::array(std::vector<int32_t>{2, 0, 3}).reshape({3, 1});
  auto y = lax::gather(x, idx, {{1}, {0}, {0}}, {1, 3});
  EXPECT_EQ(y.shape(), (px::Shape{3, 3}));
}

}  // namespace
