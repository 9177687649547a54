// The tutorial's data-parallel MLP (examples/neural_networks.cpp, "8-way batch data
// parallelism") across processes: every process runs this same program, holds the batch
// rows of its own devices, and the gradient's all-reduce crosses processes. Started by a
// launcher, e.g. on one host with 2 processes of 4 devices each:
//
//   parax-run -n 2 --devices-per-process 4 ./multiprocess_training --small
//   PARAX_CPU_COLLECTIVES=mpi PARAX_NUM_CPU_DEVICES=4 mpirun -n 2 ./multiprocess_training
//
// It prints the losses the single-process example prints, on every process. With
// --checkpoint DIR [--stop-after K] it trains resumably (resumable_training.h): a run
// stopped after step K resumes from DIR with another process count.
#include <parax/parax.h>

#include "resumable_training.h"

#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
using px::Array;
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

// Every process draws the same parameters and batch from the same key.
std::pair<Params, Batch> init_model(jr::Key key, const std::vector<int64_t>& layer_sizes,
                                    int64_t batch_size) {
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

int main(int argc, char** argv) {
  px::distributed::initialize();  // from the launcher's environment
  const auto [small, checkpoint, stop_after] = parse_training_args(argc, argv);
  const std::vector<int64_t> layer_sizes = small ? std::vector<int64_t>{784, 64, 64, 64, 10}
                                                 : std::vector<int64_t>{784, 8192, 8192, 8192, 10};
  const int64_t batch_size = small ? 128 : 8192;
  const float step_size = 1e-5f;

  auto loss_jit = px::jit(loss);
  auto gradfun = px::jit(px::grad(loss));
  auto [params, batch] = init_model(jr::key(0), layer_sizes, batch_size);
  if (!checkpoint.empty()) {  // resumable, also with another process count
    train_resumable(
        checkpoint, stop_after, params, batch,
        [&](const Params& p, const Batch& b) { return sgd(p, gradfun(p, b), step_size); },
        loss_jit);
    px::distributed::shutdown();
    return 0;
  }

  std::cout << "# " << px::device_count() << "-way batch data parallelism over "
            << px::process_count() << " processes\n";
  // The mesh spans every process's devices; each process places the batch rows of its own
  // devices, and the replicated parameters on its own devices.
  auto mesh = px::make_mesh({px::device_count()}, {"batch"});
  Batch dp_batch = px::device_put(batch, px::NamedSharding(mesh, P("batch")));
  Params dp_params = px::device_put(params, px::NamedSharding(mesh, P()));
  std::cout << loss_jit(dp_params, dp_batch).str() << "\n";
  for (int i = 0; i < 30; ++i) dp_params = sgd(dp_params, gradfun(dp_params, dp_batch), step_size);
  std::cout << loss_jit(dp_params, dp_batch).str() << "\n";
  px::distributed::shutdown();
  return 0;
}
