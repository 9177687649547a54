// broadcast_in_dim: places operand dimension i at result dimension
// broadcast_dimensions[i]; operand dimensions of size 1 and new dimensions repeat. It joins
// fusions, reading its (small) operand in place tile by tile (kernels/broadcast_tile.cpp).
#include "prims/batching_util.h"
#include "prims/kernels/broadcast_tile.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace broadcast_in_dim_impl {

std::vector<Aval> broadcast_in_dim_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "broadcast_in_dim got " << in.size() << " operands");
  const Aval& x = in[0];
  const Shape& shape = param_ints(params, "shape");
  const std::vector<int64_t>& dims = param_ints(params, "broadcast_dimensions");
  check_shapelike("broadcast_in_dim", "shape", shape);
  check_shapelike("broadcast_in_dim", "broadcast_dimensions", dims);
  const size_t ndim = x.shape.size();
  if (dims.size() != ndim) {
    throw TypeError(
        "broadcast_in_dim broadcast_dimensions must have length equal to operand "
        "ndim; got broadcast_dimensions " +
        shape_str(dims) + " for operand ndim " + std::to_string(ndim) + ".");
  }
  if (shape.size() < ndim) {
    throw TypeError(
        "broadcast_in_dim target broadcast shape must have equal or higher rank to "
        "the operand shape; got operand ndim " +
        std::to_string(ndim) + " and target broadcast ndim " + std::to_string(shape.size()) + ".");
  }
  for (int64_t d : dims) {
    if (d < int64_t(shape.size())) continue;
    throw TypeError(
        "broadcast_in_dim broadcast_dimensions must be a subset of output "
        "dimensions, got " +
        shape_str(dims) + " for operand ndim " + std::to_string(ndim) + " and shape " +
        shape_str(shape) + ".");
  }
  for (size_t i = 0; i < ndim; ++i) {
    if (x.shape[i] == 1 || x.shape[i] == shape[size_t(dims[i])]) continue;
    throw TypeError(
        "broadcast_in_dim operand dimension sizes must either be 1, or be equal to "
        "their corresponding dimensions in the target broadcast shape; got operand "
        "of shape " +
        shape_str(x.shape) + ", target broadcast shape " + shape_str(shape) +
        ", broadcast_dimensions " + shape_str(dims));
  }
  for (size_t i = 1; i < ndim; ++i) {
    if (dims[i - 1] < dims[i]) continue;
    throw TypeError(
        "broadcast_in_dim broadcast_dimensions must be strictly increasing; got "
        "broadcast_dimensions " +
        shape_str(dims));
  }
  return {Aval{shape, x.dtype, x.weak_type}};
}

// One factor per result dimension; an operand dimension shares it unless it is a size-1
// dimension that broadcasts (every device then needs the operand's single element).
ShardingRule broadcast_in_dim_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                            const Params& params) {
  const std::vector<int64_t>& dims = param_ints(params, "broadcast_dimensions");
  ShardingRule rule;
  std::vector<int> result;
  for (int64_t size : out[0].shape) result.push_back(add_factor(rule, size));
  std::vector<int> operand;
  for (size_t i = 0; i < dims.size(); ++i) {
    const size_t d = size_t(dims[i]);
    operand.push_back(in[0].shape[i] == out[0].shape[d] ? result[d] : ShardingRule::kNone);
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

void broadcast_in_dim_kernel(const KernelCall& c) {
  const Shape& in_shape = c.in_avals[0].shape;
  const Shape& out_shape = c.out_avals[0].shape;
  const std::vector<int64_t>& dims = param_ints(c.params, "broadcast_dimensions");
  const std::vector<int64_t> in_strides = strides_of(in_shape);
  // A zero stride repeats the operand along new and size-1 dimensions.
  std::vector<int64_t> src_strides(out_shape.size(), 0);
  for (size_t i = 0; i < dims.size(); ++i) {
    if (in_shape[i] == out_shape[size_t(dims[i])]) src_strides[size_t(dims[i])] = in_strides[i];
  }
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype),
               dense_copy(out_shape, src_strides));
}

Params broadcast_in_dim_localize(const Params& params, const core::LocalizeInfo& info) {
  Params local = params;
  local.set("shape", info.out_avals[0].shape);
  return local;
}

// JAX's _broadcast_in_dim_transpose_rule: sum over the result dimensions no operand
// dimension fills (new ones, and those a size-1 operand dimension repeated along), then
// restore the size-1 operand dimensions.
std::vector<Array> broadcast_in_dim_transpose(std::span<const Array> cts,
                                              std::span<const Array> operands,
                                              std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const Shape operand_shape = operand_type(operands, 0, "broadcast_in_dim").shape;
  const std::vector<int64_t>& dims = param_ints(params, "broadcast_dimensions");
  std::vector<bool> kept(size_t(cts[0].ndim()), false);
  std::vector<int64_t> unit_dims;
  for (size_t i = 0; i < dims.size(); ++i) {
    if (operand_shape[i] == 1) {
      unit_dims.push_back(int64_t(i));
    } else {
      kept[size_t(dims[i])] = true;
    }
  }
  std::vector<int64_t> axes;
  for (size_t d = 0; d < kept.size(); ++d) {
    if (!kept[d]) axes.push_back(int64_t(d));
  }
  Array ct = cts[0];
  if (!axes.empty()) ct = lax::reduce_sum(ct, axes);
  if (!unit_dims.empty()) ct = lax::expand_dims(ct, unit_dims);
  return {ct};
}

// The batch dimension lands right after the result dimension of the operand dimension
// before it, so the broadcast dimensions stay increasing and the operand is not moved.
Batched broadcast_in_dim_batch(std::span<const Array> in, std::span<const int> dims,
                               const Params& params, const BatchAxis& axis) {
  const int d = dims[0];
  const std::vector<int64_t>& old_dims = param_ints(params, "broadcast_dimensions");
  const int64_t at = d == 0 ? 0 : old_dims[size_t(d) - 1] + 1;
  std::vector<int64_t> new_dims;
  for (int64_t b : old_dims) new_dims.push_back(b >= at ? b + 1 : b);
  new_dims.insert(new_dims.begin() + d, at);
  Shape shape = param_ints(params, "shape");
  shape.insert(shape.begin() + at, axis.size);
  Params p = params;
  p.set("shape", shape);
  p.set("broadcast_dimensions", new_dims);
  return Batched{{core::bind1(core::Prim::broadcast_in_dim, {in[0]}, p)}, {int(at)}};
}

}  // namespace broadcast_in_dim_impl
}  // namespace

extern const core::PrimRules broadcast_in_dim_rules = {
    .abstract_eval = broadcast_in_dim_impl::broadcast_in_dim_abstract_eval,
    .sharding_rule = broadcast_in_dim_impl::broadcast_in_dim_sharding_rule,
    .kernel = broadcast_in_dim_impl::broadcast_in_dim_kernel,
    .localize = broadcast_in_dim_impl::broadcast_in_dim_localize,
    .jvp = unary_linear_jvp<core::Prim::broadcast_in_dim>,
    .transpose = broadcast_in_dim_impl::broadcast_in_dim_transpose,
    .batch = broadcast_in_dim_impl::broadcast_in_dim_batch,
    .tile_kernel = kernels::broadcast_tile,
};

}  // namespace parax::prims
