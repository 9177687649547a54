target_sources(parax PRIVATE
  runtime/buffer.cpp
  runtime/client.cpp
  runtime/collectives.cpp
  runtime/executor.cpp
  runtime/transfer.cpp)
