# One file per primitive (elementwise families share one file per family: each
# primitive is one row there). Fragments per family keep parallel work apart.
target_sources(parax PRIVATE
  prims/prim_util.cpp
  prims/table.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/sources_elementwise.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/sources_structural.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/sources_contraction.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/sources_internal.cmake OPTIONAL)
include(${CMAKE_CURRENT_LIST_DIR}/sources_kernels.cmake)
