// expand_dims: inserts size-1 dimensions at the result positions `dimensions`.
#include <set>

#include "prims/batching_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace expand_dims_impl {

std::vector<Aval> expand_dims_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "expand_dims got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  const std::set<int64_t> unique(dims.begin(), dims.end());
  if (unique.size() != dims.size()) {
    throw ValueError("repeated axis in lax.expand_dims: " + shape_str(dims));
  }
  const int64_t ndim_out = int64_t(x.shape.size() + dims.size());
  for (int64_t d : dims) {
    if (d >= 0 && d < ndim_out) continue;
    throw ValueError("axis " + std::to_string(d) + " is out of bounds for array of dimension " +
                     std::to_string(ndim_out));
  }
  Shape shape;
  size_t next = 0;
  for (int64_t d = 0; d < ndim_out; ++d) {
    shape.push_back(unique.contains(d) ? 1 : x.shape[next++]);
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

ShardingRule expand_dims_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params& params) {
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  ShardingRule rule;
  std::vector<int> operand;
  for (int64_t size : in[0].shape) operand.push_back(add_factor(rule, size));
  std::vector<int> result;
  size_t next = 0;
  for (size_t d = 0; d < out[0].shape.size(); ++d) {
    const bool inserted = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    result.push_back(inserted ? ShardingRule::kNone : operand[next++]);
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

void expand_dims_kernel(const KernelCall& c) {
  copy_bytes(c.inputs[0], c.outputs[0], c.out_avals[0].nbytes());
}

std::vector<Array> expand_dims_transpose(std::span<const Array> cts, std::span<const Array>,
                                         std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {lax::squeeze(cts[0], param_ints(params, "dimensions"))};
}

// The batch dimension stays between the operand dimensions it separates: right after
// where the one before it lands, so the operand is not moved.
Batched expand_dims_batch(std::span<const Array> in, std::span<const int> dims,
                          const Params& params, const BatchAxis&) {
  const int d = dims[0];
  const std::vector<int64_t>& inserted = param_ints(params, "dimensions");
  // The result positions of the element's dimensions, in order.
  const int64_t rank = in[0].ndim() - 1 + int64_t(inserted.size());
  std::vector<int64_t> kept;
  for (int64_t r = 0; r < rank; ++r) {
    if (std::find(inserted.begin(), inserted.end(), r) == inserted.end()) kept.push_back(r);
  }
  const int at = d == 0 ? 0 : int(kept[size_t(d) - 1]) + 1;
  const Array out =
      core::bind1(core::Prim::expand_dims, {in[0]}, {{"dimensions", batched_dims(inserted, at)}});
  return Batched{{out}, {at}};
}

}  // namespace expand_dims_impl
}  // namespace

extern const core::PrimRules expand_dims_rules = {
    .abstract_eval = expand_dims_impl::expand_dims_abstract_eval,
    .sharding_rule = expand_dims_impl::expand_dims_sharding_rule,
    .kernel = expand_dims_impl::expand_dims_kernel,
    .jvp = unary_linear_jvp<core::Prim::expand_dims>,
    .transpose = expand_dims_impl::expand_dims_transpose,
    .batch = expand_dims_impl::expand_dims_batch,
};

}  // namespace parax::prims
