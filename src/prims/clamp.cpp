// clamp(min, x, max) = min(max(x, min), max) with XLA's NaN-propagating max and min; the
// bounds are rank 0 or x's shape.
#include "prims/kernels/clamp.h"

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {
namespace clamp_impl {

void check_bound_shape(std::string_view which, const Aval& bound, const Aval& x) {
  if (bound.shape.empty() || bound.shape == x.shape) return;
  throw TypeError("clamp requires " + std::string(which) + ".shape == operand.shape or " +
                  std::string(which) + ".shape == (), got " + std::string(which) + ".shape=" +
                  shape_str(bound.shape) + ", operand.shape=" + shape_str(x.shape) + ".");
}

std::vector<Aval> clamp_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 3, "operands of clamp");
  check_bound_shape("min", in[0], in[1]);
  check_bound_shape("max", in[2], in[1]);
  check_same_dtypes("lax.clamp", in);
  return {Aval{in[1].shape, in[1].dtype, all_weak(in)}};
}

// As JAX: x's tangent passes where x is strictly inside the bounds; a bound's where it is
// the result (min only if it is also below max, since max wins when the bounds cross).
std::vector<Array> clamp_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                             std::span<const Array> outs, const Params&) {
  if (!has_tangent(outs[0].dtype())) return {Array()};
  const Array &lo = primals[0], &x = primals[1], &hi = primals[2];
  const Array zeros = zeros_like_aval(core::aval_of(x));
  Array t;
  if (tangents[0].valid()) {
    const Array at_lo = lax::bitwise_and(lax::gt(lo, x), lax::lt(lo, hi));
    t = lax::select(at_lo, broadcast_to(tangents[0], x.shape()), zeros);
  }
  if (tangents[1].valid()) {
    const Array inside = lax::bitwise_and(lax::gt(x, lo), lax::lt(x, hi));
    t = add_tangents(t, lax::select(inside, tangents[1], zeros));
  }
  if (tangents[2].valid()) {
    t = add_tangents(t, lax::select(lax::lt(hi, x), broadcast_to(tangents[2], x.shape()), zeros));
  }
  return {t};
}

}  // namespace clamp_impl
}  // namespace

extern const PrimRules clamp_rules = {.abstract_eval = &clamp_impl::clamp_eval,
                                      .sharding_rule = &elementwise_sharding_rule,
                                      .kernel = kernels::clamp,
                                      .jvp = &clamp_impl::clamp_jvp,
                                      .batch = &elementwise_batch<core::Prim::clamp>};

}  // namespace parax::prims
