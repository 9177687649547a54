target_sources(parax PRIVATE
  core/aval.cpp
  core/tree.cpp)
