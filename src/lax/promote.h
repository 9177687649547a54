// Helpers shared by lax and the front ends above it: JAX's argument promotion (dtypes with
// weak types, numpy broadcasting), axis handling, and host-made constants. Everything here
// composes lax functions; nothing binds a primitive of its own. What only numpy needs
// (staged broadcasting binaries, numpy's axis and reshape arguments) is in
// numpy/numpy_internal.h.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "base/promotion.h"
#include "core/trace.h"
#include "parax/array.h"

namespace parax::lax::internal {
// JAX's lax._convert_element_type: binds convert_element_type with an explicit weak flag
// (the public lax::convert_element_type always makes a strong result).
Array convert_element_type(const Array& x, DType new_dtype, bool weak_type);
}  // namespace parax::lax::internal

namespace parax::frontend {

using base::TypedDType;

inline TypedDType typed(const Array& x) { return {x.dtype(), x.weak_type()}; }
std::vector<TypedDType> typed(std::span<const Array> xs);

// True for a concrete, uncommitted, weakly typed 0-d array: what a C++ scalar passed as
// ArrayLike becomes. Like a Python scalar in JAX, it converts on the host (a literal)
// instead of through convert_element_type.
bool is_literal(const Array& x);

// Returns a 0-d array holding `value` as `dtype` (values convert as numpy's astype).
Array scalar(double value, DType dtype, bool weak = false);
Array scalar_int(int64_t value, DType dtype, bool weak = false);
// Returns a strong 0-d constant of x's dtype (JAX's _lax_const / _constant_like).
Array constant_like(const Array& x, double value);

// JAX's lax._convert_element_type: x itself when (dtype, weak) already match, a host
// literal for is_literal(x), else lax's convert_element_type with the weak flag.
Array convert(const Array& x, DType dtype, bool weak = false);

// With x64 off, a C++ integer beyond int32 is a weak int64 literal (JAX cannot form it at
// all); throws JAX's OverflowError text (as ValueError) if such an `x` would become an
// integer of `dtype` narrower than 64 bits. Anything else passes.
void check_literal_fits(const Array& x, DType dtype);

// Converts every operand to the promoted (dtype, weak) of all of them (jnp's
// promote_dtypes), or to its inexact / numeric form.
std::vector<Array> promote_dtypes(std::vector<Array> xs);
std::vector<Array> promote_dtypes_inexact(std::vector<Array> xs);
std::vector<Array> promote_dtypes_numeric(std::vector<Array> xs);

// Returns numpy's broadcast of `shapes`. When it fails, throws what JAX raises: with
// operands of one non-scalar rank the lax primitive `lax_name` reports it (TypeError
// "add got incompatible shapes for broadcasting: (3,), (4,)."); otherwise, or when
// lax_name is empty, ValueError "Incompatible shapes for broadcasting: shapes=[...]".
Shape broadcast_shapes(std::string_view lax_name, std::span<const Shape> shapes);
// Broadcasts every non-scalar operand to the common shape (rank-0 operands stay: lax's
// elementwise primitives broadcast them).
std::vector<Array> promote_shapes(std::string_view lax_name, std::vector<Array> xs);
// Broadcasts all operands, scalars included, to the common shape.
std::vector<Array> broadcast_arrays(std::vector<Array> xs);
// jnp.broadcast_to: numpy's rules, errors as JAX words them.
Array broadcast_to(const Array& x, const Shape& shape);

// jnp's promote_args family: dtypes, then shapes.
std::vector<Array> promote_args(std::string_view lax_name, std::vector<Array> xs);
std::vector<Array> promote_args_inexact(std::string_view lax_name, std::vector<Array> xs);
std::vector<Array> promote_args_numeric(std::string_view lax_name, std::vector<Array> xs);

// Returns axis in [0, ndim); throws ValueError "axis 3 is out of bounds for array of
// dimension 2" otherwise.
int64_t canonicalize_axis(int64_t axis, int64_t ndim);

}  // namespace parax::frontend
