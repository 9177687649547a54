target_sources(parax PRIVATE
  core/aval.cpp
  core/primitive.cpp
  core/program.cpp
  core/tree.cpp)
