// pad: surrounds each dimension with `low` and `high` copies of padding_value and puts
// `interior` copies between elements. padding_config is flat (low, high, interior) per
// dimension; negative low/high crop.
#include <algorithm>
#include <limits>

#include "base/sizes.h"
#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace pad_impl {

// Renders the config as lax.pad receives it: `((1, 2, 0), (0, 0, 1))`.
std::string config_str(const std::vector<int64_t>& config) {
  std::string s = "(";
  for (size_t i = 0; i + 2 < config.size(); i += 3) {
    s += (i ? ", " : "") + shape_str({config[i], config[i + 1], config[i + 2]});
  }
  return s + (config.size() == 3 ? ",)" : ")");
}

std::vector<Aval> pad_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 2, "pad got " << in.size() << " operands");
  const Aval& x = in[0];
  const Aval& value = in[1];
  const std::vector<int64_t>& config = param_ints(params, "padding_config");
  if (!value.shape.empty()) {
    throw ValueError("padding_value must be a scalar; got np.shape(padding_value)=" +
                     shape_str(value.shape));
  }
  if (config.size() != 3 * x.shape.size()) {
    throw ValueError(
        "length of padding_config must equal the number of axes of operand, got "
        "padding_config " +
        config_str(config) + " for operand shape " + shape_str(x.shape));
  }
  for (size_t d = 0; d < x.shape.size(); ++d) {
    if (config[3 * d + 2] >= 0) continue;
    throw ValueError(
        "interior padding in padding_config must be nonnegative, got "
        "padding_config " +
        config_str(config));
  }
  Shape shape;
  for (size_t d = 0; d < x.shape.size(); ++d) {
    const int64_t n = x.shape[d];
    // low + high + n + (n - 1) * interior, each step checked: huge configs must not wrap.
    std::optional<int64_t> size = n == 0 ? 0 : base::mul_exact(n - 1, config[3 * d + 2]);
    if (size && n > 0) size = base::add_exact(*size, n);
    if (size) size = base::add_exact(*size, config[3 * d]);
    if (size) size = base::add_exact(*size, config[3 * d + 1]);
    if (!size) {
      throw ValueError("[pad] the padded size of dimension " + std::to_string(d) +
                       " overflows a 64-bit size, for padding_config " + config_str(config) +
                       " and operand shape " + shape_str(x.shape));
    }
    shape.push_back(*size);
  }
  for (int64_t size : shape) {
    if (size >= 0) continue;
    throw ValueError("Dimension size after padding is not at least 0, got result shape " +
                     shape_str(shape) + ", for padding_config " + config_str(config) +
                     " and operand shape " + shape_str(x.shape));
  }
  if (value.dtype != x.dtype) {
    throw TypeError("pad operand and padding_value must be same dtype: got " +
                    std::string(dtype_name(x.dtype)) + " and " +
                    std::string(dtype_name(value.dtype)) + ".");
  }
  return {Aval{shape, x.dtype, x.weak_type && value.weak_type}};
}

// An unpadded dimension shards like the operand; padding would shift every shard.
ShardingRule pad_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                               const Params& params) {
  const std::vector<int64_t>& config = param_ints(params, "padding_config");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    const bool unpadded = config[3 * d] == 0 && config[3 * d + 1] == 0 && config[3 * d + 2] == 0;
    dims.push_back(unpadded ? add_factor(rule, in[0].shape[d]) : ShardingRule::kNone);
  }
  rule.operands = {dims, {}};
  rule.results.push_back(dims);
  return rule;
}

// pad is linear in the operand and the padding value together.
std::vector<Array> pad_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                           std::span<const Array>, const Params& params) {
  if (!tangents[0].valid() && !tangents[1].valid()) return {Array()};
  return {core::bind1(core::Prim::pad,
                      {instantiate(tangents[0], core::aval_of(primals[0])),
                       instantiate(tangents[1], core::aval_of(primals[1]))},
                      params)};
}

// JAX's _pad_transpose: the operand's cotangent is the cotangent with the padding undone
// (crop low/high, which pads where they were negative, then stride over the interior); the
// padding value's is what is left: the total minus the operand's part.
std::vector<Array> pad_transpose(std::span<const Array> cts, std::span<const Array>,
                                 std::span<const bool> linear, const Params& params) {
  if (!cts[0].valid()) return {Array(), Array()};
  const Array& ct = cts[0];
  const std::vector<int64_t>& config = param_ints(params, "padding_config");
  std::vector<lax::PadConfig> unpad;
  std::vector<int64_t> strides;
  for (size_t d = 0; d < size_t(ct.ndim()); ++d) {
    unpad.push_back({-config[3 * d], -config[3 * d + 1], 0});
    // Saturated: an interior this large only pads a dimension of one element, where any
    // stride that steps past it picks the same element.
    const int64_t interior = std::min(config[3 * d + 2], std::numeric_limits<int64_t>::max() - 1);
    strides.push_back(interior + 1);
  }
  const Array unpadded = lax::pad(ct, constant(0, ct.dtype()), unpad);
  const Array operand_ct =
      lax::slice(unpadded, std::vector<int64_t>(strides.size(), 0), unpadded.shape(), strides);
  Array value_ct;
  if (linear[1]) value_ct = lax::sub(sum_all(ct), sum_all(operand_ct));
  return {linear[0] ? operand_ct : Array(), value_ct};
}

// The batch dimension is not padded. A batch of padding values is not a scalar, so the
// operand is padded with any value and the padding chosen afterwards through a mask of
// where the operand's elements landed (JAX's _pad_batch_rule).
Batched pad_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis& axis) {
  const std::vector<int64_t>& config = param_ints(params, "padding_config");
  const int d = dims[0] == kNotMapped ? 0 : dims[0];
  std::vector<int64_t> batched_config = config;
  batched_config.insert(batched_config.begin() + 3 * d, {0, 0, 0});
  const Params p{{"padding_config", batched_config}};
  const Array x = core::move_batch_dim(in[0], dims[0], d, axis.size);
  if (dims[1] == kNotMapped) {
    return Batched{{core::bind1(core::Prim::pad, {x, in[1]}, p)}, {d}};
  }
  const Array padded = core::bind1(core::Prim::pad, {x, constant(0, x.dtype())}, p);
  Shape operand_shape = x.shape();
  operand_shape.erase(operand_shape.begin() + d);
  const Array inside =
      core::bind1(core::Prim::pad,
                  {lax::broadcast_in_dim(constant(1, DType::bool_), operand_shape, {}),
                   constant(0, DType::bool_)},
                  params);
  std::vector<int64_t> kept;
  for (int64_t k = 0; k < padded.ndim(); ++k) {
    if (k != d) kept.push_back(k);
  }
  const Array mask = lax::broadcast_in_dim(inside, padded.shape(), kept);
  const Array value = lax::broadcast_in_dim(in[1], padded.shape(), {int64_t(d)});
  return Batched{{lax::select_n(mask, {value, padded})}, {d}};
}

}  // namespace pad_impl
}  // namespace

extern const core::PrimRules pad_rules = {
    .abstract_eval = pad_impl::pad_abstract_eval,
    .sharding_rule = pad_impl::pad_sharding_rule,
    .kernel = kernels::pad,
    .jvp = pad_impl::pad_jvp,
    .transpose = pad_impl::pad_transpose,
    .batch = pad_impl::pad_batch,
};

}  // namespace parax::prims
