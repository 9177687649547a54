// parax::nn's Module: names, order and shapes of state dicts of nested modules,
// load_state_dict's errors, functional_call under jit and grad, initialisation, sharding by
// name, and DP / DP x TP training steps against the single-device run.
#include <gtest/gtest.h>
#include <parax/parax.h>

#include <cmath>

namespace px = parax;
namespace jnp = parax::numpy;
namespace nn = parax::nn;
namespace optax = parax::optax;
using px::Array;
using px::None;
using px::P;

namespace {

// A user module: submodules registered in the constructor, a list and a sequential.
class Block : public nn::Module {
 public:
  // A parameter of its own is kept as the slot register_parameter returns, so that
  // functional_call's arrays reach forward.
  Block(int64_t d, const px::random::Key& key)
      : nn::Module("Block"), scale(register_parameter("scale", jnp::ones({d}))) {
    auto keys = px::random::split(key, 3);
    fc = register_module("fc", nn::Linear(d, d, keys[0]));
    mlp = register_module("mlp", nn::Sequential(nn::Linear(d, 2 * d, keys[1]), nn::Tanh(),
                                                nn::Linear(2 * d, d, keys[2])));
    norm = register_module("norm", nn::LayerNorm(std::vector<int64_t>{d}));
  }
  Array forward(const Array& x) override {
    Array h = nn::ReLU()(fc(x)) * scale;
    return norm(h + mlp(h));
  }
  Array& scale;
  nn::Linear fc{nullptr};
  nn::Sequential mlp{nullptr};
  nn::LayerNorm norm{nullptr};
};

class Net : public nn::Module {
 public:
  Net() : nn::Module("Net") {
    embed = register_module("embed", nn::Linear(3, 4, px::random::key(1)));
    for (int i = 0; i < 2; ++i)
      blocks.push_back(std::make_shared<Block>(4, px::random::key(2 + i)));
    register_module("blocks", blocks);
    head = register_module("head", nn::Linear(4, 2, px::random::key(9)));
  }
  Array forward(const Array& x) override {
    Array h = embed(x);
    for (const auto& b : blocks) h = (*b)(h);
    return head(h);
  }
  nn::Linear embed{nullptr};
  nn::ModuleList blocks;
  nn::Linear head{nullptr};
};

std::vector<std::string> names_of(const nn::StateDict& d) { return d.keys(); }

TEST(Module, StateDictNamesOrderAndShapes) {
  Net net;
  nn::StateDict sd = net.state_dict();
  std::vector<std::string> want{"embed.weight", "embed.bias"};
  for (int i = 0; i < 2; ++i) {
    std::string p = "blocks." + std::to_string(i) + ".";
    for (const char* n : {"scale", "fc.weight", "fc.bias", "mlp.0.weight", "mlp.0.bias",
                          "mlp.2.weight", "mlp.2.bias", "norm.weight", "norm.bias"}) {
      want.push_back(p + n);
    }
  }
  want.push_back("head.weight");
  want.push_back("head.bias");
  EXPECT_EQ(names_of(sd), want);
  EXPECT_EQ(sd["embed.weight"].shape(), (px::Shape{4, 3}));
  EXPECT_EQ(sd["blocks.1.mlp.0.weight"].shape(), (px::Shape{8, 4}));
  EXPECT_EQ(sd["blocks.1.mlp.2.bias"].shape(), (px::Shape{4}));
  EXPECT_EQ(sd["head.weight"].shape(), (px::Shape{2, 4}));
  // Range-for yields (name, Array) in registration order.
  size_t i = 0;
  for (const auto& [name, a] : sd) EXPECT_EQ(name, want[i++]);
  EXPECT_EQ(net.parameters().size(), want.size());
  EXPECT_EQ(net.named_parameters().keys(), want);
  // named_modules: self first, then depth first.
  auto mods = net.named_modules();
  ASSERT_GE(mods.size(), 4u);
  EXPECT_EQ(mods[0].first, "");
  EXPECT_EQ(mods[1].first, "embed");
  EXPECT_EQ(mods[2].first, "blocks");
  EXPECT_EQ(mods[3].first, "blocks.0");
  EXPECT_EQ(mods[4].first, "blocks.0.fc");
}

TEST(Module, StateDictIsAnOrderedPytree) {
  Net net;
  nn::StateDict sd = net.state_dict();
  px::TreeDef def = px::tree::structure(sd);
  EXPECT_EQ(def.keys, sd.keys());  // insertion order, not sorted
  EXPECT_EQ(def.to_string().rfind("PyTreeDef(OrderedDict({'embed.weight': *", 0), 0u);
  auto doubled = px::tree::map([](const Array& a) { return a * 2.0f; }, sd);
  EXPECT_EQ(doubled.keys(), sd.keys());
  auto back = px::tree::unflatten<nn::StateDict>(def, px::tree::leaves(doubled));
  EXPECT_EQ(back.keys(), sd.keys());
  EXPECT_FLOAT_EQ(back["head.bias"].to_vector<float>()[0],
                  2 * sd["head.bias"].to_vector<float>()[0]);
}

TEST(Module, RegistrationErrors) {
  nn::Module m;
  m.register_parameter("w", jnp::ones({2}));
  EXPECT_THROW(m.register_parameter("w", jnp::ones({2})), px::ValueError);
  EXPECT_THROW(m.register_parameter("a.b", jnp::ones({2})), px::ValueError);
  EXPECT_THROW(m.register_module("w", nn::ReLU()), px::ValueError);
  EXPECT_THROW(m(jnp::ones({2})), px::NotImplementedError);
}

std::string error_of(const std::function<void()>& f) {
  try {
    f();
  } catch (const px::ValueError& e) {
    return e.what();
  }
  return "(no error)";
}

TEST(Module, LoadStateDictErrorsNameTheParameter) {
  nn::Sequential seq(nn::Linear(3, 4, px::random::key(0)), nn::ReLU(),
                     nn::Linear(4, 2, px::random::key(1)));
  nn::StateDict sd = seq.state_dict();
  EXPECT_EQ(sd.keys(), (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));

  nn::StateDict missing = sd;
  missing = nn::StateDict{
      {"0.weight", sd["0.weight"]}, {"0.bias", sd["0.bias"]}, {"2.weight", sd["2.weight"]}};
  std::string e = error_of([&] { seq.load_state_dict(missing); });
  EXPECT_NE(e.find("Missing key(s) in state_dict: \"2.bias\""), std::string::npos) << e;
  EXPECT_NO_THROW(seq.load_state_dict(missing, /*strict=*/false));

  nn::StateDict extra = sd;
  extra["3.weight"] = jnp::ones({2});
  e = error_of([&] { seq.load_state_dict(extra); });
  EXPECT_NE(e.find("Unexpected key(s) in state_dict: \"3.weight\""), std::string::npos) << e;

  nn::StateDict wrong_shape = sd;
  wrong_shape["2.weight"] = jnp::ones({4, 2});
  e = error_of([&] { seq.load_state_dict(wrong_shape, false); });
  EXPECT_NE(e.find("size mismatch for 2.weight"), std::string::npos) << e;
  EXPECT_NE(e.find("[4, 2]"), std::string::npos) << e;

  nn::StateDict wrong_dtype = sd;
  wrong_dtype["0.bias"] = jnp::ones({4}, px::DType::int32);
  e = error_of([&] { seq.load_state_dict(wrong_dtype); });
  EXPECT_NE(e.find("dtype mismatch for 0.bias"), std::string::npos) << e;
  EXPECT_NE(e.find("int32"), std::string::npos) << e;

  // A failed load changes nothing; a good one replaces the arrays.
  EXPECT_FLOAT_EQ(seq.state_dict()["0.weight"].to_vector<float>()[0],
                  sd["0.weight"].to_vector<float>()[0]);
  nn::StateDict zeros = px::tree::map([](const Array& a) { return jnp::zeros_like(a); }, sd);
  seq.load_state_dict(zeros);
  EXPECT_EQ(seq(jnp::ones({5, 3})).to_vector<float>(), std::vector<float>(10, 0.0f));
}

TEST(Module, LinearInitialisationIsTorchs) {
  nn::manual_seed(7);
  nn::Linear a(100, 50);
  nn::manual_seed(7);
  nn::Linear b(100, 50);
  EXPECT_EQ(a->weight.to_vector<float>(), b->weight.to_vector<float>());
  nn::Linear c(100, 50);  // the generator advanced
  EXPECT_NE(a->weight.to_vector<float>(), c->weight.to_vector<float>());
  // U(-1/sqrt(in), 1/sqrt(in)) for both: range and variance bound^2 / 3.
  for (const Array& p : {a->weight, a->bias}) {
    auto v = p.to_vector<float>();
    double sum = 0, sq = 0, mx = 0;
    for (float x : v) {
      sum += x;
      sq += double(x) * x;
      mx = std::max(mx, double(std::abs(x)));
    }
    EXPECT_LE(mx, 0.1 + 1e-7);
    if (v.size() > 1000) {
      EXPECT_NEAR(sq / double(v.size()), 0.01 / 3, 0.01 / 3 * 0.1);
      EXPECT_NEAR(sum / double(v.size()), 0.0, 0.005);
    }
  }
  EXPECT_EQ(a->weight.shape(), (px::Shape{50, 100}));
  EXPECT_EQ(a->weight.dtype(), px::DType::float32);
  // An explicit key gives the same weights whatever the generator's state.
  nn::Linear k1(4, 3, px::random::key(5)), k2(4, 3, px::random::key(5));
  EXPECT_EQ(k1->weight.to_vector<float>(), k2->weight.to_vector<float>());
  nn::Linear nb(4, 3, /*bias=*/false);
  EXPECT_EQ(nb->state_dict().keys(), std::vector<std::string>{"weight"});
  EXPECT_EQ(nb(jnp::ones({2, 4})).shape(), (px::Shape{2, 3}));
}

// y = x W^T + b by hand, for a 3-D input too.
TEST(Module, LinearForward) {
  nn::Linear l(3, 2, px::random::key(3));
  Array x = jnp::arange(12, px::DType::float32).reshape({2, 2, 3});
  Array y = l(x);
  ASSERT_EQ(y.shape(), (px::Shape{2, 2, 2}));
  auto w = l->weight.to_vector<float>(), b = l->bias.to_vector<float>();
  auto xv = x.to_vector<float>(), yv = y.to_vector<float>();
  for (int r = 0; r < 4; ++r) {
    for (int o = 0; o < 2; ++o) {
      float want = b[size_t(o)];
      for (int i = 0; i < 3; ++i) want += xv[size_t(r * 3 + i)] * w[size_t(o * 3 + i)];
      EXPECT_NEAR(yv[size_t(r * 2 + o)], want, 1e-5);
    }
  }
  EXPECT_THROW(l(jnp::ones({2, 4})), px::ValueError);
}

TEST(Module, Dropout) {
  nn::Dropout d(0.25);
  Array x = jnp::ones({1000});
  Array y = d->forward(x, px::random::key(0));
  auto v = y.to_vector<float>();
  int zeros = 0;
  for (float e : v) {
    if (e == 0) {
      ++zeros;
    } else {
      EXPECT_FLOAT_EQ(e, 1.0f / 0.75f);
    }
  }
  EXPECT_NEAR(zeros / 1000.0, 0.25, 0.05);
  EXPECT_EQ(d->forward(x, px::random::key(0)).to_vector<float>(), v);  // key-driven
  d->eval();
  EXPECT_EQ(d(x).to_vector<float>(), x.to_vector<float>());
  EXPECT_THROW(nn::Dropout(1.5), px::ValueError);
}

TEST(Module, Losses) {
  Array a = jnp::array({1.f, 2.f, 3.f, 4.f}, px::Shape{2, 2});
  Array b = jnp::array({0.f, 2.f, 5.f, 4.f}, px::Shape{2, 2});
  EXPECT_FLOAT_EQ(nn::MSELoss()(a, b).item<float>(), 5.0f / 4);
  EXPECT_FLOAT_EQ(nn::MSELoss("sum")(a, b).item<float>(), 5.0f);
  EXPECT_EQ(nn::MSELoss("none")(a, b).shape(), (px::Shape{2, 2}));
  EXPECT_THROW(nn::MSELoss("avg"), px::ValueError);
  // Cross entropy by hand: -log softmax(x)[t], mean over non-ignored targets.
  Array logits = jnp::array({1.f, 2.f, 0.5f, -1.f, 0.f, 3.f}, px::Shape{2, 3});
  Array target = jnp::array({1, 2}, std::nullopt, px::DType::int32);
  auto l = [](std::vector<double> x, int t) {
    double s = 0;
    for (double e : x) s += std::exp(e);
    return -(x[size_t(t)] - std::log(s));
  };
  double l0 = l({1, 2, 0.5}, 1), l1 = l({-1, 0, 3}, 2);
  EXPECT_NEAR(nn::CrossEntropyLoss()(logits, target).item<float>(), (l0 + l1) / 2, 1e-6);
  Array ignored = jnp::array({1, -100}, std::nullopt, px::DType::int32);
  EXPECT_NEAR(nn::CrossEntropyLoss()(logits, ignored).item<float>(), l0, 1e-6);
  EXPECT_NEAR(nn::CrossEntropyLoss("sum")(logits, target).item<float>(), l0 + l1, 1e-5);
}

// functional_call: a pure function of the state, differentiated and jitted.
TEST(Module, FunctionalCallUnderJitAndGrad) {
  Net net;
  nn::StateDict params = net.state_dict();
  Array x = px::random::normal(px::random::key(11), {5, 3});
  Array y = px::random::normal(px::random::key(12), {5, 2});
  nn::MSELoss mse;
  auto loss_fn = [&](const nn::StateDict& p, const std::pair<Array, Array>& batch) {
    return mse(nn::functional_call(net, p, batch.first), batch.second);
  };
  const float eager = mse(net(x), y).item<float>();
  auto step = px::jit(px::value_and_grad(loss_fn));
  auto [loss, grads] = step(params, std::make_pair(x, y));
  EXPECT_NEAR(loss.item<float>(), eager, 1e-5 * std::abs(eager));
  EXPECT_EQ(grads.keys(), params.keys());
  // The module's own arrays are back after the call.
  EXPECT_EQ(net.state_dict()["head.bias"].to_vector<float>(),
            params["head.bias"].to_vector<float>());
  // The gradient by central differences along one weight.
  const float h = 1e-2f;
  nn::StateDict plus = params, minus = params;
  plus["blocks.1.fc.weight"] = params["blocks.1.fc.weight"] + h * jnp::ones({4, 4});
  minus["blocks.1.fc.weight"] = params["blocks.1.fc.weight"] - h * jnp::ones({4, 4});
  auto loss_jit = px::jit(loss_fn);
  const float fd = (loss_jit(plus, std::make_pair(x, y)).item<float>() -
                    loss_jit(minus, std::make_pair(x, y)).item<float>()) /
                   (2 * h);
  const float dir = jnp::sum(grads["blocks.1.fc.weight"]).item<float>();
  EXPECT_NEAR(fd, dir, 2e-2 * std::abs(dir) + 1e-4);
  // Different weights give a different loss: nothing was baked into the trace.
  nn::StateDict zeros = px::tree::map([](const Array& a) { return jnp::zeros_like(a); }, params);
  EXPECT_NE(step(zeros, std::make_pair(x, y)).first.item<float>(), loss.item<float>());
  // A partial dict keeps the other arrays; an unknown name is an error.
  nn::StateDict only_head{{"head.bias", jnp::zeros({2})}};
  EXPECT_NO_THROW(nn::functional_call(net, only_head, x));
  nn::StateDict unknown{{"head.gamma", jnp::zeros({2})}};
  EXPECT_THROW(nn::functional_call(net, unknown, x), px::ValueError);
  // Holders and shared_ptrs work too.
  nn::Linear lin(3, 2, px::random::key(4));
  EXPECT_EQ(nn::functional_call(lin, lin.state_dict(), x).shape(), (px::Shape{5, 2}));
  auto shared = std::make_shared<Net>();
  EXPECT_EQ(nn::functional_call(shared, shared->state_dict(), x).shape(), (px::Shape{5, 2}));
}

TEST(Module, OptimStatefulWrapper) {
  nn::Linear lin(3, 2, px::random::key(4));
  nn::StateDict before = lin.state_dict();
  Array x = jnp::ones({4, 3}), y = jnp::zeros({4, 2});
  nn::MSELoss mse;
  auto grad_fn =
      px::grad([&](const nn::StateDict& p) { return mse(nn::functional_call(lin, p, x), y); });
  nn::optim::SGD opt(lin, 0.5);
  nn::StateDict grads = grad_fn(lin.state_dict());
  opt.step(grads);
  nn::StateDict after = lin.state_dict();
  auto w0 = before["weight"].to_vector<float>(), w1 = after["weight"].to_vector<float>();
  auto g = grads["weight"].to_vector<float>();
  for (size_t i = 0; i < w0.size(); ++i) EXPECT_NEAR(w1[i], w0[i] - 0.5f * g[i], 1e-6);
}

// The sharding rules: exact names, patterns, defaults and the errors.
TEST(Shard, RulesByNameAndPattern) {
  auto mesh = px::make_mesh({4, 2}, {"batch", "model"});
  px::NamedSharding rep(mesh, P()), col(mesh, P("model")), row(mesh, P(None, "model"));
  nn::Sequential seq(nn::Linear(4, 8, px::random::key(0)), nn::ReLU(),
                     nn::Linear(8, 4, px::random::key(1)));
  nn::StateDict sd = seq.state_dict();
  auto placed = nn::shard(sd, {{"0.weight", col}, {"2.weight", row}, {".*\\.bias", rep}});
  EXPECT_TRUE(placed["0.weight"].sharding().is_equivalent_to(col, 2));
  EXPECT_TRUE(placed["2.weight"].sharding().is_equivalent_to(row, 2));
  EXPECT_TRUE(placed["0.bias"].sharding().is_equivalent_to(rep, 1));
  EXPECT_EQ(placed.keys(), sd.keys());
  // An exact name beats a pattern that matches it too.
  placed = nn::shard(sd, {{"0.bias", col}, {".*\\.bias", rep}, {".*weight", rep}});
  EXPECT_TRUE(placed["0.bias"].sharding().is_equivalent_to(col, 1));

  std::string e = error_of([&] { nn::shard(sd, {{"0.weight", col}, {".*\\.bias", rep}}); });
  EXPECT_NE(e.find("no sharding rule matches parameter '2.weight'"), std::string::npos) << e;
  EXPECT_NO_THROW(nn::shard(sd, {{"0.weight", col}, {".*\\.bias", rep}}, rep));
  e = error_of([&] { nn::shard(sd, {{".*", rep}, {"[0-9]\\.bias", rep}}); });
  EXPECT_NE(e.find("parameter '0.bias' matches 2 rules"), std::string::npos) << e;
  e = error_of([&] { nn::shard(sd, {{".*", rep}, {"layers.0.wieght", col}}); });
  EXPECT_NE(e.find("rule 'layers.0.wieght' matches no parameter"), std::string::npos) << e;
  // A sharding that does not divide the shape is device_put's error.
  EXPECT_THROW(nn::shard(sd, {{".*", px::NamedSharding(mesh, P("batch", "model"))}}),
               px::ValueError);
}

TEST(Shard, ModuleToPlacesEverything) {
  auto mesh = px::make_mesh({8}, {"d"});
  nn::Sequential seq(nn::Linear(4, 8, px::random::key(0)), nn::GELU("tanh"));
  seq.to(px::NamedSharding(mesh, P()));
  for (const auto& [name, a] : seq.state_dict()) {
    EXPECT_EQ(a.sharding().num_devices(), 8) << name;
    EXPECT_TRUE(a.is_committed());
  }
}

// The tutorial's model trained by DP and DP x TP gives the single-device losses.
class Mlp : public nn::Module {
 public:
  explicit Mlp(const std::vector<int64_t>& sizes) : nn::Module("Mlp") {
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      layers.push_back(nn::Linear(sizes[i], sizes[i + 1], px::random::key(int64_t(i))));
    }
    register_module("layers", layers);
  }
  Array forward(const Array& x) override {
    Array h = x;
    for (const auto& l : layers) h = jnp::maximum((*l)(h), 0.0f);
    return h;
  }
  nn::ModuleList layers;
};

std::vector<float> train(Mlp& model, nn::StateDict params, std::pair<Array, Array> batch,
                         int steps) {
  nn::MSELoss mse;
  auto loss_fn = [&](const nn::StateDict& p, const std::pair<Array, Array>& b) {
    return mse(nn::functional_call(model, p, b.first), b.second);
  };
  auto opt = optax::sgd(0.05, 0.9);
  auto step = px::jit(
      [&](const nn::StateDict& p, const optax::OptState& s, const std::pair<Array, Array>& b) {
        auto [loss, grads] = px::value_and_grad(loss_fn)(p, b);
        auto [updates, s2] = opt.update(grads, s);
        return std::make_tuple(loss, optax::apply_updates(p, updates), s2);
      });
  optax::OptState state = opt.init(params);
  std::vector<float> losses;
  for (int i = 0; i < steps; ++i) {
    auto [loss, p2, s2] = step(params, state, batch);
    losses.push_back(loss.item<float>());
    params = p2;
    state = s2;
  }
  return losses;
}

TEST(Training, DataAndTensorParallelMatchSingleDevice) {
  const std::vector<int64_t> sizes{16, 32, 32, 32, 4};
  Mlp model(sizes);
  std::pair<Array, Array> batch{px::random::normal(px::random::key(100), {64, 16}),
                                px::random::normal(px::random::key(101), {64, 4})};
  nn::StateDict params = model.state_dict();
  std::vector<float> single = train(model, params, batch, 4);
  EXPECT_LT(single.back(), single.front());

  auto dp = px::make_mesh({8}, {"batch"});
  std::vector<float> dp_losses = train(model, px::device_put(params, px::NamedSharding(dp, P())),
                                       px::device_put(batch, px::NamedSharding(dp, P("batch"))), 4);

  auto mesh = px::make_mesh({4, 2}, {"batch", "model"});
  px::NamedSharding rep(mesh, P());
  std::map<std::string, px::Sharding> rules{
      {"layers.1.weight", px::NamedSharding(mesh, P("model"))},
      {"layers.1.bias", px::NamedSharding(mesh, P("model"))},
      {"layers.2.weight", px::NamedSharding(mesh, P(None, "model"))}};
  std::vector<float> tp_losses =
      train(model, nn::shard(params, rules, rep),
            px::device_put(batch, px::NamedSharding(mesh, P("batch", None))), 4);
  for (size_t i = 0; i < single.size(); ++i) {
    EXPECT_NEAR(dp_losses[i], single[i], 2e-6 * std::abs(single[i])) << i;
    EXPECT_NEAR(tp_losses[i], single[i], 2e-6 * std::abs(single[i])) << i;
  }
}

}  // namespace

namespace {

// The spellings a user program writes to build, train and shard a Sequential.
TEST(Spellings, TrainAndShardASequential) {
  nn::manual_seed(42);
  nn::Sequential model;
  model->push_back(nn::Linear(4, 8));
  model->push_back(nn::ReLU());
  model.push_back(nn::Linear(8, 2));
  nn::StateDict params = model->state_dict();
  EXPECT_EQ(params["0.weight"].shape(), (px::Shape{8, 4}));
  std::vector<std::string> names;
  for (const auto& [name, a] : params) names.push_back(name);
  EXPECT_EQ(names, (std::vector<std::string>{"0.weight", "0.bias", "2.weight", "2.bias"}));

  Array x = px::random::normal(px::random::key(1), {16, 4});
  Array y = px::random::normal(px::random::key(2), {16, 2});
  EXPECT_EQ(model(x).shape(), (px::Shape{16, 2}));
  nn::MSELoss loss;
  auto loss_fn = [&](const nn::StateDict& p, const Array& in, const Array& target) {
    return loss(nn::functional_call(model, p, in), target);
  };
  auto opt = optax::sgd(0.1);
  auto state = opt.init(params);
  auto step = px::jit(px::value_and_grad(loss_fn));
  float first = 0, last = 0;
  for (int i = 0; i < 20; ++i) {
    auto [l, grads] = step(params, x, y);
    auto [updates, new_state] = opt.update(grads, state);
    state = new_state;
    params = optax::apply_updates(params, updates);
    (i == 0 ? first : last) = l.item<float>();
  }
  EXPECT_LT(last, first);

  auto mesh = px::make_mesh({4, 2}, {"batch", "model"});
  std::map<std::string, px::Sharding> rules{{"0.weight", px::NamedSharding(mesh, P("model"))},
                                            {"0.bias", px::NamedSharding(mesh, P("model"))},
                                            {"2.weight", px::NamedSharding(mesh, P(None, "model"))},
                                            {"2.bias", px::NamedSharding(mesh, P())}};
  nn::StateDict sharded = nn::shard(params, rules);
  auto xs = px::device_put(x, px::NamedSharding(mesh, P("batch", None)));
  auto ys = px::device_put(y, px::NamedSharding(mesh, P("batch", None)));
  EXPECT_NEAR(step(sharded, xs, ys).first.item<float>(), step(params, x, y).first.item<float>(),
              1e-6);
  // A named push_back, and nested sequentials name their children by path.
  nn::Sequential outer;
  outer->push_back("body", model);
  outer->push_back("head", nn::Linear(2, 1, px::random::key(3)));
  EXPECT_EQ(outer->state_dict().keys(),
            (std::vector<std::string>{"body.0.weight", "body.0.bias", "body.2.weight",
                                      "body.2.bias", "head.weight", "head.bias"}));
  EXPECT_EQ(outer(x).shape(), (px::Shape{16, 1}));
}

// A subclass whose forward takes its argument by value, and one with two inputs.
struct ByValue : nn::Module {
  ByValue() { fc = register_module("fc", nn::Linear(3, 3, px::random::key(0))); }
  Array forward(Array x) override { return fc(x) + x; }
  nn::Linear fc{nullptr};
};
struct TwoInputs : nn::Module {
  TwoInputs() { fc = register_module("fc", nn::Linear(3, 3, px::random::key(0))); }
  Array forward(const Array& a, const Array& b) { return fc(a) * b; }
  nn::Linear fc{nullptr};
};

TEST(Spellings, ForwardSignatures) {
  Array x = jnp::ones({2, 3});
  ByValue bv;
  EXPECT_EQ(bv(x).shape(), (px::Shape{2, 3}));
  EXPECT_EQ(nn::functional_call(bv, bv.state_dict(), x).shape(), (px::Shape{2, 3}));
  TwoInputs ti;
  auto g = px::grad([&](const nn::StateDict& p) {
    return jnp::sum(nn::functional_call(ti, p, x, x * 2.0f));
  })(ti.state_dict());
  EXPECT_EQ(g.keys(), (std::vector<std::string>{"fc.weight", "fc.bias"}));
  // The bias gradient is sum over the batch of b = 2.
  EXPECT_EQ(g["fc.bias"].to_vector<float>(), (std::vector<float>{4, 4, 4}));
}

}  // namespace

namespace {

// Per-example gradients: vmap of grad of a functional_call, against a loop of grads.
TEST(Composition, PerExampleGradientsByVmap) {
  nn::Sequential model(nn::Linear(3, 4, px::random::key(0)), nn::Tanh(),
                       nn::Linear(4, 1, px::random::key(1)));
  nn::StateDict params = model->state_dict();
  Array xs = px::random::normal(px::random::key(2), {5, 3});
  Array ys = px::random::normal(px::random::key(3), {5, 1});
  auto loss = [&](const nn::StateDict& p, const Array& x, const Array& y) {
    return nn::MSELoss()(nn::functional_call(model, p, x), y);
  };
  auto per_example = px::jit(px::vmap(px::grad(loss), {.in_axes = {px::None, 0, 0}}));
  nn::StateDict g = per_example(params, xs, ys);
  EXPECT_EQ(g["0.weight"].shape(), (px::Shape{5, 4, 3}));
  for (int64_t i = 0; i < 5; ++i) {
    nn::StateDict gi = px::grad(loss)(params, xs[i], ys[i]);
    for (const auto& [name, a] : gi) {
      auto want = a.to_vector<float>();
      auto got = g[name][i].to_vector<float>();
      for (size_t k = 0; k < want.size(); ++k) {
        EXPECT_NEAR(got[k], want[k], 1e-5 * std::abs(want[k]) + 1e-6) << name << " " << i;
      }
    }
  }
}

// load_state_dict keeps each parameter where it is, as torch's copy_ does.
TEST(Composition, LoadStateDictKeepsPlacement) {
  auto mesh = px::make_mesh({4, 2}, {"a", "b"});
  nn::Linear l(4, 8, px::random::key(0));
  px::NamedSharding col(mesh, P("b"));
  l->weight = px::device_put(l->weight, col);
  nn::StateDict fresh = nn::Linear(4, 8, px::random::key(1)).state_dict();
  l.load_state_dict(fresh);
  EXPECT_TRUE(l->weight.sharding().is_equivalent_to(col, 2));
  EXPECT_EQ(l->weight.to_vector<float>(), fresh["weight"].to_vector<float>());
  EXPECT_FALSE(l->bias.is_committed());
}

}  // namespace
