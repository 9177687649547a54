# jax.numpy: compositions over lax with numpy broadcasting and JAX's type promotion, the
# Array's operators, indexing and x.at[...].
target_sources(parax PRIVATE
  numpy/convolution.cpp
  numpy/creation.cpp
  numpy/indexing.cpp
  numpy/linalg.cpp
  numpy/math.cpp
  numpy/nan_reductions.cpp
  numpy/operators.cpp
  numpy/pad.cpp
  numpy/products.cpp
  numpy/reductions.cpp
  numpy/scatter_apply.cpp
  numpy/searchsorted.cpp
  numpy/shape.cpp)
