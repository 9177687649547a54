// Transforms of a jitted function stay compiled calls, as in JAX: pjit's own jvp,
// partial-eval, transpose and batching rules call transformed programs, so eager
// grad(jit(f)) runs one executable forward and one backward (checked through the
// executable caches' counters), and jvp or vmap of jit(f) is one pjit equation.
#include <gtest/gtest.h>

#include <cmath>

#include "parax/parax.h"
#include "support/mlp.h"

namespace parax {
namespace {

namespace jnp = numpy;

using Params = test_support::MlpParams;
using Batch = test_support::MlpBatch;

void expect_near(const Array& got, const Array& want, float tol = 1e-5f) {
  ASSERT_EQ(got.shape(), want.shape());
  auto g = got.to_vector<float>();
  auto w = want.to_vector<float>();
  for (size_t i = 0; i < g.size(); ++i) EXPECT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << i;
}

void expect_near(const Params& got, const Params& want, float tol = 1e-5f) {
  ASSERT_EQ(got.size(), want.size());
  for (size_t l = 0; l < want.size(); ++l) {
    expect_near(got[l].first, want[l].first, tol);
    expect_near(got[l].second, want[l].second, tol);
  }
}

// The benchmark's MLP, smaller.
constexpr auto loss = test_support::mlp_loss;
Params init_params() { return test_support::mlp_init({16, 32, 32, 32, 4}); }

Batch init_batch() {
  return {jnp::cos(jnp::arange(64 * 16, DType::float32).reshape({64, 16})),
          jnp::sin(jnp::arange(64 * 4, DType::float32).reshape({64, 4}))};
}

// The counters of the executables of pjit programs and of eager one-equation programs.
struct Counts {
  debug::CacheInfo programs = debug::cache_info("jit_compile");
  debug::CacheInfo eager = debug::cache_info("eager");
};

TEST(GradOfJit, MlpIsOneCompiledCallForwardAndOneBackward) {
  const Params params = init_params();
  const Batch batch = init_batch();
  auto loss_jit = jit(loss);
  auto grad_of_jit = grad(loss_jit);
  const Params first = grad_of_jit(params, batch);  // compiles the forward and the backward

  const Counts before;
  const Params got = grad_of_jit(params, batch);
  const Counts after;
  EXPECT_EQ(after.programs.hits - before.programs.hits, 2);
  EXPECT_EQ(after.programs.misses - before.programs.misses, 0);
  EXPECT_EQ(after.eager.misses - before.eager.misses, 0);

  expect_near(got, first, 0);
  expect_near(got, jit(grad(loss))(params, batch));
  expect_near(got, grad(loss)(params, batch));
}

// The derived programs live as long as the jitted program: once a jit object is gone,
// the next transformation of a call drops them, and with them their executables.
TEST(GradOfJit, DerivedProgramsGoWithTheJitObject) {
  {
    auto f = jit(loss);
    grad(f)(init_params(), init_batch());
    EXPECT_GE(debug::cache_info("jit_compile").size, 2);  // its forward and backward
  }
  // This call's misses drop what dead jit objects (f, and earlier tests') left: only its
  // own forward and backward executables remain.
  grad(jit([](const Array& v) { return jnp::sum(jnp::sin(v)); }))(jnp::ones({4}));
  EXPECT_EQ(debug::cache_info("jit_compile").size, 2);
}

TEST(GradOfJit, ValueAndGradAndVjpOfJitAgreeWithoutJit) {
  const Params params = init_params();
  const Batch batch = init_batch();
  auto [value, g] = value_and_grad(jit(loss))(params, batch);
  auto [want_value, want] = value_and_grad(loss)(params, batch);
  expect_near(value, want_value);
  expect_near(g, want);
  // A function of two jitted calls, one inside the other.
  auto inner = jit([](const Array& x) { return jnp::tanh(x) * x; });
  auto outer = jit([&](const Array& x) { return jnp::sum(jnp::sin(inner(x)) * inner(x * 2.0f)); });
  auto plain = [](const Array& x) {
    auto h = [](const Array& y) { return jnp::tanh(y) * y; };
    return jnp::sum(jnp::sin(h(x)) * h(x * 2.0f));
  };
  Array x = jnp::array({0.5f, 1.0f, -2.0f, 3.0f});
  expect_near(grad(outer)(x), grad(plain)(x));
  expect_near(jit(grad(outer))(x), grad(plain)(x));
  expect_near(grad(grad([&](const Array& s) { return outer(x * s); }))(jnp::array(0.7f)),
              grad(grad([&](const Array& s) { return plain(x * s); }))(jnp::array(0.7f)));
}

TEST(GradOfJit, VmapOfJitIsOneCompiledCall) {
  auto f = jit([](const Array& x) { return jnp::sin(x) * 2.0f; });
  auto batched = vmap(f);
  Array xs = jnp::arange(12, DType::float32).reshape({3, 4});
  Array first = batched(xs);
  const Counts before;
  Array got = batched(xs);
  const Counts after;
  EXPECT_EQ(after.programs.hits - before.programs.hits, 1);
  EXPECT_EQ(after.programs.misses - before.programs.misses, 0);
  EXPECT_EQ(after.eager.misses - before.eager.misses, 0);
  expect_near(got, jnp::sin(xs) * 2.0f);
}

// Counts the equations of a printed program's outermost `let ... in` block: the lines
// indented by four spaces (nested programs' lines are indented further).
int top_level_equations(const std::string& text) {
  int eqns = 0;
  for (size_t i = text.find('\n'); i != std::string::npos; i = text.find('\n', i + 1)) {
    if (text.compare(i + 1, 4, "    ") == 0 && text.size() > i + 5 && text[i + 5] != ' ') ++eqns;
  }
  return eqns;
}

TEST(GradOfJit, JvpAndVmapOfJitAreOnePjitEquation) {
  auto f = jit([](const Array& x) { return jnp::sin(x) * x; });
  Array x = jnp::array({0.5f, 1.0f, -2.0f});
  const std::string v = make_jaxpr(vmap(f))(jnp::ones({2, 3})).to_string();
  EXPECT_EQ(top_level_equations(v), 1) << v;
  EXPECT_NE(v.find("pjit["), std::string::npos) << v;
  auto jvp_of_f = [&](const Array& p, const Array& t) {
    return jvp(f, std::make_tuple(p), std::make_tuple(t));
  };
  const std::string j = make_jaxpr(jvp_of_f)(x, x).to_string();
  EXPECT_EQ(top_level_equations(j), 1) << j;
  EXPECT_NE(j.find("pjit["), std::string::npos) << j;
  // Staged, grad(jit(loss)) is the call of the primal part, then of the transposed linear
  // part; the batch, held constant, gets no cotangent.
  const std::string g = make_jaxpr(grad(jit(loss)))(init_params(), init_batch()).to_string();
  EXPECT_EQ(top_level_equations(g), 2) << g;
  // The same values as without jit.
  auto [out, tout] = jvp(f, std::make_tuple(x), std::make_tuple(jnp::ones({3})));
  expect_near(out, jnp::sin(x) * x);
  expect_near(tout, jnp::cos(x) * x + jnp::sin(x));
}

TEST(GradOfJit, ShardedInputsGiveShardedGradients) {
  const Params params = init_params();
  const Batch batch = init_batch();
  auto grad_of_jit = grad(jit(loss));
  auto jit_of_grad = jit(grad(loss));
  const Params want = jit_of_grad(params, batch);

  auto mesh8 = make_mesh({8}, {"batch"});
  const Params dp_params = device_put(params, NamedSharding(mesh8, P()));
  const Batch dp_batch = device_put(batch, NamedSharding(mesh8, P("batch")));
  expect_near(grad_of_jit(dp_params, dp_batch), want, 1e-4f);

  auto mesh = make_mesh({4, 2}, {"batch", "model"});
  const Params tp = test_support::mlp_tensor_parallel(params, mesh);
  const Batch tb = device_put(batch, NamedSharding(mesh, P("batch", None)));
  const Params got = grad_of_jit(tp, tb);
  const Params ref = jit_of_grad(tp, tb);
  expect_near(got, want, 1e-4f);
  for (size_t l = 0; l < got.size(); ++l) {
    EXPECT_TRUE(got[l].first.sharding().is_equivalent_to(ref[l].first.sharding(), 2))
        << l << ": " << got[l].first.sharding() << " vs " << ref[l].first.sharding();
    EXPECT_TRUE(got[l].second.sharding().is_equivalent_to(ref[l].second.sharding(), 2))
        << l << ": " << got[l].second.sharding() << " vs " << ref[l].second.sharding();
  }
  // W2 and W3 keep their shardings through an SGD step, as the tutorial shows.
  EXPECT_TRUE(got[1].first.sharding().is_equivalent_to(tp[1].first.sharding(), 2))
      << got[1].first.sharding();
  EXPECT_TRUE(got[2].first.sharding().is_equivalent_to(tp[2].first.sharding(), 2))
      << got[2].first.sharding();
}

}  // namespace
}  // namespace parax
