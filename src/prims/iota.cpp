// iota: an array holding the index along one dimension, e.g. iota(int32, (2, 3), 1) is
// [[0, 1, 2], [0, 1, 2]]. No operands; each device computes its own shard.
#include "prims/kernels/iota.h"

#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace iota_impl {

std::vector<Aval> iota_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.empty(), "iota got " << in.size() << " operands");
  const DType dtype = params.get<DType>("dtype");
  const Shape& shape = param_ints(params, "shape");
  const int64_t dimension = param_int(params, "dimension");
  check_shapelike("iota", "shape", shape);
  if (dtype == DType::bool_) {
    throw TypeError(
        "iota does not accept dtype bool. Accepted dtypes are subtypes of "
        "signedinteger, unsignedinteger, floating.");
  }
  if (dimension < 0 || dimension >= int64_t(shape.size())) {
    throw ValueError("iota dimension must be between 0 and len(shape), got dimension=" +
                     std::to_string(dimension) + " for shape=" + shape_str(shape));
  }
  return {Aval{shape, dtype, false}};
}

ShardingRule iota_sharding_rule(std::span<const Aval>, std::span<const Aval> out, const Params&) {
  ShardingRule rule;
  std::vector<int> dims;
  for (int64_t size : out[0].shape) dims.push_back(add_factor(rule, size));
  rule.results.push_back(dims);
  return rule;
}

Params iota_localize(const Params& params, const core::LocalizeInfo& info) {
  Params local = params;
  local.set("shape", info.out_avals[0].shape);
  const size_t dim = size_t(param_int(params, "dimension"));
  if (dim < info.out_dim_axes.size() && !info.out_dim_axes[dim].empty()) {
    local.set("offset_axes", info.out_dim_axes[dim]);
  }
  return local;
}

}  // namespace iota_impl
}  // namespace

extern const core::PrimRules iota_rules = {
    .abstract_eval = iota_impl::iota_abstract_eval,
    .sharding_rule = iota_impl::iota_sharding_rule,
    .kernel = kernels::iota,
    .localize = iota_impl::iota_localize,
    .jvp = zero_jvp,
    // No batching rule: with no operands, iota is never batched.
};

}  // namespace parax::prims
