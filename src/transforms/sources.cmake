target_sources(parax PRIVATE
  transforms/grad.cpp
  transforms/jit.cpp
  transforms/shard_map.cpp
  transforms/vmap.cpp)
