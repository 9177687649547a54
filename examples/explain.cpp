// Where the tutorial's DP x TP gradient step moves its bytes. The MLP of "Neural networks"
// (layers 784, 8192, 8192, 8192, 10; batch 8192) is compiled for 4-way batch x 2-way model
// parallelism from types alone, and the explainer lists each collective with the line
// below that needed it. Then the implicit-reshard policy refuses a constraint's all-to-all
// and accepts the same layout change spelled parax::reshard, and a CommLog counts the
// collectives of eager code per line. --small prints without the machine's time estimates
// (what CI compares).
#include <parax/parax.h>

#include <cstring>
#include <iostream>

namespace px = parax;
namespace jnp = parax::numpy;
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

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const bool small = argc > 1 && std::strcmp(argv[1], "--small") == 0;
  const px::ExplainOptions options{.estimates = !small};

  const px::Mesh mesh = px::make_mesh({4, 2}, {"batch", "model"});
  auto type = [&](px::Shape shape, px::PartitionSpec spec) -> Array {
    return px::ShapeDtypeStruct(std::move(shape), px::DType::float32,
                                px::NamedSharding(mesh, std::move(spec)));
  };
  const Params params = {{type({784, 8192}, P()), type({8192}, P())},
                         {type({8192, 8192}, P(None, "model")), type({8192}, P("model"))},
                         {type({8192, 8192}, P("model", None)), type({8192}, P())},
                         {type({8192, 10}, P()), type({10}, P())}};
  const Batch batch{type({8192, 784}, P("batch", None)), type({8192, 10}, P("batch", None))};
  const px::Compiled step =
      px::jit(px::grad(loss), {.name = "gradfun"}).lower(params, batch).compile();
  std::cout << step.explain().to_string(options);
  std::cout << "cost_analysis: " << step.cost_analysis().str() << "\n\n";

  // The tutorial's constraint, under parax_implicit_reshard='error'.
  const Array x = px::device_put(jnp::arange(256.0f).reshape({16, 16}),
                                 px::NamedSharding(mesh, P("batch", "model")));
  px::config::update("parax_implicit_reshard", "error");
  auto constrained = px::jit([&](const Array& v) {
    return px::lax::with_sharding_constraint(v + 1, px::NamedSharding(mesh, P("model", "batch")));
  });
  try {
    constrained(x);
  } catch (const px::ShardingError& e) {
    std::cout << "ShardingError: " << e.what() << "\n";
  }
  auto spelled = px::jit([](const Array& v) { return px::reshard(v + 1, P("model", "batch")); });
  {
    px::sharding::MeshScope scope(mesh);
    std::cout << "reshard: " << spelled(x).sharding().to_string() << "\n\n";
  }
  px::config::update("parax_implicit_reshard", "allow");

  // A few steps of the same model at small sizes, traced for Perfetto (ui.perfetto.dev) or
  // chrome://tracing: each device's kernels and collectives on a track of its own.
  {
    const int64_t n = 256;
    auto put = [&](Array v, px::PartitionSpec spec) {
      return px::device_put(v, px::NamedSharding(mesh, std::move(spec)));
    };
    const Params small_params = {
        {put(jnp::ones({64, n}) / 64.0f, P()), put(jnp::zeros({n}), P())},
        {put(jnp::ones({n, n}) / float(n), P(None, "model")), put(jnp::zeros({n}), P("model"))},
        {put(jnp::ones({n, n}) / float(n), P("model", None)), put(jnp::zeros({n}), P())},
        {put(jnp::ones({n, 10}) / float(n), P()), put(jnp::zeros({10}), P())}};
    const Batch small_batch{put(jnp::ones({128, 64}), P("batch", None)),
                            put(jnp::zeros({128, 10}), P("batch", None))};
    auto gradfun = px::jit(px::grad(loss), {.name = "gradfun"});
    px::profiler::start_trace("explain_trace.json");
    for (int step = 0; step < 3; ++step) {
      px::profiler::TraceAnnotation annotation("step " + std::to_string(step));
      gradfun(small_params, small_batch)[0].first.block_until_ready();
    }
    std::cout << "trace written to " << px::profiler::stop_trace() << "\n\n";
  }

  // Eager code, counted per line.
  px::debug::CommLog log;
  const Array w = px::device_put(jnp::ones({16, 8}), px::NamedSharding(mesh, P("model", None)));
  const Array y = jnp::dot(px::reshard(x, P(None, "model")), w);
  jnp::sum(y).block_until_ready();
  std::cout << log.table();
  return 0;
}
