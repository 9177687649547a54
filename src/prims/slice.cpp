// slice: elements start_indices[d], start + stride, ... below limit_indices[d] of each
// dimension (Python's x[start:limit:stride] per dimension).
#include "prims/batching_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace slice_impl {

// Elements a positive stride picks from `len` (>= 0) consecutive ones: ceil(len / stride),
// written so that a huge user stride cannot overflow.
int64_t strided_count(int64_t len, int64_t stride) { return len == 0 ? 0 : (len - 1) / stride + 1; }

// Returns the strides param, with the empty (or absent) list meaning all ones.
std::vector<int64_t> slice_strides(const Params& params, size_t rank) {
  if (!params.has("strides") || param_ints(params, "strides").empty()) {
    return std::vector<int64_t>(rank, 1);
  }
  return param_ints(params, "strides");
}

std::vector<Aval> slice_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "slice got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& start = param_ints(params, "start_indices");
  const std::vector<int64_t>& limit = param_ints(params, "limit_indices");
  check_shapelike("slice", "start_indices", start);
  check_shapelike("slice", "limit_indices", limit);
  const std::string shape = shape_str(x.shape);
  if (start.size() != x.shape.size()) {
    throw TypeError(
        "slice start_indices must have length equal to the number of dimensions of "
        "the operand, got indices " +
        shape_str(start) + " for operand shape " + shape + ".");
  }
  if (limit.size() != start.size()) {
    throw TypeError(
        "slice limit_indices must have the same length as start_indices, got "
        "start_indices " +
        shape_str(start) + " and limit_indices " + shape_str(limit) + ".");
  }
  for (size_t d = 0; d < limit.size(); ++d) {
    if (limit[d] <= x.shape[d]) continue;
    throw TypeError(
        "slice limit_indices must be less than or equal to operand shape, got "
        "limit_indices " +
        shape_str(limit) + " for operand shape " + shape + ".");
  }
  for (size_t d = 0; d < limit.size(); ++d) {
    if (limit[d] >= start[d]) continue;
    throw TypeError(
        "slice limit_indices must be greater than or equal to start_indices, got "
        "start_indices " +
        shape_str(start) + " and limit_indices " + shape_str(limit) + ".");
  }
  const bool has_strides = params.has("strides") && !param_ints(params, "strides").empty();
  if (has_strides) {
    const std::vector<int64_t>& strides = param_ints(params, "strides");
    check_shapelike("slice", "strides", strides);
    if (strides.size() != x.shape.size()) {
      throw TypeError(
          "slice strides must have length equal to the number of dimensions of the "
          "operand, got strides " +
          shape_str(strides) + " for operand shape " + shape + ".");
    }
    for (int64_t s : strides) {
      if (s <= 0) throw TypeError("slice strides must be positive, got " + shape_str(strides));
    }
  }
  const std::vector<int64_t> strides = slice_strides(params, x.shape.size());
  Shape out;
  for (size_t d = 0; d < start.size(); ++d) {
    out.push_back(strided_count(limit[d] - start[d], strides[d]));
  }
  return {Aval{out, x.dtype, x.weak_type}};
}

// Only a dimension taken whole keeps its sharding: any other slice of a sharded
// dimension would leave devices with unequal, shifted pieces.
ShardingRule slice_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                 const Params& params) {
  const Shape& shape = in[0].shape;
  const std::vector<int64_t>& start = param_ints(params, "start_indices");
  const std::vector<int64_t>& limit = param_ints(params, "limit_indices");
  const std::vector<int64_t> strides = slice_strides(params, shape.size());
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    const bool whole = start[d] == 0 && limit[d] == shape[d] && strides[d] == 1;
    dims.push_back(whole ? add_factor(rule, shape[d]) : ShardingRule::kNone);
  }
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  return rule;
}

void slice_kernel(const KernelCall& c) {
  const std::vector<int64_t>& start = param_ints(c.params, "start_indices");
  const std::vector<int64_t> strides = slice_strides(c.params, start.size());
  const std::vector<int64_t> in_strides = strides_of(c.in_avals[0].shape);
  StridedCopy copy = dense_copy(c.out_avals[0].shape, in_strides);
  for (size_t d = 0; d < start.size(); ++d) {
    copy.src_offset += start[d] * in_strides[d];
    // One element taken needs no step (and a huge stride times the row size would overflow).
    copy.src_strides[d] = c.out_avals[0].shape[d] > 1 ? copy.src_strides[d] * strides[d] : 0;
  }
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}

// A sharded dimension is taken whole (start 0, stride 1), so its local limit is the local
// size; a dimension whose result size did not change keeps its params.
Params slice_localize(const Params& params, const core::LocalizeInfo& info) {
  const std::vector<int64_t>& start = param_ints(params, "start_indices");
  std::vector<int64_t> limit = param_ints(params, "limit_indices");
  const std::vector<int64_t> strides = slice_strides(params, start.size());
  const Shape& local = info.out_avals[0].shape;
  for (size_t d = 0; d < start.size(); ++d) {
    const int64_t global = strided_count(limit[d] - start[d], strides[d]);
    if (local[d] != global) limit[d] = start[d] + local[d];
  }
  Params out = params;
  out.set("limit_indices", limit);
  return out;
}

// JAX's _slice_transpose_rule: pad the cotangent with zeros back to the operand's shape;
// a stride s puts s - 1 zeros between the kept elements (interior padding).
std::vector<Array> slice_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                   std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const Array& ct = cts[0];
  const Shape operand_shape = operand_type(operands, 0, "slice").shape;
  const std::vector<int64_t>& start = param_ints(params, "start_indices");
  const std::vector<int64_t> strides = slice_strides(params, start.size());
  std::vector<lax::PadConfig> config;
  for (size_t d = 0; d < start.size(); ++d) {
    const int64_t n = ct.shape()[d];
    // Where the last kept element ends, not limit_indices: a stride may stop short of it.
    const int64_t real_limit = start[d] + (n == 0 ? 0 : 1 + (n - 1) * strides[d]);
    config.push_back({start[d], operand_shape[d] - real_limit, strides[d] - 1});
  }
  return {lax::pad(ct, constant(0, ct.dtype()), config)};
}

// The batch dimension is taken whole.
Batched slice_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                    const BatchAxis& axis) {
  const int d = dims[0];
  std::vector<int64_t> start = param_ints(params, "start_indices");
  std::vector<int64_t> limit = param_ints(params, "limit_indices");
  start.insert(start.begin() + d, 0);
  limit.insert(limit.begin() + d, axis.size);
  Params p = params;
  p.set("start_indices", start);
  p.set("limit_indices", limit);
  if (params.has("strides") && !param_ints(params, "strides").empty()) {
    std::vector<int64_t> strides = param_ints(params, "strides");
    strides.insert(strides.begin() + d, 1);
    p.set("strides", strides);
  }
  return Batched{{core::bind1(core::Prim::slice, {in[0]}, p)}, {d}};
}

}  // namespace slice_impl
}  // namespace

extern const core::PrimRules slice_rules = {
    .abstract_eval = slice_impl::slice_abstract_eval,
    .sharding_rule = slice_impl::slice_sharding_rule,
    .kernel = slice_impl::slice_kernel,
    .localize = slice_impl::slice_localize,
    .jvp = unary_linear_jvp<core::Prim::slice>,
    .transpose = slice_impl::slice_transpose,
    .batch = slice_impl::slice_batch,
};

}  // namespace parax::prims
