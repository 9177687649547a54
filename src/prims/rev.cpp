// rev: reverses the order of elements along each of `dimensions`.
#include <set>

#include "prims/batching_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

std::vector<Aval> rev_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "rev got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  check_shapelike("rev", "dimensions", dims);
  if (std::set<int64_t>(dims.begin(), dims.end()).size() != dims.size()) {
    throw TypeError("rev dimensions must be unique, got " + shape_str(dims) + ".");
  }
  for (int64_t d : dims) {
    if (d < int64_t(x.shape.size())) continue;
    throw TypeError("rev dimensions must all be less than operand ndim, got dimensions " +
                    shape_str(dims) + " for operand ndim " + std::to_string(x.shape.size()) +
                    ".");
  }
  return {x};
}

// A reversed dimension would need each device's block from its mirror device.
ShardingRule rev_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                               const Params& params) {
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  ShardingRule rule;
  std::vector<int> result;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    const bool reversed = std::find(dims.begin(), dims.end(), int64_t(d)) != dims.end();
    result.push_back(reversed ? ShardingRule::kNone : add_factor(rule, in[0].shape[d]));
  }
  rule.operands.push_back(result);
  rule.results.push_back(result);
  return rule;
}

void rev_kernel(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  StridedCopy copy = dense_copy(shape, strides_of(shape));
  // Read each reversed dimension from its last element backwards.
  for (int64_t d : param_ints(c.params, "dimensions")) {
    const size_t k = size_t(d);
    copy.src_offset += (shape[k] - 1) * copy.src_strides[k];
    copy.src_strides[k] = -copy.src_strides[k];
  }
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}


std::vector<Array> rev_transpose(std::span<const Array> cts, std::span<const Array>,
                                 std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {lax::rev(cts[0], param_ints(params, "dimensions"))};
}

Batched rev_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis&) {
  const std::vector<int64_t> reversed = batched_dims(param_ints(params, "dimensions"), dims[0]);
  return Batched{{core::bind1(core::Prim::rev, {in[0]}, {{"dimensions", reversed}})}, {dims[0]}};
}

}  // namespace

extern const core::PrimRules rev_rules = {
    .abstract_eval = rev_abstract_eval,
    .sharding_rule = rev_sharding_rule,
    .kernel = rev_kernel,
    .jvp = unary_linear_jvp<core::Prim::rev>,
    .transpose = rev_transpose,
    .batch = rev_batch,
};

}  // namespace parax::prims
