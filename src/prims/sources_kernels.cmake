# Kernel bodies too large to sit among a primitive's rules: dot_general's GEMM driver, the
# reductions' pairwise loops, the fusion's tile loop, broadcast_in_dim's tile form, and the
# Highway loops of the float elementwise kernels (the only files that include Highway; each
# compiles itself once per SIMD target through hwy/foreach_target.h, so they need no
# per-file flags).
target_sources(parax PRIVATE
  prims/kernels/broadcast_tile.cpp
  prims/kernels/dot.cpp
  prims/kernels/fusion.cpp
  prims/kernels/reduce.cpp
  prims/kernels/simd_kernels.cpp
  prims/kernels/simd_unary.cpp
  prims/kernels/simd_binary.cpp)
