# Multi-process utilities over the runtime's engines (jax.experimental.multihost_utils).
target_sources(parax PRIVATE
  distributed/multihost.cpp)
