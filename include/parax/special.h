// Special functions: lax's lgamma, digamma, polygamma, igamma, igamma_grad_a and
// random_gamma_grad (elementwise primitives over floating dtypes), and the
// jax.scipy.special functions built on them.
#pragma once

#include "parax/array.h"

namespace parax::lax {

// Returns log|Gamma(x)|. Requires: a floating dtype (else TypeError), as for all below.
Array lgamma(const ArrayLike& x);
// Returns the digamma function psi(x) = d/dx log Gamma(x).
Array digamma(const ArrayLike& x);
// Returns the m-th derivative of digamma at x (NaN unless m is a non-negative integer).
Array polygamma(const ArrayLike& m, const ArrayLike& x);
// Returns the regularized lower incomplete gamma function P(a, x).
Array igamma(const ArrayLike& a, const ArrayLike& x);
// Returns dP(a, x)/da.
Array igamma_grad_a(const ArrayLike& a, const ArrayLike& x);
// Returns the derivative of a Gamma(a, 1) sample x with respect to a (implicit
// reparameterization: -(dP/da) / (dP/dx)).
Array random_gamma_grad(const ArrayLike& a, const ArrayLike& x);

}  // namespace parax::lax

namespace parax::scipy::special {

// numpy-style versions: operands are promoted to a common inexact dtype and broadcast.
Array gammaln(const ArrayLike& x);
Array digamma(const ArrayLike& x);
Array polygamma(const ArrayLike& n, const ArrayLike& x);
Array gammainc(const ArrayLike& a, const ArrayLike& x);

}  // namespace parax::scipy::special
