# The api layer: Array and device_put, printing, debug, and the front ends (lax, numpy,
# random, the parallel transforms' public entry points).
target_sources(parax PRIVATE
  api/array.cpp
  api/compiled.cpp
  api/control_flow.cpp
  api/debug.cpp
  api/device_put.cpp
  api/format.cpp
  api/frontend.cpp
  api/lax.cpp
  api/linalg.cpp
  api/multihost.cpp
  api/numpy_creation.cpp
  api/numpy_linalg.cpp
  api/numpy_math.cpp
  api/numpy_reductions.cpp
  api/numpy_shape.cpp
  api/operators.cpp
  api/parallel.cpp
  api/random.cpp

  # gather and scatter
  api/lax_gather.cpp
  api/scatter_apply.cpp

  # numpy indexing and x.at[...]
  api/indexing.cpp

  # numpy's extra functions and parax::nn
  api/numpy_extra.cpp
  api/nn.cpp

  # parax::nn modules (torch-style) and parax::optax
  api/module.cpp
  api/optax.cpp

  # convolution and pooling
  api/convolution.cpp

  # custom derivatives
  api/custom_derivatives.cpp

  # random distributions
  api/random_distributions.cpp

  # special functions (lax and scipy.special)
  api/special.cpp)
