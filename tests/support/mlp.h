// The tutorial's MLP (examples/neural_networks.cpp, benchmarks/workloads.cpp) at test size,
// with deterministic parameters, for tests of transforms over a whole training step.
#pragma once

#include <cmath>
#include <utility>
#include <vector>

#include "parax/parax.h"

namespace parax::test_support {

using MlpParams = std::vector<std::pair<Array, Array>>;
using MlpBatch = std::pair<Array, Array>;

inline Array mlp_predict(const MlpParams& params, Array inputs) {
  Array outputs;
  for (const auto& [W, b] : params) {
    outputs = numpy::dot(inputs, W) + b;
    inputs = numpy::maximum(outputs, 0.0f);
  }
  return outputs;
}

inline Array mlp_loss(const MlpParams& params, const MlpBatch& batch) {
  Array predictions = mlp_predict(params, batch.first);
  return numpy::mean(numpy::sum(numpy::square(predictions - batch.second), -1));
}

// Returns layers of `sizes` with smooth, fixed weights (scaled by 1/sqrt(fan_in)).
inline MlpParams mlp_init(const std::vector<int64_t>& sizes) {
  MlpParams params;
  for (size_t i = 0; i + 1 < sizes.size(); ++i) {
    Array W = numpy::sin(numpy::arange(sizes[i] * sizes[i + 1], DType::float32)
                             .reshape({sizes[i], sizes[i + 1]})) /
              float(std::sqrt(double(sizes[i])));
    Array b = numpy::cos(numpy::arange(sizes[i + 1], DType::float32)) * 0.1f;
    params.emplace_back(W, b);
  }
  return params;
}

// Places a 4-layer MLP's parameters as the tutorial's tensor-parallel layout does on a mesh
// with a 'model' axis: W2 P(None, 'model'), W3 P('model', None), the rest replicated.
inline MlpParams mlp_tensor_parallel(const MlpParams& params, const Mesh& mesh) {
  auto rep = NamedSharding(mesh, P());
  return {{device_put(params[0].first, rep), device_put(params[0].second, rep)},
          {device_put(params[1].first, NamedSharding(mesh, P(None, "model"))),
           device_put(params[1].second, NamedSharding(mesh, P("model")))},
          {device_put(params[2].first, NamedSharding(mesh, P("model", None))),
           device_put(params[2].second, rep)},
          {device_put(params[3].first, rep), device_put(params[3].second, rep)}};
}

}  // namespace parax::test_support
