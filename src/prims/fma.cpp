// fma(a, b, c) = a * b + c with one rounding. Not one of lax's primitives: XLA:CPU
// contracts a multiply feeding an add into an FMA, so JAX's samplers (uniform's scaling,
// erf_inv's Horner steps) round that way, and bit-exact random numbers need it. float32
// and float64; rank-0 operands broadcast.
#include "prims/kernels/fma.h"

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {
namespace fma_impl {

std::vector<Aval> fma_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 3, "operands of fma");
  const Shape shape = elementwise_shape("fma", in);
  check_same_dtypes("fma", in);
  if (in[0].dtype != DType::float32 && in[0].dtype != DType::float64) {
    throw TypeError("fma requires float32 or float64 operands, got " +
                    std::string(dtype_name(in[0].dtype)) + ".");
  }
  return {Aval{shape, in[0].dtype, all_weak(in)}};
}

// d(a b + c) = da b + a db + dc.
std::vector<Array> fma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array> outs, const Params&) {
  const Shape& shape = outs[0].shape();
  Array t;
  if (tangents[0].valid()) t = broadcast_to(lax::mul(tangents[0], primals[1]), shape);
  if (tangents[1].valid())
    t = add_tangents(t, broadcast_to(lax::mul(primals[0], tangents[1]), shape));
  if (tangents[2].valid()) t = add_tangents(t, broadcast_to(tangents[2], shape));
  return {t};
}

}  // namespace fma_impl
}  // namespace

extern const PrimRules fma_rules = {.abstract_eval = &fma_impl::fma_eval,
                                    .sharding_rule = &elementwise_sharding_rule,
                                    .kernel = kernels::fma,
                                    .jvp = &fma_impl::fma_jvp,
                                    .batch = &elementwise_batch<core::Prim::fma>};

}  // namespace parax::prims
