// lax's special functions bind their primitives (src/prims/special.cpp); the
// jax.scipy.special versions promote and broadcast first, as jnp functions do.
#include "parax/special.h"

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/lax.h"

namespace parax {
namespace lax {
namespace {

using core::Prim;

// A C++ scalar takes the other operand's dtype, as a Python scalar does in lax.
std::vector<Array> adopt_literals(const ArrayLike& x, const ArrayLike& y) {
  Array a = x.array();
  Array b = y.array();
  if (frontend::is_literal(a) && !frontend::is_literal(b) && is_floating(b.dtype())) {
    a = frontend::convert(a, b.dtype(), true);
  } else if (frontend::is_literal(b) && !frontend::is_literal(a) && is_floating(a.dtype())) {
    b = frontend::convert(b, a.dtype(), true);
  }
  return {a, b};
}

Array binary_special(Prim p, const ArrayLike& x, const ArrayLike& y, core::Params params = {}) {
  return core::bind1(p, adopt_literals(x, y), std::move(params));
}

}  // namespace

Array lgamma(const ArrayLike& x) { return core::bind1(Prim::lgamma, {x.array()}); }
Array digamma(const ArrayLike& x) { return core::bind1(Prim::digamma, {x.array()}); }
Array polygamma(const ArrayLike& m, const ArrayLike& x) {
  return binary_special(Prim::polygamma, m, x);
}
Array igamma(const ArrayLike& a, const ArrayLike& x) { return binary_special(Prim::igamma, a, x); }
Array igamma_grad_a(const ArrayLike& a, const ArrayLike& x) {
  return binary_special(Prim::igamma, a, x, {{"derivative", int64_t(1)}});
}
Array random_gamma_grad(const ArrayLike& a, const ArrayLike& x) {
  return binary_special(Prim::random_gamma_grad, a, x);
}

}  // namespace lax

namespace scipy::special {
namespace {

// jnp's promote_args_inexact: one inexact dtype, one broadcast shape.
std::vector<Array> promote(const char* name, std::vector<Array> xs) {
  xs = frontend::promote_dtypes_inexact(std::move(xs));
  std::vector<Shape> shapes;
  for (const Array& x : xs) shapes.push_back(x.shape());
  const Shape shape = frontend::broadcast_shapes(name, shapes);
  for (Array& x : xs) {
    if (x.shape() != shape) x = frontend::broadcast_to(x, shape);
  }
  return xs;
}

}  // namespace

Array gammaln(const ArrayLike& x) { return lax::lgamma(promote("gammaln", {x.array()})[0]); }
Array digamma(const ArrayLike& x) { return lax::digamma(promote("digamma", {x.array()})[0]); }
Array polygamma(const ArrayLike& n, const ArrayLike& x) {
  const std::vector<Array> p = promote("polygamma", {n.array(), x.array()});
  return lax::polygamma(p[0], p[1]);
}
Array gammainc(const ArrayLike& a, const ArrayLike& x) {
  const std::vector<Array> p = promote("gammainc", {a.array(), x.array()});
  return lax::igamma(p[0], p[1]);
}

}  // namespace scipy::special
}  // namespace parax
