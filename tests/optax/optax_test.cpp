// parax::optax against optax 0.2.8 (tests/golden/optax_cases.txt, tools/make_optax_goldens.py):
// the same parameters and gradients, 10 steps, every parameter after every step within 1e-5
// relative; eagerly, with a whole step under jit, and with the state following shardings.
#include <gtest/gtest.h>
#include <parax/parax.h>

#include <cmath>
#include <sstream>

#include "support/golden.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace optax = parax::optax;
namespace nn = parax::nn;
using px::Array;

namespace {

const std::map<std::string, std::string>& goldens() {
  static const auto g = px::testing::read_golden("optax_cases.txt");
  return g;
}

std::vector<float> values(const std::string& key) {
  std::vector<float> out;
  std::stringstream ss(goldens().at(key));
  std::string item;
  while (std::getline(ss, item, ',')) out.push_back(std::stof(item));
  return out;
}

nn::StateDict initial_params() {
  nn::StateDict p;
  p["w"] = jnp::array(values("inputs#w"), px::Shape{3, 4});
  p["b"] = jnp::array(values("inputs#b"), px::Shape{4});
  return p;
}

nn::StateDict grads_at(int t) {
  nn::StateDict g;
  g["w"] = jnp::array(values("inputs#gw" + std::to_string(t)), px::Shape{3, 4});
  g["b"] = jnp::array(values("inputs#gb" + std::to_string(t)), px::Shape{4});
  return g;
}

optax::GradientTransformation make(const std::string& name) {
  if (name == "sgd") return optax::sgd(0.1);
  if (name == "sgd_momentum") return optax::sgd(0.1, 0.9);
  if (name == "sgd_nesterov") return optax::sgd(0.1, 0.9, true);
  if (name == "adam") return optax::adam(1e-2);
  if (name == "adam_eps_root") return optax::adam(1e-2, 0.8, 0.99, 1e-6, 1e-8);
  if (name == "adam_nesterov") return optax::adam(1e-2, 0.9, 0.999, 1e-8, 0.0, true);
  if (name == "adamw") return optax::adamw(1e-2, 0.9, 0.999, 1e-8, 0.0, 0.1);
  if (name == "clip_sgd") return optax::chain(optax::clip_by_global_norm(1.0), optax::sgd(0.1));
  if (name == "sgd_linear") return optax::sgd(optax::linear_schedule(0.1, 0.01, 5, 2));
  if (name == "adam_cosine") return optax::adam(optax::cosine_decay_schedule(1e-2, 8, 0.1));
  if (name == "schedule_constant") {
    return optax::chain(optax::scale_by_schedule(optax::constant_schedule(-0.5)));
  }
  if (name == "chain_clip_adamw_cosine") {
    return optax::chain(
        optax::clip_by_global_norm(0.5),
        optax::adamw(optax::cosine_decay_schedule(3e-2, 6), 0.9, 0.999, 1e-8, 0.0, 1e-2));
  }
  throw std::runtime_error("unknown case " + name);
}

void expect_close(const Array& got, const std::string& key) {
  std::vector<float> want = values(key);
  std::vector<float> have = got.to_vector<float>();
  ASSERT_EQ(have.size(), want.size()) << key;
  for (size_t i = 0; i < want.size(); ++i) {
    EXPECT_NEAR(have[i], want[i], 1e-5 * std::abs(want[i]) + 1e-6) << key << "[" << i << "]";
  }
}

const char* kCases[] = {"sgd",         "sgd_momentum",      "sgd_nesterov",
                        "adam",        "adam_eps_root",     "adam_nesterov",
                        "adamw",       "clip_sgd",          "sgd_linear",
                        "adam_cosine", "schedule_constant", "chain_clip_adamw_cosine"};

class OptaxGolden : public ::testing::TestWithParam<const char*> {};

TEST_P(OptaxGolden, TenStepsEagerly) {
  const std::string name = GetParam();
  auto opt = make(name);
  nn::StateDict params = initial_params();
  optax::OptState state = opt.init(params);
  for (int t = 0; t < 10; ++t) {
    auto [updates, new_state] = opt.update(grads_at(t), state, params);
    state = new_state;
    params = optax::apply_updates(params, updates);
    expect_close(params["w"], name + "#w" + std::to_string(t));
    expect_close(params["b"], name + "#b" + std::to_string(t));
  }
}

// The whole step (update + apply_updates) as one jitted program over (params, state, grads).
TEST_P(OptaxGolden, TenStepsUnderJit) {
  const std::string name = GetParam();
  auto opt = make(name);
  auto step = px::jit(
      [&](const nn::StateDict& params, const optax::OptState& state, const nn::StateDict& grads) {
        auto [updates, new_state] = opt.update(grads, state, params);
        return std::make_pair(optax::apply_updates(params, updates), new_state);
      });
  nn::StateDict params = initial_params();
  optax::OptState state = opt.init(params);
  for (int t = 0; t < 10; ++t) {
    std::tie(params, state) = step(params, state, grads_at(t));
    expect_close(params["w"], name + "#w" + std::to_string(t));
    expect_close(params["b"], name + "#b" + std::to_string(t));
  }
}

INSTANTIATE_TEST_SUITE_P(Optimizers, OptaxGolden, ::testing::ValuesIn(kCases));

// Params as any pytree: a vector of pairs (the MLP examples' layout) gives the same values.
TEST(Optax, AnyPytreeOfParams) {
  using Params = std::vector<std::pair<Array, Array>>;
  nn::StateDict init = initial_params();
  Params params{{init["w"], init["b"]}};
  auto opt = optax::adam(1e-2);
  auto state = opt.init(params);
  for (int t = 0; t < 3; ++t) {
    nn::StateDict g = grads_at(t);
    Params grads{{g["w"], g["b"]}};
    auto [updates, s] = opt.update(grads, state);
    state = s;
    params = optax::apply_updates(params, updates);
  }
  expect_close(params[0].first, "adam#w2");
  expect_close(params[0].second, "adam#b2");
}

TEST(Optax, StateIsAPytreeFollowingShardings) {
  auto mesh = px::make_mesh({4, 2}, {"batch", "model"});
  nn::StateDict params;
  params["w"] = px::device_put(jnp::ones({8, 4}), px::NamedSharding(mesh, px::P("model")));
  params["b"] = px::device_put(jnp::ones({4}), px::NamedSharding(mesh, px::P()));
  auto opt = optax::adamw(1e-3);
  optax::OptState state = opt.init(params);
  // chain(scale_by_adam, add_decayed_weights, scale_by_learning_rate): adam's mu and nu.
  const auto& adam = state.inner.at(0);
  ASSERT_EQ(adam.slots.at("mu").size(), 2u);
  EXPECT_TRUE(adam.slots.at("mu")[0].sharding().is_equivalent_to(params["w"].sharding(), 2));
  EXPECT_TRUE(adam.slots.at("nu")[0].sharding().is_equivalent_to(params["w"].sharding(), 2));
  EXPECT_EQ(adam.slots.at("count")[0].dtype(), px::DType::int32);
  // count, mu (2), nu (2).
  EXPECT_EQ(px::tree::leaves(state).size(), 5u);
  // After a jitted step the moments stay tensor-parallel.
  auto step = px::jit([&](const nn::StateDict& p, const optax::OptState& s) {
    auto [u, s2] = opt.update(p, s, p);
    return std::make_pair(optax::apply_updates(p, u), s2);
  });
  auto [p2, s2] = step(params, state);
  EXPECT_TRUE(
      s2.inner.at(0).slots.at("mu")[0].sharding().is_equivalent_to(params["w"].sharding(), 2));
  EXPECT_TRUE(p2["w"].sharding().is_equivalent_to(params["w"].sharding(), 2));
}

TEST(Optax, Errors) {
  nn::StateDict params = initial_params();
  auto opt = optax::adamw(1e-2);
  auto state = opt.init(params);
  // adamw's weight decay needs the parameters (optax's NO_PARAMS_MSG).
  EXPECT_THROW(opt.update(grads_at(0), state), px::ValueError);
  // A state from another optimizer.
  EXPECT_THROW(optax::sgd(0.1).update(grads_at(0), state), px::ValueError);
  EXPECT_THROW(optax::cosine_decay_schedule(1.0, 0), px::ValueError);
}

TEST(Optax, Schedules) {
  auto lin = optax::linear_schedule(1.0, 0.0, 4, 2);
  auto at = [](const optax::Schedule& s, int c) {
    return s(jnp::asarray(int32_t(c))).item<float>();
  };
  EXPECT_FLOAT_EQ(at(lin, 0), 1.0f);
  EXPECT_FLOAT_EQ(at(lin, 2), 1.0f);
  EXPECT_FLOAT_EQ(at(lin, 4), 0.5f);
  EXPECT_FLOAT_EQ(at(lin, 9), 0.0f);
  auto cos = optax::cosine_decay_schedule(2.0, 10, 0.5);
  EXPECT_FLOAT_EQ(at(cos, 0), 2.0f);
  EXPECT_NEAR(at(cos, 5), 2.0 * (0.5 * 0.5 + 0.5), 1e-6);
  EXPECT_FLOAT_EQ(at(cos, 20), 1.0f);
  EXPECT_FLOAT_EQ(at(optax::constant_schedule(0.25), 7), 0.25f);
}

}  // namespace
