# Structural primitives: shape-changing data movement (one file per primitive).
target_sources(parax PRIVATE
  prims/iota.cpp
  prims/broadcast_in_dim.cpp
  prims/reshape.cpp
  prims/transpose.cpp
  prims/squeeze.cpp
  prims/expand_dims.cpp
  prims/slice.cpp
  prims/dynamic_slice.cpp
  prims/dynamic_update_slice.cpp
  prims/concatenate.cpp
  prims/pad.cpp
  prims/rev.cpp)
