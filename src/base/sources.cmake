target_sources(parax PRIVATE
  base/box_copy.cpp
  base/check.cpp
  base/config.cpp
  base/dtype.cpp
  base/nested_format.cpp
  base/promotion.cpp
  base/shape.cpp
  base/sizes.cpp
  base/thread_pool.cpp
  base/trace_events.cpp)
