# parax::nn: jax.nn's functions, the torch-style modules and flax's pooling.
target_sources(parax PRIVATE
  nn/functions.cpp
  nn/module.cpp
  nn/pooling.cpp)
