# parax::optax: gradient transformations, optimizers and their torch-style wrappers.
target_sources(parax PRIVATE
  optax/optax.cpp)
