// cumsum: running sums along `axis`, from the end when `reverse`. Floats accumulate in
// double (float32 too: a serial float32 running sum loses ~n ulps over long axes, and
// the wider add costs nothing next to memory traffic); integers wrap around.
#include "prims/kernels/cumsum.h"

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

// JAX's lax._cumred_shape_rule and _reduce_number_dtype_rule.
std::vector<Aval> cumsum_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  const int64_t axis = param_int(params, "axis");
  if (axis < 0) throw ValueError("XLA operations do not allow negative axes");
  if (axis >= int64_t(x.shape.size())) {
    throw ValueError("axis " + std::to_string(axis) + " is out of bounds for array of shape " +
                     shape_str(x.shape));
  }
  if (x.dtype == DType::bool_) {
    throw TypeError("cumsum does not accept dtype bool. Accepted dtypes are subtypes of number.");
  }
  return {x};
}

// The scanned dimension must stay whole; the others are independent.
ShardingRule cumsum_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                  const Params& params) {
  const int64_t axis = param_int(params, "axis");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == axis) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

// The adjoint of a running sum is the running sum the other way.
std::vector<Array> cumsum_transpose(std::span<const Array> cts, std::span<const Array>,
                                    std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const bool reverse = params.has("reverse") && params.get<bool>("reverse");
  return {core::bind1(core::Prim::cumsum, {cts[0]},
                      {{"axis", param_int(params, "axis")}, {"reverse", !reverse}})};
}

Batched cumsum_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                     const BatchAxis&) {
  Params p = params;
  p.set("axis", batched_dim(param_int(params, "axis"), dims[0]));
  return Batched{{core::bind1(core::Prim::cumsum, {in[0]}, p)}, {dims[0]}};
}

// One add per operand element, as a reduction's.
core::Cost cumsum_cost(std::span<const Aval> in, std::span<const Aval>, const Params&,
                       std::span<const int64_t>) {
  return {.flops = double(in[0].size())};
}

}  // namespace

extern const core::PrimRules cumsum_rules = {
    .abstract_eval = cumsum_abstract_eval,
    .sharding_rule = cumsum_sharding_rule,
    .kernel = kernels::cumsum,
    .jvp = unary_linear_jvp<core::Prim::cumsum>,
    .transpose = cumsum_transpose,
    .batch = cumsum_batch,
    .cost = cumsum_cost,
};

}  // namespace parax::prims
