// sharding_constraint: the identity, with a layout the compiler must give its result
// (with_sharding_constraint). The partitioner turns it into a reshard; it has no kernel.
#include "prims/prim_util.h"
#include "sharding/sharding_impl.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  PARAX_CHECK(s != nullptr, "sharding_constraint needs a sharding");
  s->impl().check_rank(int64_t(in[0].shape.size()));
  return {in[0]};
}

}  // namespace

extern const PrimRules sharding_constraint_rules = {
    .abstract_eval = shape_rule,
    .sharding_rule = elementwise_sharding_rule,
};

}  // namespace parax::prims
