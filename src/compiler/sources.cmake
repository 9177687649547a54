target_sources(parax PRIVATE
  compiler/buffers.cpp
  compiler/compile.cpp
  compiler/cost.cpp
  compiler/explain.cpp
  compiler/fuse.cpp
  compiler/partition.cpp
  compiler/passes.cpp
  compiler/propagate.cpp
  compiler/schedule.cpp
  compiler/spmd.cpp)
