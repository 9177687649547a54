# The prims layer: one file per primitive with all its rules (elementwise families keep one
# row per primitive in unary.cpp, binary.cpp, compare.cpp), the rule table built from the
# X-macro list (table.cpp) and the rules' shared helpers; then the kernels too large to sit
# among rules (kernels/). The Highway files (kernels/simd_*.cpp, the only ones that include
# Highway) compile themselves once per SIMD target through hwy/foreach_target.h, so no file
# needs flags of its own.
target_sources(parax PRIVATE
  prims/argmax.cpp
  prims/autodiff_util.cpp
  prims/batching_util.cpp
  prims/binary.cpp
  prims/broadcast_in_dim.cpp
  prims/checkpoint.cpp
  prims/clamp.cpp
  prims/collectives.cpp
  prims/compare.cpp
  prims/concatenate.cpp
  prims/cond.cpp
  prims/control_flow.cpp
  prims/control_flow_batching.cpp
  prims/convert_element_type.cpp
  prims/cumulative.cpp
  prims/device_put.cpp
  prims/dot_general.cpp
  prims/dynamic_slice.cpp
  prims/dynamic_update_slice.cpp
  prims/expand_dims.cpp
  prims/fma.cpp
  prims/fusion.cpp
  prims/inspect_sharding.cpp
  prims/iota.cpp
  prims/named_collectives.cpp
  prims/pad.cpp
  prims/pjit.cpp
  prims/program_rules.cpp
  prims/prim_util.cpp
  prims/random_bits.cpp
  prims/reduce.cpp
  prims/reshape.cpp
  prims/rev.cpp
  prims/scan.cpp
  prims/select_n.cpp
  prims/shard_map.cpp
  prims/shard_slice.cpp
  prims/sharding_constraint.cpp
  prims/slice.cpp
  prims/sort.cpp
  prims/squeeze.cpp
  prims/stop_gradient.cpp
  prims/table.cpp
  prims/transpose.cpp
  prims/unary.cpp
  prims/vma.cpp
  prims/while.cpp

  # gather and scatter
  prims/gather.cpp
  prims/gather_params.cpp
  prims/scatter.cpp

  # special functions
  prims/special.cpp

  # linear algebra
  prims/linalg.cpp
  prims/linalg_spectral.cpp
  prims/linalg_util.cpp
  prims/kernels/linalg.cpp

  # convolution and pooling
  prims/conv.cpp
  prims/reduce_window.cpp
  prims/kernels/conv.cpp
  prims/kernels/conv_dnnl.cpp
  prims/kernels/reduce_window.cpp

  # custom derivatives
  prims/custom_derivatives.cpp

  prims/kernels/argmax.cpp
  prims/kernels/broadcast_tile.cpp
  prims/kernels/clamp.cpp
  prims/kernels/convert_element_type.cpp
  prims/kernels/copy.cpp
  prims/kernels/cumulative.cpp
  prims/kernels/dot.cpp
  prims/kernels/fma.cpp
  prims/kernels/fusion.cpp
  prims/kernels/gather.cpp
  prims/kernels/gemm.cpp
  prims/kernels/iota.cpp
  prims/kernels/random_bits.cpp
  prims/kernels/reduce.cpp
  prims/kernels/select_n.cpp
  prims/kernels/simd_binary.cpp
  prims/kernels/simd_kernels.cpp
  prims/kernels/simd_sleef.cpp
  prims/kernels/simd_unary.cpp
  prims/kernels/sort.cpp)
