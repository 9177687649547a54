// dynamic_update_slice: the operand with `update` written at start indices given as rank-0
// integer operands (operand, update, then one index per dimension), clamped so the update
// fits.
#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace dynamic_update_slice_impl {

std::vector<Aval> dynamic_update_slice_abstract_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() >= 2, "dynamic_update_slice got " << in.size() << " operands");
  const Aval& x = in[0];
  const Aval& update = in[1];
  const std::span<const Aval> indices = in.subspan(2);
  if (update.shape.size() != x.shape.size()) {
    throw TypeError(
        "dynamic_update_slice update must have the same rank as operand, got "
        "update shape " +
        shape_str(update.shape) + " for operand shape " + shape_str(x.shape) + ".");
  }
  if (indices.size() != x.shape.size()) {
    throw TypeError(
        "dynamic_update_slice start_indices must have length equal to the rank of "
        "operand, got indices " +
        avals_str(indices) + " for operand shape " + shape_str(x.shape) + ".");
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (update.shape[d] <= x.shape[d]) continue;
    throw TypeError(
        "dynamic_update_slice update shape must be smaller than operand shape, got "
        "update shape " +
        shape_str(update.shape) + " for operand shape " + shape_str(x.shape) + ".");
  }
  check_start_indices("dynamic_update_slice", indices);
  check_same_dtypes("lax.dynamic_update_slice", in.first(2));
  return {Aval{x.shape, x.dtype, x.weak_type}};
}

// Where the update spans the whole dimension its start is 0, so operand, update and
// result shard alike.
ShardingRule dynamic_update_slice_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                                const Params&) {
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

// Linear in the operand and the update together (JAX's _dynamic_update_slice_jvp).
std::vector<Array> dynamic_update_slice_jvp(std::span<const Array> primals,
                                            std::span<const Array> tangents, std::span<const Array>,
                                            const Params& params) {
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
    out[1] = core::bind1(core::Prim::dynamic_slice, std::move(in), {{"slice_sizes", update_shape}});
  }
  return out;
}

// Returns x moved `by` places towards higher indices along dimension `dim`, keeping its
// length: what passes the end drops off, zeros come in.
Array shift_along(const Array& x, int64_t dim, int64_t by) {
  std::vector<lax::PadConfig> config(size_t(x.ndim()));
  config[size_t(dim)].low = by;
  config[size_t(dim)].high = -by;
  return lax::pad(x, constant(0, x.dtype()), config);
}

// Returns x padded at the end of dimension `dim` to `size`.
Array pad_to(const Array& x, int64_t dim, int64_t size) {
  std::vector<lax::PadConfig> config(size_t(x.ndim()));
  config[size_t(dim)].high = size - x.shape()[size_t(dim)];
  return lax::pad(x, constant(0, x.dtype()), config);
}

// Returns `cases[which]` per batch element, for a batch of conditions (bool[B]).
Batched select_by(const Array& which, const Array& no, int no_dim, const Array& yes, int yes_dim,
                  const BatchAxis& axis) {
  return batch_elementwise(core::Prim::select_n, std::vector<Array>{which, no, yes},
                           std::vector<int>{0, no_dim, yes_dim}, {}, axis);
}

// Unbatched starts: operand and update meet at one batch dimension, where the start is 0.
Batched with_unbatched_starts(std::span<const Array> in, std::span<const int> dims,
                              const Params& params, const BatchAxis& axis) {
  const int to = dims[0] != kNotMapped ? dims[0] : dims[1];
  std::vector<Array> args(in.begin(), in.end());
  args[0] = core::move_batch_dim(in[0], dims[0], to, axis.size);
  args[1] = core::move_batch_dim(in[1], dims[1], to, axis.size);
  const DType index_dtype = in.size() > 2 ? in[2].dtype() : DType::int32;
  args.insert(args.begin() + 2 + to, constant(0, index_dtype));
  return Batched{{core::bind1(core::Prim::dynamic_update_slice, std::move(args), params)}, {to}};
}

// Batched starts, by the shifter of batching_util.h: the update and a mask of where it
// goes are placed by the unbatched starts, padded to the operand's size along the other
// dimensions and moved there bit by bit; the mask then selects between update and operand.
Batched dynamic_update_slice_batch(std::span<const Array> in, std::span<const int> dims,
                                   const Params& params, const BatchAxis& axis) {
  const std::span<const int> start_dims = dims.subspan(2);
  const bool batched_starts =
      std::any_of(start_dims.begin(), start_dims.end(), [](int d) { return d != kNotMapped; });
  if (!batched_starts) return with_unbatched_starts(in, dims, params, axis);
  const Array& x = in[0];
  Shape operand = x.shape();
  if (dims[0] != kNotMapped) operand.erase(operand.begin() + dims[0]);
  Shape update = in[1].shape();
  if (dims[1] != kNotMapped) update.erase(update.begin() + dims[1]);
  Shape placed = update;
  std::vector<Array> starts;
  for (size_t k = 0; k < operand.size(); ++k) {
    const bool batched = start_dims[k] != kNotMapped;
    if (!batched) placed[k] = operand[k];
    starts.push_back(batched ? constant(0, in[2].dtype()) : in[2 + k]);
  }
  Array z = in[1];
  int zd = dims[1];
  Array mask = lax::broadcast_in_dim(constant(1, DType::bool_), update, {});
  int md = kNotMapped;
  if (placed != update) {
    std::vector<Array> args{zeros_like_aval(Aval{placed, x.dtype(), false}), z};
    args.insert(args.end(), starts.begin(), starts.end());
    std::vector<int> arg_dims(args.size(), kNotMapped);
    arg_dims[1] = zd;
    if (zd == kNotMapped) {
      z = core::bind1(core::Prim::dynamic_update_slice, args, params);
    } else {
      Batched r = with_unbatched_starts(args, arg_dims, params, axis);
      z = r.outs[0];
      zd = r.dims[0];
    }
    args[0] = zeros_like_aval(Aval{placed, DType::bool_, false});
    args[1] = mask;
    mask = core::bind1(core::Prim::dynamic_update_slice, std::move(args), params);
  }
  for (size_t k = 0; k < operand.size(); ++k) {
    // With equal sizes the start is always 0 after clamping.
    if (start_dims[k] == kNotMapped || operand[k] == update[k]) continue;
    z = pad_to(z, batched_dim(int64_t(k), zd), operand[k]);
    mask = pad_to(mask, batched_dim(int64_t(k), md), operand[k]);
    const auto [s, max_start] = clamp_starts(in[2 + k], operand[k] - update[k]);
    for (int64_t bit = top_bit(max_start); bit >= 1; bit /= 2) {
      const Array which = start_bit(s, bit);
      Batched zr =
          select_by(which, z, zd, shift_along(z, batched_dim(int64_t(k), zd), bit), zd, axis);
      Batched mr =
          select_by(which, mask, md, shift_along(mask, batched_dim(int64_t(k), md), bit), md, axis);
      z = zr.outs[0];
      zd = zr.dims[0];
      mask = mr.outs[0];
      md = mr.dims[0];
    }
  }
  return batch_elementwise(core::Prim::select_n, std::vector<Array>{mask, x, z},
                           std::vector<int>{md, dims[0], zd}, {}, axis);
}

}  // namespace dynamic_update_slice_impl
}  // namespace

extern const core::PrimRules dynamic_update_slice_rules = {
    .abstract_eval = dynamic_update_slice_impl::dynamic_update_slice_abstract_eval,
    .sharding_rule = dynamic_update_slice_impl::dynamic_update_slice_sharding_rule,
    .kernel = kernels::dynamic_update_slice,
    .jvp = dynamic_update_slice_impl::dynamic_update_slice_jvp,
    .transpose = dynamic_update_slice_impl::dynamic_update_slice_transpose,
    .batch = dynamic_update_slice_impl::dynamic_update_slice_batch,
};

}  // namespace parax::prims
