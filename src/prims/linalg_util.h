// Matrix helpers shared by the linear-algebra rules (jvp, batching) and their front ends
// (include/parax/linalg.h): they bind lax primitives on stacks of matrices, the last two
// dimensions, so they run eagerly and under any transform alike. Internal.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <span>
#include <string_view>

#include "core/batching.h"
#include "core/rules.h"
#include "parax/array.h"

namespace parax::prims::linalg {

// Returns x with its last two dimensions swapped (JAX's _T).
Array mT(const Array& x);
// Returns a @ b for stacks of matrices with equal leading dimensions.
Array matmul(const Array& a, const Array& b);
// Returns x with the elements above (tril) or below (triu) diagonal k zeroed.
Array tril(const Array& x, int64_t k = 0);
Array triu(const Array& x, int64_t k = 0);
// Returns the identity [n, m] broadcast to `batch` + [n, m].
Array eye(int64_t n, int64_t m, DType dtype, const Shape& batch = {});
// Returns the diagonals [..., min(m, n)] of x [..., m, n].
Array diagonal(const Array& x);
// Returns x[..., permutation, :]: the rows of x reordered (permutation int32 [..., m]).
Array permute_rows(const Array& x, const Array& permutation);
// Binds triangular_solve with JAX's parameters (conjugate_a: false, all real).
Array triangular_solve(const Array& a, const Array& b, bool left_side, bool lower, bool transpose_a,
                       bool unit_diagonal);
// Returns the leading (batch) dimensions of x [..., m, n].
Shape batch_shape(const Array& x, int64_t core_rank = 2);

// ---- pieces of the primitives' rules ---------------------------------------------------

// Returns x[..., :rows, :cols] (x[..., r0:r1, c0:c1] with the other form).
Array block(const Array& x, int64_t r0, int64_t r1, int64_t c0, int64_t c1);
// Returns x [..., r, c] zero-padded at the end to [..., rows, cols].
Array pad_to(const Array& x, int64_t rows, int64_t cols);
// Returns x[..., inverse(permutation), :]: undoes permute_rows.
Array unpermute_rows(const Array& x, const Array& permutation);
// Returns v [..., k] broadcast along a new second-to-last dimension of size `rows`: row i
// of the result is v (JAX's v[..., None, :]).
Array rows_of(const Array& v, int64_t rows);

// Checks operand `i` of primitive `name` as JAX's linalg primitives do: rank at least
// `rank` (TypeError), a floating dtype (TypeError) that LAPACK takes (float32, float64;
// NotImplementedError for others) unless `lapack` is false.
void check_operand(std::string_view name, const core::Aval& a, size_t i, size_t rank,
                   bool lapack = true);
// Throws NotImplementedError unless LAPACK takes a's dtype (float32, float64).
void check_lapack_dtype(std::string_view name, const core::Aval& a);
// Returns the last `rank` dimensions of a's shape (what JAX's shape rules print).
Shape core_shape(const core::Aval& a, size_t rank);
// Returns the leading dimensions of `a` before its last `rank` ones.
Shape leading(const core::Aval& a, size_t rank);
// Returns `batch` + `dims`.
Shape with_batch(const Shape& batch, std::initializer_list<int64_t> dims);

// The sharding rule of a primitive batched over leading dimensions: the operands' and
// results' leading dimensions (all but the last `core_rank` of the first operand) share
// one factor each; the matrix dimensions must be whole.
core::ShardingRule batch_sharding_rule(std::span<const core::Aval> in,
                                       std::span<const core::Aval> out, size_t core_rank);
// The batching rule of a one-operand primitive batched over leading dimensions: the batch
// dimension moves to the front, where every result has it.
core::Batched batch_at_front(core::Prim p, std::span<const Array> in, std::span<const int> dims,
                             const core::Params& params, const core::BatchAxis& axis);

// The flops of one application: LAPACK's operation counts (leading terms) per matrix of
// operand 0's last two dimensions (m, n; k = min), times the batch.
core::Cost cost(core::Prim p, std::span<const core::Aval> in, const core::Params& params);

}  // namespace parax::prims::linalg
