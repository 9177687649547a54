// Dense linear algebra, as jax.numpy.linalg and jax.lax.linalg have it: factorizations on
// LAPACK (float32 and float64), batched over leading dimensions (which may be sharded),
// differentiable with JAX's rules. numpy::linalg::norm is declared in numpy.h.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/numpy.h"
#include "parax/tree.h"

namespace parax::lax::linalg {

// Returns the lower Cholesky factor L of symmetric positive-definite x [..., n, n]
// (x = L L^T), NaNs where the factorization fails. symmetrize_input: use (x + x^T) / 2,
// else only x's lower triangle.
Array cholesky(const ArrayLike& x, bool symmetrize_input = true);
// Returns (lu, pivots, permutation) of x [..., m, n] with partial pivoting: P x = L U, L
// unit lower (below lu's diagonal), U upper; pivots int32 [..., min(m, n)] are the row
// swaps, permutation int32 [..., m] the rows of x in the order of P x.
std::tuple<Array, Array, Array> lu(const ArrayLike& x);
// Returns the permutation [..., permutation_size] that the row swaps `pivots` make.
Array lu_pivots_to_permutation(const ArrayLike& pivots, int64_t permutation_size);
// Returns (q, r) with x = q r: q [..., m, m] and r [..., m, n] when full_matrices, else
// q [..., m, k] and r [..., k, n] with k = min(m, n).
std::pair<Array, Array> qr(const ArrayLike& x, bool full_matrices = true);
// Returns {u, s, vh} with x = u diag(s) vh, s descending ({s} alone unless compute_uv).
std::vector<Array> svd(const ArrayLike& x, bool full_matrices = true, bool compute_uv = true);
// Returns (v, w): the eigenvectors (columns of v) and ascending eigenvalues w of symmetric
// x. symmetrize_input: use (x + x^T) / 2, else only the triangle `lower` names.
std::pair<Array, Array> eigh(const ArrayLike& x, bool lower = true, bool symmetrize_input = true);
// Returns X solving op(a) X = b (left_side) or X op(a) = b, a triangular ([..., m, m]),
// op(a) = a^T when transpose_a. A b of one dimension fewer than a is a vector.
Array triangular_solve(const ArrayLike& a, const ArrayLike& b, bool left_side = false,
                       bool lower = false, bool transpose_a = false, bool conjugate_a = false,
                       bool unit_diagonal = false);

}  // namespace parax::lax::linalg

namespace parax::numpy::linalg {

// Results with JAX's field names; structured bindings work: auto [q, r] = qr(a).
struct QRResult {
  Array Q;  // invalid for mode "r"
  Array R;
};
struct SVDResult {
  Array U;  // U and Vh are invalid when compute_uv is false
  Array S;
  Array Vh;
};
struct EighResult {
  Array eigenvalues;
  Array eigenvectors;
};
struct SlogdetResult {
  Array sign;
  Array logabsdet;
};

// Returns the Cholesky factor of a [..., n, n]: lower (a = L L^T), or upper (a = U^T U).
Array cholesky(const ArrayLike& a, bool upper = false, bool symmetrize_input = true);
// Returns x solving a x = b: b [..., m] (a vector) or [..., m, n]; batch dims broadcast.
Array solve(const ArrayLike& a, const ArrayLike& b);
// Returns the inverse of a [..., n, n].
Array inv(const ArrayLike& a);
// Returns the determinant of a [..., n, n].
Array det(const ArrayLike& a);
// Returns the sign and log |det| of a [..., n, n] (sign 0 and -inf when singular).
SlogdetResult slogdet(const ArrayLike& a);
// Returns a to the integer power n (n < 0: of inv(a)); n = 0 gives the identity.
Array matrix_power(const ArrayLike& a, int64_t n);
// Returns the QR decomposition; mode "reduced" (q [..., m, k]), "complete" (q [..., m, m])
// or "r" (only R).
QRResult qr(const ArrayLike& a, const std::string& mode = "reduced");
// Returns the singular value decomposition a = U diag(S) Vh (S descending); U [..., m, m]
// and Vh [..., n, n] when full_matrices, else [..., m, k] and [..., k, n].
SVDResult svd(const ArrayLike& a, bool full_matrices = true, bool compute_uv = true);
// Returns the singular values of x, descending.
Array svdvals(const ArrayLike& x);
// Returns the ascending eigenvalues and the eigenvectors (columns) of symmetric a. UPLO
// "L" (default) or "U" names the triangle used when symmetrize_input is false.
EighResult eigh(const ArrayLike& a, std::optional<std::string> UPLO = std::nullopt,
                bool symmetrize_input = true);
// Returns the ascending eigenvalues of symmetric a.
Array eigvalsh(const ArrayLike& a, const std::string& UPLO = "L", bool symmetrize_input = true);
// Returns (x, residuals, rank, s) of the least-squares solution of a x = b (a [m, n], b
// [m] or [m, k]): singular values below rcond * s_max count as zero (default: machine
// epsilon * max(m, n)). residuals are always the squared norms of b - a x (JAX's
// numpy_resid=False).
std::tuple<Array, Array, Array, Array> lstsq(const ArrayLike& a, const ArrayLike& b,
                                             std::optional<double> rcond = std::nullopt);
// Returns the pseudo-inverse of a [..., m, n]: singular values at most rtol * s_max
// (default 10 * max(m, n) * eps) are dropped. Its derivative is JAX's (Golub and Pereyra).
Array pinv(const ArrayLike& a, std::optional<ArrayLike> rtol = std::nullopt);
// Returns the number of singular values of M above rtol * s_max (default max(m, n) * eps).
Array matrix_rank(const ArrayLike& M, std::optional<ArrayLike> rtol = std::nullopt);
// Returns the condition number of x in the norm p (None: 2; also -2, 1, -1, inf, -inf).
Array cond(const ArrayLike& x, std::optional<double> p = std::nullopt);
// Returns the condition number in the norm "fro" or "nuc".
Array cond(const ArrayLike& x, const std::string& p);
// Returns the matrix norm "fro" (also "f") or "nuc" (the sum of singular values) over
// `axis` (two axes, or the whole of a matrix).
Array norm(const ArrayLike& x, const std::string& ord, Axes axis = {}, bool keepdims = false);
// An integer order (norm(x, 0), norm(x, 2)) picks the numeric overload, not the string one.
template <class I>
requires std::is_integral_v<I> Array norm(const ArrayLike& x, I ord, Axes axis = {},
                                          bool keepdims = false) {
  return norm(x, std::optional<double>(double(ord)), std::move(axis), keepdims);
}
template <class I>
requires std::is_integral_v<I> Array cond(const ArrayLike& x, I p) {
  return cond(x, std::optional<double>(double(p)));
}

PARAX_REGISTER_PYTREE(QRResult, Q, R)
PARAX_REGISTER_PYTREE(SVDResult, U, S, Vh)
PARAX_REGISTER_PYTREE(EighResult, eigenvalues, eigenvectors)
PARAX_REGISTER_PYTREE(SlogdetResult, sign, logabsdet)

}  // namespace parax::numpy::linalg
