# Contractions, reductions, scans and sort (one file per primitive; the six reduce_* rows
# share reduce.cpp, argmax and argmin share argmax.cpp).
target_sources(parax PRIVATE
  prims/dot_general.cpp
  prims/reduce.cpp
  prims/argmax.cpp
  prims/cumsum.cpp
  prims/sort.cpp)
