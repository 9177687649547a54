target_sources(parax PRIVATE
  transforms/grad.cpp
  transforms/jit.cpp)
