// The seed workloads, through parax's public API on 8 virtual CPU devices: sin, dot,
// a jitted 10-op elementwise chain, the MLP forward+loss step, eager dispatch latency, and
// the in-cache blocks that give parax's own SIMD-math ceiling (run by the one-CPU probe of
// single_core.cpp). Every benchmark calls once untimed first, so compilation and the first
// touch of caches and buffers are not timed.
#include <parax/parax.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <functional>
#include <random>
#include <string>
#include <utility>
#include <vector>

#include "bench.h"

namespace parax_bench {
namespace {

namespace np = parax::numpy;
using parax::Array;
using parax::NamedSharding;
using parax::None;
using parax::P;

// ---- Inputs ------------------------------------------------------------------------------

// N(0,1) values, as from jax.random.normal: sin's cost can depend on the argument range.
// A pool of 1 Mi values is tiled, because drawing 64 Mi normals would cost seconds of setup.
std::vector<float> normal_values(int64_t n, unsigned seed, float scale = 1.0f) {
  constexpr int64_t kPool = int64_t(1) << 20;
  std::mt19937 rng(seed);
  std::normal_distribution<float> dist(0.0f, scale);
  std::vector<float> out(static_cast<size_t>(n));
  const int64_t unique = std::min(n, kPool);
  for (int64_t i = 0; i < unique; ++i) out[size_t(i)] = dist(rng);
  for (int64_t i = unique; i < n; ++i) out[size_t(i)] = out[size_t(i % unique)];
  return out;
}

Array normal_array(parax::Shape shape, unsigned seed, float scale = 1.0f) {
  return np::array(normal_values(parax::shape_size(shape), seed, scale), shape);
}

Array on_device0(const Array& x) { return parax::device_put(x, parax::devices()[0]); }

NamedSharding mesh_ab(P spec) {
  return NamedSharding(parax::make_mesh({4, 2}, {"a", "b"}), std::move(spec));
}

// One row of the summary per layout; "1" is one device, the others use all 8.
std::string layout_name(bool sharded) { return sharded ? "devices:8" : "devices:1"; }

// ---- The functions measured --------------------------------------------------------------

// Ten elementwise primitives, a mix of cheap arithmetic and transcendental functions, reading
// one input and writing one output: fused, it moves the bytes of one sin.
Array chain10(const Array& x) {
  Array y = x * 1.0001f;             // mul
  y = y + 0.5f;                      // add
  y = np::sin(y);                    // sin
  y = np::tanh(y);                   // tanh
  y = np::exp(-np::abs(y));          // abs, neg, exp
  y = np::maximum(y - 0.25f, 0.0f);  // sub, max
  return y * x;                      // mul
}

using Layer = std::pair<Array, Array>;  // (W, b)
using Params = std::vector<Layer>;
using Batch = std::pair<Array, Array>;  // (inputs, targets)

// The tutorial's predict and loss.
Array predict(const Params& params, Array inputs) {
  Array outputs;
  for (const auto& [w, b] : params) {
    outputs = np::dot(inputs, w) + b;
    inputs = np::maximum(outputs, 0.0f);
  }
  return outputs;
}

Array loss(const Params& params, const Batch& batch) {
  Array predictions = predict(params, batch.first);
  return np::mean(np::sum(np::square(predictions - batch.second), -1));
}

// ---- Timing variants side by side -------------------------------------------------------

// One way of running a workload (a layout), timed under its own key.
struct Variant {
  std::string key;
  std::function<Array()> run;
};

std::vector<std::string> keys_of(const std::vector<Variant>& variants) {
  std::vector<std::string> keys;
  for (const Variant& v : variants) keys.push_back(v.key);
  return keys;
}

// Runs every variant once per benchmark iteration, in turn, each timed alone: a slow phase
// of a shared host then slows all of them alike, which keeps sharded/single ratios fair.
// Each variant runs once untimed first (compilation, first-touch of caches).
void time_variants(benchmark::State& state, const std::vector<Variant>& variants) {
  using Clock = std::chrono::steady_clock;
  for (const Variant& v : variants) v.run().block_until_ready();
  for (auto _ : state) {
    double total = 0;
    for (const Variant& v : variants) {
      const auto t0 = Clock::now();
      Array y = v.run();
      y.block_until_ready();
      const double s = std::chrono::duration<double>(Clock::now() - t0).count();
      measurement(v.key).seconds.push_back(s);
      total += s;
    }
    state.SetIterationTime(total);
  }
}

// The two variants of a workload: one device, and all 8.
std::vector<Variant> device_variants(const std::string& name) {
  return {Variant{workload_key(name, layout_name(false)), {}},
          Variant{workload_key(name, layout_name(true)), {}}};
}

// Shows each variant's best rate, named by the last part of its key ("devices:8").
void show_rates(benchmark::State& state, const std::vector<Variant>& variants,
                const std::string& unit, double work, double scale) {
  for (const Variant& v : variants) {
    const std::string name = v.key.substr(v.key.rfind('/') + 1) + " " + unit;
    show_rate(state, v.key, name.c_str(), work, scale);
  }
}

// ---- Elementwise -------------------------------------------------------------------------

// An 8192x8192 input on one device and one laid out P('a','b') over all 8.
std::pair<Array, Array> big_inputs(unsigned seed) {
  Array host = normal_array({kBig, kBig}, seed);
  return {on_device0(host), parax::device_put(host, mesh_ab(P("a", "b")))};
}

void bm_sin(benchmark::State& state) {
  std::vector<Variant> variants = device_variants("sin_8192");
  guarded(state, keys_of(variants), [&] {
    auto [single, sharded] = big_inputs(1);
    variants[0].run = [x = single] { return np::sin(x); };
    variants[1].run = [x = sharded] { return np::sin(x); };
    time_variants(state, variants);
    show_rates(state, variants, "GB/s", 2.0 * 4.0 * double(kBig * kBig), 1e-9);
  });
}

void bm_chain(benchmark::State& state) {
  std::vector<Variant> variants = device_variants("chain10_8192");
  guarded(state, keys_of(variants), [&] {
    auto [single, sharded] = big_inputs(2);
    auto f = parax::jit(chain10);
    variants[0].run = [f, x = single] { return f(x); };
    variants[1].run = [f, x = sharded] { return f(x); };
    time_variants(state, variants);
    show_rates(state, variants, "GB/s", 2.0 * 4.0 * double(kBig * kBig), 1e-9);
  });
}

// parax's own compute ceiling: its kernels on a block that stays in cache, so memory does
// not bound them. The summary subtracts the 8x8 call's time (the fixed cost of a call) from
// the 16 Ki call's, leaving the time spent computing.
void bm_in_cache(benchmark::State& state, const std::string& op) {
  std::vector<Variant> variants = {Variant{cache_key(op, kTinyBlock), {}},
                                   Variant{cache_key(op, kCacheBlock), {}}};
  guarded(state, keys_of(variants), [&] {
    auto f = parax::jit(chain10);
    for (size_t i = 0; i < variants.size(); ++i) {
      const int64_t side = i == 0 ? 8 : 128;
      Array x = on_device0(normal_array({side, side}, 3));
      if (op == "sin") {
        variants[i].run = [x] { return np::sin(x); };
      } else {
        variants[i].run = [f, x] { return f(x); };
      }
    }
    time_variants(state, variants);
  });
  show_rate(state, variants[1].key, "16Ki Melem/s", double(kCacheBlock), 1e-6);
}

// The latency of a cached eager op on an array laid out over all 8 devices: what a user
// loop of small ops pays per op.
void bm_dispatch(benchmark::State& state) {
  const std::string key = workload_key("eager_dispatch_sin_8x8", layout_name(true));
  guarded(state, {key}, [&] {
    Array x = parax::device_put(normal_array({8, 8}, 4), mesh_ab(P("a", "b")));
    for (int i = 0; i < 10; ++i) np::sin(x).block_until_ready();
    time_loop(state, key, [&] {
      Array y = np::sin(x);
      y.block_until_ready();
      return y;
    });
  });
}

// ---- Matrix products ---------------------------------------------------------------------

void bm_dot(benchmark::State& state, int64_t n) {
  std::vector<Variant> variants = device_variants("dot_" + std::to_string(n));
  guarded(state, keys_of(variants), [&] {
    Array a = normal_array({n, n}, 5);
    Array b = normal_array({n, n}, 6);
    variants[0].run = [a = on_device0(a), b = on_device0(b)] { return np::dot(a, b); };
    variants[1].run = [a = parax::device_put(a, mesh_ab(P("a", None))),
                       b = parax::device_put(b, mesh_ab(P(None, "b")))] { return np::dot(a, b); };
    a = b = Array();
    time_variants(state, variants);
    show_rates(state, variants, "GFLOP/s", 2.0 * double(n) * double(n) * double(n), 1e-9);
  });
}

// ---- MLP ---------------------------------------------------------------------------------

struct Model {
  Params params;
  Batch batch;
};

// The tutorial's init_model, with host random numbers (not JAX's random streams).
Model init_model() {
  Model m;
  unsigned seed = 10;
  for (size_t i = 0; i + 1 < kMlpLayers.size(); ++i) {
    const int64_t n_in = kMlpLayers[i];
    const int64_t n_out = kMlpLayers[i + 1];
    Array w = normal_array({n_in, n_out}, seed++, 1.0f / std::sqrt(float(n_in)));
    Array b = normal_array({n_out}, seed++);
    m.params.emplace_back(w, b);
  }
  m.batch.first = normal_array({kMlpBatch, kMlpLayers.front()}, seed++);
  m.batch.second = normal_array({kMlpBatch, kMlpLayers.back()}, seed++);
  return m;
}

// Lays the model out as the tutorial's three settings do.
Model lay_out(const Model& host, const std::string& layout) {
  Model m = host;
  if (layout == kMlpSingle) {
    m.params = parax::device_put(host.params, parax::devices()[0]);
    m.batch = parax::device_put(host.batch, parax::devices()[0]);
  } else if (layout == kMlpDataParallel) {
    auto mesh = parax::make_mesh({8}, {"batch"});
    m.batch = parax::device_put(host.batch, NamedSharding(mesh, P("batch")));
    m.params = parax::device_put(host.params, NamedSharding(mesh, P()));
  } else {
    auto mesh = parax::make_mesh({4, 2}, {"batch", "model"});
    NamedSharding replicated(mesh, P());
    m.batch = parax::device_put(host.batch, NamedSharding(mesh, P("batch", None)));
    m.params = parax::device_put(host.params, replicated);
    auto& [w2, b2] = m.params[1];
    auto& [w3, b3] = m.params[2];
    w2 = parax::device_put(host.params[1].first, NamedSharding(mesh, P(None, "model")));
    b2 = parax::device_put(host.params[1].second, NamedSharding(mesh, P("model")));
    w3 = parax::device_put(host.params[2].first, NamedSharding(mesh, P("model", None)));
  }
  return m;
}

std::vector<Variant> mlp_variants(const std::string& name) {
  std::vector<Variant> variants;
  for (const char* layout : {kMlpSingle, kMlpDataParallel, kMlpDataTensorParallel}) {
    variants.push_back({workload_key(name, layout), {}});
  }
  return variants;
}

void bm_mlp_forward(benchmark::State& state) {
  std::vector<Variant> variants = mlp_variants("mlp_forward_loss");
  guarded(state, keys_of(variants), [&] {
    const Model host = init_model();
    auto loss_jit = parax::jit(loss);
    for (size_t i = 0; i < variants.size(); ++i) {
      const std::string layout = variants[i].key.substr(variants[i].key.rfind('/') + 1);
      Model m = lay_out(host, layout);
      // A layout may compute some layers on several devices at once (the tutorial's 4x2
      // replicates W1 and W4 over 'model'); the summary says how much extra work that is.
      const double devices = layout == kMlpSingle ? 1 : 8;
      measurement(variants[i].key).executed_flops =
          loss_jit.lower(m.params, m.batch).compile().cost_analysis().flops * devices;
      variants[i].run = [loss_jit, m] { return loss_jit(m.params, m.batch); };
    }
    time_variants(state, variants);
    show_rates(state, variants, "GFLOP/s", mlp_forward_flops(), 1e-9);
  });
}

#ifdef PARAX_HAS_GRAD
// The tutorial's training step, jit(grad(loss)), when PARAX_HAS_GRAD says parax::grad is
// built.
void bm_mlp_grad(benchmark::State& state) {
  std::vector<Variant> variants = mlp_variants("mlp_grad_step");
  guarded(state, keys_of(variants), [&] {
    const Model host = init_model();
    auto gradfun = parax::jit(parax::grad(loss));
    for (size_t i = 0; i < variants.size(); ++i) {
      const std::string layout = variants[i].key.substr(variants[i].key.rfind('/') + 1);
      variants[i].run = [gradfun, m = lay_out(host, layout)] {
        // Every gradient must be ready, not just the one time_variants waits for.
        std::vector<Array> leaves = parax::tree::leaves(gradfun(m.params, m.batch));
        for (const Array& leaf : leaves) leaf.block_until_ready();
        return leaves.front();
      };
    }
    time_variants(state, variants);
    show_rates(state, variants, "GFLOP/s", mlp_grad_flops(), 1e-9);
  });
}

// Eager grad(jit(loss)) beside jit(grad(loss)): pjit's rules make the former one compiled
// forward call and one backward call, so it should cost what the latter does.
void bm_mlp_grad_of_jit(benchmark::State& state) {
  std::vector<Variant> variants;
  for (const char* layout : {kMlpSingle, kMlpDataParallel, kMlpDataTensorParallel}) {
    variants.push_back({workload_key("mlp_grad_of_jit", layout), {}});
    variants.push_back({workload_key("mlp_jit_of_grad", layout), {}});
  }
  guarded(state, keys_of(variants), [&] {
    const Model host = init_model();
    const auto grad_of_jit = parax::grad(parax::jit(loss));
    const auto jit_of_grad = parax::jit(parax::grad(loss));
    for (size_t i = 0; i < variants.size(); i += 2) {
      const std::string layout = variants[i].key.substr(variants[i].key.rfind('/') + 1);
      const Model m = lay_out(host, layout);
      auto wait_all = [](const Params& grads) {
        std::vector<Array> leaves = parax::tree::leaves(grads);
        for (const Array& leaf : leaves) leaf.block_until_ready();
        return leaves.front();
      };
      variants[i].run = [=] { return wait_all(grad_of_jit(m.params, m.batch)); };
      variants[i + 1].run = [=] { return wait_all(jit_of_grad(m.params, m.batch)); };
    }
    time_variants(state, variants);
    show_rates(state, variants, "GFLOP/s", mlp_grad_flops(), 1e-9);
  });
}

// The 4x2 gradient step with a trace recording every kernel and collective of it (not
// written: only the recording's cost), beside the same step untraced: target 1.10.
void bm_mlp_grad_traced(benchmark::State& state) {
  std::vector<Variant> variants = {{workload_key("mlp_grad_untraced", kMlpDataTensorParallel), {}},
                                   {workload_key("mlp_grad_traced", kMlpDataTensorParallel), {}}};
  guarded(state, keys_of(variants), [&] {
    const Model m = lay_out(init_model(), kMlpDataTensorParallel);
    const auto gradfun = parax::jit(parax::grad(loss));
    auto step = [=] {
      std::vector<Array> leaves = parax::tree::leaves(gradfun(m.params, m.batch));
      for (const Array& leaf : leaves) leaf.block_until_ready();
      return leaves.front();
    };
    const std::string path = "/tmp/parax-bench-trace.json";  // never written
    variants[0].run = step;
    variants[1].run = [=] {
      parax::profiler::start_trace(path);
      Array out = step();
      parax::profiler::discard_trace();
      return out;
    };
    time_variants(state, variants);
  });
}
#endif

}  // namespace

void register_ceiling_benchmarks() {
  // Microseconds per call: let Google Benchmark pick the count.
  for (const char* op : {"sin", "chain10"}) {
    const std::string name = std::string("parax/") + op + "_in_cache";
    benchmark::RegisterBenchmark(name.c_str(), bm_in_cache, std::string(op))
        ->UseManualTime()
        ->MinTime(0.3)
        ->Unit(benchmark::kMicrosecond);
  }
}

void register_workload_benchmarks() {
  benchmark::RegisterBenchmark(workload_key("eager_dispatch_sin_8x8", layout_name(true)).c_str(),
                               bm_dispatch)
      ->UseManualTime()
      ->MinTime(0.5)
      ->Unit(benchmark::kMicrosecond);
  // Big workloads: a fixed few iterations, as each takes from tens of ms to seconds.
  auto big = [](const std::string& name, auto fn, int iterations, auto... args) {
    benchmark::RegisterBenchmark(("parax/" + name).c_str(), fn, args...)
        ->UseManualTime()
        ->Iterations(iterations)
        ->Unit(benchmark::kMillisecond);
  };
  big("sin_8192", bm_sin, 10);
  big("chain10_8192", bm_chain, 5);
  big("dot_4096", bm_dot, 6, int64_t(4096));
  big("dot_8192", bm_dot, 3, kBig);
  big("mlp_forward_loss", bm_mlp_forward, 5);
#ifdef PARAX_HAS_GRAD
  big("mlp_grad_step", bm_mlp_grad, 3);
  big("mlp_grad_of_jit", bm_mlp_grad_of_jit, 3);
  big("mlp_grad_traced", bm_mlp_grad_traced, 3);
#endif
}

}  // namespace parax_bench
