// Flax's pooling: lax.reduce_window over the spatial dimensions.
#include <limits>
#include <string>

#include "parax/convolution.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::nn {
namespace {

using Ints = std::vector<int64_t>;

// Flax's pool: windows over the spatial dimensions; a batch dimension is added when the
// inputs have none.
Array pool(const Array& inputs, const ArrayLike& init, lax::WindowComputation fn, Ints window,
           Ints strides, const lax::Padding& padding) {
  const int64_t batch_dims = inputs.ndim() - int64_t(window.size()) - 1;
  if (batch_dims < 0) {
    throw ValueError("pooling needs inputs of rank at least " + std::to_string(window.size() + 1) +
                     " (spatial dimensions and features), got shape " + shape_str(inputs.shape()) +
                     ".");
  }
  if (strides.empty()) strides = Ints(window.size(), 1);
  if (strides.size() != window.size()) {
    throw ValueError("pooling strides " + shape_str(Shape(strides.begin(), strides.end())) +
                     " must have one entry per window dimension " +
                     shape_str(Shape(window.begin(), window.end())) + ".");
  }
  const bool single = batch_dims == 0;
  const int64_t lead = single ? 1 : batch_dims;
  Array x = single ? lax::expand_dims(inputs, {0}) : inputs;
  Ints dims(size_t(lead), 1), step(size_t(lead), 1);
  dims.insert(dims.end(), window.begin(), window.end());
  step.insert(step.end(), strides.begin(), strides.end());
  dims.push_back(1);
  step.push_back(1);
  lax::Padding pads = padding;
  if (padding.mode.empty()) {
    std::vector<std::pair<int64_t, int64_t>> p(size_t(lead), {0, 0});
    p.insert(p.end(), padding.pairs.begin(), padding.pairs.end());
    p.emplace_back(0, 0);
    pads = lax::Padding(p);
  }
  Array y = lax::reduce_window(x, init, fn, dims, step, pads);
  return single ? lax::squeeze(y, {0}) : y;
}

}  // namespace

Array max_pool(const ArrayLike& inputs, Ints window_shape, Ints strides,
               const lax::Padding& padding) {
  return pool(inputs.array(), -std::numeric_limits<double>::infinity(), &lax::max, window_shape,
              strides, padding);
}

Array avg_pool(const ArrayLike& inputs, Ints window_shape, Ints strides,
               const lax::Padding& padding, bool count_include_pad) {
  const Array& x = inputs.array();
  const Array y = pool(x, 0.0, &lax::add, window_shape, strides, padding);
  if (count_include_pad) {
    int64_t size = 1;
    for (int64_t w : window_shape) size *= w;
    return y / double(size);
  }
  Shape div_shape(x.shape().begin(), x.shape().end() - 1);
  div_shape.push_back(1);
  if (div_shape.size() - 2 == window_shape.size()) div_shape[0] = 1;
  const Array counts =
      pool(numpy::ones(div_shape, x.dtype()), 0.0, &lax::add, window_shape, strides, padding);
  return y / counts;
}

}  // namespace parax::nn
