// The closed list of primitives: the only index of what programs can contain. Each row is
// (C++ name, printed name, traits); traits are data, so passes ask "is it elementwise?"
// instead of testing types. Rules live in src/prims/, one file per primitive.
#pragma once

#include <cstdint>
#include <string_view>

namespace parax::core {

enum Trait : uint32_t {
  kUnary = 1u << 0,
  kBinary = 1u << 1,
  kElementwise = 1u << 2,  // output element i depends on input elements i only
  kLinear = 1u << 3,       // has a transpose rule (linear in some array inputs; a test checks)
  kReduction = 1u << 4,
  kCollective = 1u << 5,   // communicates across devices; created only by reshard
  kHasProgram = 1u << 6,   // holds a sub-program (param `jaxpr`): jit, shard_map, fusion
  kNamedAxes = 1u << 7,    // a collective over named axes (param `axes`): psum, ...
  kReadsDevice = 1u << 8,  // its kernel reads where its device sits (DeviceContext coords)
  kLayout = 1u << 9,       // the identity with a layout (param `sharding`) its result must have
  kCall = 1u << 10,        // runs its program where it stands: inlining it changes nothing
  kBroadcast = 1u << 11,   // repeats its operand along new dimensions (rank 0: a filled array)
  // A manual region's boundary (params `mesh`, `axes`, `spec`): the identity that
  // relabels a value between its global view and the region's per-device view.
  kRegionEnter = 1u << 12,
  kRegionExit = 1u << 13,
  // Control flow (cond, while, scan, remat2): runs its sub-programs (their roles: its rules'
  // program_roles) in place of itself; they are partitioned with the program, and print
  // named on from the enclosing program's names, as JAX prints them.
  kControlFlow = 1u << 14,
  // Calls back at compile time with the layout chosen for its operand (param `callback`,
  // an id of core/callbacks.h); the identity otherwise, whose result nothing reads.
  kInspect = 1u << 15,
};

// clang-format off
#define PARAX_PRIMITIVES(X)                                                  \
  /* elementwise unary */                                                    \
  X(neg, "neg", kUnary | kElementwise | kLinear)                             \
  X(abs, "abs", kUnary | kElementwise)                                       \
  X(sign, "sign", kUnary | kElementwise)                                     \
  X(floor, "floor", kUnary | kElementwise)                                   \
  X(ceil, "ceil", kUnary | kElementwise)                                     \
  X(round, "round", kUnary | kElementwise)                                   \
  X(exp, "exp", kUnary | kElementwise)                                       \
  X(exp2, "exp2", kUnary | kElementwise)                                     \
  X(log, "log", kUnary | kElementwise)                                       \
  X(log1p, "log1p", kUnary | kElementwise)                                   \
  X(expm1, "expm1", kUnary | kElementwise)                                   \
  X(sin, "sin", kUnary | kElementwise)                                       \
  X(cos, "cos", kUnary | kElementwise)                                       \
  X(tan, "tan", kUnary | kElementwise)                                       \
  X(asin, "asin", kUnary | kElementwise)                                     \
  X(acos, "acos", kUnary | kElementwise)                                     \
  X(atan, "atan", kUnary | kElementwise)                                     \
  X(sinh, "sinh", kUnary | kElementwise)                                     \
  X(cosh, "cosh", kUnary | kElementwise)                                     \
  X(tanh, "tanh", kUnary | kElementwise)                                     \
  X(sqrt, "sqrt", kUnary | kElementwise)                                     \
  X(rsqrt, "rsqrt", kUnary | kElementwise)                                   \
  X(cbrt, "cbrt", kUnary | kElementwise)                                     \
  X(logistic, "logistic", kUnary | kElementwise)                             \
  X(erf, "erf", kUnary | kElementwise)                                       \
  X(erf_inv, "erf_inv", kUnary | kElementwise)                               \
  X(is_finite, "is_finite", kUnary | kElementwise)                           \
  X(not_, "not", kUnary | kElementwise)                                      \
  /* elementwise binary */                                                   \
  X(add, "add", kBinary | kElementwise | kLinear)                            \
  X(sub, "sub", kBinary | kElementwise | kLinear)                            \
  X(mul, "mul", kBinary | kElementwise | kLinear)                            \
  X(div, "div", kBinary | kElementwise | kLinear)                            \
  X(rem, "rem", kBinary | kElementwise)                                      \
  X(pow, "pow", kBinary | kElementwise)                                      \
  X(max, "max", kBinary | kElementwise)                                      \
  X(min, "min", kBinary | kElementwise)                                      \
  X(atan2, "atan2", kBinary | kElementwise)                                  \
  X(nextafter, "nextafter", kBinary | kElementwise)                          \
  X(and_, "and", kBinary | kElementwise)                                     \
  X(or_, "or", kBinary | kElementwise)                                       \
  X(xor_, "xor", kBinary | kElementwise)                                     \
  X(shift_left, "shift_left", kBinary | kElementwise)                        \
  X(shift_right_logical, "shift_right_logical", kBinary | kElementwise)      \
  X(shift_right_arithmetic, "shift_right_arithmetic", kBinary | kElementwise) \
  X(eq, "eq", kBinary | kElementwise)                                        \
  X(ne, "ne", kBinary | kElementwise)                                        \
  X(lt, "lt", kBinary | kElementwise)                                        \
  X(le, "le", kBinary | kElementwise)                                        \
  X(gt, "gt", kBinary | kElementwise)                                        \
  X(ge, "ge", kBinary | kElementwise)                                        \
  /* other elementwise */                                                    \
  X(select_n, "select_n", kElementwise | kLinear)                            \
  X(clamp, "clamp", kElementwise)                                            \
  X(fma, "fma", kElementwise)                                                \
  X(convert_element_type, "convert_element_type", kUnary | kElementwise | kLinear) \
  X(integer_pow, "integer_pow", kUnary | kElementwise)                       \
  X(copy, "copy", kUnary | kElementwise | kLinear)                           \
  X(stop_gradient, "stop_gradient", kUnary | kElementwise)                   \
  /* structure */                                                            \
  X(iota, "iota", kReadsDevice)                                              \
  X(random_bits, "random_bits", kReadsDevice)                                \
  X(broadcast_in_dim, "broadcast_in_dim", kUnary | kLinear | kBroadcast)     \
  X(reshape, "reshape", kUnary | kLinear)                                    \
  X(transpose, "transpose", kUnary | kLinear)                                \
  X(squeeze, "squeeze", kUnary | kLinear)                                    \
  X(expand_dims, "expand_dims", kUnary | kLinear)                            \
  X(slice, "slice", kUnary | kLinear)                                        \
  X(dynamic_slice, "dynamic_slice", kLinear)                                 \
  X(dynamic_update_slice, "dynamic_update_slice", kLinear)                   \
  X(concatenate, "concatenate", kLinear)                                     \
  X(pad, "pad", kLinear)                                                     \
  X(rev, "rev", kUnary | kLinear)                                            \
  /* contractions and reductions */                                          \
  X(dot_general, "dot_general", kBinary | kLinear)                           \
  X(reduce_sum, "reduce_sum", kUnary | kReduction | kLinear)                 \
  X(reduce_max, "reduce_max", kUnary | kReduction)                           \
  X(reduce_min, "reduce_min", kUnary | kReduction)                           \
  X(reduce_prod, "reduce_prod", kUnary | kReduction)                         \
  X(reduce_and, "reduce_and", kUnary | kReduction)                           \
  X(reduce_or, "reduce_or", kUnary | kReduction)                             \
  X(argmax, "argmax", kUnary | kReduction)                                   \
  X(argmin, "argmin", kUnary | kReduction)                                   \
  X(cumsum, "cumsum", kUnary | kLinear)                                      \
  X(sort, "sort", kLinear)                                                   \
  /* sharding and programs */                                                \
  X(sharding_constraint, "sharding_constraint", kUnary | kLinear | kLayout)  \
  X(device_put, "device_put", kLinear | kLayout)                             \
  X(inspect_sharding, "inspect_sharding", kUnary | kInspect)                 \
  X(pjit, "pjit", kHasProgram | kCall | kLinear)                             \
  /* control flow: sub-programs the executor runs (their program_roles) */   \
  X(cond, "cond", kControlFlow | kLinear)                                    \
  X(while_, "while", kControlFlow | kLinear)                                 \
  X(scan, "scan", kControlFlow | kLinear)                                    \
  /* jax.checkpoint: a call whose autodiff recomputes what its policy does not save */ \
  X(checkpoint, "remat2", kHasProgram | kCall | kControlFlow | kLinear)     \
  /* a chain of elementwise equations run tile by tile (compiler's fusion) */ \
  X(fusion, "fusion", kHasProgram)                                           \
  /* gather and scatter with XLA's dimension numbers (indexing, x.at[i]) */  \
  X(gather, "gather", kLinear)                                               \
  X(scatter, "scatter", kLinear)                                             \
  X(scatter_add, "scatter-add", kLinear)                                     \
  X(scatter_mul, "scatter-mul", kLinear)                                     \
  X(scatter_min, "scatter-min", 0)                                           \
  X(scatter_max, "scatter-max", 0)                                           \
  /* inverse hyperbolics, erfc and the cumulative reductions but cumsum */   \
  X(asinh, "asinh", kUnary | kElementwise)                                   \
  X(acosh, "acosh", kUnary | kElementwise)                                   \
  X(atanh, "atanh", kUnary | kElementwise)                                   \
  X(erfc, "erfc", kUnary | kElementwise)                                     \
  X(cumprod, "cumprod", kUnary)                                              \
  X(cummax, "cummax", kUnary)                                                \
  X(cummin, "cummin", kUnary)                                                \
  X(cumlogsumexp, "cumlogsumexp", kUnary)                                    \
  /* special functions (distributions and their gradients) */                \
  X(lgamma, "lgamma", kUnary | kElementwise)                                 \
  X(digamma, "digamma", kUnary | kElementwise)                               \
  X(polygamma, "polygamma", kBinary | kElementwise)                          \
  X(igamma, "igamma", kBinary | kElementwise)                                \
  X(random_gamma_grad, "random_gamma_grad", kBinary | kElementwise)          \
  /* dense linear algebra on LAPACK, batched over leading dimensions */      \
  X(cholesky, "cholesky", kUnary)                                            \
  X(lu, "lu", kUnary)                                                        \
  X(lu_pivots_to_permutation, "lu_pivots_to_permutation", kUnary)            \
  X(qr, "qr", kUnary)                                                        \
  X(svd, "svd", kUnary)                                                      \
  X(eigh, "eigh", kUnary)                                                    \
  X(triangular_solve, "triangular_solve", kBinary | kLinear)                 \
  /* convolution and windowed reductions (pooling) */                        \
  X(conv_general_dilated, "conv_general_dilated", kBinary | kLinear)         \
  X(reduce_window_sum, "reduce_window_sum", kUnary | kLinear)                \
  X(reduce_window_max, "reduce_window_max", kUnary)                          \
  X(reduce_window_min, "reduce_window_min", kUnary)                          \
  X(select_and_scatter_add, "select_and_scatter_add", kLinear)               \
  X(select_and_gather_add, "select_and_gather_add", kLinear)                 \
  /* user-defined derivatives: a call whose jvp or vjp the user gives */     \
  X(custom_jvp_call, "custom_jvp_call", kHasProgram | kCall)                 \
  X(custom_vjp_call, "custom_vjp_call", kHasProgram | kCall)                 \
  /* custom_vjp's linear part under linearize: its transpose runs the user's bwd */ \
  X(custom_lin, "custom_lin", kLinear)                                       \
  /* per-device programs only: made by the partitioner's reshard */          \
  X(all_gather, "all-gather", kUnary | kCollective)                          \
  X(all_reduce, "all-reduce", kUnary | kCollective)                          \
  X(reduce_scatter, "reduce-scatter", kUnary | kCollective)                  \
  X(all_to_all, "all-to-all", kUnary | kCollective)                          \
  X(collective_permute, "collective-permute", kUnary | kCollective)          \
  X(shard_slice, "shard-slice", kUnary | kReadsDevice)                       \
  /* named-axis collectives of per-device code (vmap, pmap, shard_map) */    \
  X(psum, "psum", kUnary | kLinear | kNamedAxes)                             \
  X(pmax, "pmax", kUnary | kNamedAxes)                                       \
  X(pmin, "pmin", kUnary | kNamedAxes)                                       \
  X(pall_gather, "all_gather", kUnary | kLinear | kNamedAxes)                \
  X(psum_scatter, "reduce_scatter", kUnary | kLinear | kNamedAxes)           \
  X(ppermute, "ppermute", kUnary | kLinear | kNamedAxes)                     \
  X(pall_to_all, "all_to_all", kUnary | kLinear | kNamedAxes)                \
  X(axis_index, "axis_index", kNamedAxes | kReadsDevice)                     \
  /* a per-device program over mesh axes (shard_map, pmap) */                \
  X(shard_map, "shard_map", kHasProgram | kLinear)                           \
  /* a shard_map inlined by the compiler: where its region begins and ends */ \
  X(manual_enter, "manual-enter", kUnary | kRegionEnter)                     \
  X(manual_exit, "manual-exit", kUnary | kRegionExit)
// clang-format on

enum class Prim : uint16_t {
#define PARAX_PRIM_ENUM(name, printed, traits) name,
  PARAX_PRIMITIVES(PARAX_PRIM_ENUM)
#undef PARAX_PRIM_ENUM
};

inline constexpr int kNumPrims = 0
#define PARAX_PRIM_COUNT(name, printed, traits) +1
    PARAX_PRIMITIVES(PARAX_PRIM_COUNT)
#undef PARAX_PRIM_COUNT
    ;

// Returns JAX's name of the primitive, as programs print it.
std::string_view prim_name(Prim p);
uint32_t prim_traits(Prim p);
inline bool has_trait(Prim p, Trait t) { return (prim_traits(p) & t) != 0; }

}  // namespace parax::core
