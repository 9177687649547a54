target_sources(parax PRIVATE
  runtime/buffer.cpp
  runtime/collectives.cpp
  runtime/eager.cpp
  runtime/engine_stub.cpp
  runtime/executor.cpp
  runtime/loaded_plan.cpp
  runtime/reduce.cpp
  runtime/transfer.cpp)
