# The lax layer: JAX's lax, typed functions that bind primitives, and the promotion helpers
# the front ends share.
target_sources(parax PRIVATE
  lax/collectives.cpp
  lax/control_flow.cpp
  lax/convolution.cpp
  lax/gather.cpp
  lax/lax.cpp
  lax/linalg.cpp
  lax/promote.cpp
  lax/special.cpp)
