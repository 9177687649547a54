target_sources(parax PRIVATE
  transforms/jit.cpp)
