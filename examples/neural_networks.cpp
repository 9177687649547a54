// "Examples: neural networks" from the distributed-arrays tutorial
// (seeds/jax-distributed-arrays.txt) on 8 virtual CPU devices: the MLP's loss and
// gradient under jit, 8-way batch data parallelism, then 4-way batch x 2-way model tensor
// parallelism, 30 SGD steps each, with the tutorial's layer sizes (or --small ones).
// With --checkpoint DIR [--stop-after K]: the 8-way run alone, saved every 5 steps and
// resumed from DIR on another mesh (resumable_training.h).
#include <parax/parax.h>

#include "resumable_training.h"

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
using px::Array;
using px::None;
using px::P;

using Params = std::vector<std::pair<Array, Array>>;
using Batch = std::pair<Array, Array>;

Array predict(const Params& params, Array inputs) {
  Array outputs;
  for (const auto& [W, b] : params) {
    outputs = jnp::dot(inputs, W) + b;
    inputs = jnp::maximum(outputs, 0.0f);
  }
  return outputs;
}

Array loss(const Params& params, const Batch& batch) {
  const auto& [inputs, targets] = batch;
  Array predictions = predict(params, inputs);
  return jnp::mean(jnp::sum(jnp::square(predictions - targets), -1));
}

std::pair<Array, Array> init_layer(const jr::Key& key, int64_t n_in, int64_t n_out) {
  jr::Key keys = jr::split(key);
  Array W = jr::normal(keys[0], {n_in, n_out}) / jnp::sqrt(float(n_in));
  Array b = jr::normal(keys[1], {n_out});
  return {W, b};
}

std::pair<Params, Batch> init_model(jr::Key key, const std::vector<int64_t>& layer_sizes,
                                    int64_t batch_size) {
  // key, *keys = split(key, len(layer_sizes))
  jr::Key keys = jr::split(key, int64_t(layer_sizes.size()));
  key = keys[0];
  Params params;
  for (size_t i = 0; i + 1 < layer_sizes.size(); ++i) {
    params.push_back(init_layer(keys[int64_t(i) + 1], layer_sizes[i], layer_sizes[i + 1]));
  }
  keys = jr::split(key, 3);
  Array inputs = jr::normal(keys[1], {batch_size, layer_sizes.front()});
  Array targets = jr::normal(keys[2], {batch_size, layer_sizes.back()});
  return {params, {inputs, targets}};
}

Params sgd(const Params& params, const Params& grads, float step_size) {
  Params out;
  for (size_t l = 0; l < params.size(); ++l) {
    out.emplace_back(params[l].first - step_size * grads[l].first,
                     params[l].second - step_size * grads[l].second);
  }
  return out;
}

template <class F>
double best_ms(F&& f, int reps) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const auto [small, checkpoint, stop_after] = parse_training_args(argc, argv);
  const std::vector<int64_t> layer_sizes = small ? std::vector<int64_t>{784, 64, 64, 64, 10}
                                                 : std::vector<int64_t>{784, 8192, 8192, 8192, 10};
  const int64_t batch_size = small ? 128 : 8192;
  const float step_size = 1e-5f;

  auto loss_jit = px::jit(loss);
  auto gradfun = px::jit(px::grad(loss));
  auto [params, batch] = init_model(jr::key(0), layer_sizes, batch_size);
  if (!checkpoint.empty()) {  // the 8-way run, resumable (resumable_training.h)
    train_resumable(
        checkpoint, stop_after, params, batch,
        [&](const Params& p, const Batch& b) { return sgd(p, gradfun(p, b), step_size); },
        loss_jit);
    return 0;
  }

  std::cout << "# 8-way batch data parallelism\n";
  auto mesh = px::make_mesh({8}, {"batch"});
  px::NamedSharding sharding(mesh, P("batch"));
  px::NamedSharding replicated_sharding(mesh, P());
  Batch dp_batch = px::device_put(batch, sharding);
  Params dp_params = px::device_put(params, replicated_sharding);
  const Array dp_before = loss_jit(dp_params, dp_batch);
  std::cout << dp_before.str() << "\n";
  for (int i = 0; i < 30; ++i) dp_params = sgd(dp_params, gradfun(dp_params, dp_batch), step_size);
  const Array dp_after = loss_jit(dp_params, dp_batch);
  std::cout << dp_after.str() << "\n";
  const int reps = small ? 5 : 2;
  double sharded =
      best_ms([&] { gradfun(dp_params, dp_batch)[0].first.block_until_ready(); }, reps);
  Batch batch_single = px::device_put(dp_batch, px::devices()[0]);
  Params params_single = px::device_put(dp_params, px::devices()[0]);
  double single =
      best_ms([&] { gradfun(params_single, batch_single)[0].first.block_until_ready(); }, reps);
  std::cerr << "gradient step: 8-way " << sharded << " ms, single device " << single
            << " ms (ratio " << sharded / single << ")\n";

  std::cout << "# 4-way batch data parallelism and 2-way model tensor parallelism\n";
  auto mesh42 = px::make_mesh({4, 2}, {"batch", "model"});
  Batch tp_batch = px::device_put(batch, px::NamedSharding(mesh42, P("batch", None)));
  px::debug::visualize_array_sharding(tp_batch.first);
  px::debug::visualize_array_sharding(tp_batch.second);
  px::NamedSharding rep(mesh42, P());
  Params tp_params{{px::device_put(params[0].first, rep), px::device_put(params[0].second, rep)},
                   {px::device_put(params[1].first, px::NamedSharding(mesh42, P(None, "model"))),
                    px::device_put(params[1].second, px::NamedSharding(mesh42, P("model")))},
                   {px::device_put(params[2].first, px::NamedSharding(mesh42, P("model", None))),
                    px::device_put(params[2].second, rep)},
                   {px::device_put(params[3].first, rep), px::device_put(params[3].second, rep)}};
  px::debug::visualize_array_sharding(tp_params[1].first);
  px::debug::visualize_array_sharding(tp_params[2].first);
  const px::Sharding w2 = tp_params[1].first.sharding(), w3 = tp_params[2].first.sharding();
  std::cout << loss_jit(tp_params, tp_batch).str() << "\n";
  for (int i = 0; i < 30; ++i) tp_params = sgd(tp_params, gradfun(tp_params, tp_batch), step_size);
  const Array tp_after = loss_jit(tp_params, tp_batch);
  std::cout << tp_after.str() << "\n";
  px::debug::visualize_array_sharding(tp_params[1].first);
  px::debug::visualize_array_sharding(tp_params[2].first);
  double tp = best_ms([&] { gradfun(tp_params, tp_batch)[0].first.block_until_ready(); }, reps);
  std::cerr << "gradient step: 4x2 " << tp << " ms, single device " << single << " ms (ratio "
            << tp / single << ")\n";
  // What CI checks: training lowered the loss, both layouts agree, shardings were kept.
  const float before = dp_before.item<float>(), a = dp_after.item<float>();
  const float b = tp_after.item<float>();
  const bool ok = a < before && std::abs(a - b) <= 1e-4f * std::abs(a) &&
                  tp_params[1].first.sharding().is_equivalent_to(w2, 2) &&
                  tp_params[2].first.sharding().is_equivalent_to(w3, 2);
  if (!ok) std::cerr << "check failed: loss " << before << " -> " << a << " (4x2: " << b << ")\n";
  return ok ? 0 : 1;
}
