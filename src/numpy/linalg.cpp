// numpy::linalg composed on lax.linalg's binders as jax/_src/numpy/linalg.py composes:
// solve and det through lu and triangular solves (with JAX's custom jvps), inv through
// solve, lstsq and pinv through svd, and the vector and matrix norms.
#include "parax/linalg.h"

#include <cmath>
#include <limits>
#include <numeric>

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/custom_derivatives.h"
#include "parax/grad.h"
#include "parax/lax.h"
#include "parax/numpy.h"
#include "prims/linalg_util.h"

namespace parax::numpy::linalg {

namespace pl = prims::linalg;
namespace ll = lax::linalg;

namespace {

Array inexact(const ArrayLike& x) { return frontend::promote_dtypes_inexact({x.array()})[0]; }

double eps_of(DType dt) {
  return dt == DType::float64 ? std::numeric_limits<double>::epsilon()
                              : std::numeric_limits<float>::epsilon();
}

std::string py_shape(const Shape& s) { return shape_str(s); }

int64_t dim(const Array& x, int from_end) { return x.shape()[size_t(x.ndim() - from_end)]; }

Array element(const Array& a, int64_t i, int64_t j) {
  const int64_t r = a.ndim();
  return lax::squeeze(pl::block(a, i, i + 1, j, j + 1), {r - 2, r - 1});
}

// Returns x [..., m, n] broadcast to batch + [m, n].
Array broadcast_batch(const Array& x, const Shape& batch, int64_t core_rank) {
  Shape s = batch;
  s.insert(s.end(), x.shape().end() - core_rank, x.shape().end());
  return numpy::broadcast_to(x, s);
}

Shape broadcast_batches(const Shape& a, const Shape& b) {
  std::vector<Shape> shapes{a, b};
  return frontend::broadcast_shapes("solve", shapes);
}

// x solving a x = b, given a's LU factors, for b [..., m, n] (lax.linalg.lu_solve).
Array lu_solve(const Array& lu, const Array& permutation, const Array& b) {
  Array x = pl::permute_rows(b, permutation);
  x = pl::triangular_solve(lu, x, true, true, false, true);
  return pl::triangular_solve(lu, x, true, false, false, false);
}

// x solving a x = b for a [..., m, m] and b [..., m, n] with equal batch dimensions, as
// JAX's lax.linalg._solve: a custom_linear_solve on a's LU factors, so its derivative
// reuses them, dx = a^-1 (db - da x), never differentiating the factorization (a
// symbolic-zero tangent, inv's identity, costs nothing).
Array lu_solve(const Array& a, const Array& b) {
  using T2 = std::tuple<Array, Array>;
  static const auto solve_fn = custom_jvp(
      [](const Array& a, const Array& b) {
        auto [lu, pivots, permutation] = ll::lu(a);
        return lu_solve(lu, permutation, b);
      },
      [](const T2& primals, const T2& tangents) {
        auto [a, b] = primals;
        auto [da, db] = tangents;
        auto [lu, pivots, permutation] = ll::lu(a);
        Array x = lu_solve(lu, permutation, b);
        Array rhs;
        if (is_symbolic_zero(da)) {
          rhs = db;
        } else {
          rhs = negative(pl::matmul(da, x));
          if (!is_symbolic_zero(db)) rhs = add(db, rhs);
        }
        return std::pair{x, lu_solve(lu, permutation, rhs)};
      },
      CustomOptions{.name = "_solve", .symbolic_zeros = true});
  return solve_fn(a, b);
}

Array det_2x2(const Array& a) {
  return subtract(multiply(element(a, 0, 0), element(a, 1, 1)),
                  multiply(element(a, 0, 1), element(a, 1, 0)));
}

Array det_3x3(const Array& a) {
  auto e = [&](int64_t i, int64_t j) { return element(a, i, j); };
  Array p = add(add(multiply(multiply(e(0, 0), e(1, 1)), e(2, 2)),
                    multiply(multiply(e(0, 1), e(1, 2)), e(2, 0))),
                multiply(multiply(e(0, 2), e(1, 0)), e(2, 1)));
  p = subtract(p, multiply(multiply(e(0, 2), e(1, 1)), e(2, 0)));
  p = subtract(p, multiply(multiply(e(0, 0), e(1, 2)), e(2, 1)));
  return subtract(p, multiply(multiply(e(0, 1), e(1, 0)), e(2, 2)));
}

// det(a) and adjugate(a) b, finite for singular a (JAX's _cofactor_solve): through a's LU
// factors with u's last pivot replaced by 1 / (the product of the others), so a matrix of
// rank n - 1 gives its rank-one adjugate instead of 0 * inf; one of lower rank gives 0.
std::pair<Array, Array> cofactor_solve(const Array& a, const Array& b) {
  const int64_t m = dim(a, 1);
  if (m == 1) return {element(a, 0, 0), b};
  auto [lu, pivots, permutation] = ll::lu(a);
  const DType dt = a.dtype();
  Array diag = pl::diagonal(lu);
  Array iota = lax::broadcasted_iota(pivots.dtype(), pivots.shape(), pivots.ndim() - 1);
  Array parity = sum(not_equal(pivots, iota), -1, false, DType::int32);
  Array sign = astype(add(multiply(-2, remainder(parity, 2)), 1), dt);
  // partial_det[..., m-1] is det(a), partial_det[..., m-2] det(u) / u[m-1, m-1].
  Array partial_det = multiply(cumprod(diag, -1), expand_dims(sign, -1));
  auto last = [&](int64_t i) {  // partial_det[..., i]
    std::vector<int64_t> start(partial_det.ndim(), 0);
    std::vector<int64_t> limit(partial_det.shape().begin(), partial_det.shape().end());
    start.back() = i;
    limit.back() = i + 1;
    return lax::squeeze(lax::slice(partial_det, start, limit), {partial_det.ndim() - 1});
  };
  Array corner = equal(add(lax::broadcasted_iota(DType::int32, {m, m}, 0),
                           lax::broadcasted_iota(DType::int32, {m, m}, 1)),
                       2 * (m - 1));
  Array inv_rest = expand_dims(divide(1.0, last(m - 2)), std::vector<int64_t>{-1, -2});
  lu = where(corner, inv_rest, lu);
  // Matrices of rank below m - 1 (the modified u still singular) have a zero adjugate.
  Shape column = lu.shape();
  column.back() = 1;
  Array d = pl::triangular_solve(lu, ones(column, dt), true, false, false, false);
  Array low_rank = any(logical_or(isnan(d), isinf(d)), std::vector<int64_t>{-2, -1}, true);
  Array x = where(low_rank, zeros_like(b), b);
  x = pl::permute_rows(x, permutation);
  x = pl::triangular_solve(lu, x, true, true, false, true);
  const int64_t n = dim(x, 1);
  Array full = expand_dims(last(m - 1), std::vector<int64_t>{-1, -2});
  x = concatenate({multiply(pl::block(x, 0, m - 1, 0, n), full), pl::block(x, m - 1, m, 0, n)},
                  x.ndim() - 2);
  x = pl::triangular_solve(lu, x, true, false, false, false);
  return {last(m - 1), where(low_rank, zeros_like(x), x)};
}

void check_square(const Array& a, const std::string& message) {
  if (a.ndim() < 2 || dim(a, 1) != dim(a, 2)) throw ValueError(message);
}

// where(c, x, y) for operands of one shape, through rank 1 when they are scalars: vmap
// batches a select of rank-0 values with an unbatched constant case (a literal) wrongly.
Array select(const Array& c, const Array& x, const Array& y) {
  if (c.ndim() > 0) return where(c, x, y);
  return squeeze(where(expand_dims(c, 0), expand_dims(x, 0), expand_dims(y, 0)), 0);
}

// (sign, log|det a|) from a's LU factors (JAX's _slogdet_lu).
std::pair<Array, Array> slogdet_lu(const Array& lu, const Array& pivots) {
  const DType dt = lu.dtype();
  Array diag = pl::diagonal(lu);
  Array is_zero = any(equal(diag, asarray(0.0, dt)), -1);
  Array iota = lax::broadcasted_iota(DType::int32, pivots.shape(), pivots.ndim() - 1);
  Array parity = add(sum(not_equal(pivots, iota), -1, false, DType::int32),
                     sum(less(diag, asarray(0.0, dt)), -1, false, DType::int32));
  Array flip = astype(subtract(1, multiply(2, remainder(parity, 2))), dt);
  Array s = select(is_zero, zeros_like(flip), flip);
  Array logdet = sum(log(abs(diag)), -1);
  logdet = select(is_zero, full_like(logdet, -HUGE_VAL), logdet);
  return {s, logdet};
}

// Moves `axes` (two of them) to the end, the others kept in order.
Array move_to_end(const Array& x, int64_t row, int64_t col) {
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < x.ndim(); ++d) {
    if (d != row && d != col) perm.push_back(d);
  }
  perm.push_back(row);
  perm.push_back(col);
  return lax::transpose(x, perm);
}

// Returns the two axes of a matrix norm, or throws JAX's error.
std::pair<int64_t, int64_t> matrix_axes(const Array& x, const Axes& axis) {
  std::vector<int64_t> axes;
  if (axis.all()) {
    for (int64_t d = 0; d < x.ndim(); ++d) axes.push_back(d);
  } else {
    for (int64_t a : axis.list()) axes.push_back(frontend::canonicalize_axis(a, x.ndim()));
  }
  if (axes.size() != 2) {
    throw ValueError("Invalid axis values (" + shape_str(axes) + ") for jnp.linalg.norm.");
  }
  return {axes[0], axes[1]};
}

// The norms 2, -2 and "nuc" of the matrices over (row, col): through singular values.
Array singular_norm(const Array& x, int64_t row, int64_t col, int which, bool keepdims) {
  Array s = svdvals(move_to_end(x, row, col));
  Array y = which == 2 ? max(s, -1) : which == -2 ? min(s, -1) : sum(s, -1);
  if (keepdims) y = expand_dims(y, std::vector<int64_t>{std::min(row, col), std::max(row, col)});
  return y;
}

// Where r is NaN but x has none, inf (JAX's cond: a singular matrix's condition number).
Array nan_to_inf(const Array& r, const Array& x) {
  const int64_t nd = x.ndim();
  Array x_nan = any(isnan(x), std::vector<int64_t>{nd - 2, nd - 1});
  return select(logical_and(isnan(r), logical_not(x_nan)), full_like(r, HUGE_VAL), r);
}

// Returns s[..., i0:i1] (the last dimension sliced).
Array take_last(const Array& s, int64_t i0, int64_t i1) {
  std::vector<int64_t> start(static_cast<size_t>(s.ndim()), 0);
  std::vector<int64_t> limit(s.shape().begin(), s.shape().end());
  start.back() = i0;
  limit.back() = i1;
  return lax::slice(s, start, limit);
}

// s[..., i] for s [..., k].
Array last_at(const Array& s, int64_t i) { return squeeze(take_last(s, i, i + 1), -1); }

Array pinv_value(const Array& arr, const Array& rtol) {
  SVDResult usv = svd(arr, false);
  // rtol [...] against s [..., k]: one tolerance per matrix, as JAX expands it.
  Array tol = expand_dims(rtol, std::vector<int64_t>{rtol.ndim()});
  while (tol.ndim() < usv.S.ndim()) tol = expand_dims(tol, 0);
  Array cutoff = multiply(tol, take_last(usv.S, 0, 1));
  Array s = where(greater(usv.S, cutoff), usv.S, HUGE_VAL).astype(arr.dtype());
  return matmul(pl::mT(usv.Vh), divide(pl::mT(usv.U), expand_dims(s, -1)));
}

// The part of pinv's derivative JAX's _pinv_jvp gives (Golub and Pereyra), as a function
// linear in `d` (standing for a's tangent) at the point a with pseudo-inverse p.
Array pinv_tangent(const Array& a, const Array& p, const Array& d) {
  const int64_t m = dim(a, 2), n = dim(a, 1);
  const Array pt = pl::mT(p), dt = pl::mT(d);
  if (m >= n) {
    Array s = matmul(matmul(p, pt), dt);
    Array t = matmul(matmul(dt, pt), p);
    Array out = negative(matmul(matmul(p, d), p));
    out = add(out, s);
    out = subtract(out, matmul(matmul(s, a), p));
    out = add(out, t);
    return subtract(out, matmul(matmul(p, a), t));
  }
  Array s = matmul(p, matmul(pt, dt));
  Array t = matmul(dt, matmul(pt, p));
  Array out = negative(matmul(p, matmul(d, p)));
  out = add(out, s);
  out = subtract(out, matmul(s, matmul(a, p)));
  out = add(out, t);
  return subtract(out, matmul(p, matmul(a, t)));
}

std::string ord_str(double ord) {
  if (std::isinf(ord)) return ord > 0 ? "inf" : "-inf";
  if (ord == std::floor(ord)) return std::to_string(int64_t(ord));
  std::string s = std::to_string(ord);
  s.erase(s.find_last_not_of('0') + 1);
  return s;
}

Array sum_of_squares_sqrt(const Array& x, const Axes& axis, bool keepdims) {
  return sqrt(sum(x * x, axis, keepdims));
}

}  // namespace

Array cholesky(const ArrayLike& a, bool upper, bool symmetrize_input) {
  Array l = ll::cholesky(inexact(a), symmetrize_input);
  return upper ? pl::mT(l) : l;
}

Array solve(const ArrayLike& a_, const ArrayLike& b_) {
  std::vector<Array> ab = frontend::promote_dtypes_inexact({a_.array(), b_.array()});
  Array a = ab[0], b = ab[1];
  if (a.ndim() < 2) {
    throw ValueError("left hand array must be at least two dimensional; got a.shape=" +
                     py_shape(a.shape()));
  }
  if (b.ndim() > 1 && a.ndim() == b.ndim() + 1 && dim(a, 1) == dim(b, 1) &&
      dim(a, 1) != dim(b, 2)) {
    throw ValueError("Invalid shapes for solve: " + py_shape(a.shape()) + ", " +
                     py_shape(b.shape()) +
                     ". Prior to JAX v0.5.0, this would have been treated as a batched "
                     "1-dimensional solve. To recover this behavior, use solve(a, b[..., "
                     "None]).squeeze(-1).");
  }
  const bool vector = b.ndim() == 1;
  const std::string signature = vector ? "(m,m),(m)->(m)" : "(m,m),(m,n)->(m,n)";
  const int64_t m = dim(a, 2);
  for (int64_t size : {dim(a, 1), dim(b, vector ? 1 : 2)}) {
    if (size != m) {
      throw ValueError("inconsistent size for core dimension 'm': " + std::to_string(size) +
                       " vs " + std::to_string(m) +
                       " on vectorized function with excluded=frozenset() and signature='" +
                       signature + "'");
    }
  }
  const Shape batch = broadcast_batches(pl::batch_shape(a), pl::batch_shape(b, vector ? 1 : 2));
  a = broadcast_batch(a, batch, 2);
  if (vector) {
    b = broadcast_batch(expand_dims(b, -1), batch, 2);
    return squeeze(lu_solve(a, b), -1);
  }
  return lu_solve(a, broadcast_batch(b, batch, 2));
}

Array inv(const ArrayLike& a_) {
  const Array& a = a_.array();
  check_square(a, "Argument to inv must have shape [..., n, n], got " + py_shape(a.shape()) + ".");
  const int64_t n = dim(a, 1);
  return solve(a, broadcast_to(eye(n, std::nullopt, 0, a.dtype()), a.shape()));
}

SlogdetResult slogdet(const ArrayLike& a_) {
  Array a = inexact(a_);
  check_square(a, "Argument to slogdet() must have shape [..., n, n], got " + py_shape(a.shape()));
  const int64_t n = dim(a, 1);
  if (n == 1 || n == 2) {
    Array d = n == 1 ? element(a, 0, 0) : det_2x2(a);
    return {sign(d), log(abs(d))};
  }
  // JAX's _slogdet_lu: a custom_jvp, d log|det a| = trace(solve(a, da)), the sign's zero.
  // (The solve is on a's factors: a custom_jvp_call applied to a tangent has no transpose.)
  using T1 = std::tuple<Array>;
  static const auto slogdet_fn = custom_jvp(
      [](const Array& x) {
        auto [lu, pivots, permutation] = ll::lu(x);
        return slogdet_lu(lu, pivots);
      },
      [](const T1& primals, const T1& tangents) {
        auto [lu, pivots, permutation] = ll::lu(std::get<0>(primals));
        auto [sign, logabsdet] = slogdet_lu(lu, pivots);
        Array x_dot = lu_solve(lu, permutation, std::get<0>(tangents));
        return std::pair{std::pair{sign, logabsdet},
                         std::pair{zeros_like(sign), sum(pl::diagonal(x_dot), -1)}};
      },
      CustomOptions{.name = "_slogdet_lu", .jvp_name = "_slogdet_jvp"});
  auto [s, logdet] = slogdet_fn(a);
  return {s, logdet};
}

Array det(const ArrayLike& a_) {
  Array a = inexact(a_);
  check_square(a, "Argument to _det() must have shape [..., n, n], got " + py_shape(a.shape()));
  const int64_t n = dim(a, 1);
  if (n == 2) return det_2x2(a);
  if (n == 3) return det_3x3(a);
  // JAX's _det: its derivative, trace(adjugate(a) da), is finite at singular matrices.
  using T1 = std::tuple<Array>;
  static const auto det_fn = custom_jvp(
      [](const Array& x) {
        SlogdetResult r = slogdet(x);
        return multiply(r.sign, exp(r.logabsdet));
      },
      [](const T1& primals, const T1& tangents) {
        auto [y, z] = cofactor_solve(std::get<0>(primals), std::get<0>(tangents));
        return std::pair{y, sum(pl::diagonal(z), -1)};
      },
      CustomOptions{.name = "_det"});
  return det_fn(a);
}

Array matrix_power(const ArrayLike& a_, int64_t n) {
  Array arr = a_.array();
  if (arr.ndim() < 2) {
    throw TypeError(std::to_string(arr.ndim()) +
                    "-dimensional array given. Array must be at least two-dimensional");
  }
  if (dim(arr, 1) != dim(arr, 2)) throw TypeError("Last 2 dimensions of the array must be square");
  if (n == 0) return broadcast_to(eye(dim(arr, 1), std::nullopt, 0, arr.dtype()), arr.shape());
  if (n < 0) {
    arr = inv(arr);
    n = -n;
  }
  if (n == 1) return arr;
  if (n == 2) return matmul(arr, arr);
  if (n == 3) return matmul(matmul(arr, arr), arr);
  Array z, result;
  while (n > 0) {
    z = z.valid() ? matmul(z, z) : arr;
    const int64_t bit = n % 2;
    n /= 2;
    if (bit) result = result.valid() ? matmul(result, z) : z;
  }
  return result;
}

QRResult qr(const ArrayLike& a_, const std::string& mode) {
  Array a = inexact(a_);
  bool full_matrices = false;
  if (mode == "complete") {
    full_matrices = true;
  } else if (mode == "raw") {
    throw NotImplementedError(
        "[numpy.linalg.qr] mode 'raw' (Householder reflectors) is not supported; expected "
        "'reduced', 'complete' or 'r'");
  } else if (mode != "reduced" && mode != "r" && mode != "full") {
    throw ValueError("Unsupported QR decomposition mode '" + mode + "'");
  }
  auto [q, r] = ll::qr(a, full_matrices);
  if (mode == "r") return {Array(), r};
  return {q, r};
}

SVDResult svd(const ArrayLike& a, bool full_matrices, bool compute_uv) {
  std::vector<Array> out = ll::svd(inexact(a), full_matrices, compute_uv);
  if (!compute_uv) return {Array(), out[0], Array()};
  return {out[0], out[1], out[2]};
}

Array svdvals(const ArrayLike& x) { return svd(x, true, false).S; }

EighResult eigh(const ArrayLike& a, std::optional<std::string> UPLO, bool symmetrize_input) {
  bool lower = true;
  if (UPLO && *UPLO == "U") {
    lower = false;
  } else if (UPLO && *UPLO != "L") {
    throw ValueError("UPLO must be one of None, 'L', or 'U', got " + *UPLO);
  }
  auto [v, w] = ll::eigh(inexact(a), lower, symmetrize_input);
  return {w, v};
}

Array eigvalsh(const ArrayLike& a, const std::string& UPLO, bool symmetrize_input) {
  return eigh(a, UPLO, symmetrize_input).eigenvalues;
}

std::tuple<Array, Array, Array, Array> lstsq(const ArrayLike& a_, const ArrayLike& b_,
                                             std::optional<double> rcond) {
  std::vector<Array> ab = frontend::promote_dtypes_inexact({a_.array(), b_.array()});
  Array a = ab[0], b = ab[1];
  if (a.ndim() == 0 || b.ndim() == 0 || a.shape()[0] != b.shape()[0]) {
    throw ValueError("Leading dimensions of input arrays must match");
  }
  const bool vector = b.ndim() == 1;
  if (vector) b = expand_dims(b, -1);
  if (a.ndim() != 2) {
    throw TypeError(std::to_string(a.ndim()) +
                    "-dimensional array given. Array must be two-dimensional");
  }
  if (b.ndim() != 2) {
    throw TypeError(std::to_string(b.ndim()) +
                    "-dimensional array given. Array must be one or two-dimensional");
  }
  const int64_t m = dim(a, 2), n = dim(a, 1);
  const DType dt = a.dtype();
  double r = rcond ? *rcond : eps_of(dt) * double(std::max(n, m));
  if (rcond && *rcond < 0) r = eps_of(dt);
  SVDResult usv = svd(a, false);
  Array s0 = last_at(usv.S, 0);
  Array mask = logical_and(greater(usv.S, 0.0), greater_equal(usv.S, multiply(asarray(r, dt), s0)));
  Array rank = sum(mask);
  Array safe_s = where(mask, usv.S, 1.0).astype(dt);
  Array s_inv = expand_dims(where(mask, divide(1.0, safe_s), 0.0), -1);
  Array utb = matmul(pl::mT(usv.U), b);
  Array x = matmul(pl::mT(usv.Vh), multiply(s_inv, utb));
  Array resid = square(norm(subtract(b, matmul(a, x)), std::nullopt, 0));
  if (vector) x = ravel(x);
  return {x, resid, rank, usv.S};
}

Array pinv(const ArrayLike& a_, std::optional<ArrayLike> rtol_) {
  Array arr = inexact(a_);
  const int64_t m = dim(arr, 2), n = dim(arr, 1);
  Shape out_shape = pl::batch_shape(arr);
  out_shape.push_back(n);
  out_shape.push_back(m);
  if (m == 0 || n == 0) return zeros(out_shape, arr.dtype());
  Array rtol = rtol_ ? asarray(*rtol_)
                     : asarray(10.0 * double(std::max(m, n)) * eps_of(arr.dtype()), arr.dtype());
  // The value from a constant a; the derivative is JAX's closed form, carried by a term
  // linear in a that adds zero: d - stop_gradient(d).
  const Array a0 = stop_gradient(arr);
  const Array p = stop_gradient(pinv_value(a0, rtol));
  const Array d = pinv_tangent(a0, p, arr);
  return add(p, subtract(d, stop_gradient(d)));
}

Array matrix_rank(const ArrayLike& M_, std::optional<ArrayLike> rtol_) {
  Array M = inexact(M_);
  if (M.ndim() < 2) return astype(any(not_equal(M, 0)), DType::int32);
  Array s = svdvals(M);
  Array rtol;
  if (rtol_) {
    rtol = asarray(*rtol_);
  } else {
    const double scale = double(std::max(dim(M, 1), dim(M, 2))) * eps_of(s.dtype());
    rtol = multiply(max(s, -1), asarray(scale, s.dtype()));
  }
  rtol = expand_dims(rtol, std::vector<int64_t>{rtol.ndim()});
  return sum(greater(s, rtol), -1);
}

Array cond(const ArrayLike& x_, std::optional<double> p) {
  const Array& x = x_.array();
  if (x.ndim() < 2) {
    throw ValueError("jnp.linalg.cond: input array must be at least 2D; got arr.shape=" +
                     py_shape(x.shape()));
  }
  if (dim(x, 1) == 0 || dim(x, 2) == 0) {
    throw ValueError("jnp.linalg.cond: input array must not be empty; got arr.shape=" +
                     py_shape(x.shape()));
  }
  const int64_t k = std::min(dim(x, 1), dim(x, 2));
  if (!p || *p == 2) {
    Array s = svdvals(x);
    return divide(last_at(s, 0), last_at(s, k - 1));
  }
  Array r;
  if (*p == -2) {
    Array s = svdvals(x);
    r = divide(last_at(s, k - 1), last_at(s, 0));
  } else {
    if (dim(x, 1) != dim(x, 2)) {
      throw ValueError("jnp.linalg.cond: for p=" + std::to_string(int64_t(*p)) +
                       ", array must be square; got arr.shape=" + py_shape(x.shape()));
    }
    const std::vector<int64_t> axes{-2, -1};
    r = multiply(numpy::linalg::norm(x, p, axes), numpy::linalg::norm(inv(x), p, axes));
  }
  return nan_to_inf(r, inexact(x));
}

Array cond(const ArrayLike& x_, const std::string& p) {
  const Array& x = x_.array();
  if (x.ndim() < 2) {
    throw ValueError("jnp.linalg.cond: input array must be at least 2D; got arr.shape=" +
                     py_shape(x.shape()));
  }
  if (dim(x, 1) != dim(x, 2)) {
    throw ValueError("jnp.linalg.cond: for p='" + p +
                     "', array must be square; got arr.shape=" + py_shape(x.shape()));
  }
  const std::vector<int64_t> axes{-2, -1};
  Array r = multiply(norm(x, p, axes), norm(inv(x), p, axes));
  return nan_to_inf(r, inexact(x));
}

Array norm(const ArrayLike& x_, const std::string& ord, Axes axis, bool keepdims) {
  Array x = inexact(x_);
  auto [row, col] = matrix_axes(x, axis);
  if (ord == "fro" || ord == "f") {
    return sqrt(sum(multiply(x, x), std::vector<int64_t>{row, col}, keepdims));
  }
  if (ord == "nuc") return singular_norm(x, row, col, 0, keepdims);
  throw ValueError("Invalid order '" + ord + "' for matrix norm.");
}

Array norm(const ArrayLike& x_, std::optional<double> ord, Axes axis, bool keepdims) {
  Array x = frontend::promote_dtypes_inexact({x_.array()})[0];
  const int64_t ndim = x.ndim();
  if (axis.all() && !ord) return sum_of_squares_sqrt(x, Axes(), keepdims);
  std::vector<int64_t> axes;
  if (axis.all()) {
    axes.resize(size_t(ndim));
    std::iota(axes.begin(), axes.end(), 0);
  } else {
    for (int64_t a : axis.list()) axes.push_back(frontend::canonicalize_axis(a, ndim));
  }
  const double inf = HUGE_VAL;
  if (axes.size() == 1) {
    Axes ax(axes);
    if (!ord || *ord == 2) return sum_of_squares_sqrt(x, ax, keepdims);
    if (*ord == inf) return max(abs(x), ax, keepdims);
    if (*ord == -inf) return min(abs(x), ax, keepdims);
    if (*ord == 0) return sum(x != 0, ax, keepdims, x.dtype());
    if (*ord == 1) return sum(abs(x), ax, keepdims);
    Array abs_x = abs(x);
    Array p = frontend::scalar(*ord, abs_x.dtype());
    Array p_inv = frontend::scalar(1.0 / *ord, abs_x.dtype());
    return power(sum(power(abs_x, p), ax, keepdims), p_inv);
  }
  if (axes.size() == 2) {
    int64_t row = axes[0];
    int64_t col = axes[1];
    if (!ord) return sum_of_squares_sqrt(x, Axes(axes), keepdims);
    if (*ord == 1 || *ord == -1) {
      if (!keepdims && col > row) --col;
      Array s = sum(abs(x), row, keepdims);
      return *ord == 1 ? max(s, col, keepdims) : min(s, col, keepdims);
    }
    if (*ord == inf || *ord == -inf) {
      if (!keepdims && row > col) --row;
      Array s = sum(abs(x), col, keepdims);
      return *ord == inf ? max(s, row, keepdims) : min(s, row, keepdims);
    }
    if (*ord == 2 || *ord == -2) {
      return singular_norm(x, row, col, *ord == 2 ? 2 : -2, keepdims);
    }
    throw ValueError("Invalid order '" + ord_str(*ord) + "' for matrix norm.");
  }
  throw ValueError("Invalid axis values (" + shape_str(axes) + ") for jnp.linalg.norm.");
}

}  // namespace parax::numpy::linalg
