// grad, value_and_grad, jvp and vjp over pytrees, composed with jit in every order, and
// gradients of sharded programs (the tutorial's MLP, data and tensor parallel) equal to
// single-device gradients.
#include <gtest/gtest.h>

#include <cmath>

#include "parax/parax.h"
#include "support/mlp.h"

namespace parax {
namespace {

namespace jnp = numpy;

void expect_near(const Array& got, const Array& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.to_vector<float>();
  auto w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

Array xs() { return jnp::array({0.5f, 1.0f, -2.0f, 3.0f}); }

TEST(Grad, OfASumOfSinesIsTheCosines) {
  auto f = [](const Array& v) { return jnp::sum(jnp::sin(v)); };
  expect_near(grad(f)(xs()), jnp::cos(xs()));
  auto [value, g] = value_and_grad(f)(xs());
  expect_near(value, jnp::sum(jnp::sin(xs())));
  expect_near(g, jnp::cos(xs()));
}

TEST(Grad, ComposesWithJitInEveryOrder) {
  auto f = [](const Array& v) { return jnp::sum(jnp::tanh(v) * v); };
  Array want = grad(f)(xs());
  expect_near(jit(grad(f))(xs()), want);
  expect_near(grad(jit(f))(xs()), want);
  // d/dx sin(x) = cos(x), twice: -sin(x).
  auto s = [](const Array& v) { return jnp::sin(v); };
  auto ds = grad([&](const Array& v) { return s(v); });
  Array x = jnp::array(0.7f);
  EXPECT_NEAR(grad(ds)(x).item<float>(), -std::sin(0.7f), 1e-6f);
  EXPECT_NEAR(jit(grad(ds))(x).item<float>(), -std::sin(0.7f), 1e-6f);
}

TEST(Grad, ArgnumsAuxAndPytrees) {
  auto f = [](const std::pair<Array, Array>& p, const Array& x) {
    return jnp::sum(p.first * x + p.second);
  };
  std::pair<Array, Array> p{jnp::array({1.0f, 2.0f}), jnp::array({3.0f, 4.0f})};
  Array x = jnp::array({5.0f, 6.0f});
  auto gp = grad(f)(p, x);
  expect_near(gp.first, x);
  expect_near(gp.second, jnp::ones({2}));
  auto [gp2, gx] = grad(f, argnums<0, 1>)(p, x);
  expect_near(gx, p.first);
  auto with_aux = [](const Array& v) { return std::make_pair(jnp::sum(v * v), v * 2.0f); };
  auto [value_aux, g] = value_and_grad(with_aux, argnums<0>, has_aux)(xs());
  expect_near(value_aux.second, xs() * 2.0f);
  expect_near(g, xs() * 2.0f);
}

TEST(Grad, JvpVjpAndStopGradient) {
  auto f = [](const Array& v) { return jnp::exp(v) * 2.0f; };
  auto [y, t] = jvp(f, std::make_tuple(xs()), std::make_tuple(jnp::ones({4})));
  expect_near(y, jnp::exp(xs()) * 2.0f);
  expect_near(t, jnp::exp(xs()) * 2.0f);
  auto [out, pullback] = vjp(f, xs());
  auto [ct] = pullback(jnp::ones({4}));
  expect_near(ct, jnp::exp(xs()) * 2.0f);
  auto g = grad([](const Array& v) { return jnp::sum(v * stop_gradient(v)); })(xs());
  expect_near(g, xs());
}

TEST(Grad, ErrorsSayWhatIsWrong) {
  try {
    grad([](const Array& v) { return v * 2.0f; })(xs());
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Gradient only defined for scalar-output functions. Output had shape: (4,).");
  }
}

// The tutorial's network, small.
using Params = test_support::MlpParams;
constexpr auto loss = test_support::mlp_loss;
constexpr auto init = test_support::mlp_init;

TEST(Grad, ShardedMlpGradientsEqualSingleDeviceOnes) {
  const std::vector<int64_t> sizes{16, 32, 32, 32, 4};
  Params params = init(sizes);
  std::pair<Array, Array> batch{jnp::cos(jnp::arange(64 * 16, DType::float32).reshape({64, 16})),
                                jnp::sin(jnp::arange(64 * 4, DType::float32).reshape({64, 4}))};
  auto gradfun = jit(grad(loss));
  Params want = gradfun(params, batch);

  // 8-way data parallel: the batch sharded, parameters replicated.
  auto mesh8 = make_mesh({8}, {"batch"});
  auto dp = gradfun(device_put(params, NamedSharding(mesh8, P())),
                    device_put(batch, NamedSharding(mesh8, P("batch"))));
  for (size_t l = 0; l < want.size(); ++l) {
    expect_near(dp[l].first, want[l].first, 1e-4f);
    expect_near(dp[l].second, want[l].second, 1e-4f);
  }
  auto text = gradfun
                  .lower(device_put(params, NamedSharding(mesh8, P())),
                         device_put(batch, NamedSharding(mesh8, P("batch"))))
                  .compile()
                  .as_text();
  EXPECT_NE(text.find("all-reduce"), std::string::npos) << text;

  // 4-way data x 2-way tensor parallel, with the tutorial's parameter shardings.
  auto mesh = make_mesh({4, 2}, {"batch", "model"});
  const Params tp = test_support::mlp_tensor_parallel(params, mesh);
  auto tb = device_put(batch, NamedSharding(mesh, P("batch", None)));
  Params got = gradfun(tp, tb);
  for (size_t l = 0; l < want.size(); ++l) {
    expect_near(got[l].first, want[l].first, 1e-4f);
    expect_near(got[l].second, want[l].second, 1e-4f);
  }
  // One SGD step keeps the parameters' shardings (as the tutorial shows for W2, W3).
  Array W2 = tp[1].first - got[1].first * 1e-5f;
  EXPECT_TRUE(W2.sharding().is_equivalent_to(tp[1].first.sharding(), 2)) << W2.sharding();
  Array W3 = tp[2].first - got[2].first * 1e-5f;
  EXPECT_TRUE(W3.sharding().is_equivalent_to(tp[2].first.sharding(), 2)) << W3.sharding();
}

}  // namespace
}  // namespace parax
