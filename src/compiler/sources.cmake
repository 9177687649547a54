target_sources(parax PRIVATE
  compiler/compile.cpp
  compiler/eager.cpp
  compiler/partition.cpp
  compiler/propagate.cpp
  compiler/spmd.cpp)
