// Helpers for the autodiff rules of the structural, contraction and reduction primitives.
// Like autodiff_util.h they bind primitives, so the rules run eagerly and under tracing.
// Internal to src/prims.
#pragma once

#include <numeric>
#include <string_view>
#include <vector>

#include "core/trace.h"
#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/prim_util.h"

namespace parax::prims {

// The jvp of a primitive linear in its one operand: the primitive applied to the tangent.
template <core::Prim P>
std::vector<Array> unary_linear_jvp(std::span<const Array>, std::span<const Array> tangents,
                                    std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  return {core::bind1(P, {tangents[0]}, params)};
}

// Returns the type of operand i of an equation being transposed. A linear operand has no
// value, so the caller must pass a placeholder of its type: transposes such as reshape's
// and reduce_sum's cannot recover the operand's shape from the cotangent.
inline Aval operand_type(std::span<const Array> operands, size_t i, std::string_view prim) {
  PARAX_CHECK(i < operands.size() && operands[i].valid(),
              "" << prim << " transpose needs a placeholder of operand " << i << "'s type");
  return core::aval_of(operands[i]);
}

// Returns 0, 1, ..., n - 1.
inline std::vector<int64_t> iota_ints(int64_t n) {
  std::vector<int64_t> v(size_t(std::max<int64_t>(n, 0)));
  std::iota(v.begin(), v.end(), int64_t{0});
  return v;
}

// Returns the sum of all elements as a rank-0 array.
inline Array sum_all(const Array& x) {
  if (x.ndim() == 0) return x;
  return lax::reduce_sum(x, iota_ints(x.ndim()));
}

}  // namespace parax::prims
