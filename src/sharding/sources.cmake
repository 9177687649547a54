target_sources(parax PRIVATE
  sharding/mesh.cpp
  sharding/mesh_context.cpp
  sharding/named_sharding.cpp
  sharding/partition_spec.cpp
  sharding/positional_sharding.cpp
  sharding/sharding.cpp
  sharding/single_device_sharding.cpp
  sharding/topology.cpp
  sharding/visualize.cpp)
