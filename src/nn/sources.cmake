# parax::nn: jax.nn's functions and the torch-style modules.
target_sources(parax PRIVATE
  nn/functions.cpp
  nn/module.cpp)
