// dynamic_update_slice: the operand with `update` written at start indices given as rank-0
// integer operands (operand, update, then one index per dimension), clamped so the update
// fits.
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

std::vector<Aval> dynamic_update_slice_abstract_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() >= 2, "dynamic_update_slice got " << in.size() << " operands");
  const Aval& x = in[0];
  const Aval& update = in[1];
  const std::span<const Aval> indices = in.subspan(2);
  if (update.shape.size() != x.shape.size()) {
    throw TypeError("dynamic_update_slice update must have the same rank as operand, got "
                    "update shape " + shape_str(update.shape) + " for operand shape " +
                    shape_str(x.shape) + ".");
  }
  if (indices.size() != x.shape.size()) {
    throw TypeError("dynamic_update_slice start_indices must have length equal to the rank of "
                    "operand, got indices " + avals_str(indices) + " for operand shape " +
                    shape_str(x.shape) + ".");
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (update.shape[d] <= x.shape[d]) continue;
    throw TypeError("dynamic_update_slice update shape must be smaller than operand shape, got "
                    "update shape " + shape_str(update.shape) + " for operand shape " +
                    shape_str(x.shape) + ".");
  }
  check_start_indices("dynamic_update_slice", indices);
  check_same_dtypes("lax.dynamic_update_slice", in.first(2));
  return {Aval{x.shape, x.dtype, x.weak_type}};
}

// Where the update spans the whole dimension its start is 0, so operand, update and
// result shard alike.
ShardingRule dynamic_update_slice_sharding_rule(std::span<const Aval> in,
                                                std::span<const Aval>, const Params&) {
  const Shape& shape = in[0].shape;
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool whole = in[1].shape[d] == shape[d];
    dims.push_back(whole ? add_factor(rule, shape[d]) : ShardingRule::kNone);
  }
  rule.operands = {dims, dims};
  for (size_t i = 2; i < in.size(); ++i) rule.operands.emplace_back();
  rule.results.push_back(dims);
  return rule;
}

void dynamic_update_slice_kernel(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  const Shape& update_shape = c.in_avals[1].shape;
  const std::vector<int64_t> starts = clamped_starts(c, 2, shape, update_shape);
  copy_bytes(c.inputs[0], c.outputs[0], c.out_avals[0].nbytes());
  const std::vector<int64_t> out_strides = strides_of(shape);
  StridedCopy copy{update_shape, strides_of(update_shape), out_strides, 0, 0};
  for (size_t d = 0; d < starts.size(); ++d) copy.dst_offset += starts[d] * out_strides[d];
  strided_copy(c.inputs[1], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}


// Linear in the operand and the update together (JAX's _dynamic_update_slice_jvp).
std::vector<Array> dynamic_update_slice_jvp(std::span<const Array> primals,
                                            std::span<const Array> tangents,
                                            std::span<const Array>, const Params& params) {
  if (!tangents[0].valid() && !tangents[1].valid()) return {Array()};
  std::vector<Array> in(primals.begin(), primals.end());
  in[0] = instantiate(tangents[0], core::aval_of(primals[0]));
  in[1] = instantiate(tangents[1], core::aval_of(primals[1]));
  return {core::bind1(core::Prim::dynamic_update_slice, std::move(in), params)};
}

// The operand's cotangent is the cotangent with the updated window zeroed; the update's is
// that window.
std::vector<Array> dynamic_update_slice_transpose(std::span<const Array> cts,
                                                  std::span<const Array> operands,
                                                  std::span<const bool> linear, const Params&) {
  std::vector<Array> out(operands.size());
  if (!cts[0].valid()) return out;
  const Array& ct = cts[0];
  const Shape update_shape = operand_type(operands, 1, "dynamic_update_slice").shape;
  const std::vector<Array> starts(operands.begin() + 2, operands.end());
  if (linear[0]) {
    std::vector<Array> in{ct, zeros_like_aval(Aval{update_shape, ct.dtype(), false})};
    in.insert(in.end(), starts.begin(), starts.end());
    out[0] = core::bind1(core::Prim::dynamic_update_slice, std::move(in));
  }
  if (linear[1]) {
    std::vector<Array> in{ct};
    in.insert(in.end(), starts.begin(), starts.end());
    out[1] = core::bind1(core::Prim::dynamic_slice, std::move(in),
                         {{"slice_sizes", update_shape}});
  }
  return out;
}

}  // namespace

extern const core::PrimRules dynamic_update_slice_rules = {
    .abstract_eval = dynamic_update_slice_abstract_eval,
    .sharding_rule = dynamic_update_slice_sharding_rule,
    .kernel = dynamic_update_slice_kernel,
    .jvp = dynamic_update_slice_jvp,
    .transpose = dynamic_update_slice_transpose,
};

}  // namespace parax::prims
