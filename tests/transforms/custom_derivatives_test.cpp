#include <gtest/gtest.h>

#include <cmath>

#include "parax/custom_derivatives.h"
#include "parax/grad.h"
#include "parax/numpy.h"

namespace px = parax;
namespace jnp = parax::numpy;
using px::Array;

TEST(CustomJvp, Smoke) {
  auto f = px::custom_jvp([](const Array& x) { return jnp::sin(x); },
                          [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
                            auto [x] = p;
                            auto [g] = t;
                            return std::pair{jnp::sin(x), 2 * jnp::cos(x) * g};
                          });
  Array x = jnp::asarray(3.0f);
  EXPECT_NEAR(f(x).item<float>(), std::sin(3.0f), 1e-6);
  EXPECT_NEAR(px::grad(f)(x).item<float>(), 2 * std::cos(3.0f), 1e-6);
}
