// JAX's type promotion: the lattice of jax._src.dtypes (standard mode) with weak types,
// and the dtype canonicalization that jax_enable_x64 controls. Python scalars become
// weak-typed values in JAX; C++ scalars passed as ArrayLike do here, and the lattice gives
// them JAX's treatment: they adopt the other operand's dtype within their kind.
#pragma once

#include <span>

#include "parax/dtype.h"

namespace parax::base {

// A value's type as promotion sees it: its dtype and whether it is weakly typed.
struct TypedDType {
  DType dtype;
  bool weak = false;
  bool operator==(const TypedDType&) const = default;
};

// Returns jnp.promote_types(a, b): the least upper bound of two (strong) dtypes. Like
// JAX, the result is not canonicalized (int32 with uint32 gives int64).
DType promote_types(DType a, DType b);

// Returns JAX's _lattice_result_type followed by canonicalize_dtype: the (dtype, weak)
// that jnp's promote_dtypes converts every operand to. One departure from JAX (README,
// "dtypes"): when a strong operand is 64-bit, the result is not canonicalized, so an
// explicitly requested int64/uint64/float64 survives promotion with x64 off (int64 + int32
// -> int64, int64 + 1.5 -> float64), exactly as JAX with x64 on. Requires: !in.empty().
TypedDType lattice_result_type(std::span<const TypedDType> in);

// Returns jax.dtypes.result_type(..., return_weak_type_flag=True): like
// lattice_result_type, but a weak result takes its kind's default dtype (int32 or
// float32 unless x64 is enabled, or a strong operand is 64-bit). Requires: !in.empty().
TypedDType result_type(std::span<const TypedDType> in);

// Returns the dtype JAX computes in for `t`: 64-bit types narrow to 32 bits unless
// jax_enable_x64 is on.
DType canonicalize_dtype(DType t);

// Returns the canonical default dtypes (JAX's int_, uint, float_).
DType default_int_dtype();
DType default_uint_dtype();
DType default_float_dtype();

// Returns the floating dtype integer and bool inputs of floating functions promote to
// (JAX's to_inexact_dtype: int32 -> float32, int64 -> float64); floats are unchanged.
DType to_inexact_dtype(DType t);
// Returns int32 for bool, else t (JAX's to_numeric_dtype).
DType to_numeric_dtype(DType t);

}  // namespace parax::base
