// parax::nn against LibTorch as the oracle: every layer's forward and gradients (parameters
// and input) on the same weights and inputs within 1e-5 relative in float32, a LibTorch
// model's weights imported into the equivalent parax module, tensors to and from Arrays,
// and nn::optim / optax against torch::optim over 10 steps.
#include <gtest/gtest.h>
#include <parax/parax.h>
#include <parax/torch.h>

#include <cmath>

namespace px = parax;
namespace jnp = parax::numpy;
namespace nn = parax::nn;
namespace optax = parax::optax;
using px::Array;

namespace {

void expect_close(const Array& got, const torch::Tensor& want, const std::string& what,
                  double rtol = 1e-5, double atol = 1e-6) {
  ASSERT_TRUE(want.defined()) << what;
  torch::Tensor w = want.detach().to(torch::kFloat32).contiguous();
  ASSERT_EQ(got.shape(), px::Shape(w.sizes().begin(), w.sizes().end())) << what;
  std::vector<float> g = got.astype(px::DType::float32).to_vector<float>();
  const float* p = w.data_ptr<float>();
  double scale = 0;
  for (size_t i = 0; i < g.size(); ++i) scale = std::max(scale, double(std::abs(p[i])));
  for (size_t i = 0; i < g.size(); ++i) {
    // Relative to the element, with a floor relative to the tensor's scale for entries that
    // cancel to near zero.
    EXPECT_NEAR(g[i], p[i], rtol * std::abs(p[i]) + atol * std::max(1.0, scale))
        << what << "[" << i << "]";
  }
}

torch::Tensor randn(std::vector<int64_t> shape, int seed) {
  torch::manual_seed(seed);
  return torch::randn(shape);
}

// Loads the torch module's weights into the parax module, then compares the forward and the
// gradients of sum(y * r) with respect to every parameter and to the input.
template <class PM, class TM>
void check_layer(PM& pm, TM& tm, const torch::Tensor& x_t, const std::string& what) {
  pm->load_state_dict(px::import_parameters(*tm));
  torch::Tensor xt = x_t.clone().requires_grad_(true);
  torch::Tensor yt = tm->forward(xt);
  torch::Tensor r = randn(yt.sizes().vec(), 99);
  (yt * r).sum().backward();

  Array x = px::from_torch(x_t), rr = px::from_torch(r);
  expect_close(pm(x), yt, what + " forward");
  nn::StateDict params = pm.state_dict();
  auto f = [&](const nn::StateDict& p, const Array& in) {
    return jnp::sum(nn::functional_call(pm, p, in) * rr);
  };
  auto [gp, gx] = px::jit(px::grad(f, px::argnums<0, 1>))(params, x);
  expect_close(gx, xt.grad(), what + " d/dx");
  for (auto& p : tm->named_parameters()) {
    expect_close(gp.at(p.key()), p.value().grad(), what + " d/d" + p.key());
  }
}

TEST(TorchInterop, TensorsRoundTrip) {
  torch::Tensor f = randn({3, 4}, 0);
  Array a = px::from_torch(f);
  EXPECT_EQ(a.dtype(), px::DType::float32);
  EXPECT_TRUE(torch::equal(px::to_torch(a), f));
  torch::Tensor i = torch::arange(6, torch::kInt32).reshape({2, 3});
  EXPECT_EQ(px::from_torch(i).to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2, 3, 4, 5}));
  EXPECT_TRUE(torch::equal(px::to_torch(px::from_torch(i)), i));
  // int64 becomes int32 as jnp.asarray makes it without x64.
  EXPECT_EQ(px::from_torch(torch::arange(3)).dtype(), px::DType::int32);
  torch::Tensor b = torch::tensor({true, false, true});
  EXPECT_TRUE(torch::equal(px::to_torch(px::from_torch(b)), b));
  // A non-contiguous view is read as its values.
  EXPECT_TRUE(torch::equal(px::to_torch(px::from_torch(f.t())), f.t().contiguous()));
  // Sharded: placed on the way in, gathered on the way out.
  auto mesh = px::make_mesh({4, 2}, {"a", "b"});
  torch::Tensor big = randn({8, 4}, 1);
  Array s = px::from_torch(big, px::NamedSharding(mesh, px::P("a", "b")));
  EXPECT_EQ(s.sharding().num_devices(), 8);
  EXPECT_TRUE(torch::equal(px::to_torch(s), big));
  EXPECT_TRUE(torch::allclose(px::to_torch(jnp::sin(s)), torch::sin(big), 1e-6, 1e-6));
}

TEST(TorchOracle, Linear) {
  torch::manual_seed(1);
  torch::nn::Linear tl(5, 3);
  nn::Linear pl(5, 3);
  check_layer(pl, tl, randn({4, 5}, 2), "Linear");
  torch::nn::Linear tl3(torch::nn::LinearOptions(5, 3).bias(false));
  nn::Linear pl3(5, 3, false);
  check_layer(pl3, tl3, randn({2, 3, 5}, 3), "Linear(bias=false), 3-d input");
}

TEST(TorchOracle, Activations) {
  torch::Tensor x = randn({4, 6}, 4);
  torch::nn::ReLU tr;
  nn::ReLU pr;
  check_layer(pr, tr, x, "ReLU");
  torch::nn::Tanh tt;
  nn::Tanh pt;
  check_layer(pt, tt, x, "Tanh");
  torch::nn::GELU tg;
  nn::GELU pg;
  check_layer(pg, tg, x, "GELU");
  torch::nn::GELU tgt(torch::nn::GELUOptions().approximate("tanh"));
  nn::GELU pgt("tanh");
  check_layer(pgt, tgt, x, "GELU(tanh)");
}

TEST(TorchOracle, LayerNorm) {
  torch::nn::LayerNorm tn(torch::nn::LayerNormOptions({6}));
  {
    torch::NoGradGuard g;  // non-trivial affine parameters
    tn->weight.copy_(randn({6}, 5));
    tn->bias.copy_(randn({6}, 6));
  }
  nn::LayerNorm pn(std::vector<int64_t>{6});
  check_layer(pn, tn, randn({3, 6}, 7) * 3 + 1, "LayerNorm");
  torch::nn::LayerNorm tn2(torch::nn::LayerNormOptions({2, 3}).eps(1e-3));
  nn::LayerNorm pn2(std::vector<int64_t>{2, 3}, 1e-3);
  check_layer(pn2, tn2, randn({4, 2, 3}, 8), "LayerNorm([2, 3])");
}

TEST(TorchOracle, Embedding) {
  torch::manual_seed(40);
  torch::nn::Embedding te(10, 4);
  nn::Embedding pe(10, 4);
  pe->load_state_dict(px::import_parameters(*te));
  torch::Tensor idx = torch::tensor({{1, 3, 3}, {9, 0, 3}}, torch::kInt64);
  torch::Tensor yt = te->forward(idx);
  torch::Tensor r = randn({2, 3, 4}, 41);
  (yt * r).sum().backward();
  Array pidx = px::from_torch(idx), rr = px::from_torch(r);
  expect_close(pe(pidx), yt, "Embedding forward");
  auto g = px::jit(px::grad([&](const nn::StateDict& p) {
    return jnp::sum(nn::functional_call(pe, p, pidx) * rr);
  }))(pe.state_dict());
  // Repeated indices accumulate (row 3 three times), unused rows get zero.
  expect_close(g.at("weight"), te->weight.grad(), "Embedding d/dweight");
  EXPECT_THROW(pe(jnp::ones({2})), px::TypeError);
}

TEST(TorchOracle, Dropout) {
  torch::nn::Dropout td(0.3);
  nn::Dropout pd(0.3);
  td->eval();
  pd->eval();
  torch::Tensor x = randn({5, 5}, 9);
  expect_close(pd(px::from_torch(x)), td->forward(x), "Dropout.eval");
  // Training: a kept element is scaled by 1/(1-p), as torch does (the masks differ: torch's
  // RNG is not parax's).
  pd->train();
  auto y = pd->forward(jnp::ones({1000}), px::random::key(3)).to_vector<float>();
  for (float e : y) EXPECT_TRUE(e == 0 || std::abs(e - 1 / 0.7f) < 1e-6);
}

TEST(TorchOracle, Sequential) {
  torch::manual_seed(10);
  torch::nn::Sequential ts(
      torch::nn::Linear(4, 8), torch::nn::Tanh(), torch::nn::Linear(8, 8), torch::nn::GELU(),
      torch::nn::LayerNorm(torch::nn::LayerNormOptions({8})), torch::nn::Linear(8, 2));
  nn::Sequential ps(nn::Linear(4, 8), nn::Tanh(), nn::Linear(8, 8), nn::GELU(),
                    nn::LayerNorm(std::vector<int64_t>{8}), nn::Linear(8, 2));
  EXPECT_EQ(ps.state_dict().keys(), px::import_parameters(*ts).keys());
  check_layer(ps, ts, randn({6, 4}, 11), "Sequential");
}

TEST(TorchOracle, Losses) {
  torch::Tensor a = randn({4, 5}, 12), b = randn({4, 5}, 13);
  for (const char* red : {"mean", "sum", "none"}) {
    torch::nn::MSELossOptions::reduction_t r = torch::kMean;
    if (std::string(red) == "sum") r = torch::kSum;
    if (std::string(red) == "none") r = torch::kNone;
    torch::Tensor at = a.clone().requires_grad_(true);
    torch::Tensor l = torch::nn::MSELoss(torch::nn::MSELossOptions().reduction(r))(at, b);
    nn::MSELoss pl(red);
    expect_close(pl(px::from_torch(a), px::from_torch(b)), l, std::string("MSELoss ") + red);
  }
  torch::Tensor at = a.clone().requires_grad_(true);
  torch::nn::MSELoss()(at, b).backward();
  auto g = px::grad([&](const Array& x) { return nn::MSELoss()(x, px::from_torch(b)); })(
      px::from_torch(a));
  expect_close(g, at.grad(), "MSELoss d/dinput");

  // Cross entropy: class indices (with an ignored target), label smoothing, probabilities,
  // and a [N, C, d] input.
  torch::Tensor logits = randn({6, 5}, 14);
  torch::Tensor target = torch::tensor({0, 3, 4, -100, 2, 1}, torch::kInt64);
  struct Case {
    std::string name, reduction;
    double smoothing;
  };
  for (const Case& c : {Case{"mean", "mean", 0.0}, Case{"sum", "sum", 0.0},
                        Case{"none", "none", 0.0}, Case{"smoothed", "mean", 0.2}}) {
    torch::nn::CrossEntropyLossOptions o;
    o.label_smoothing(c.smoothing);
    if (c.reduction == "sum") o.reduction(torch::kSum);
    if (c.reduction == "none") o.reduction(torch::kNone);
    torch::Tensor lt = logits.clone().requires_grad_(true);
    torch::Tensor l = torch::nn::CrossEntropyLoss(o)(lt, target);
    nn::CrossEntropyLoss pl(c.reduction, -100, c.smoothing);
    Array pt = px::from_torch(target);
    expect_close(pl(px::from_torch(logits), pt), l, "CrossEntropyLoss " + c.name);
    if (c.reduction != "none") {
      l.backward();
      auto gl = px::grad([&](const Array& x) { return pl(x, pt); })(px::from_torch(logits));
      expect_close(gl, lt.grad(), "CrossEntropyLoss d/dlogits " + c.name);
    }
  }
  torch::Tensor probs = torch::softmax(randn({6, 5}, 15), 1);
  expect_close(nn::CrossEntropyLoss()(px::from_torch(logits), px::from_torch(probs)),
               torch::nn::CrossEntropyLoss()(logits, probs), "CrossEntropyLoss probabilities");
  torch::Tensor l3 = randn({2, 5, 3}, 16);
  torch::Tensor t3 = torch::tensor({0, 4, 2, 1, 1, 3}, torch::kInt64).reshape({2, 3});
  expect_close(nn::CrossEntropyLoss()(px::from_torch(l3), px::from_torch(t3)),
               torch::nn::CrossEntropyLoss()(l3, t3), "CrossEntropyLoss [N, C, d]");
}

// The tutorial's model in LibTorch and in parax: the same names, the same outputs.
struct TorchModelImpl : torch::nn::Module {
  explicit TorchModelImpl(const std::vector<int64_t>& sizes) {
    for (size_t i = 0; i + 1 < sizes.size(); ++i) {
      layers->push_back(torch::nn::Linear(sizes[i], sizes[i + 1]));
    }
    register_module("layers", layers);
  }
  torch::Tensor forward(torch::Tensor x) {
    for (auto& layer : *layers) {
      x = layer->as<torch::nn::Linear>()->forward(x);
      x = torch::maximum(x, torch::zeros({}));
    }
    return x;
  }
  torch::nn::ModuleList layers;
};
TORCH_MODULE(TorchModel);

class Model : public nn::Module {
 public:
  explicit Model(const std::vector<int64_t>& sizes) : nn::Module("Model") {
    for (size_t i = 0; i + 1 < sizes.size(); ++i)
      layers.push_back(nn::Linear(sizes[i], sizes[i + 1]));
    register_module("layers", layers);
  }
  Array forward(const Array& input) override {
    Array x = input;
    for (const auto& layer : layers) x = jnp::maximum((*layer)(x), 0.0f);
    return x;
  }
  nn::ModuleList layers;
};

TEST(TorchOracle, ImportAndExportAModel) {
  const std::vector<int64_t> sizes{12, 16, 16, 3};
  torch::manual_seed(20);
  TorchModel tm(sizes);
  Model pm(sizes);
  nn::StateDict imported = px::import_parameters(*tm);
  EXPECT_EQ(imported.keys(), pm.state_dict().keys());
  pm.load_state_dict(imported);
  torch::Tensor x = randn({5, 12}, 21);
  expect_close(pm(px::from_torch(x)), tm->forward(x), "Model forward");
  // Train in parax a step, export to LibTorch, and LibTorch computes what parax does.
  nn::StateDict p2 = px::tree::map([](const Array& a) { return a * 1.5f; }, pm.state_dict());
  px::export_parameters(p2, *tm);
  expect_close(nn::functional_call(pm, p2, px::from_torch(x)), tm->forward(x), "after export");
  nn::StateDict missing = p2;
  missing = nn::StateDict{{"layers.0.weight", p2["layers.0.weight"]}};
  EXPECT_THROW(px::export_parameters(missing, *tm), px::ValueError);
  // Sharded state dicts export too (gathered per tensor).
  auto mesh = px::make_mesh({8}, {"d"});
  px::export_parameters(px::device_put(p2, px::NamedSharding(mesh, px::P())), *tm);
  expect_close(nn::functional_call(pm, p2, px::from_torch(x)), tm->forward(x), "sharded export");
}

// nn::optim (optax underneath) against torch::optim: 10 steps on the same quadratic.
using MakeTorchOpt = std::function<std::unique_ptr<torch::optim::Optimizer>(torch::nn::Linear&)>;

template <class MakeParax>
void check_optimizer(const std::string& what, const MakeTorchOpt& make_t, MakeParax make_p) {
  torch::manual_seed(30);
  torch::nn::Linear tl(4, 3);
  nn::Linear pl(4, 3);
  pl->load_state_dict(px::import_parameters(*tl));
  std::unique_ptr<torch::optim::Optimizer> topt = make_t(tl);
  auto popt = make_p(pl);
  torch::Tensor x = randn({8, 4}, 31), y = randn({8, 3}, 32);
  Array px_x = px::from_torch(x), px_y = px::from_torch(y);
  auto grad_fn = px::jit(px::grad([&](const nn::StateDict& p) {
    return nn::MSELoss()(nn::functional_call(pl, p, px_x), px_y);
  }));
  for (int step = 0; step < 10; ++step) {
    topt->zero_grad();
    torch::nn::MSELoss()(tl->forward(x), y).backward();
    topt->step();
    popt.step(grad_fn(pl.state_dict()));
    expect_close(pl->weight, tl->weight, what + " weight, step " + std::to_string(step), 1e-5,
                 1e-6);
    expect_close(pl->bias, tl->bias, what + " bias, step " + std::to_string(step), 1e-5, 1e-6);
  }
}

TEST(TorchOracle, OptimizersMatchTorchOptim) {
  check_optimizer(
      "SGD",
      [](torch::nn::Linear& m) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::SGD>(m->parameters(), torch::optim::SGDOptions(0.1));
      },
      [](nn::Linear& m) { return nn::optim::SGD(m, 0.1); });
  check_optimizer(
      "SGD momentum nesterov weight_decay",
      [](torch::nn::Linear& m) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::SGD>(
            m->parameters(),
            torch::optim::SGDOptions(0.1).momentum(0.9).nesterov(true).weight_decay(0.01));
      },
      [](nn::Linear& m) { return nn::optim::SGD(m, 0.1, 0.9, 0, 0.01, true); });
  check_optimizer(
      "Adam",
      [](torch::nn::Linear& m) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::Adam>(m->parameters(),
                                                    torch::optim::AdamOptions(1e-2));
      },
      [](nn::Linear& m) { return nn::optim::Adam(m, 1e-2); });
  check_optimizer(
      "AdamW",
      [](torch::nn::Linear& m) -> std::unique_ptr<torch::optim::Optimizer> {
        return std::make_unique<torch::optim::AdamW>(
            m->parameters(), torch::optim::AdamWOptions(1e-2).weight_decay(0.1));
      },
      [](nn::Linear& m) { return nn::optim::AdamW(m, 1e-2, 0.9, 0.999, 1e-8, 0.1); });
}

}  // namespace
