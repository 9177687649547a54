target_sources(parax PRIVATE
  base/check.cpp
  base/config.cpp
  base/dtype.cpp
  base/nested_format.cpp
  base/shape.cpp
  base/thread_pool.cpp)
