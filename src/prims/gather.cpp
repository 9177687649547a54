// gather: XLA's gather with JAX's GatherDimensionNumbers (the index vector is the last
// dimension of the indices). Result dimensions: the offset (window) dimensions at
// `offset_dims`, the indices' batch dimensions in order in the others.
#include "prims/kernels/gather.h"

#include <set>

#include "prims/batching_util.h"
#include "prims/gather_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace gather_impl {

using Ints = std::vector<int64_t>;

std::string index_vector_dim_str(int64_t d) { return "index_vector_dim=" + std::to_string(d); }

// JAX's _gather_shape_rule (XLA's ShapeInference::InferGatherShape), check for check.
Shape gather_shape(const Aval& operand, const Aval& indices, const GatherDimensionNumbers& d,
                   const Shape& slice_sizes) {
  const size_t rank = operand.shape.size();
  const int64_t ivd = int64_t(indices.shape.size()) - 1;
  if (ivd < 0) {
    throw TypeError(
        "Gather index leaf dimension must be within [0, rank(indices) + 1). rank(indices) "
        "is " +
        std::to_string(indices.shape.size()) + " and gather index leaf dimension is " +
        std::to_string(ivd) + ".");
  }
  check_sorted(d.offset_dims, "gather", "offset_dims");
  check_no_duplicates(d.offset_dims, "gather", "offset_dims");
  const int64_t out_rank = int64_t(d.offset_dims.size()) + ivd;
  for (size_t i = 0; i < d.offset_dims.size(); ++i) {
    const int64_t o = d.offset_dims[i];
    if (o >= 0 && o < out_rank) continue;
    throw TypeError("Offset dimension " + std::to_string(i) +
                    " in gather op is out of bounds; got " + std::to_string(o) +
                    ", but should have been in [0, " + std::to_string(out_rank) + ")");
  }
  const int64_t k = indices.shape[size_t(ivd)];
  if (int64_t(d.start_index_map.size()) != k) {
    throw TypeError("Gather op has " + std::to_string(d.start_index_map.size()) +
                    " elements in start_index_map and the bound of dimension " +
                    index_vector_dim_str(ivd) + " of indices is " + std::to_string(k) +
                    ". These two numbers must be equal.");
  }
  for (size_t i = 0; i < d.start_index_map.size(); ++i) {
    const int64_t o = d.start_index_map[i];
    if (o >= 0 && o < int64_t(rank)) continue;
    throw TypeError("Invalid start_index_map; domain is [0, " + std::to_string(rank) +
                    "), got: " + std::to_string(i) + "->" + std::to_string(o) + ".");
  }
  check_no_duplicates(d.start_index_map, "gather", "start_index_map");
  check_sorted(d.collapsed_slice_dims, "gather", "collapsed_slice_dims");
  check_sorted_in_range(d.collapsed_slice_dims, rank, "gather", "collapsed_slice_dims");
  check_no_duplicates(d.collapsed_slice_dims, "gather", "collapsed_slice_dims");
  check_no_duplicates(d.operand_batching_dims, "gather", "operand_batching_dims");
  check_sorted(d.operand_batching_dims, "gather", "operand_batching_dims");
  check_sorted_in_range(d.operand_batching_dims, rank, "gather", "operand_batching_dims");
  check_disjoint(d.collapsed_slice_dims, d.operand_batching_dims, "gather", "collapsed_slice_dims",
                 "operand_batching_dims");
  check_disjoint(d.start_index_map, d.operand_batching_dims, "gather", "start_index_map",
                 "operand_batching_dims");
  check_no_duplicates(d.start_indices_batching_dims, "gather", "start_indices_batching_dims");
  check_in_range(d.start_indices_batching_dims, indices.shape.size(), "gather",
                 "start_indices_batching_dims");
  if (contains(d.start_indices_batching_dims, ivd)) {
    throw TypeError(
        "Gather op cannot have the index vector dimension as a batching dimension; got " +
        shape_str(d.start_indices_batching_dims) + ".");
  }
  if (d.operand_batching_dims.size() != d.start_indices_batching_dims.size()) {
    throw TypeError(
        "Gather op requires equal numbers of operand_batching_dims and "
        "start_indices_batching_dims, got " +
        shape_str(d.operand_batching_dims) + " and" + shape_str(d.start_indices_batching_dims) +
        ".");
  }
  Shape operand_batch, indices_batch;
  for (int64_t o : d.operand_batching_dims) operand_batch.push_back(operand.shape[size_t(o)]);
  for (int64_t i : d.start_indices_batching_dims) indices_batch.push_back(indices.shape[size_t(i)]);
  if (operand_batch != indices_batch) {
    throw TypeError(
        "Gather op requires operand batching dimensions and indices batching dimensions to "
        "have the same shape, got " +
        shape_str(operand_batch) + " and " + shape_str(indices_batch) + ".");
  }
  if (rank != slice_sizes.size()) {
    throw TypeError(
        "Gather op must have one slice size for every input dimension; got: "
        "len(slice_sizes)=" +
        std::to_string(slice_sizes.size()) + ", input_shape.rank=" + std::to_string(rank));
  }
  if (slice_sizes.size() !=
      d.offset_dims.size() + d.collapsed_slice_dims.size() + d.operand_batching_dims.size()) {
    throw TypeError(
        "All components of the offset index in a gather op must either be a offset "
        "dimension or explicitly collapsed/batching; got len(slice_sizes)=" +
        std::to_string(slice_sizes.size()) + ", output_slice_sizes=" + shape_str(d.offset_dims) +
        ", collapsed_slice_dims=" + shape_str(d.collapsed_slice_dims) +
        ", operand_batching_dims=" + shape_str(d.operand_batching_dims) + ".");
  }
  const bool empty_indices = shape_size(indices.shape) == 0;
  for (size_t i = 0; i < rank; ++i) {
    const int64_t s = slice_sizes[i];
    if (empty_indices || (s >= 0 && operand.shape[i] >= s)) continue;
    throw TypeError("Slice size at index " + std::to_string(i) +
                    " in gather op is out of range, must be within [0, " +
                    std::to_string(operand.shape[i]) + " + 1), got " + std::to_string(s) + ".");
  }
  for (size_t i = 0; i < d.collapsed_slice_dims.size(); ++i) {
    const int64_t bound = slice_sizes[size_t(d.collapsed_slice_dims[i])];
    if (bound == 1) continue;
    throw TypeError("Gather op can only collapse slice dims with bound 1, but bound is " +
                    std::to_string(bound) + " for index " +
                    std::to_string(d.collapsed_slice_dims[i]) + " at position " +
                    std::to_string(i) + ".");
  }
  for (size_t i = 0; i < d.operand_batching_dims.size(); ++i) {
    const int64_t bound = slice_sizes[size_t(d.operand_batching_dims[i])];
    if (bound <= 1) continue;
    throw TypeError("Gather op can only have operand batching dims with bound 0/1, but bound is " +
                    std::to_string(bound) + " for index " +
                    std::to_string(d.operand_batching_dims[i]) + " at position " +
                    std::to_string(i) + ".");
  }
  // _gather_shape_computation.
  Shape out;
  size_t next_index = 0;
  size_t next_slice = 0;
  for (int64_t i = 0; i < out_rank; ++i) {
    if (contains(d.offset_dims, i)) {
      while (contains(d.collapsed_slice_dims, int64_t(next_slice)) ||
             contains(d.operand_batching_dims, int64_t(next_slice))) {
        ++next_slice;
      }
      out.push_back(slice_sizes[next_slice++]);
    } else {
      out.push_back(indices.shape[next_index++]);
    }
  }
  return out;
}

std::vector<Aval> gather_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 2, "gather got " << in.size() << " operands");
  const Shape shape =
      gather_shape(in[0], in[1], gather_dnums(params), param_ints(params, "slice_sizes"));
  check_index_dtype(in[1].dtype);
  return {Aval{shape, in[0].dtype, in[0].weak_type}};
}

void gather_kernel(const KernelCall& c) { kernels::gather(c); }

// Returns the result dimensions that hold the indices' batch dimensions, in order.
Ints batch_result_dims(size_t out_rank, const Ints& offset_dims) {
  Ints dims;
  for (size_t i = 0; i < out_rank; ++i) {
    if (!contains(offset_dims, int64_t(i))) dims.push_back(int64_t(i));
  }
  return dims;
}

// The indices' batch dimensions shard the result's (an operand batching dimension with
// them); an operand dimension taken whole shards its offset dimension; an operand
// dimension the indices pick single elements of (the vocabulary of an embedding table)
// may be split as a sum: each device gathers the rows it holds, zeros elsewhere, and the
// partial results add up (gather_lower_local). Other dimensions are needed whole.
ShardingRule gather_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                  const Params& params) {
  const GatherDimensionNumbers d = gather_dnums(params);
  const Shape& slice = param_ints(params, "slice_sizes");
  const Aval& op = in[0];
  const Aval& ix = in[1];
  ShardingRule rule;
  rule.operands = {std::vector<int>(op.shape.size(), ShardingRule::kNone),
                   std::vector<int>(ix.shape.size(), ShardingRule::kNone)};
  rule.results = {std::vector<int>(out[0].shape.size(), ShardingRule::kNone)};
  const Ints batch_out = batch_result_dims(out[0].shape.size(), d.offset_dims);
  for (size_t i = 0; i + 1 < ix.shape.size(); ++i) {
    const int f = add_factor(rule, ix.shape[i]);
    rule.operands[1][i] = f;
    rule.results[0][size_t(batch_out[i])] = f;
  }
  for (size_t j = 0; j < d.operand_batching_dims.size(); ++j) {
    rule.operands[0][size_t(d.operand_batching_dims[j])] =
        rule.operands[1][size_t(d.start_indices_batching_dims[j])];
  }
  size_t k = 0;
  for (size_t i = 0; i < op.shape.size(); ++i) {
    if (contains(d.collapsed_slice_dims, int64_t(i)) ||
        contains(d.operand_batching_dims, int64_t(i))) {
      continue;
    }
    const int64_t o = d.offset_dims[k++];
    if (slice[i] != op.shape[i]) continue;
    const int f = add_factor(rule, op.shape[i]);
    rule.operands[0][i] = f;
    rule.results[0][size_t(o)] = f;
  }
  for (int64_t i : d.start_index_map) {
    if (slice[size_t(i)] != 1 || rule.operands[0][size_t(i)] != ShardingRule::kNone) continue;
    rule.operands[0][size_t(i)] = add_factor(rule, op.shape[size_t(i)]);
    rule.reduction = op.dtype == DType::bool_ ? core::ReduceOp::or_ : core::ReduceOp::sum;
  }
  // Index vectors in padding pick clamped or filled windows, which land in the result's
  // padding; an operand split as a sum has its padding zeroed first.
  rule.runs_padded = true;
  rule.masked_operands = 1u << 0;
  return rule;
}

// Per device: the gather of the local blocks with window sizes of the local shape where a
// dimension is taken whole. Over a vocabulary split as a sum, the index vectors are first
// clamped (CLIP, PROMISE_IN_BOUNDS) and shifted by the shard's offset, and the local
// gather fills what the shard does not hold with zeros; under FILL_OR_DROP the first
// device puts the fill value where the whole operand would.
std::vector<core::Atom> gather_lower_local(std::span<const core::Atom> in, const Params& params,
                                           const core::LowerContext& c) {
  const GatherDimensionNumbers d = gather_dnums(params);
  const Shape& slice = param_ints(params, "slice_sizes");
  const Aval& global = c.global_in[0];
  const Aval& local = c.in_avals[0];
  const Aval& out = c.out_avals[0];
  Shape local_slice = slice;
  for (size_t i = 0; i < slice.size(); ++i) {
    if (slice[i] == global.shape[i]) local_slice[i] = local.shape[i];
  }
  Params p = params;
  p.set("slice_sizes", local_slice);
  const LocalEmitter e(c);
  std::vector<Ints> axes;
  Ints hi, block, all_axes;
  for (int64_t i : d.start_index_map) {
    const bool split =
        slice[size_t(i)] != global.shape[size_t(i)] && !c.in_dim_axes[0][size_t(i)].empty();
    axes.push_back(split ? c.in_dim_axes[0][size_t(i)] : Ints{});
    all_axes.insert(all_axes.end(), axes.back().begin(), axes.back().end());
    hi.push_back(global.shape[size_t(i)] - slice[size_t(i)]);
    block.push_back(local.shape[size_t(i)]);
  }
  if (all_axes.empty()) return {e.emit(core::Prim::gather, {in[0], in[1]}, p, out)};
  const bool fill = gather_mode(params) == GatherScatterMode::FILL_OR_DROP;
  core::Atom oob;
  const core::Atom idx =
      e.shift_indices(in[1], c.in_avals[1], hi, axes, block, !fill, fill ? &oob : nullptr);
  Params lp = p;
  lp.set("mode", std::string("GatherScatterMode.FILL_OR_DROP"));
  lp.set("fill_value", 0.0);
  const core::Atom part = e.emit(core::Prim::gather, {in[0], idx}, lp, out);
  if (!fill) return {part};
  const Aval pred{out.shape, DType::bool_, false};
  core::Atom where =
      e.broadcast(oob, out.shape, batch_result_dims(out.shape.size(), d.offset_dims), DType::bool_);
  where = e.emit(core::Prim::and_, {where, e.is_first(all_axes)}, {}, pred);
  // The fill value as the kernel makes it: a gather of index vectors all out of bounds.
  const Shape& ishape = c.in_avals[1].shape;
  const core::Atom nowhere =
      e.broadcast(LocalEmitter::literal(-1, DType::int64), ishape, {}, DType::int64);
  const core::Atom filled = e.emit(core::Prim::gather, {in[0], nowhere}, p, out);
  return {e.emit(core::Prim::select_n, {where, part, filled}, {}, out)};
}

// Params of a gather with new dimension numbers and slice sizes, the rest kept.
Params with_dnums(Params p, const GatherDimensionNumbers& d, const Shape& slice_sizes) {
  p.set("offset_dims", d.offset_dims);
  p.set("collapsed_slice_dims", d.collapsed_slice_dims);
  p.set("start_index_map", d.start_index_map);
  p.set("operand_batching_dims", d.operand_batching_dims);
  p.set("start_indices_batching_dims", d.start_indices_batching_dims);
  p.set("slice_sizes", slice_sizes);
  return p;
}

// JAX's _gather_jvp_rule: the same gather of the tangent, out-of-bounds windows zero.
std::vector<Array> gather_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                              std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  Params p = params;
  if (gather_mode(params) == GatherScatterMode::FILL_OR_DROP) p.set("fill_value", 0.0);
  return {core::bind1(core::Prim::gather, {tangents[0], primals[1]}, p)};
}

// JAX's _gather_transpose_rule: the cotangent scatter-added into zeros where it was read.
std::vector<Array> gather_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                    std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array(), Array()};
  const Aval x = operand_type(operands, 0, "gather");
  const Array zeros = zeros_like_aval(Aval{x.shape, cts[0].dtype(), false});
  const Array out =
      lax::scatter_add(zeros, operands[1], cts[0], inverse_scatter_dnums(gather_dnums(params)),
                       params.get<bool>("indices_are_sorted"), params.get<bool>("unique_indices"),
                       gather_mode(params));
  return {out, Array()};
}

Ints plus_one(const Ints& v) {
  Ints out;
  for (int64_t x : v) out.push_back(x + 1);
  return out;
}

Ints prepend(int64_t x, Ints v) {
  v.insert(v.begin(), x);
  return v;
}

// JAX's _gather_batching_rule: a batched operand gains a whole (offset) dimension, batched
// indices a batch dimension, and both a batching dimension pair.
Batched gather_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                     const BatchAxis& axis) {
  const GatherDimensionNumbers d = gather_dnums(params);
  const Shape& sizes = param_ints(params, "slice_sizes");
  Array operand = in[0];
  Array indices = in[1];
  if (dims[0] != kNotMapped && dims[1] == kNotMapped) {
    operand = core::batch_first(operand, dims[0], axis.size);
    const GatherDimensionNumbers nd{prepend(0, plus_one(d.offset_dims)),
                                    plus_one(d.collapsed_slice_dims), plus_one(d.start_index_map),
                                    plus_one(d.operand_batching_dims),
                                    d.start_indices_batching_dims};
    const Params p = with_dnums(params, nd, prepend(operand.shape()[0], sizes));
    return Batched{{core::bind1(core::Prim::gather, {operand, indices}, p)}, {0}};
  }
  if (dims[0] == kNotMapped) {
    indices = core::batch_first(indices, dims[1], axis.size);
    const GatherDimensionNumbers nd{plus_one(d.offset_dims), d.collapsed_slice_dims,
                                    d.start_index_map, d.operand_batching_dims,
                                    plus_one(d.start_indices_batching_dims)};
    Params p = with_dnums(params, nd, sizes);
    // Batched lookups into one operand may repeat or come out of order.
    p.set("unique_indices", false);
    p.set("indices_are_sorted", false);
    return Batched{{core::bind1(core::Prim::gather, {operand, indices}, p)}, {0}};
  }
  operand = core::batch_first(operand, dims[0], axis.size);
  indices = core::batch_first(indices, dims[1], axis.size);
  const GatherDimensionNumbers nd{plus_one(d.offset_dims), plus_one(d.collapsed_slice_dims),
                                  plus_one(d.start_index_map),
                                  prepend(0, plus_one(d.operand_batching_dims)),
                                  prepend(0, plus_one(d.start_indices_batching_dims))};
  const Params p = with_dnums(params, nd, prepend(operand.shape()[0] == 0 ? 0 : 1, sizes));
  return Batched{{core::bind1(core::Prim::gather, {operand, indices}, p)}, {0}};
}

}  // namespace gather_impl
}  // namespace

extern const core::PrimRules gather_rules = {
    .abstract_eval = gather_impl::gather_abstract_eval,
    .sharding_rule = gather_impl::gather_sharding_rule,
    .kernel = gather_impl::gather_kernel,
    .lower_local = gather_impl::gather_lower_local,
    .jvp = gather_impl::gather_jvp,
    .transpose = gather_impl::gather_transpose,
    .batch = gather_impl::gather_batch,
    .print_params = gather_print_params,
    .parse_params = gather_parse_params,
};

}  // namespace parax::prims
