# The api layer: Array and the ways into it (device_put, compiled objects, printing, debug).
target_sources(parax PRIVATE
  api/array.cpp
  api/compiled.cpp
  api/debug.cpp
  api/explain.cpp
  api/device_put.cpp
  api/format.cpp)
