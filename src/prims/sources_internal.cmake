target_sources(parax PRIVATE
  prims/collectives.cpp
  prims/fusion.cpp
  prims/named_collectives.cpp
  prims/shard_map.cpp
  prims/pjit.cpp
  prims/random_bits.cpp
  prims/shard_slice.cpp
  prims/stop_gradient.cpp
  prims/sharding_constraint.cpp
  prims/device_put.cpp)
