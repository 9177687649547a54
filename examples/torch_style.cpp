// The torchax tutorial "Distributed arrays and automatic parallelization"
// (seeds/torchax-distributed-arrays.txt), cell by cell, with parax::nn in LibTorch's
// vocabulary: a sharded random tensor, computation following its sharding, the errors for
// disagreeing shardings, a constraint inside jit; then a torch-style Model (a ModuleList of
// Linear) trained through functional_call, MSELoss and optax::sgd, 8-way data parallel and
// then with the tutorial's name_to_sharding 4x2 layout, continuing from the trained weights.
//
// The tutorial's tensors come from torch's RNG; parax draws its own (parax's PRNG, seeded
// by nn::manual_seed and random::key), so printed values differ from the tutorial's while
// layouts, names and the losses' behaviour match. Timings (%timeit) go to stderr.
//   torch_style [--small]   (--small: 16x16 arrays, layers [784, 64, 64, 64, 10], batch 128)
#include <parax/parax.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <iostream>

#include "print_exception.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace nn = parax::nn;
namespace optax = parax::optax;
using px::Array;
using px::None;
using px::P;

namespace {

using tutorial::print_exception;

bool host_allclose(const Array& a, const Array& b) {
  auto x = a.to_vector<float>();
  auto y = b.to_vector<float>();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) > 1e-8 + 1e-5 * std::abs(y[i])) return false;
  }
  return true;
}

template <class F>
double best_ms(F&& f, int reps = 5) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

void visualize_array_sharding(const Array& a) { px::debug::visualize_array_sharding(a); }

// class Model(torch.nn.Module): a ModuleList of Linear layers, each followed by
// max(x, 0).
class Model : public nn::Module {
 public:
  explicit Model(const std::vector<int64_t>& layer_sizes) : nn::Module("Model") {
    for (size_t i = 0; i + 1 < layer_sizes.size(); ++i) {
      layers.push_back(nn::Linear(layer_sizes[i], layer_sizes[i + 1]));
    }
    register_module("layers", layers);
  }

  Array forward(const Array& input) override {
    Array x = input;
    for (const auto& layer : layers) {
      x = (*layer)(x);
      x = jnp::maximum(x, jnp::asarray(0.0f));
    }
    return x;
  }

  nn::ModuleList layers;
};

using Batch = std::pair<Array, Array>;

}  // namespace

int main(int argc, char** argv) {
  // jax.config.update('jax_num_cpu_devices', 8); print(jax.devices())
  px::config::set_num_cpu_devices(8);
  std::cout << px::devices() << "\n";
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  const int64_t n = small ? 16 : 8192;
  nn::manual_seed(0);

  // ---- Intro and a quick example ----
  auto mesh = px::make_mesh({4, 2}, {"x", "y"});
  // x = torch.randn((8192, 8192), device='jax')
  Array x = px::random::normal(nn::next_key(), {n, n});
  Array y = px::device_put(x, px::NamedSharding(mesh, P("x", "y")));
  visualize_array_sharding(y);
  Array z = jnp::sin(y);
  visualize_array_sharding(z);
  std::cerr << "sin: single device " << best_ms([&] { jnp::sin(x).block_until_ready(); })
            << " ms, 8 devices " << best_ms([&] { jnp::sin(y).block_until_ready(); }) << " ms\n";

  // ---- Sharding basics, and the NamedSharding subclass ----
  x = px::random::normal(px::random::key(0), {n, n});
  visualize_array_sharding(x);
  auto default_mesh = px::make_mesh({4, 2}, {"a", "b"});
  auto mesh_sharding = [&](P spec) { return px::NamedSharding(default_mesh, spec); };
  for (P spec : {P("a", "b"), P("a", "b"), P("b", "a"), P("a", None), P(None, "b"), P(None, "a"),
                 P({"a", "b"}, None)}) {
    visualize_array_sharding(px::device_put(x, mesh_sharding(spec)));
  }

  // ---- Computation follows data sharding ----
  mesh = px::make_mesh({4, 2}, {"a", "b"});
  x = px::device_put(x, px::NamedSharding(mesh, P("a", "b")));
  std::cout << "input sharding:\n";
  visualize_array_sharding(x);
  y = jnp::sin(x);
  std::cout << "output sharding:\n";
  visualize_array_sharding(y);

  // The tutorial's allclose of the sharded and the single-device x @ x holds because XLA
  // sums each entry in one order however the output is split. A BLAS kernel need not
  // (OpenBLAS's Haswell kernel sums a 16-row tile in another order than a 4-row one), and
  // with normal x the entries near zero then differ by more than allclose's rtol. So the
  // products here are of |x|: with no cancellation, any two orders of a length-n sum agree
  // within 2 n u of it (u = 2^-24; 2e-6 for --small's n = 16, below rtol 1e-5).
  const Array x_abs = jnp::abs(x);
  y = px::device_put(x_abs, px::NamedSharding(mesh, P("a", None)));
  z = px::device_put(x_abs, px::NamedSharding(mesh, P(None, "b")));
  std::cout << "lhs sharding:\n";
  visualize_array_sharding(y);
  std::cout << "rhs sharding:\n";
  visualize_array_sharding(z);
  Array w = jnp::matmul(y, z);
  std::cout << "out sharding:\n";
  visualize_array_sharding(w);

  Array x_single = px::device_put(x_abs, px::devices()[0]);
  visualize_array_sharding(x_single);
  // torch.allclose(... .cpu(), ... .cpu()): both brought to the host first.
  std::cout << (host_allclose(jnp::matmul(x_single, x_single), jnp::matmul(y, z)) ? "True"
                                                                                  : "False")
            << "\n";
  std::cerr << "matmul: single device "
            << best_ms([&] { jnp::matmul(x_single, x_single).block_until_ready(); }, 2)
            << " ms, sharded " << best_ms([&] { jnp::matmul(y, z).block_until_ready(); }, 2)
            << " ms\n";
  Array w_copy = jnp::copy(w);
  visualize_array_sharding(w_copy);

  // ---- When explicit shardings disagree, JAX errors ----
  auto devices = px::devices();
  px::NamedSharding sharding1(px::Mesh({devices.begin(), devices.begin() + 4}, "x"), P("x"));
  px::NamedSharding sharding2(px::Mesh({devices.begin() + 4, devices.end()}, "x"), P("x"));
  try {
    px::device_put(x, sharding1) + px::device_put(x, sharding2);
  } catch (const px::ValueError& e) {
    print_exception(e);
  }
  std::vector<px::Device> permuted_devices;
  for (int i : {0, 1, 2, 3, 6, 7, 4, 5}) permuted_devices.push_back(devices[size_t(i)]);
  sharding1 = px::NamedSharding(px::Mesh(devices, "x"), P("x"));
  sharding2 = px::NamedSharding(px::Mesh(permuted_devices, "x"), P("x"));
  try {
    px::device_put(x, sharding1) + px::device_put(x, sharding2);
  } catch (const px::ValueError& e) {
    print_exception(e);
  }
  y = px::device_put(x, sharding1);
  y + jnp::ones_like(y);
  y + jnp::arange(y.size()).reshape(y.shape());
  std::cout << "no error!\n";

  // ---- Constraining shardings of intermediates in jitted code ----
  mesh = px::make_mesh({4, 2}, {"x", "y"});
  x = px::random::normal(nn::next_key(), {n, n});
  auto f = px::jit([&](Array v) {
    v = v + 1;
    return px::lax::with_sharding_constraint(v, px::NamedSharding(mesh, P("y", "x")));
  });
  visualize_array_sharding(x);
  y = f(x);
  visualize_array_sharding(y);
  auto g = px::jit([&](Array v) {
    v = v + 1;
    return px::lax::with_sharding_constraint(v, px::NamedSharding(mesh, P()));
  });
  visualize_array_sharding(x);
  y = g(x);
  visualize_array_sharding(y);

  // ---- Examples: neural networks ----
  const std::vector<int64_t> layer_sizes = small ? std::vector<int64_t>{784, 64, 64, 64, 10}
                                                 : std::vector<int64_t>{784, 1024, 1024, 1024, 10};
  const int64_t batch_size = small ? 128 : 8192;
  Model model(layer_sizes);
  Array inputs = px::random::normal(nn::next_key(), {batch_size, layer_sizes.front()});
  std::cout << model(inputs) << "\n";

  nn::StateDict params = model.state_dict();
  // The model's forward as a function of its weights (torch.func.functional_call).
  auto pure_model_fun = [&](const nn::StateDict& weights, const Array& in) {
    return nn::functional_call(model, weights, in);
  };
  nn::MSELoss torch_loss;
  auto loss_fun = [&](const nn::StateDict& weight, const Batch& batch) {
    const auto& [in, label] = batch;
    Array res = pure_model_fun(weight, in);
    return torch_loss(res, label);
  };
  auto grad_fn = px::value_and_grad(loss_fun);
  auto grad_fn_jit = px::jit(grad_fn);
  auto loss_jit = px::jit(loss_fun);

  // 8-way batch data parallelism.
  auto dp_mesh = px::make_mesh({8}, {"batch"});
  px::NamedSharding sharding(dp_mesh, P("batch"));
  px::NamedSharding replicated_sharding(dp_mesh, P());
  Batch batch{px::random::normal(nn::next_key(), {batch_size, layer_sizes.front()}),
              px::random::normal(nn::next_key(), {batch_size, layer_sizes.back()})};
  batch = px::device_put(batch, sharding);
  params = px::device_put(params, replicated_sharding);
  std::cout << loss_jit(params, batch) << "\n";

  const double step_size = 1e-3;
  auto optimizer = optax::sgd(step_size);
  optax::OptState opt_state = optimizer.init(params);
  Array loss;
  for (int i = 0; i < 5; ++i) {
    auto [l, grads] = grad_fn_jit(params, batch);
    loss = l;
    nn::StateDict updates;
    std::tie(updates, opt_state) = optimizer.update(grads, opt_state);
    params = optax::apply_updates(params, updates);
    std::cout << i << " loss is " << loss << "\n";
  }
  const Array dp_last = loss_jit(params, batch);
  std::cout << dp_last << "\n";
  std::cerr << "grad step: 8-way "
            << best_ms([&] { grad_fn_jit(params, batch).first.block_until_ready(); }) << " ms\n";
  Batch batch_single = px::device_put(batch, px::devices()[0]);
  nn::StateDict params_single = px::device_put(params, px::devices()[0]);
  std::cerr << "grad step: single device "
            << best_ms([&] { grad_fn_jit(params_single, batch_single).first.block_until_ready(); })
            << " ms\n";

  // 4-way batch data parallelism and 2-way model tensor parallelism.
  auto tp_mesh = px::make_mesh({4, 2}, {"batch", "model"});
  batch = px::device_put(batch, px::NamedSharding(tp_mesh, P("batch", None)));
  visualize_array_sharding(batch.first);
  visualize_array_sharding(batch.second);
  replicated_sharding = px::NamedSharding(tp_mesh, P());
  // params.keys()
  std::cout << "odict_keys([";
  bool first = true;
  for (const auto& [name, tensor] : params) {
    std::cout << (first ? "'" : ", '") << name << "'";
    first = false;
  }
  std::cout << "])\n";
  std::map<std::string, px::Sharding> name_to_sharding{
      {"layers.0.weight", replicated_sharding},
      {"layers.0.bias", replicated_sharding},
      {"layers.1.weight", px::NamedSharding(tp_mesh, P("model"))},  // column parallel
      {"layers.1.bias", px::NamedSharding(tp_mesh, P("model"))},
      {"layers.2.weight", px::NamedSharding(tp_mesh, P(None, "model"))},
      {"layers.2.bias", replicated_sharding},
      {"layers.3.weight", replicated_sharding},
      {"layers.3.bias", replicated_sharding}};
  params = nn::shard(params, name_to_sharding);
  visualize_array_sharding(params["layers.1.weight"]);
  visualize_array_sharding(params["layers.2.weight"]);
  const Array tp_first = loss_jit(params, batch);
  std::cout << tp_first << "\n";

  optimizer = optax::sgd(step_size);
  opt_state = optimizer.init(params);
  for (int i = 0; i < 5; ++i) {
    auto [l, grads] = grad_fn_jit(params, batch);
    loss = l;
    nn::StateDict updates;
    std::tie(updates, opt_state) = optimizer.update(grads, opt_state);
    params = optax::apply_updates(params, updates);
    std::cout << i << " loss is " << loss << "\n";
  }
  const Array tp_last = loss_jit(params, batch);
  std::cout << tp_last << "\n";
  std::cout << loss_jit(params, batch) << "\n";
  visualize_array_sharding(params["layers.1.weight"]);
  visualize_array_sharding(params["layers.2.weight"]);
  std::cerr << "grad step: 4x2 "
            << best_ms([&] { grad_fn_jit(params, batch).first.block_until_ready(); }) << " ms\n";

  // As in the tutorial: the first tensor-parallel loss is the last data-parallel one (to
  // float32 rounding), training lowers the loss, and the weights keep their layouts.
  const float a = dp_last.item<float>(), b = tp_first.item<float>(), c = tp_last.item<float>();
  const bool ok = std::abs(a - b) <= 1e-5f * std::abs(a) && c < b &&
                  params["layers.1.weight"].sharding().is_equivalent_to(
                      px::NamedSharding(tp_mesh, P("model")), 2);
  if (!ok) std::cerr << "check failed: dp " << a << ", tp " << b << " -> " << c << "\n";
  return ok ? 0 : 1;
}
