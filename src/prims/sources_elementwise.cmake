target_sources(parax PRIVATE
  prims/unary.cpp
  prims/binary.cpp
  prims/compare.cpp
  prims/select_n.cpp
  prims/clamp.cpp
  prims/fma.cpp
  prims/convert_element_type.cpp
  prims/autodiff_util.cpp
  prims/batching_util.cpp)
