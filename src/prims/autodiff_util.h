// Helpers shared by the primitives' autodiff rules (jvp and transpose). They bind lax
// functions, so rules built on them run eagerly and under tracing alike. An invalid Array
// is a symbolic zero throughout, as in core/rules.h. Internal to src/prims.
#pragma once

#include <span>

#include "core/rules.h"
#include "core/trace.h"
#include "parax/array.h"

namespace parax::prims {

// True for dtypes whose values have tangents (floating ones); tangents of integer and
// bool values are always zero.
bool has_tangent(DType dtype);

// Returns a rank-0 constant `value` of `dtype` (JAX's _const), made on the host: strong
// unless `weak`.
Array constant(double value, DType dtype, bool weak = false);

// Returns x as (dtype, weak) (JAX's lax._convert_element_type): x itself when its type
// matches, a host constant for a concrete weak rank-0 x (a C++ scalar), else a
// convert_element_type.
Array convert(const Array& x, DType dtype, bool weak = false);

// Returns an array of x's shape and type filled with `value` (lax.full_like, as jnp's
// zeros_like and ones_like make it): weak for a weak x, and laid out as x when x is a
// concrete committed array.
Array full_like(const Array& x, double value);
inline Array zeros_like(const Array& x) { return full_like(x, 0); }
inline Array ones_like(const Array& x) { return full_like(x, 1); }

// Returns zeros of `aval`'s shape and dtype.
Array zeros_like_aval(const core::Aval& aval);

// Returns t, or zeros of `like`'s type where t is a symbolic zero.
Array instantiate(const Array& t, const core::Aval& like);

// Broadcasts a rank-0 t to `shape` (lax's elementwise operands broadcast, results do not);
// other arrays and symbolic zeros are returned as they are.
Array broadcast_to(const Array& t, const Shape& shape);

// Returns the sum of tangents either of which may be a symbolic zero.
Array add_tangents(const Array& a, const Array& b);

// Returns ct (an elementwise result's cotangent) reduced to an operand of type `aval`:
// summed over all elements when the operand was rank 0 and broadcast, as-is otherwise.
Array unbroadcast(const Array& ct, const core::Aval& aval);

// Returns the type of operand i of an equation being transposed: a linear operand is a
// placeholder carrying only its type (core/rules.h). Callers that pass an invalid Array
// instead get `fallback` (the result's type), right for every elementwise operand except a
// broadcast rank-0 one or a converted dtype.
core::Aval operand_aval(std::span<const Array> operands, size_t i, const core::Aval& fallback);

// Returns `rules` with the autodiff slots set; for the rows of elementwise primitive tables.
constexpr core::PrimRules with_autodiff(core::PrimRules rules, core::JvpFn jvp,
                                        core::TransposeFn transpose = nullptr) {
  rules.jvp = jvp;
  rules.transpose = transpose;
  return rules;
}

// The jvp of primitives whose results have zero tangents everywhere they are defined
// (sign, floor, comparisons, bitwise operations, ...): one symbolic zero per result.
std::vector<Array> zero_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array> outs, const core::Params& params);

}  // namespace parax::prims
