// inspect_sharding: the identity, whose callback the compiler calls with the sharding it
// chose for the operand (debug::inspect_array_sharding). Nothing reads its result, so dce
// removes it from the per-device program: it has no kernel.
#include "prims/batching_util.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace inspect_sharding_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params&) { return {in[0]}; }

// The primal is inspected (its replay bound it); the tangent passes through.
std::vector<Array> jvp(std::span<const Array>, std::span<const Array> tangents,
                       std::span<const Array>, const Params&) {
  return {tangents[0]};
}

// Inspects the batched value, batch dimension included (as JAX does).
Batched batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
              const BatchAxis&) {
  return Batched{{core::bind1(core::Prim::inspect_sharding, {in[0]}, params)}, {dims[0]}};
}

}  // namespace inspect_sharding_impl
}  // namespace

extern const PrimRules inspect_sharding_rules = {
    .abstract_eval = inspect_sharding_impl::shape_rule,
    .sharding_rule = elementwise_sharding_rule,
    .jvp = inspect_sharding_impl::jvp,
    .batch = inspect_sharding_impl::batch,
};

}  // namespace parax::prims
