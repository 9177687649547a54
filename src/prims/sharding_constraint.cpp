// sharding_constraint: the identity, with a layout the compiler must give its result
// (with_sharding_constraint). The partitioner turns it into a reshard; it has no kernel.
#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"
#include "sharding/sharding_impl.h"

namespace parax::prims {
namespace {
namespace sharding_constraint_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  PARAX_CHECK(s != nullptr, "sharding_constraint needs a sharding");
  s->impl().check_rank(int64_t(in[0].shape.size()));
  return {in[0]};
}

// The cotangent keeps the layout asked for, as the tangent does.
std::vector<Array> sharding_constraint_transpose(std::span<const Array> cts, std::span<const Array>,
                                                 std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {core::bind1(core::Prim::sharding_constraint, {cts[0]}, params)};
}

// The batch dimension is laid out unsharded: the layout asked for, as a NamedSharding
// (any kind has one), with a None entry at the batch dimension.
Batched sharding_constraint_batch(std::span<const Array> in, std::span<const int> dims,
                                  const Params& params, const BatchAxis&) {
  const int d = dims[0];
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  const NamedSharding named = s->to_named(in[0].ndim() - 1);
  std::vector<SpecEntry> entries = named.spec().entries();
  while (entries.size() < size_t(d)) entries.emplace_back(None);
  entries.insert(entries.begin() + d, SpecEntry(None));
  const NamedSharding batched(named.mesh(), PartitionSpec::from_entries(std::move(entries)));
  Params p = params;
  p.set("sharding", std::make_shared<const Sharding>(batched));
  return Batched{{core::bind1(core::Prim::sharding_constraint, {in[0]}, p)}, {d}};
}

}  // namespace sharding_constraint_impl
}  // namespace

extern const PrimRules sharding_constraint_rules = {
    .abstract_eval = sharding_constraint_impl::shape_rule,
    .sharding_rule = elementwise_sharding_rule,
    .jvp = unary_linear_jvp<core::Prim::sharding_constraint>,
    .transpose = sharding_constraint_impl::sharding_constraint_transpose,
    .batch = sharding_constraint_impl::sharding_constraint_batch,
};

}  // namespace parax::prims
