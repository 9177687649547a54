// lax::linalg: thin wrappers binding the LAPACK primitives (numpy::linalg composes them,
// in src/numpy/linalg.cpp). They are declared in parax/linalg.h, which declares
// jnp.linalg too and so belongs to the numpy layer: this file cannot include it, and the
// tests that call these functions through it check at link time that the two agree.
#include <tuple>
#include <utility>
#include <vector>

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/lax.h"
#include "prims/linalg_util.h"

namespace parax::lax::linalg {

namespace pl = prims::linalg;

namespace {

// (x + x^T) / 2, promoted as jnp's true division promotes (JAX's symmetrize).
Array symmetrize(const Array& x) {
  const Array two = frontend::scalar(2.0, base::default_float_dtype(), true);
  const std::vector<Array> args =
      frontend::promote_args_inexact("div", {lax::add(x, pl::mT(x)), two});
  return lax::div(args[0], args[1]);
}

}  // namespace

Array cholesky(const ArrayLike& x_, bool symmetrize_input) {
  Array x = x_.array();
  if (symmetrize_input && x.ndim() >= 2) x = symmetrize(x);
  Array l = core::bind1(core::Prim::cholesky, {x});
  return pl::tril(l);
}

std::tuple<Array, Array, Array> lu(const ArrayLike& x) {
  std::vector<Array> out = core::bind(core::Prim::lu, {x.array()});
  return {out[0], out[1], out[2]};
}

Array lu_pivots_to_permutation(const ArrayLike& pivots, int64_t permutation_size) {
  return core::bind1(core::Prim::lu_pivots_to_permutation, {pivots.array()},
                     {{"permutation_size", permutation_size}});
}

std::pair<Array, Array> qr(const ArrayLike& x, bool full_matrices) {
  std::vector<Array> out =
      core::bind(core::Prim::qr, {x.array()}, {{"full_matrices", full_matrices}});
  return {out[0], out[1]};
}

std::vector<Array> svd(const ArrayLike& x, bool full_matrices, bool compute_uv) {
  std::vector<Array> out = core::bind(
      core::Prim::svd, {x.array()}, {{"full_matrices", full_matrices}, {"compute_uv", compute_uv}});
  if (!compute_uv) return out;
  return {out[1], out[0], out[2]};
}

std::pair<Array, Array> eigh(const ArrayLike& x_, bool lower, bool symmetrize_input) {
  Array x = x_.array();
  if (symmetrize_input && x.ndim() >= 2) x = symmetrize(x);
  std::vector<Array> out =
      core::bind(core::Prim::eigh, {x}, {{"lower", lower}, {"sort_eigenvalues", true}});
  return {out[0], out[1]};
}

Array triangular_solve(const ArrayLike& a_, const ArrayLike& b_, bool left_side, bool lower,
                       bool transpose_a, bool conjugate_a, bool unit_diagonal) {
  (void)conjugate_a;  // real dtypes only: conjugation changes nothing
  const Array& a = a_.array();
  Array b = b_.array();
  const bool singleton = b.ndim() == a.ndim() - 1;
  if (singleton) b = lax::expand_dims(b, {left_side ? b.ndim() : b.ndim() - 1});
  Array out = pl::triangular_solve(a, b, left_side, lower, transpose_a, unit_diagonal);
  if (singleton) out = lax::squeeze(out, {left_side ? out.ndim() - 1 : out.ndim() - 2});
  return out;
}

}  // namespace parax::lax::linalg
