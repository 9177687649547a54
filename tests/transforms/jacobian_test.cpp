#include <gtest/gtest.h>

#include "parax/grad.h"
#include "parax/numpy.h"

namespace px = parax;
namespace jnp = parax::numpy;
using px::Array;

TEST(Jacobian, Smoke) {
  auto f = [](const Array& x) { return jnp::sin(x); };
  Array x = jnp::arange(3.0f);
  Array j = px::jacfwd(f)(x);
  EXPECT_EQ(j.shape(), (px::Shape{3, 3}));
  Array r = px::jacrev(f)(x);
  EXPECT_EQ(r.shape(), (px::Shape{3, 3}));
}
