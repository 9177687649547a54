// parax_mp_bench: the multi-process benchmarks. Every process of a launch runs it
// (parax-run for Gloo, mpirun for MPI; scripts/bench-multiprocess starts it every way) and
// process 0 prints `RESULT <name> <ms>` lines, best-of-N wall times, each rep started
// after a barrier so that no process measures its peer's late arrival.
//
//   parax_mp_bench allreduce [reps]  under a launcher, 2 processes: 64 MiB float32 summed
//       by a jitted shard_map psum (1 device per process, then all 4 devices per process:
//       the hierarchical path), and by the engine library's own all-reduce of the same
//       buffer called directly (gloo::allreduce with gloo::sum, MPI_Allreduce).
//   parax_mp_bench mlp [reps]        the tutorial's data-parallel MLP gradient step over
//       every device of the run, alone (1 x 8) or under a launcher (2 x 4).
#include <gloo/allreduce.h>
#include <gloo/barrier.h>
#include <gloo/math.h>
#include <gloo/rendezvous/context.h>
#include <gloo/rendezvous/file_store.h>
#include <gloo/rendezvous/prefix_store.h>
#include <gloo/transport/tcp/device.h>
#include <mpi.h>
#include <parax/parax.h>

#include <chrono>
#include <cstdlib>
#include <cstring>
#include <functional>
#include <iostream>
#include <memory>
#include <string>
#include <vector>

#include "runtime/engine.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace jr = parax::random;
namespace lax = parax::lax;
using px::Array;
using px::P;

namespace {

bool distributed() {
  return std::getenv("PARAX_NUM_PROCESSES") || std::getenv("OMPI_COMM_WORLD_SIZE");
}

bool use_mpi() {
  const char* e = std::getenv("PARAX_CPU_COLLECTIVES");
  return e && std::string(e) == "mpi";
}

// The engine library itself, beside parax: a Gloo context of its own met through the
// same file store parax-run gives parax (its own key prefix), or MPI_COMM_WORLD.
class Direct {
 public:
  Direct() {
    if (!distributed() || use_mpi()) return;
    const std::string address = std::getenv("PARAX_COORDINATOR_ADDRESS");
    if (!address.starts_with("file://")) {
      throw std::runtime_error("parax_mp_bench needs parax-run's file:// coordinator");
    }
    store_ = std::make_unique<gloo::rendezvous::FileStore>(address.substr(7));
    gloo::rendezvous::PrefixStore prefixed("parax_mp_bench", *store_);
    gloo::transport::tcp::attr attr;
    attr.hostname = "127.0.0.1";
    device_ = gloo::transport::tcp::CreateDevice(attr);
    auto ctx =
        std::make_shared<gloo::rendezvous::Context>(px::process_index(), px::process_count());
    ctx->connectFullMesh(prefixed, device_);
    gloo_ = ctx;
  }

  void barrier() {
    if (gloo_) {
      gloo::BarrierOptions opts(gloo_);
      gloo::barrier(opts);
    } else if (distributed()) {
      MPI_Barrier(MPI_COMM_WORLD);
    }
  }

  void all_reduce(float* data, size_t n) {
    if (gloo_) {
      gloo::AllreduceOptions opts(gloo_);
      opts.setOutput(data, n);
      opts.setReduceFunction(
          static_cast<void (*)(void*, const void*, const void*, size_t)>(&gloo::sum<float>));
      gloo::allreduce(opts);
    } else {
      MPI_Allreduce(MPI_IN_PLACE, data, int(n), MPI_FLOAT, MPI_SUM, MPI_COMM_WORLD);
    }
  }

 private:
  std::unique_ptr<gloo::rendezvous::Store> store_;
  std::shared_ptr<gloo::transport::Device> device_;
  std::shared_ptr<gloo::Context> gloo_;
};

double best_ms(Direct& direct, int reps, const std::function<void()>& f) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    direct.barrier();
    const auto t0 = std::chrono::steady_clock::now();
    f();
    const std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

void result(const std::string& name, double ms) {
  if (px::process_index() == 0) std::cout << "RESULT " << name << " " << ms << std::endl;
}

// A jitted psum over a 1-D mesh of `devs`, on an array whose every block is `n` ones.
std::function<void()> parax_psum(const std::vector<px::Device>& devs, int64_t n) {
  const px::Mesh mesh(devs, "x");
  const px::NamedSharding sharding(mesh, P("x"));
  const Array x = px::make_array_from_callback(
      {int64_t(devs.size()) * n}, sharding,
      [&](const px::Index&) { return std::vector<float>(size_t(n), 1.0f); });
  auto f = px::jit(px::shard_map([](const Array& a) { return lax::psum(a, "x"); }, mesh, P("x"),
                                 P("x"), {.check_vma = false}));
  for (const auto& shard : f(x).addressable_shards()) {  // compiles, and checks the sum
    if (shard.data.to_vector<float>()[size_t(n) - 1] != float(devs.size())) {
      throw std::runtime_error("psum: wrong sum");
    }
  }
  return [f, x] { f(x).block_until_ready(); };
}

// The variants run in turn within each repetition, so that a slow spell of the machine
// (2 cores, 2 processes) affects all of them alike rather than one.
void all_reduce(Direct& direct, int reps) {
  if (px::process_count() != 2) throw std::runtime_error("allreduce: run it on 2 processes");
  const int64_t n = 64 << 20 >> 2;  // 64 MiB of float32
  std::vector<px::Device> one, mine, all = px::devices();
  for (const px::Device& d : all) {
    if (one.empty() || one.back().process_index() != d.process_index()) one.push_back(d);
    if (d.process_index() == px::process_index()) mine.push_back(d);
  }
  const std::string dpp = std::to_string(px::local_device_count());
  std::vector<float> buf(size_t(n), 1.0f);
  const int group[] = {0, 1};
  const std::vector<std::pair<std::string, std::function<void()>>> variants = {
      {"allreduce.parax.1", parax_psum(one, n)},
      {"allreduce.engine", [&] { direct.all_reduce(buf.data(), size_t(n)); }},
      {"allreduce.parax." + dpp, parax_psum(all, n)},
      // Where the time of the others goes: the in-process psum over this process's
      // devices (the hierarchical path's local combine), and parax's Engine::all_reduce
      // alone on a warm buffer.
      {"allreduce.local." + dpp, parax_psum(mine, n)},
      {"allreduce.parax_engine_call", [&] {
         px::runtime::engine()->all_reduce(group, buf.data(), n, px::DType::float32,
                                           px::runtime::ReduceOp::sum, "parax_mp_bench");
       }}};
  std::vector<double> best(variants.size(), 1e30);
  for (int r = 0; r < reps; ++r) {
    for (size_t v = 0; v < variants.size(); ++v) {
      best[v] = std::min(best[v], best_ms(direct, 1, variants[v].second));
    }
  }
  for (size_t v = 0; v < variants.size(); ++v) result(variants[v].first, best[v]);
}

// The MLP of examples/neural_networks.cpp.
using Params = std::vector<std::pair<Array, Array>>;
using Batch = std::pair<Array, Array>;

Array loss(const Params& params, const Batch& batch) {
  Array inputs = batch.first, outputs;
  for (const auto& [W, b] : params) {
    outputs = jnp::dot(inputs, W) + b;
    inputs = jnp::maximum(outputs, 0.0f);
  }
  return jnp::mean(jnp::sum(jnp::square(outputs - batch.second), -1));
}

std::pair<Params, Batch> init_model(jr::Key key, const std::vector<int64_t>& sizes,
                                    int64_t batch_size) {
  jr::Key keys = jr::split(key, int64_t(sizes.size()));
  key = keys[0];
  Params params;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    jr::Key k = jr::split(keys[int64_t(i) + 1]);
    params.emplace_back(jr::normal(k[0], {sizes[i], sizes[i + 1]}) / jnp::sqrt(float(sizes[i])),
                        jr::normal(k[1], {sizes[i + 1]}));
  }
  keys = jr::split(key, 3);
  return {params,
          {jr::normal(keys[1], {batch_size, sizes.front()}),
           jr::normal(keys[2], {batch_size, sizes.back()})}};
}

void mlp(Direct& direct, int reps) {
  auto gradfun = px::jit(px::grad(loss));
  auto [params, batch] = init_model(jr::key(0), {784, 1024, 1024, 1024, 10}, 8192);
  auto mesh = px::make_mesh({px::device_count()}, {"batch"});
  const Batch dp_batch = px::device_put(batch, px::NamedSharding(mesh, P("batch")));
  const Params dp_params = px::device_put(params, px::NamedSharding(mesh, P()));
  gradfun(dp_params, dp_batch)[0].first.block_until_ready();  // compiles
  const std::string layout =
      std::to_string(px::process_count()) + "x" + std::to_string(px::local_device_count());
  result("mlp." + layout,
         best_ms(direct, reps, [&] { gradfun(dp_params, dp_batch)[0].first.block_until_ready(); }));
}

}  // namespace

int main(int argc, char** argv) {
  const std::string mode = argc > 1 ? argv[1] : "";
  const int reps = argc > 2 ? std::atoi(argv[2]) : 5;
  if (mode != "allreduce" && mode != "mlp") {
    std::cerr << "usage: parax_mp_bench allreduce|mlp [reps]\n";
    return 2;
  }
  try {
    if (distributed()) px::distributed::initialize();
    {
      Direct direct;
      if (mode == "allreduce") {
        all_reduce(direct, reps);
      } else {
        mlp(direct, reps);
      }
      direct.barrier();
    }
    if (distributed()) px::distributed::shutdown();
  } catch (const std::exception& e) {
    std::cerr << "parax_mp_bench: " << e.what() << "\n";
    return 1;
  }
  return 0;
}
