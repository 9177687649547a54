// sharding_constraint: the identity, with a layout the compiler must give its result
// (with_sharding_constraint). The partitioner turns it into a reshard; it has no kernel.
#include "prims/prim_util.h"
#include "prims/structural_grad.h"
#include "sharding/sharding_impl.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  PARAX_CHECK(s != nullptr, "sharding_constraint needs a sharding");
  s->impl().check_rank(int64_t(in[0].shape.size()));
  return {in[0]};
}

// The cotangent keeps the layout asked for, as the tangent does.
std::vector<Array> sharding_constraint_transpose(std::span<const Array> cts,
                                                 std::span<const Array>, std::span<const bool>,
                                                 const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {core::bind1(core::Prim::sharding_constraint, {cts[0]}, params)};
}

}  // namespace

extern const PrimRules sharding_constraint_rules = {
    .abstract_eval = shape_rule,
    .sharding_rule = elementwise_sharding_rule,
    .jvp = unary_linear_jvp<core::Prim::sharding_constraint>,
    .transpose = sharding_constraint_transpose,
};

}  // namespace parax::prims
