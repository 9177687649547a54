target_sources(parax PRIVATE
  runtime/buffer.cpp
  runtime/client.cpp
  runtime/transfer.cpp)
