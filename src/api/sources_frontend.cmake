# The lax and numpy front ends (api layer) and JAX's type promotion (base layer).
target_sources(parax PRIVATE
  base/promotion.cpp
  api/frontend.cpp
  api/lax.cpp
  api/numpy_linalg.cpp
  api/numpy_math.cpp
  api/numpy_reductions.cpp
  api/numpy_shape.cpp
  api/operators.cpp
  api/parallel.cpp
  api/random.cpp)
