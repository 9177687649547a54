// dynamic_slice: a `slice_sizes` window at start indices given as rank-0 integer operands
// (operand, then one index per dimension). Starts are clamped so the window fits.
#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace dynamic_slice_impl {

std::vector<Aval> dynamic_slice_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(!in.empty(), "dynamic_slice got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::span<const Aval> indices = in.subspan(1);
  const Shape& sizes = param_ints(params, "slice_sizes");
  const std::string shape = shape_str(x.shape);
  if (indices.size() != x.shape.size()) {
    throw TypeError(
        "dynamic_slice start_indices must have length equal to the number of "
        "dimensions of the operand, got indices " +
        avals_str(indices) + " for operand shape " + shape + ".");
  }
  if (sizes.size() != indices.size()) {
    throw TypeError(
        "dynamic_slice slice_sizes must have the same length as start_indices, got "
        "start_indices length " +
        std::to_string(indices.size()) + " and slice_sizes " + shape_str(sizes) + ".");
  }
  for (size_t d = 0; d < sizes.size(); ++d) {
    if (sizes[d] <= x.shape[d]) continue;
    throw TypeError(
        "slice slice_sizes must be less than or equal to operand shape, got "
        "slice_sizes " +
        shape_str(sizes) + " for operand shape " + shape + ".");
  }
  for (int64_t s : sizes) {
    if (s >= 0) continue;
    throw TypeError("slice slice_sizes must be greater than or equal to zero, got slice_sizes " +
                    shape_str(sizes) + ".");
  }
  check_start_indices("dynamic_slice", indices);
  return {Aval{sizes, x.dtype, x.weak_type}};
}

// A dimension taken whole has start 0 after clamping, so it shards like the operand.
ShardingRule dynamic_slice_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                         const Params& params) {
  const Shape& shape = in[0].shape;
  const Shape& sizes = param_ints(params, "slice_sizes");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < shape.size(); ++d) {
    dims.push_back(sizes[d] == shape[d] ? add_factor(rule, shape[d]) : ShardingRule::kNone);
  }
  rule.operands.push_back(dims);
  for (size_t i = 1; i < in.size(); ++i) rule.operands.emplace_back();
  rule.results.push_back(dims);
  return rule;
}

Params dynamic_slice_localize(const Params& params, const core::LocalizeInfo& info) {
  Params local = params;
  local.set("slice_sizes", info.out_avals[0].shape);
  return local;
}

// Linear in the operand; the start indices are integers and get no tangent.
std::vector<Array> dynamic_slice_jvp(std::span<const Array> primals,
                                     std::span<const Array> tangents, std::span<const Array>,
                                     const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  std::vector<Array> in(primals.begin(), primals.end());
  in[0] = tangents[0];
  return {core::bind1(core::Prim::dynamic_slice, std::move(in), params)};
}

// JAX's _dynamic_slice_transpose_rule: the cotangent written into zeros at the same
// (clamped) start.
std::vector<Array> dynamic_slice_transpose(std::span<const Array> cts,
                                           std::span<const Array> operands, std::span<const bool>,
                                           const Params&) {
  std::vector<Array> out(operands.size());
  if (!cts[0].valid()) return out;
  const Shape shape = operand_type(operands, 0, "dynamic_slice").shape;
  std::vector<Array> in(operands.begin(), operands.end());
  in[0] = zeros_like_aval(Aval{shape, cts[0].dtype(), false});
  in.insert(in.begin() + 1, cts[0]);
  out[0] = core::bind1(core::Prim::dynamic_update_slice, std::move(in));
  return out;
}

// Returns x[lo:hi] along dimension `dim`.
Array slice_along(const Array& x, int64_t dim, int64_t lo, int64_t hi) {
  std::vector<int64_t> start(size_t(x.ndim()), 0);
  std::vector<int64_t> limit = x.shape();
  start[size_t(dim)] = lo;
  limit[size_t(dim)] = hi;
  return lax::slice(x, start, limit);
}

// Returns the window of `size` of y (batched at `yd`, or not) along element dimension k,
// starting at a batch of `starts`: the binary shifter of batching_util.h, largest bit
// first. Before the step of bit b, y is long enough for every remaining shift (< 2b);
// each step keeps the part the smaller shifts still need.
Batched batched_window(Array y, int yd, int64_t k, const Array& starts, int64_t size,
                       const BatchAxis& axis) {
  const int64_t dim = batched_dim(k, yd);
  const int64_t n = y.shape()[size_t(dim)];
  if (n == size) return Batched{{y}, {yd}};
  const auto [s, max_start] = clamp_starts(starts, n - size);
  const int64_t top = top_bit(max_start);
  const int64_t needed = size + 2 * top - 1;
  if (needed > n) {
    std::vector<lax::PadConfig> config(size_t(y.ndim()));
    config[size_t(dim)].high = needed - n;
    y = lax::pad(y, constant(0, y.dtype()), config);
  }
  for (int64_t bit = top; bit >= 1; bit /= 2) {
    const int64_t keep = size + bit - 1;
    const int64_t d = batched_dim(k, yd);
    const std::vector<Array> operands{start_bit(s, bit), slice_along(y, d, 0, keep),
                                      slice_along(y, d, bit, bit + keep)};
    Batched r =
        batch_elementwise(core::Prim::select_n, operands, std::vector<int>{0, yd, yd}, {}, axis);
    y = r.outs[0];
    yd = r.dims[0];
  }
  return Batched{{y}, {yd}};
}

// Dimensions with unbatched starts (and the operand's batch dimension, taken whole) are
// cut by one dynamic_slice; each dimension with batched starts then by the shifter.
Batched dynamic_slice_batch(std::span<const Array> in, std::span<const int> dims,
                            const Params& params, const BatchAxis& axis) {
  const Array& x = in[0];
  const int xd = dims[0];
  const Shape& sizes = param_ints(params, "slice_sizes");
  if (sizes.empty()) return Batched{{x}, {xd}};  // the whole of a rank-0 element
  std::vector<Array> args{x};
  Shape cut;
  for (int64_t j = 0; j < x.ndim(); ++j) {
    const size_t k = size_t(j - (xd != kNotMapped && j > xd ? 1 : 0));
    if (j == xd || dims[1 + k] != kNotMapped) {
      args.push_back(constant(0, in[1].dtype()));
      cut.push_back(x.shape()[size_t(j)]);
    } else {
      args.push_back(in[1 + k]);
      cut.push_back(sizes[k]);
    }
  }
  Array y = x;
  if (cut != x.shape()) {
    y = core::bind1(core::Prim::dynamic_slice, std::move(args), {{"slice_sizes", cut}});
  }
  int yd = xd;
  for (size_t k = 0; k < sizes.size(); ++k) {
    if (dims[1 + k] == kNotMapped) continue;
    Batched r = batched_window(y, yd, int64_t(k), in[1 + k], sizes[k], axis);
    y = r.outs[0];
    yd = r.dims[0];
  }
  if (yd == kNotMapped) {  // every batched start had one possible value
    y = core::move_batch_dim(y, kNotMapped, 0, axis.size);
    yd = 0;
  }
  return Batched{{y}, {yd}};
}

}  // namespace dynamic_slice_impl
}  // namespace

extern const core::PrimRules dynamic_slice_rules = {
    .abstract_eval = dynamic_slice_impl::dynamic_slice_abstract_eval,
    .sharding_rule = dynamic_slice_impl::dynamic_slice_sharding_rule,
    .kernel = kernels::dynamic_slice,
    .localize = dynamic_slice_impl::dynamic_slice_localize,
    .jvp = dynamic_slice_impl::dynamic_slice_jvp,
    .transpose = dynamic_slice_impl::dynamic_slice_transpose,
    .batch = dynamic_slice_impl::dynamic_slice_batch,
};

}  // namespace parax::prims
