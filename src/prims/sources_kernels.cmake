# Kernel bodies too large to sit among a primitive's rules: dot_general's GEMM driver, the
# reductions' pairwise loops, the fusion's tile loop, broadcast_in_dim's tile form, the
# kernels of sort, random_bits, argmax/argmin, select_n, cumsum, convert_element_type,
# iota, fma and clamp, the structural primitives' strided copies (copy.cpp), and the
# Highway loops of the float elementwise kernels (the only files that include Highway; each
# compiles itself once per SIMD target through hwy/foreach_target.h, so they need no
# per-file flags).
target_sources(parax PRIVATE
  prims/kernels/argmax.cpp
  prims/kernels/broadcast_tile.cpp
  prims/kernels/clamp.cpp
  prims/kernels/convert_element_type.cpp
  prims/kernels/copy.cpp
  prims/kernels/cumsum.cpp
  prims/kernels/dot.cpp
  prims/kernels/fma.cpp
  prims/kernels/fusion.cpp
  prims/kernels/iota.cpp
  prims/kernels/random_bits.cpp
  prims/kernels/reduce.cpp
  prims/kernels/select_n.cpp
  prims/kernels/sort.cpp
  prims/kernels/simd_kernels.cpp
  prims/kernels/simd_unary.cpp
  prims/kernels/simd_binary.cpp)
