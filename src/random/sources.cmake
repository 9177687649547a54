# jax.random: keys, bits, samplers and distributions.
target_sources(parax PRIVATE
  random/distributions.cpp
  random/random.cpp)
