target_sources(parax PRIVATE
  transforms/custom_derivatives.cpp
  transforms/grad.cpp
  transforms/jit.cpp
  transforms/pmap.cpp
  transforms/shard_map.cpp
  transforms/vmap.cpp)
