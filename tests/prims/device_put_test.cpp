// device_put as a primitive under the transforms: its gradient moves the cotangent back to
// the argument's devices (onto another mesh, under jit too), and jvp and vmap pass through.
#include <gtest/gtest.h>

#include <tuple>
#include <vector>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

TEST(JaxParityDevicePut, GradThroughDevicePutOntoAnotherMesh) {
  const std::vector<Device> all = devices();
  Mesh a = Mesh(std::vector<Device>(all.begin(), all.begin() + 4), "a");
  Mesh b = Mesh(std::vector<Device>(all.begin() + 4, all.end()), "b");
  Array x = device_put(jnp::arange(8.0f), NamedSharding(a, P("a")));
  auto f = [&](const Array& v) {
    Array moved = device_put(v, NamedSharding(b, P("b")));
    return jnp::sum(moved * moved);
  };
  Array g = grad(f)(x);
  std::vector<float> expected;
  for (int i = 0; i < 8; ++i) expected.push_back(2.0f * float(i));
  EXPECT_EQ(g.to_vector<float>(), expected);
  // The cotangent went back to where x lives, as JAX's transpose of device_put does.
  EXPECT_EQ(g.sharding(), Sharding(NamedSharding(a, P("a"))));
  auto [value, dx] = value_and_grad(f)(x);
  EXPECT_EQ(value.item<float>(), 140.0f);
}

TEST(JaxParityDevicePut, JvpAndVmapThroughDevicePut) {
  const std::vector<Device> all = devices();
  Mesh b = Mesh(std::vector<Device>(all.begin() + 4, all.end()), "b");
  Array x = device_put(jnp::arange(8.0f), devices()[0]);
  auto f = [&](const Array& v) { return device_put(v, NamedSharding(b, P("b"))) * 3.0f; };
  auto [y, t] = jvp(f, std::make_tuple(x), std::make_tuple(jnp::ones({8})));
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(8, 3.0f));
  EXPECT_EQ(t.sharding(), Sharding(NamedSharding(b, P("b"))));
  Array batch = jnp::arange(32.0f).reshape({4, 8});
  Array v =
      vmap([&](const Array& row) { return device_put(row, NamedSharding(b, P("b"))); })(batch);
  EXPECT_EQ(v.to_vector<float>(), batch.to_vector<float>());
}

TEST(JaxParityDevicePut, GradThroughDevicePutUnderJit) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(16.0f), NamedSharding(mesh, P("x")));
  auto f = [&](const Array& v) {
    return jnp::sum(jnp::sin(device_put(v, NamedSharding(mesh, P()))));
  };
  Array g = jit(grad(f))(x);
  Array expected = jnp::cos(jnp::arange(16.0f));
  EXPECT_LT(jnp::max(jnp::abs(g - expected)).item<float>(), 1e-6f);
  // The tangent's device_put (which carries its primal along) compiles too.
  auto tangent = jit([&](const Array& v) {
    return jvp([&](const Array& w) { return device_put(w, NamedSharding(mesh, P())) * 2.0f; },
               std::make_tuple(v), std::make_tuple(jnp::ones({16})))
        .second;
  });
  Array t = tangent(x);
  EXPECT_EQ(t.to_vector<float>(), std::vector<float>(16, 2.0f));
  EXPECT_EQ(t.sharding(), Sharding(NamedSharding(mesh, P())));
  // vmap of grad: the source layout of a batched value is not known; values still right.
  Array rows = jnp::arange(32.0f).reshape({2, 16});
  Array gv = vmap(grad(f))(rows);
  EXPECT_LT(jnp::max(jnp::abs(gv - jnp::cos(rows))).item<float>(), 1e-6f);
}

}  // namespace
}  // namespace parax
