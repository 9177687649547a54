target_sources(parax PRIVATE
  core/array_value.cpp
  core/autodiff.cpp
  core/aval.cpp
  core/backend.cpp
  core/batching.cpp
  core/callbacks.cpp
  core/primitive.cpp
  core/parse.cpp
  core/program.cpp
  core/rules.cpp
  core/source_site.cpp
  core/program_trace.cpp
  core/trace.cpp
  core/tree.cpp
  core/verify.cpp)
