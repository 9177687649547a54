// squeeze: removes the size-1 dimensions listed in `dimensions`.
#include <set>

#include "prims/batching_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace squeeze_impl {

std::vector<Aval> squeeze_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "squeeze got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  const std::set<int64_t> unique(dims.begin(), dims.end());
  if (unique.size() != dims.size()) {
    throw ValueError("dimensions are not unique: " + shape_str(dims));
  }
  for (int64_t d : dims) {
    if (d >= 0 && d < int64_t(x.shape.size())) continue;
    throw ValueError("dimensions outside range [0, ndim): " + shape_str(dims));
  }
  for (int64_t d : dims) {
    if (x.shape[size_t(d)] == 1) continue;
    throw ValueError(
        "cannot select an axis to squeeze out which has size not equal to one, "
        "got shape=" +
        shape_str(x.shape) + " and dimensions=" + shape_str(dims));
  }
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (!unique.contains(int64_t(d))) shape.push_back(x.shape[d]);
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

ShardingRule squeeze_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                   const Params& params) {
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  ShardingRule rule;
  std::vector<int> operand;
  std::vector<int> result;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end()) {
      operand.push_back(ShardingRule::kNone);
      continue;
    }
    operand.push_back(add_factor(rule, in[0].shape[d]));
    result.push_back(operand.back());
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

void squeeze_kernel(const KernelCall& c) {
  copy_bytes(c.inputs[0], c.outputs[0], c.out_avals[0].nbytes());
}

std::vector<Array> squeeze_transpose(std::span<const Array> cts, std::span<const Array>,
                                     std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {lax::expand_dims(cts[0], param_ints(params, "dimensions"))};
}

Batched squeeze_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                      const BatchAxis&) {
  const std::vector<int64_t>& removed = param_ints(params, "dimensions");
  const Array out =
      core::bind1(core::Prim::squeeze, {in[0]}, {{"dimensions", batched_dims(removed, dims[0])}});
  return Batched{{out}, {batch_dim_without(dims[0], removed)}};
}

}  // namespace squeeze_impl
}  // namespace

extern const core::PrimRules squeeze_rules = {
    .abstract_eval = squeeze_impl::squeeze_abstract_eval,
    .sharding_rule = squeeze_impl::squeeze_sharding_rule,
    .kernel = squeeze_impl::squeeze_kernel,
    .jvp = unary_linear_jvp<core::Prim::squeeze>,
    .transpose = squeeze_impl::squeeze_transpose,
    .batch = squeeze_impl::squeeze_batch,
};

}  // namespace parax::prims
