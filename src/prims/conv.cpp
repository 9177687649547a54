// conv_general_dilated with JAX's ConvDimensionNumbers, held as three params: lhs_spec,
// rhs_spec, out_spec, each listing (batch or output feature, feature or input feature,
// spatial dimensions in the rhs's order). padding is flat (lo, hi) pairs. The rules follow
// jax/_src/lax/convolution.py: the transposes are convolutions too (bilinear, as a
// product), and batching folds the vmapped dimension into the batch or feature dims.
#include <algorithm>
#include <numeric>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/kernels/conv.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace conv_impl {

using Ints = std::vector<int64_t>;
using kernels::conv_params;
using kernels::ConvParams;

std::string tuple_str(const Ints& v) {
  if (v.size() == 1) return "(" + std::to_string(v[0]) + ",)";
  return shape_str(Shape(v.begin(), v.end()));
}

Ints take(const Shape& shape, const Ints& perm) {
  Ints out;
  for (int64_t d : perm) out.push_back(shape[size_t(d)]);
  return out;
}

int64_t dilate_dim(int64_t d, int64_t dil) { return d == 0 ? 0 : 1 + dil * (d - 1); }

int64_t stride_dim(int64_t d, int64_t window, int64_t stride) {
  return std::max<int64_t>(0, (d - window) >= 0 ? (d - window) / stride + 1 : 0);
}

std::string pads_str(const ConvParams& p) {
  std::string s = "(";
  for (size_t i = 0; i < p.pad_lo.size(); ++i) {
    s += (i ? ", (" : "(") + std::to_string(p.pad_lo[i]) + ", " + std::to_string(p.pad_hi[i]) + ")";
  }
  return s + (p.pad_lo.size() == 1 ? ",)" : ")");
}

// JAX's _conv_general_dilated_shape_rule, its checks in its order and words.
Shape conv_shape(const Aval& lhs, const Aval& rhs, const ConvParams& p) {
  if (lhs.shape.size() != rhs.shape.size()) {
    throw ValueError(
        "conv_general_dilated lhs and rhs must have the same number of dimensions, but got " +
        shape_str(lhs.shape) + " and " + shape_str(rhs.shape) + ".");
  }
  for (const Ints* spec : {&p.lhs_spec, &p.rhs_spec, &p.out_spec}) {
    Ints sorted = *spec;
    std::sort(sorted.begin(), sorted.end());
    Ints iota(lhs.shape.size());
    std::iota(iota.begin(), iota.end(), 0);
    if (sorted != iota || lhs.shape.size() < 2) {
      throw TypeError("convolution dimension_numbers must each be a permutation of the " +
                      std::to_string(lhs.shape.size()) + " dimensions of lhs and rhs, got " +
                      tuple_str(*spec) + " for lhs and rhs shapes " + shape_str(lhs.shape) +
                      " and " + shape_str(rhs.shape) + ".");
    }
  }
  const int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  if (fgc <= 0) {
    throw ValueError("conv_general_dilated feature_group_count must be a positive integer, got " +
                     std::to_string(fgc) + ".");
  }
  const int64_t lhs_features = lhs.shape[size_t(p.lhs_spec[1])];
  const int64_t rhs_in = rhs.shape[size_t(p.rhs_spec[1])];
  const int64_t rhs_out = rhs.shape[size_t(p.rhs_spec[0])];
  if (lhs_features % fgc != 0) {
    throw ValueError(
        "conv_general_dilated feature_group_count must divide lhs feature dimension size, but " +
        std::to_string(fgc) + " does not divide " + std::to_string(lhs_features) + ".");
  }
  if (lhs_features / fgc != rhs_in) {
    throw ValueError(
        "conv_general_dilated lhs feature dimension size divided by feature_group_count must "
        "equal the rhs input feature dimension size, but " +
        std::to_string(lhs_features) + " // " + std::to_string(fgc) +
        " != " + std::to_string(rhs_in) + ".");
  }
  if (rhs_out % fgc != 0) {
    throw ValueError(
        "conv_general_dilated rhs output feature dimension size must be a multiple of "
        "feature_group_count, but " +
        std::to_string(rhs_out) + " is not a multiple of " + std::to_string(fgc) + ".");
  }
  if (bgc <= 0) {
    throw ValueError("conv_general_dilated batch_group_count must be a positive integer, got " +
                     std::to_string(bgc) + ".");
  }
  const int64_t lhs_batch = lhs.shape[size_t(p.lhs_spec[0])];
  if (bgc > 1 && lhs_batch % bgc != 0) {
    throw ValueError(
        "conv_general_dilated batch_group_count must divide lhs batch dimension size, but " +
        std::to_string(bgc) + " does not divide " + std::to_string(lhs_batch) + ".");
  }
  if (rhs_out % bgc != 0) {
    throw ValueError(
        "conv_general_dilated rhs output feature dimension size must be a multiple of "
        "batch_group_count, but " +
        std::to_string(rhs_out) + " is not a multiple of " + std::to_string(bgc) + ".");
  }
  if (bgc > 1 && fgc > 1) {
    throw ValueError(
        "At most one of batch_group_count and feature_group_count may be > 1, got "
        "batch_group_count=" +
        std::to_string(bgc) + " and feature_group_count=" + std::to_string(fgc));
  }
  const size_t n = rhs.shape.size() - 2;
  if (p.strides.size() != n) {
    throw ValueError(
        "conv_general_dilated window and window_strides must have the same number of "
        "dimensions, but got " +
        std::to_string(n) + " and " + std::to_string(p.strides.size()));
  }
  if (p.pad_lo.size() != n) {
    throw TypeError("Wrong number of explicit pads for convolution: expected " + std::to_string(n) +
                    ", got " + std::to_string(p.pad_lo.size()) + ".");
  }
  if (p.lhs_dilation.size() != n || p.rhs_dilation.size() != n) {
    throw ValueError("conv_general_dilated lhs_dilation and rhs_dilation must have " +
                     std::to_string(n) + " entries, got " + tuple_str(p.lhs_dilation) + " and " +
                     tuple_str(p.rhs_dilation));
  }
  for (const Ints* v : {&p.strides, &p.lhs_dilation, &p.rhs_dilation}) {
    for (int64_t x : *v) {
      if (x < 1) {
        throw ValueError(
            "conv_general_dilated window_strides, lhs_dilation and rhs_dilation must be "
            "positive, got " +
            tuple_str(*v));
      }
    }
  }
  const Ints lhs_sp = take(lhs.shape, p.lhs_spec), rhs_sp = take(rhs.shape, p.rhs_spec);
  Ints padded, out_space;
  bool negative = false;
  for (size_t d = 0; d < n; ++d) {
    padded.push_back(dilate_dim(lhs_sp[d + 2], p.lhs_dilation[d]) + p.pad_lo[d] + p.pad_hi[d]);
    negative = negative || padded.back() < 0;
  }
  if (negative) {
    throw ValueError(
        "Negative padding is larger than the size of the corresponding dimension: got "
        "padding=" +
        pads_str(p) + " for lhs_shape[2:]=" + tuple_str(Ints(lhs_sp.begin() + 2, lhs_sp.end())));
  }
  Ints out_trans = {bgc > 1 ? lhs_sp[0] / bgc : lhs_sp[0], rhs_sp[0]};
  for (size_t d = 0; d < n; ++d) {
    out_trans.push_back(
        stride_dim(padded[d], dilate_dim(rhs_sp[d + 2], p.rhs_dilation[d]), p.strides[d]));
  }
  Shape out(out_trans.size());
  for (size_t i = 0; i < out_trans.size(); ++i) out[size_t(p.out_spec[i])] = out_trans[i];
  return out;
}

std::vector<Aval> conv_abstract_eval(std::span<const Aval> in, const Params& params) {
  const ConvParams p = conv_params(params);
  const Shape shape = conv_shape(in[0], in[1], p);
  check_same_dtypes("lax.conv_general_dilated", in);
  DType dtype = in[0].dtype;
  if (params.has("preferred_element_type")) {
    check_preferred(dtype, params.get<DType>("preferred_element_type"));
    dtype = params.get<DType>("preferred_element_type");
  }
  const bool weak = in[0].weak_type && in[1].weak_type && dtype == in[0].dtype;
  return {Aval{shape, dtype, weak}};
}

// Factors: the batch (lhs N, out N), the output features (rhs O, out C), then the input
// features (lhs C, rhs I: a sum over devices). Spatial dimensions stay whole: a window
// reads across a shard's edge. Groups tie features to batch or to one another, so a
// grouped convolution keeps those dimensions whole too.
ShardingRule conv_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                const Params& params) {
  const ConvParams p = conv_params(params);
  ShardingRule rule;
  rule.operands.assign(2, {});
  rule.operands[0].assign(in[0].shape.size(), ShardingRule::kNone);
  rule.operands[1].assign(in[1].shape.size(), ShardingRule::kNone);
  rule.results.assign(1, std::vector<int>(out[0].shape.size(), ShardingRule::kNone));
  const bool grouped = p.feature_group_count > 1 || p.batch_group_count > 1;
  if (p.batch_group_count == 1) {
    rule.operands[0][size_t(p.lhs_spec[0])] = rule.num_factors();
    rule.results[0][size_t(p.out_spec[0])] = rule.num_factors();
    rule.factor_sizes.push_back(in[0].shape[size_t(p.lhs_spec[0])]);
  }
  if (!grouped) {
    rule.operands[1][size_t(p.rhs_spec[0])] = rule.num_factors();
    rule.results[0][size_t(p.out_spec[1])] = rule.num_factors();
    rule.factor_sizes.push_back(in[1].shape[size_t(p.rhs_spec[0])]);
    rule.operands[0][size_t(p.lhs_spec[1])] = rule.num_factors();
    rule.operands[1][size_t(p.rhs_spec[1])] = rule.num_factors();
    rule.factor_sizes.push_back(in[0].shape[size_t(p.lhs_spec[1])]);
    rule.reduction = out[0].dtype == DType::bool_ ? core::ReduceOp::or_ : core::ReduceOp::sum;
  }
  // Padded shards of the input features add nothing once the lhs's padding is zero.
  rule.runs_padded = true;
  rule.masked_operands = 1u << 0;
  return rule;
}

// Two flops per result element and (input feature, window position) pair.
core::Cost conv_cost(std::span<const Aval> in, std::span<const Aval> out, const Params& params,
                     std::span<const int64_t>) {
  const ConvParams p = conv_params(params);
  double per = double(in[1].shape[size_t(p.rhs_spec[1])]);
  for (size_t d = 2; d < p.rhs_spec.size(); ++d) per *= double(in[1].shape[size_t(p.rhs_spec[d])]);
  return {.flops = 2.0 * double(out[0].size()) * per};
}

Params with_conv(const Params& params, const Ints& strides, const Ints& padding,
                 const Ints& lhs_dilation, const Ints& rhs_dilation, const Ints& lhs_spec,
                 const Ints& rhs_spec, const Ints& out_spec, int64_t fgc, int64_t bgc) {
  Params q = params;
  q.set("window_strides", strides);
  q.set("padding", padding);
  q.set("lhs_dilation", lhs_dilation);
  q.set("rhs_dilation", rhs_dilation);
  q.set("lhs_spec", lhs_spec);
  q.set("rhs_spec", rhs_spec);
  q.set("out_spec", out_spec);
  q.set("feature_group_count", fgc);
  q.set("batch_group_count", bgc);
  return q;
}

Array bind_conv(const Array& lhs, const Array& rhs, Params params) {
  return core::bind1(core::Prim::conv_general_dilated, {lhs, rhs}, std::move(params));
}

std::vector<Array> conv_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array>, const Params& params) {
  Array out;
  if (tangents[0].valid()) out = bind_conv(tangents[0], primals[1], params);
  if (tangents[1].valid()) out = add_tangents(out, bind_conv(primals[0], tangents[1], params));
  return {out};
}

Ints spec_transpose(Ints spec) {
  std::swap(spec[0], spec[1]);
  return spec;
}

Ints sdims(const Ints& spec) { return Ints(spec.begin() + 2, spec.end()); }

// JAX's _reshape_axis_into: moves dimension `src` next to `dst` (numbered without src)
// and merges it in as the major part.
Array reshape_axis_into(int64_t src, int64_t dst, const Array& x) {
  Ints perm;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != src) perm.push_back(i);
  }
  perm.insert(perm.begin() + dst, src);
  Shape shape;
  for (int64_t i = 0; i < x.ndim(); ++i) {
    if (i != src) shape.push_back(x.shape()[size_t(i)]);
  }
  shape[size_t(dst)] *= x.shape()[size_t(src)];
  return lax::reshape(lax::transpose(x, perm), shape);
}

// JAX's _reshape_axis_out_of: splits dimension `src` into (size1, rest).
Array reshape_axis_out_of(int64_t src, int64_t size1, const Array& x) {
  Shape shape = x.shape();
  const int64_t size2 = shape[size_t(src)] / size1;
  shape[size_t(src)] = size2;
  shape.insert(shape.begin() + src, size1);
  return lax::reshape(x, shape);
}

Ints dilate_shape(const Ints& shape, const Ints& dil) {
  Ints out;
  for (size_t i = 0; i < shape.size(); ++i) out.push_back(dilate_dim(shape[i], dil[i]));
  return out;
}

// JAX's _conv_general_vjp_lhs_padding, flat.
Ints vjp_lhs_padding(const Ints& in_shape, const Ints& window, const Ints& strides,
                     const Ints& out_shape, const Ints& pad_lo, const Ints& lhs_dilation,
                     const Ints& rhs_dilation) {
  const Ints lhs_d = dilate_shape(in_shape, lhs_dilation);
  const Ints rhs_d = dilate_shape(window, rhs_dilation);
  const Ints out_d = dilate_shape(out_shape, strides);
  Ints pads;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    const int64_t before = rhs_d[i] - pad_lo[i] - 1;
    pads.push_back(before);
    pads.push_back(lhs_d[i] + rhs_d[i] - 1 - out_d[i] - before);
  }
  return pads;
}

// JAX's _conv_general_vjp_rhs_padding, flat.
Ints vjp_rhs_padding(const Ints& in_shape, const Ints& window, const Ints& strides,
                     const Ints& out_shape, const Ints& pad_lo, const Ints& lhs_dilation,
                     const Ints& rhs_dilation) {
  const Ints lhs_d = dilate_shape(in_shape, lhs_dilation);
  const Ints rhs_d = dilate_shape(window, rhs_dilation);
  const Ints out_d = dilate_shape(out_shape, strides);
  Ints pads;
  for (size_t i = 0; i < in_shape.size(); ++i) {
    pads.push_back(pad_lo[i]);
    pads.push_back(out_d[i] - lhs_d[i] + rhs_d[i] - pad_lo[i] - 1);
  }
  return pads;
}

Array convert_to(const Array& x, DType dtype) { return x.dtype() == dtype ? x : convert(x, dtype); }

// JAX's _conv_general_dilated_transpose_lhs.
Array conv_transpose_lhs(const Array& g, const Array& rhs_in, const Aval& lhs,
                         const Params& params) {
  const ConvParams p = conv_params(params);
  int64_t fgc = p.feature_group_count;
  const int64_t bgc = p.batch_group_count;
  Array rhs = rhs_in;
  const Shape rhs_shape = rhs.shape();
  if (fgc > 1) {
    rhs = reshape_axis_out_of(p.rhs_spec[0], fgc, rhs);
    rhs = reshape_axis_into(p.rhs_spec[0], p.rhs_spec[1], rhs);
  } else if (bgc > 1) {
    rhs = reshape_axis_out_of(p.rhs_spec[0], bgc, rhs);
    rhs = reshape_axis_into(p.rhs_spec[0], p.rhs_spec[1], rhs);
    fgc = bgc;
  }
  const Ints pads = vjp_lhs_padding(
      take(lhs.shape, sdims(p.lhs_spec)), take(rhs_shape, sdims(p.rhs_spec)), p.strides,
      take(g.shape(), sdims(p.out_spec)), p.pad_lo, p.lhs_dilation, p.rhs_dilation);
  Array revd = lax::rev(rhs, sdims(p.rhs_spec));
  revd = convert_to(revd, g.dtype());
  Array out = bind_conv(g, revd,
                        with_conv(params, p.lhs_dilation, pads, p.strides, p.rhs_dilation,
                                  p.out_spec, spec_transpose(p.rhs_spec), p.lhs_spec, fgc, 1));
  if (out.dtype() != lhs.dtype) out = convert(out, lhs.dtype, lhs.weak_type);
  if (bgc > 1) {
    out = reshape_axis_out_of(p.lhs_spec[1], bgc, out);
    out = reshape_axis_into(p.lhs_spec[1], p.lhs_spec[0], out);
  }
  return out;
}

// JAX's _conv_general_dilated_transpose_rhs.
Array conv_transpose_rhs(const Array& g, const Array& lhs_in, const Aval& rhs,
                         const Params& params) {
  if (g.size() == 0) return Array();
  const ConvParams p = conv_params(params);
  int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  if (bgc > 1) {
    fgc = bgc;
    bgc = 1;
  } else if (fgc > 1) {
    bgc = fgc;
    fgc = 1;
  }
  const Ints pads = vjp_rhs_padding(
      take(lhs_in.shape(), sdims(p.lhs_spec)), take(rhs.shape, sdims(p.rhs_spec)), p.strides,
      take(g.shape(), sdims(p.out_spec)), p.pad_lo, p.lhs_dilation, p.rhs_dilation);
  const Array lhs = convert_to(lhs_in, g.dtype());
  Array out = bind_conv(
      lhs, g,
      with_conv(params, p.rhs_dilation, pads, p.lhs_dilation, p.strides, spec_transpose(p.lhs_spec),
                spec_transpose(p.out_spec), spec_transpose(p.rhs_spec), fgc, bgc));
  if (out.dtype() != rhs.dtype) out = convert(out, rhs.dtype, rhs.weak_type);
  return out;
}

std::vector<Array> conv_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                  std::span<const bool> linear, const Params& params) {
  if (!cts[0].valid()) return {Array(), Array()};
  PARAX_CHECK(!(linear[0] && linear[1]),
              "conv_general_dilated is not linear in both operands at once");
  PARAX_CHECK(operands[linear[0] ? 0 : 1].valid(),
              "conv_general_dilated's transpose needs its linear operand's type");
  if (linear[0]) {
    return {conv_transpose_lhs(cts[0], operands[1], core::aval_of(operands[0]), params), Array()};
  }
  return {Array(), conv_transpose_rhs(cts[0], operands[0], core::aval_of(operands[1]), params)};
}

// JAX's _conv_general_dilated_batch_rule.
Batched conv_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis&) {
  const ConvParams p = conv_params(params);
  const Array& lhs = in[0];
  const Array& rhs = in[1];
  const int lb = dims[0], rb = dims[1];
  int64_t fgc = p.feature_group_count, bgc = p.batch_group_count;
  auto conv_with = [&](const Array& l, const Array& r, int64_t f, int64_t b) {
    Params q = params;
    q.set("feature_group_count", f);
    q.set("batch_group_count", b);
    return bind_conv(l, r, q);
  };
  if ((lb != kNotMapped && lhs.shape()[size_t(lb)] == 0) ||
      (rb != kNotMapped && rhs.shape()[size_t(rb)] == 0)) {
    Aval l = core::aval_of(lhs), r = core::aval_of(rhs);
    if (lb != kNotMapped) l.shape.erase(l.shape.begin() + lb);
    if (rb != kNotMapped) r.shape.erase(r.shape.begin() + rb);
    Aval out = conv_abstract_eval(std::vector<Aval>{l, r}, params)[0];
    out.shape.insert(out.shape.begin(), 0);
    return Batched{{zeros_like_aval(out)}, {0}};
  }
  if (lb != kNotMapped && rb != kNotMapped) {
    Array new_lhs;
    if (bgc > 1) {
      new_lhs = reshape_axis_into(lb, p.lhs_spec[0], lhs);
      bgc *= lhs.shape()[size_t(lb)];
    } else {
      new_lhs = reshape_axis_into(lb, p.lhs_spec[1], lhs);
      fgc *= lhs.shape()[size_t(lb)];
    }
    const Array new_rhs = reshape_axis_into(rb, p.rhs_spec[0], rhs);
    Array out = conv_with(new_lhs, new_rhs, fgc, bgc);
    out = reshape_axis_out_of(p.out_spec[1], lhs.shape()[size_t(lb)], out);
    return Batched{{out}, {int(p.out_spec[1])}};
  }
  if (lb != kNotMapped) {
    const int64_t size = lhs.shape()[size_t(lb)];
    Array new_lhs;
    if (bgc == 1) {
      new_lhs = reshape_axis_into(lb, p.lhs_spec[0], lhs);
    } else {
      new_lhs = reshape_axis_out_of(p.lhs_spec[0] + int64_t(lb <= p.lhs_spec[0]), bgc, lhs);
      new_lhs = reshape_axis_into(lb + int64_t(p.lhs_spec[0] < lb), p.lhs_spec[0] + 1, new_lhs);
      new_lhs = reshape_axis_into(p.lhs_spec[0], p.lhs_spec[0], new_lhs);
    }
    Array out = conv_with(new_lhs, rhs, fgc, bgc);
    out = reshape_axis_out_of(p.out_spec[0], size, out);
    return Batched{{out}, {int(p.out_spec[0])}};
  }
  const int64_t size = rhs.shape()[size_t(rb)];
  if (fgc == 1 && bgc == 1) {
    const Array new_rhs = reshape_axis_into(rb, p.rhs_spec[0], rhs);
    Array out = conv_with(lhs, new_rhs, fgc, bgc);
    out = reshape_axis_out_of(p.out_spec[1], size, out);
    return Batched{{out}, {int(p.out_spec[1])}};
  }
  // Groups must stay outermost in the output features: factor them out of the rhs's,
  // fold the batch in under them, and undo the same on the result.
  const int64_t groups = fgc > 1 ? fgc : bgc;
  Array new_rhs = reshape_axis_out_of(p.rhs_spec[0] + int64_t(rb <= p.rhs_spec[0]), groups, rhs);
  new_rhs = reshape_axis_into(rb + int64_t(p.rhs_spec[0] < rb), p.rhs_spec[0] + 1, new_rhs);
  new_rhs = reshape_axis_into(p.rhs_spec[0], p.rhs_spec[0], new_rhs);
  Array out = conv_with(lhs, new_rhs, fgc, bgc);
  out = reshape_axis_out_of(p.out_spec[1], groups, out);
  out = reshape_axis_out_of(p.out_spec[1] + 1, size, out);
  out = reshape_axis_into(p.out_spec[1], p.out_spec[1] + 1, out);
  return Batched{{out}, {int(p.out_spec[1])}};
}

}  // namespace conv_impl
}  // namespace

extern const core::PrimRules conv_general_dilated_rules = {
    .abstract_eval = conv_impl::conv_abstract_eval,
    .sharding_rule = conv_impl::conv_sharding_rule,
    .kernel = kernels::conv,
    .jvp = conv_impl::conv_jvp,
    .transpose = conv_impl::conv_transpose,
    .batch = conv_impl::conv_batch,
    .cost = conv_impl::conv_cost,
};

}  // namespace parax::prims
