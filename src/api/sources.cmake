target_sources(parax PRIVATE
  api/array.cpp
  api/compiled.cpp
  api/debug.cpp
  api/device_put.cpp
  api/format.cpp
  api/numpy_creation.cpp)
include(${CMAKE_CURRENT_LIST_DIR}/sources_frontend.cmake OPTIONAL)
