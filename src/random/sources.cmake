# jax.random: keys, bits, samplers and distributions, and XLA:CPU's float32 arithmetic they
# reproduce.
target_sources(parax PRIVATE
  random/distributions.cpp
  random/keys.cpp
  random/samplers.cpp
  random/xla_cpu_math.cpp)
