// scatter and its combining forms (scatter-add, -mul, -min, -max) with JAX's
// ScatterDimensionNumbers: the operand with update windows written (or combined) at the
// starts the indices give. Repeated starts combine in the updates' order (plain scatter:
// the last one wins, as on XLA:CPU); out-of-bounds windows are dropped whole, or clamped
// into range under CLIP.
#include "prims/batching_util.h"
#include "prims/gather_util.h"
#include "prims/kernels/gather.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace scatter_impl {

using core::Prim;
using Ints = std::vector<int64_t>;

// JAX's _get_updates_batching_dims: where each indices batching dimension sits among the
// updates' dimensions.
Ints updates_batching_dims(const Ints& indices_batching, const Ints& update_window_dims,
                           int64_t index_vector_dim) {
  std::vector<int64_t> scatter_dim_in_updates;  // -1 for window dimensions
  for (int64_t i = 0; i < index_vector_dim; ++i) scatter_dim_in_updates.push_back(i);
  for (int64_t w : update_window_dims) {
    scatter_dim_in_updates.insert(scatter_dim_in_updates.begin() +
                                      std::min<int64_t>(w, int64_t(scatter_dim_in_updates.size())),
                                  -1);
  }
  Ints out;
  for (int64_t i : indices_batching) {
    const auto it = std::find(scatter_dim_in_updates.begin(), scatter_dim_in_updates.end(), i);
    out.push_back(int64_t(it - scatter_dim_in_updates.begin()));
  }
  return out;
}

// JAX's _scatter_shape_rule (XLA's ShapeInference::InferScatterShape), check for check.
void check_scatter_shape(const Aval& operand, const Aval& indices, const Aval& updates,
                         const ScatterDimensionNumbers& d) {
  const size_t rank = operand.shape.size();
  const int64_t ivd = int64_t(indices.shape.size()) - 1;
  if (ivd < 0) {
    throw TypeError(
        "Scatter index leaf dimension must be within [0, rank(indices) + 1). rank(indices) "
        "is " +
        std::to_string(indices.shape.size()) + " and scatter index leaf dimension is " +
        std::to_string(ivd) + ".");
  }
  const size_t expected_updates_rank = size_t(ivd) + d.update_window_dims.size();
  if (updates.shape.size() != expected_updates_rank) {
    throw TypeError("Updates tensor must be of rank " + std::to_string(expected_updates_rank) +
                    "; got " + std::to_string(updates.shape.size()) + ".");
  }
  check_sorted(d.update_window_dims, "scatter", "update_window_dims");
  check_no_duplicates(d.update_window_dims, "scatter", "update_window_dims");
  check_sorted_in_range(d.update_window_dims, updates.shape.size(), "scatter",
                        "update_window_dims");
  check_sorted(d.inserted_window_dims, "scatter", "inserted_window_dims");
  check_no_duplicates(d.inserted_window_dims, "scatter", "inserted_window_dims");
  check_sorted_in_range(d.inserted_window_dims, rank, "scatter", "inserted_window_dims");
  check_sorted(d.operand_batching_dims, "scatter", "operand_batching_dims");
  check_no_duplicates(d.operand_batching_dims, "scatter", "operand_batching_dims");
  check_sorted_in_range(d.operand_batching_dims, rank, "scatter", "operand_batching_dims");
  check_disjoint(d.inserted_window_dims, d.operand_batching_dims, "scatter", "inserted_window_dims",
                 "operand_batching_dims");
  check_disjoint(d.scatter_dims_to_operand_dims, d.operand_batching_dims, "scatter",
                 "scatter_dims_to_operand_dims", "operand_batching_dims");
  check_no_duplicates(d.scatter_indices_batching_dims, "scatter", "scatter_indices_batching_dims");
  check_in_range(d.scatter_indices_batching_dims, indices.shape.size(), "scatter",
                 "scatter_indices_batching_dims");
  if (contains(d.scatter_indices_batching_dims, ivd)) {
    throw TypeError(
        "Scatter op cannot have the index vector dimension as a batching dimension; got " +
        shape_str(d.scatter_indices_batching_dims) + ".");
  }
  if (d.operand_batching_dims.size() != d.scatter_indices_batching_dims.size()) {
    throw TypeError(
        "Scatter op requires equal numbers of operand_batching_dims and "
        "scatter_indices_batching_dims, got " +
        shape_str(d.operand_batching_dims) + " and " + shape_str(d.scatter_indices_batching_dims) +
        ".");
  }
  Shape operand_batch, indices_batch, updates_batch;
  for (int64_t o : d.operand_batching_dims) operand_batch.push_back(operand.shape[size_t(o)]);
  for (int64_t i : d.scatter_indices_batching_dims) {
    indices_batch.push_back(indices.shape[size_t(i)]);
  }
  if (operand_batch != indices_batch) {
    throw TypeError(
        "Scatter op requires operand batching dimensions and indices batching dimensions to "
        "have the same shape, got " +
        shape_str(operand_batch) + " and " + shape_str(indices_batch) + ".");
  }
  for (int64_t u :
       updates_batching_dims(d.scatter_indices_batching_dims, d.update_window_dims, ivd)) {
    updates_batch.push_back(u < int64_t(updates.shape.size()) ? updates.shape[size_t(u)] : -1);
  }
  if (operand_batch != updates_batch) {
    throw TypeError(
        "Scatter op requires operand batching dimensions and updates batching dimensions to "
        "have the same shape, got " +
        shape_str(operand_batch) + " and " + shape_str(updates_batch) + ".");
  }
  const size_t window_size =
      d.update_window_dims.size() + d.inserted_window_dims.size() + d.operand_batching_dims.size();
  if (rank != window_size) {
    throw TypeError("Scatter op has window of size " + std::to_string(window_size) +
                    "; doesn't match operand of rank " + std::to_string(rank) + ".");
  }
  const int64_t k = indices.shape[size_t(ivd)];
  if (int64_t(d.scatter_dims_to_operand_dims.size()) != k) {
    throw TypeError("Scatter op has " + std::to_string(d.scatter_dims_to_operand_dims.size()) +
                    " elements in scatter_dims_to_operand_dims and the bound of dimension "
                    "index_vector_dim=" +
                    std::to_string(ivd) + " of indices is " + std::to_string(k) +
                    ". These two numbers must be equal");
  }
  for (size_t i = 0; i < d.scatter_dims_to_operand_dims.size(); ++i) {
    const int64_t o = d.scatter_dims_to_operand_dims[i];
    if (o >= 0 && o < int64_t(rank)) continue;
    throw TypeError("Invalid scatter_dims_to_operand_dims mapping; domain is [0, " +
                    std::to_string(rank) + "), got: " + std::to_string(i) + "->" +
                    std::to_string(o) + ".");
  }
  check_no_duplicates(d.scatter_dims_to_operand_dims, "scatter", "scatter_dims_to_operand_dims");
  Shape max_window;
  for (size_t i = 0; i < rank; ++i) {
    if (contains(d.inserted_window_dims, int64_t(i)) ||
        contains(d.operand_batching_dims, int64_t(i))) {
      continue;
    }
    max_window.push_back(operand.shape[i]);
  }
  for (size_t i = 0; i < d.update_window_dims.size(); ++i) {
    const int64_t u = d.update_window_dims[i];
    if (max_window[i] >= updates.shape[size_t(u)]) continue;
    throw TypeError(
        "Bounds of the window dimensions of updates must not exceed the bounds of the "
        "corresponding dimensions of operand. For dimension " +
        std::to_string(u) + ", updates bound is " + std::to_string(updates.shape[size_t(u)]) +
        ", operand bound is " + std::to_string(max_window[i]) + ".");
  }
  int64_t seen = 0;
  for (size_t i = 0; i < updates.shape.size(); ++i) {
    if (contains(d.update_window_dims, int64_t(i))) continue;
    if (seen == ivd) ++seen;
    const int64_t bound = indices.shape[size_t(seen)];
    if (updates.shape[i] != bound) {
      throw TypeError(
          "Bounds of the scatter dimensions of updates must be the same as the bounds of "
          "the corresponding dimensions of scatter indices. For scatter dimension " +
          std::to_string(i) + ", updates bound is " + std::to_string(updates.shape[i]) +
          ", indices bound is " + std::to_string(bound) + ".");
    }
    ++seen;
  }
}

std::vector<Aval> scatter_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 3, "scatter got " << in.size() << " operands");
  check_scatter_shape(in[0], in[1], in[2], scatter_dnums(params));
  check_index_dtype(in[1].dtype);
  const Aval pair[] = {in[0], in[2]};
  check_same_dtypes("lax.scatter", pair);
  return {Aval{in[0].shape, in[0].dtype, in[0].weak_type}};
}

// scatter_add and scatter_mul combine with lax.add / lax.mul, which JAX's wrappers trace
// first: a bool operand fails there.
template <Prim P>
std::vector<Aval> arithmetic_scatter_abstract_eval(std::span<const Aval> in, const Params& params) {
  if (!in.empty() && in[0].dtype == DType::bool_) {
    const std::string name = P == Prim::scatter_add ? "add" : "mul";
    throw TypeError(name +
                    " does not accept dtype bool at position 0. Accepted dtypes at position 0 "
                    "are subtypes of integer, floating, complexfloating.");
  }
  return scatter_abstract_eval(in, params);
}

// How a scatter's partial results over split updates combine (none for plain scatter,
// whose last write wins).
core::ReduceOp partial_op(Prim prim, DType dtype) {
  const bool b = dtype == DType::bool_;
  switch (prim) {
    case Prim::scatter_add:
      return core::ReduceOp::sum;
    case Prim::scatter_mul:
      return core::ReduceOp::prod;
    case Prim::scatter_min:
      return b ? core::ReduceOp::and_ : core::ReduceOp::min;
    case Prim::scatter_max:
      return b ? core::ReduceOp::or_ : core::ReduceOp::max;
    default:
      return core::ReduceOp::none;
  }
}

// The updates' dimensions that run along the indices' batch dimensions, in order.
Ints update_scatter_dims(size_t updates_rank, const Ints& update_window_dims) {
  Ints dims;
  for (size_t i = 0; i < updates_rank; ++i) {
    if (!contains(update_window_dims, int64_t(i))) dims.push_back(int64_t(i));
  }
  return dims;
}

// Batching dimensions shard the operand, indices, updates and result alike; an operand
// dimension that windows take whole shards with its update window dimension; an operand
// dimension written one element at a time by index (an embedding table's vocabulary)
// shards the operand and result, each device applying the updates that land in its
// shard (scatter_lower_local). The indices' other batch dimensions, with the updates',
// may be split as a partial result for the combining scatters: each device applies its
// share of the updates, and the shares combine by the scatter's own operation.
template <Prim P>
ShardingRule scatter_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                   const Params& params) {
  const ScatterDimensionNumbers d = scatter_dnums(params);
  const Aval& op = in[0];
  const Aval& ix = in[1];
  const Aval& up = in[2];
  ShardingRule rule;
  rule.operands = {std::vector<int>(op.shape.size(), ShardingRule::kNone),
                   std::vector<int>(ix.shape.size(), ShardingRule::kNone),
                   std::vector<int>(up.shape.size(), ShardingRule::kNone)};
  rule.results = {std::vector<int>(op.shape.size(), ShardingRule::kNone)};
  const Ints usd = update_scatter_dims(up.shape.size(), d.update_window_dims);
  const core::ReduceOp reduce = partial_op(P, op.dtype);
  for (size_t i = 0; i + 1 < ix.shape.size(); ++i) {
    const auto j = std::find(d.scatter_indices_batching_dims.begin(),
                             d.scatter_indices_batching_dims.end(), int64_t(i));
    const bool batching = j != d.scatter_indices_batching_dims.end();
    if (!batching && reduce == core::ReduceOp::none) continue;
    const int f = add_factor(rule, ix.shape[i]);
    rule.operands[1][i] = f;
    rule.operands[2][size_t(usd[i])] = f;
    if (batching) {
      const size_t o =
          size_t(d.operand_batching_dims[size_t(j - d.scatter_indices_batching_dims.begin())]);
      rule.operands[0][o] = f;
      rule.results[0][o] = f;
    } else {
      rule.reduction = reduce;
    }
  }
  const Shape window = scatter_window(op.shape.size(), up.shape, d);
  size_t k = 0;
  for (size_t i = 0; i < op.shape.size(); ++i) {
    if (contains(d.inserted_window_dims, int64_t(i)) ||
        contains(d.operand_batching_dims, int64_t(i))) {
      continue;
    }
    const int64_t u = d.update_window_dims[k++];
    if (window[i] != op.shape[i]) continue;
    const int f = add_factor(rule, op.shape[i]);
    rule.operands[0][i] = f;
    rule.results[0][i] = f;
    rule.operands[2][size_t(u)] = f;
  }
  for (int64_t i : d.scatter_dims_to_operand_dims) {
    if (window[size_t(i)] != 1 || rule.operands[0][size_t(i)] != ShardingRule::kNone) continue;
    const int f = add_factor(rule, op.shape[size_t(i)]);
    rule.operands[0][size_t(i)] = f;
    rule.results[0][size_t(i)] = f;
  }
  return rule;
}

// Per device: over an operand dimension split by index, the index vectors are clamped
// (CLIP) and shifted by the shard's offset, so updates for other shards fall out of bounds
// and are dropped; over split updates, the operand enters once: the other devices start
// from the combination's identity (zeros for add, ones for mul; min and max need none).
std::vector<core::Atom> scatter_lower_local(std::span<const core::Atom> in, const Params& params,
                                            const core::LowerContext& c, Prim prim) {
  const ScatterDimensionNumbers d = scatter_dnums(params);
  const Aval& global = c.global_in[0];
  const Aval& local = c.in_avals[0];
  const Aval& out = c.out_avals[0];
  const LocalEmitter e(c);
  const Shape window = scatter_window(global.shape.size(), c.global_in[2].shape, d);
  std::vector<Ints> axes;
  Ints hi, block, shifted;
  for (int64_t i : d.scatter_dims_to_operand_dims) {
    const bool split =
        window[size_t(i)] != global.shape[size_t(i)] && !c.in_dim_axes[0][size_t(i)].empty();
    axes.push_back(split ? c.in_dim_axes[0][size_t(i)] : Ints{});
    shifted.insert(shifted.end(), axes.back().begin(), axes.back().end());
    hi.push_back(global.shape[size_t(i)] - window[size_t(i)]);
    block.push_back(local.shape[size_t(i)]);
  }
  Ints partial;
  const size_t q = c.in_avals[1].shape.size();
  for (size_t i = 0; i + 1 < q; ++i) {
    if (contains(d.scatter_indices_batching_dims, int64_t(i))) continue;
    const Ints& a = c.in_dim_axes[1][i];
    partial.insert(partial.end(), a.begin(), a.end());
  }
  Params p = params;
  core::Atom operand = in[0];
  core::Atom idx = in[1];
  if (!shifted.empty()) {
    const bool clip = gather_mode(params) == GatherScatterMode::CLIP;
    idx = e.shift_indices(idx, c.in_avals[1], hi, axes, block, clip, nullptr);
    if (clip) p.set("mode", std::string("GatherScatterMode.FILL_OR_DROP"));
  }
  if (!partial.empty() && (prim == Prim::scatter_add || prim == Prim::scatter_mul)) {
    const double identity = prim == Prim::scatter_add ? 0 : 1;
    const core::Atom base =
        e.broadcast(LocalEmitter::literal(identity, local.dtype), local.shape, {}, local.dtype);
    operand = e.emit(Prim::select_n, {e.is_first(partial), base, operand}, {}, local);
  }
  return {e.emit(prim, {operand, idx, in[2]}, p, out)};
}

template <Prim P>
std::vector<core::Atom> scatter_lower(std::span<const core::Atom> in, const Params& params,
                                      const core::LowerContext& c) {
  return scatter_lower_local(in, params, c, P);
}

template <kernels::Combine C>
void scatter_kernel(const KernelCall& c) {
  kernels::scatter(c, C);
}

bool unique(const Params& p) { return p.get<bool>("unique_indices"); }
bool sorted(const Params& p) { return p.get<bool>("indices_are_sorted"); }

// Binds `prim` with `params` on new operands.
Array rebind(Prim prim, const Array& operand, const Array& indices, const Array& updates,
             const Params& params) {
  return core::bind1(prim, {operand, indices, updates}, params);
}

// The gather reading back the windows a scatter with `params` writes (JAX's inverse
// gather), out-of-bounds windows zero.
Array gather_back(const Array& x, const Array& indices, const Shape& updates_shape,
                  const Params& params, std::optional<GatherScatterMode> mode) {
  const ScatterDimensionNumbers d = scatter_dnums(params);
  const Shape window = scatter_window(x.shape().size(), updates_shape, d);
  return lax::gather(
      x, indices, inverse_gather_dnums(d), window, sorted(params), unique(params), mode,
      mode == GatherScatterMode::FILL_OR_DROP ? std::optional<double>(0.0) : std::nullopt);
}

Array zeros_of(const Array& like) {
  return zeros_like_aval(Aval{like.shape(), like.dtype(), false});
}

// JAX's _scatter_addsub_jvp: linear in the operand and the updates together.
std::vector<Array> scatter_add_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array>, const Params& params) {
  if (!tangents[0].valid() && !tangents[2].valid()) return {Array()};
  const Array g_op = instantiate(tangents[0], core::aval_of(primals[0]));
  const Array g_up = instantiate(tangents[2], core::aval_of(primals[2]));
  return {rebind(Prim::scatter_add, g_op, primals[1], g_up, params)};
}

std::vector<Array> scatter_add_transpose(std::span<const Array> cts,
                                         std::span<const Array> operands,
                                         std::span<const bool> linear, const Params& params) {
  std::vector<Array> out(3);
  if (!cts[0].valid()) return out;
  if (linear[0]) out[0] = cts[0];
  if (linear[2]) {
    const Shape ushape = operand_type(operands, 2, "scatter-add").shape;
    out[2] = gather_back(cts[0], operands[1], ushape, params, gather_mode(params));
  }
  return out;
}

// JAX's scatter_mul jvp: the operand's tangent is scattered-multiplied like the operand;
// the updates' (unique indices only) is the operand times the scattered tangent.
std::vector<Array> scatter_mul_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array>, const Params& params) {
  Array out;
  if (tangents[0].valid()) {
    out = rebind(Prim::scatter_mul, tangents[0], primals[1], primals[2], params);
  }
  if (tangents[2].valid()) {
    if (!unique(params)) {
      throw NotImplementedError(
          "scatter_mul gradients are only implemented if `unique_indices=True`");
    }
    const Array scattered =
        rebind(Prim::scatter_add, zeros_of(primals[0]), primals[1], tangents[2], params);
    out = add_tangents(out, lax::mul(primals[0], scattered));
  }
  return {out};
}

std::vector<Array> scatter_mul_transpose(std::span<const Array> cts,
                                         std::span<const Array> operands,
                                         std::span<const bool> linear, const Params& params) {
  std::vector<Array> out(3);
  if (!cts[0].valid()) return out;
  if (linear[0]) out[0] = rebind(Prim::scatter_mul, cts[0], operands[1], operands[2], params);
  if (linear[2]) {
    if (!unique(params)) {
      throw NotImplementedError(
          "scatter_mul gradients are only implemented if `unique_indices=True`");
    }
    const Shape ushape = operand_type(operands, 2, "scatter-mul").shape;
    out[2] = gather_back(lax::mul(cts[0], operands[0]), operands[1], ushape, params,
                         gather_mode(params));
  }
  return out;
}

// JAX's _scatter_extremal_jvp: where several values contend for one place, the tangent is
// the average of the tangents of those that win (the operand's included when it ties).
template <Prim P>
std::vector<Array> scatter_extremal_jvp(std::span<const Array> primals,
                                        std::span<const Array> tangents,
                                        std::span<const Array> outs, const Params& params) {
  if (!tangents[0].valid() && !tangents[2].valid()) return {Array()};
  const Array& operand = primals[0];
  const Array& indices = primals[1];
  const Array& updates = primals[2];
  const Array g_operand = instantiate(tangents[0], core::aval_of(operand));
  const Array g_updates = instantiate(tangents[2], core::aval_of(updates));
  const ScatterDimensionNumbers d = scatter_dnums(params);
  const GatherDimensionNumbers gd = inverse_gather_dnums(d);
  const Shape window = scatter_window(operand.shape().size(), updates.shape(), d);
  // JAX's rule reads and writes with the default modes (a gather clamps, a scatter-add
  // drops), which agree with the scatter's own wherever it drops out-of-bounds windows;
  // under CLIP all of them clamp, so clipped windows get their tangents too.
  const std::optional<GatherScatterMode> mode = gather_mode(params) == GatherScatterMode::CLIP
                                                    ? std::optional(GatherScatterMode::CLIP)
                                                    : std::nullopt;
  auto gather = [&](const Array& x) {
    return lax::gather(x, indices, gd, window, false, false, mode);
  };
  auto add_into_zeros = [&](const Array& u) {
    return lax::scatter_add(zeros_of(operand), indices, u, d, false, false, mode);
  };
  const Array initial_vals = gather(operand);
  const Array target_vals = gather(outs[0]);
  const Array successful = lax::eq(updates, target_vals);
  const Array retained = lax::eq(initial_vals, target_vals);
  const Array ones_u = lax::add(zeros_of(updates), constant(1, updates.dtype()));
  const Array zeros_u = zeros_of(updates);
  const Array num_updates = gather(add_into_zeros(lax::select(successful, ones_u, zeros_u)));
  const Array num_refs = gather(add_into_zeros(ones_u));
  const Array one = constant(1, updates.dtype());
  const Array updates_normalizer =
      lax::select(retained, lax::div(one, lax::add(num_updates, one)), lax::div(one, num_updates));
  const Array updates_coef = lax::select(successful, updates_normalizer, zeros_u);
  const Array operand_normalizer =
      lax::select(retained, lax::div(one, lax::add(num_updates, one)), zeros_of(num_updates));
  const Array operand_coef =
      lax::div(lax::add(constant(-1, updates.dtype()), operand_normalizer), num_refs);
  const Array target_tangents = gather(g_operand);
  const Array tangent_updates =
      lax::add(lax::mul(target_tangents, operand_coef), lax::mul(g_updates, updates_coef));
  return {rebind(Prim::scatter_add, g_operand, indices, tangent_updates, params)};
}

// JAX's _scatter_jvp. With unique indices the tangents scatter like the values; otherwise
// an id per update is scattered to find which update won each place, and the tangents of
// the winners (and of the operand where none landed) are scatter-added.
std::vector<Array> scatter_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                               std::span<const Array>, const Params& params) {
  if (!tangents[0].valid() && !tangents[2].valid()) return {Array()};
  const Array& operand = primals[0];
  const Array& indices = primals[1];
  const Array& updates = primals[2];
  const Array g_operand = instantiate(tangents[0], core::aval_of(operand));
  const Array g_updates = instantiate(tangents[2], core::aval_of(updates));
  if (unique(params)) return {rebind(Prim::scatter, g_operand, indices, g_updates, params)};
  const ScatterDimensionNumbers d = scatter_dnums(params);
  Shape ids_shape = updates.shape();
  for (int64_t w : d.update_window_dims) ids_shape[size_t(w)] = 1;
  const int64_t num_ids = shape_size(ids_shape);
  const DType id_dtype = num_ids < (int64_t(1) << 31) ? DType::uint32 : DType::uint64;
  const Array ids =
      lax::add(lax::reshape(lax::iota(id_dtype, num_ids), ids_shape), constant(1, id_dtype));
  const Array update_ids = lax::broadcast_in_dim(ids, updates.shape(), iota_ints(updates.ndim()));
  const Array scattered_ids =
      rebind(Prim::scatter, zeros_like_aval(Aval{operand.shape(), id_dtype, false}), indices,
             update_ids, params);
  const Array gathered_ids = gather_back(scattered_ids, indices, updates.shape(), params,
                                         GatherScatterMode::PROMISE_IN_BOUNDS);
  const Array untouched = lax::eq(scattered_ids, constant(0, id_dtype));
  const Array won = lax::eq(update_ids, gathered_ids);
  const Array masked_g_operand = lax::select(untouched, g_operand, zeros_of(g_operand));
  const Array masked_g_updates = lax::select(won, g_updates, zeros_of(g_updates));
  return {rebind(Prim::scatter_add, masked_g_operand, indices, masked_g_updates, params)};
}

// JAX's _scatter_transpose_rule (unique indices only): the operand's cotangent with the
// written places zeroed, the updates' read back from them.
std::vector<Array> scatter_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                     std::span<const bool> linear, const Params& params) {
  if (!unique(params)) {
    throw NotImplementedError("scatter transpose is only implemented where unique_indices=True");
  }
  std::vector<Array> out(3);
  if (!cts[0].valid()) return out;
  const Aval u = operand_type(operands, 2, "scatter");
  if (linear[0]) {
    out[0] = rebind(Prim::scatter, cts[0], operands[1],
                    zeros_like_aval(Aval{u.shape, cts[0].dtype(), false}), params);
  }
  if (linear[2]) out[2] = gather_back(cts[0], operands[1], u.shape, params, gather_mode(params));
  return out;
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

Params with_dnums(Params p, const ScatterDimensionNumbers& d) {
  p.set("update_window_dims", d.update_window_dims);
  p.set("inserted_window_dims", d.inserted_window_dims);
  p.set("scatter_dims_to_operand_dims", d.scatter_dims_to_operand_dims);
  p.set("operand_batching_dims", d.operand_batching_dims);
  p.set("scatter_indices_batching_dims", d.scatter_indices_batching_dims);
  return p;
}

// JAX's _scatter_batching_rule: the operand and updates get the batch dimension in front
// (broadcast when unbatched); unbatched indices make it a window dimension, batched ones
// a batching dimension pair.
template <Prim P>
Batched scatter_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                      const BatchAxis& axis) {
  const ScatterDimensionNumbers d = scatter_dnums(params);
  const Array operand = core::batch_first(in[0], dims[0], axis.size);
  const Array updates = core::batch_first(in[2], dims[2], axis.size);
  if (dims[1] == kNotMapped) {
    const ScatterDimensionNumbers nd{
        prepend(0, plus_one(d.update_window_dims)), plus_one(d.inserted_window_dims),
        plus_one(d.scatter_dims_to_operand_dims), plus_one(d.operand_batching_dims),
        d.scatter_indices_batching_dims};
    return Batched{{rebind(P, operand, in[1], updates, with_dnums(params, nd))}, {0}};
  }
  const Array indices = core::batch_first(in[1], dims[1], axis.size);
  const ScatterDimensionNumbers nd{plus_one(d.update_window_dims), plus_one(d.inserted_window_dims),
                                   plus_one(d.scatter_dims_to_operand_dims),
                                   prepend(0, plus_one(d.operand_batching_dims)),
                                   prepend(0, plus_one(d.scatter_indices_batching_dims))};
  return Batched{{rebind(P, operand, indices, updates, with_dnums(params, nd))}, {0}};
}

template <Prim P>
std::vector<std::pair<std::string, core::ParamValue>> scatter_printed(std::span<const Aval> in,
                                                                      const Params& params) {
  return scatter_print_params(P, in, params);
}

}  // namespace scatter_impl
}  // namespace

extern const core::PrimRules scatter_rules = {
    .abstract_eval = scatter_impl::scatter_abstract_eval,
    .sharding_rule = scatter_impl::scatter_sharding_rule<core::Prim::scatter>,
    .kernel = scatter_impl::scatter_kernel<kernels::Combine::replace>,
    .lower_local = scatter_impl::scatter_lower<core::Prim::scatter>,
    .jvp = scatter_impl::scatter_jvp,
    .transpose = scatter_impl::scatter_transpose,
    .batch = scatter_impl::scatter_batch<core::Prim::scatter>,
    .print_params = scatter_impl::scatter_printed<core::Prim::scatter>,
    .parse_params = scatter_parse_params,
};
extern const core::PrimRules scatter_add_rules = {
    .abstract_eval = scatter_impl::arithmetic_scatter_abstract_eval<core::Prim::scatter_add>,
    .sharding_rule = scatter_impl::scatter_sharding_rule<core::Prim::scatter_add>,
    .kernel = scatter_impl::scatter_kernel<kernels::Combine::add>,
    .lower_local = scatter_impl::scatter_lower<core::Prim::scatter_add>,
    .jvp = scatter_impl::scatter_add_jvp,
    .transpose = scatter_impl::scatter_add_transpose,
    .batch = scatter_impl::scatter_batch<core::Prim::scatter_add>,
    .print_params = scatter_impl::scatter_printed<core::Prim::scatter_add>,
    .parse_params = scatter_parse_params,
};
extern const core::PrimRules scatter_mul_rules = {
    .abstract_eval = scatter_impl::arithmetic_scatter_abstract_eval<core::Prim::scatter_mul>,
    .sharding_rule = scatter_impl::scatter_sharding_rule<core::Prim::scatter_mul>,
    .kernel = scatter_impl::scatter_kernel<kernels::Combine::mul>,
    .lower_local = scatter_impl::scatter_lower<core::Prim::scatter_mul>,
    .jvp = scatter_impl::scatter_mul_jvp,
    .transpose = scatter_impl::scatter_mul_transpose,
    .batch = scatter_impl::scatter_batch<core::Prim::scatter_mul>,
    .print_params = scatter_impl::scatter_printed<core::Prim::scatter_mul>,
    .parse_params = scatter_parse_params,
};
extern const core::PrimRules scatter_min_rules = {
    .abstract_eval = scatter_impl::scatter_abstract_eval,
    .sharding_rule = scatter_impl::scatter_sharding_rule<core::Prim::scatter_min>,
    .kernel = scatter_impl::scatter_kernel<kernels::Combine::min>,
    .lower_local = scatter_impl::scatter_lower<core::Prim::scatter_min>,
    .jvp = scatter_impl::scatter_extremal_jvp<core::Prim::scatter_min>,
    .batch = scatter_impl::scatter_batch<core::Prim::scatter_min>,
    .print_params = scatter_impl::scatter_printed<core::Prim::scatter_min>,
    .parse_params = scatter_parse_params,
};
extern const core::PrimRules scatter_max_rules = {
    .abstract_eval = scatter_impl::scatter_abstract_eval,
    .sharding_rule = scatter_impl::scatter_sharding_rule<core::Prim::scatter_max>,
    .kernel = scatter_impl::scatter_kernel<kernels::Combine::max>,
    .lower_local = scatter_impl::scatter_lower<core::Prim::scatter_max>,
    .jvp = scatter_impl::scatter_extremal_jvp<core::Prim::scatter_max>,
    .batch = scatter_impl::scatter_batch<core::Prim::scatter_max>,
    .print_params = scatter_impl::scatter_printed<core::Prim::scatter_max>,
    .parse_params = scatter_parse_params,
};

}  // namespace parax::prims
