// stop_gradient: the identity, whose derivative is zero (lax.stop_gradient).
#include <cstring>

#include "prims/batching_util.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace stop_gradient_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params&) { return {in[0]}; }

void kernel(const KernelCall& c) {
  // Elementwise on a tile: the input may be rank 0 only if the output is too.
  const size_t n = c.out_avals[0].nbytes();
  if (c.inputs[0] != c.outputs[0] && n > 0) std::memcpy(c.outputs[0], c.inputs[0], n);
}

std::vector<Array> jvp(std::span<const Array>, std::span<const Array>, std::span<const Array> outs,
                       const Params&) {
  return std::vector<Array>(outs.size());  // symbolic zeros
}

}  // namespace stop_gradient_impl
}  // namespace

extern const PrimRules stop_gradient_rules = {
    .abstract_eval = stop_gradient_impl::shape_rule,
    .sharding_rule = elementwise_sharding_rule,
    .kernel = stop_gradient_impl::kernel,
    .jvp = stop_gradient_impl::jvp,
    .batch = elementwise_batch<core::Prim::stop_gradient>,
};

}  // namespace parax::prims
