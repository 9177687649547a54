// Windowed reductions (pooling) and the selections their gradients use, after
// jax/_src/lax/windowed_reductions.py. Params: window_dimensions, window_strides, padding
// (flat lo, hi pairs), base_dilation, window_dilation; the selections carry select_prim
// ("ge" for max pooling, "le" for min) and select_and_scatter_add no dilations.
// reduce_window_sum is linear (its transpose pads the cotangent and sums windows again);
// max and min pooling differentiate through select_and_gather_add, whose transpose is
// select_and_scatter_add and back.
#include <cmath>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/kernels/reduce_window.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace reduce_window_impl {

using Ints = std::vector<int64_t>;
using core::Prim;

std::string tuple_str(const Ints& v) {
  if (v.size() == 1) return "(" + std::to_string(v[0]) + ",)";
  return shape_str(Shape(v.begin(), v.end()));
}

Ints ones(size_t n) { return Ints(n, 1); }
Ints dilations(const Params& p, std::string_view name, size_t n) {
  return p.has(name) ? param_ints(p, name) : ones(n);
}

// JAX's lax._check_shapelike for one argument.
void check_shapelike(const std::string& fun, const std::string& arg, const Ints& v, bool nonzero) {
  for (int64_t x : v) {
    if (x < (nonzero ? 1 : 0)) {
      throw TypeError(fun + " " + arg + " must have every element be " +
                      (nonzero ? "strictly positive" : "nonnegative") + ", got " + tuple_str(v) +
                      ".");
    }
  }
}

int64_t dilate_dim(int64_t d, int64_t dil) { return d == 0 ? 0 : 1 + dil * (d - 1); }

// JAX's reduce_window_shape_tuple.
Shape window_shape(const Shape& in, const Ints& win, const Ints& strides, const Ints& padding,
                   const Ints& bdil, const Ints& wdil) {
  Shape out;
  for (size_t d = 0; d < in.size(); ++d) {
    const int64_t padded = dilate_dim(in[d], bdil[d]) + padding[2 * d] + padding[2 * d + 1];
    const int64_t w = dilate_dim(win[d], wdil[d]);
    out.push_back(padded >= w ? (padded - w) / strides[d] + 1 : 0);
  }
  return out;
}

// JAX's _common_reduce_window_shape_rule.
Shape common_window_shape(const std::string& fun, const Aval& x, const Params& params) {
  const Ints& win = param_ints(params, "window_dimensions");
  const Ints& strides = param_ints(params, "window_strides");
  const Ints& padding = param_ints(params, "padding");
  const Ints bdil = dilations(params, "base_dilation", win.size());
  const Ints wdil = dilations(params, "window_dilation", win.size());
  check_shapelike(fun, "window_dimensions", win, true);
  check_shapelike(fun, "window_strides", strides, true);
  check_shapelike(fun, "base_dilation", bdil, false);
  check_shapelike(fun, "window_dilation", wdil, false);
  if (x.shape.size() != win.size()) {
    throw TypeError(fun +
                    " got the wrong number of window_dimensions for operand: got operand shape " +
                    shape_str(x.shape) + " with window_dimensions " + tuple_str(win) + ".");
  }
  if (strides.size() != win.size()) {
    throw TypeError(fun + " got inconsistent window_strides and window_dimensions: got " +
                    "window_strides " + tuple_str(strides) + " and window_dimensions " +
                    tuple_str(win) + ".");
  }
  if (bdil.size() != win.size()) {
    throw TypeError(fun + " got inconsistent base_dilation and window_dimensions: got " +
                    "base_dilation " + tuple_str(bdil) + " and window_dimensions " +
                    tuple_str(win) + ".");
  }
  if (wdil.size() != win.size()) {
    throw TypeError(fun + " got inconsistent window_dilation and window_dimensions: got " +
                    "window_dilation " + tuple_str(wdil) + " and window_dimensions " +
                    tuple_str(win) + ".");
  }
  if (padding.size() != 2 * win.size()) {
    throw TypeError(fun + " got the wrong number of padding pairs: got " +
                    std::to_string(padding.size() / 2) + " for window_dimensions " +
                    tuple_str(win) + ".");
  }
  return window_shape(x.shape, win, strides, padding, bdil, wdil);
}

std::vector<Aval> reduce_window_sum_abstract_eval(std::span<const Aval> in, const Params& params) {
  if (in[0].dtype == DType::bool_) {
    throw TypeError("operand to reduce_window_sum must have a number dtype, got bool");
  }
  return {Aval{common_window_shape("reduce_window", in[0], params), in[0].dtype, in[0].weak_type}};
}

std::vector<Aval> reduce_window_abstract_eval(std::span<const Aval> in, const Params& params) {
  return {Aval{common_window_shape("reduce_window", in[0], params), in[0].dtype, in[0].weak_type}};
}

std::vector<Aval> gather_add_abstract_eval(std::span<const Aval> in, const Params& params) {
  if (in[0].shape != in[1].shape) {
    throw TypeError("select_and_gather_add tangents and operand shapes must match, got " +
                    shape_str(in[0].shape) + " and " + shape_str(in[1].shape) + ".");
  }
  check_same_dtypes("select_and_gather_add", in);
  return {Aval{common_window_shape("reduce_window", in[1], params), in[0].dtype, in[0].weak_type}};
}

std::vector<Aval> scatter_add_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Ints& win = param_ints(params, "window_dimensions");
  const Ints& strides = param_ints(params, "window_strides");
  check_shapelike("select_and_scatter", "window_dimensions", win, false);
  check_shapelike("select_and_scatter", "window_strides", strides, false);
  if (win.size() != strides.size()) {
    throw TypeError(
        "select_and_scatter got inconsistent window_strides and window_dimensions: got "
        "window_strides " +
        tuple_str(strides) + " and window_dimensions " + tuple_str(win) + ".");
  }
  const Shape windows = common_window_shape("select_and_scatter", in[1], params);
  if (in[0].shape != windows) {
    throw TypeError("select_and_scatter_add source shape must be the operand's window shape " +
                    shape_str(windows) + ", got " + shape_str(in[0].shape) + ".");
  }
  check_same_dtypes("select_and_scatter_add", in);
  return {Aval{in[1].shape, in[0].dtype, in[0].weak_type}};
}

// A dimension the windows leave alone (size 1, stride 1, no padding or dilation) keeps
// its sharding, as JAX's _get_sharding_for_varying_out_shape keeps a dimension whose size
// does not change; any other must be whole on each device.
std::vector<int> window_factors(const Params& params, const Shape& in, ShardingRule& rule) {
  const Ints& win = param_ints(params, "window_dimensions");
  const Ints& strides = param_ints(params, "window_strides");
  const Ints& padding = param_ints(params, "padding");
  const Ints bdil = dilations(params, "base_dilation", win.size());
  const Ints wdil = dilations(params, "window_dilation", win.size());
  std::vector<int> dims;
  for (size_t d = 0; d < in.size(); ++d) {
    const bool untouched = win[d] == 1 && strides[d] == 1 && padding[2 * d] == 0 &&
                           padding[2 * d + 1] == 0 && bdil[d] == 1;
    if (!untouched) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[d]);
  }
  (void)wdil;  // a window of size 1 reads one element whatever its dilation
  return dims;
}

ShardingRule window_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                  const Params& params) {
  ShardingRule rule;
  const std::vector<int> dims = window_factors(params, in.back().shape, rule);
  rule.operands.assign(in.size(), dims);
  rule.results.push_back(dims);
  return rule;
}

Params window_params(const Params& params, Ints win, Ints strides, Ints padding, Ints bdil,
                     Ints wdil) {
  Params q = params;
  q.set("window_dimensions", std::move(win));
  q.set("window_strides", std::move(strides));
  q.set("padding", std::move(padding));
  if (!bdil.empty()) q.set("base_dilation", std::move(bdil));
  if (!wdil.empty()) q.set("window_dilation", std::move(wdil));
  return q;
}

// JAX's _reduce_window_sum_transpose_rule: the cotangent, padded (strides become interior
// padding), summed over windows again with strides = base dilation.
std::vector<Array> reduce_window_sum_transpose(std::span<const Array> cts,
                                               std::span<const Array> operands,
                                               std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const Aval x = operand_type(operands, 0, "reduce_window_sum");
  const Array& ct = cts[0];
  const Ints& win = param_ints(params, "window_dimensions");
  const Ints& strides = param_ints(params, "window_strides");
  const Ints& padding = param_ints(params, "padding");
  const size_t n = win.size();
  const Ints bdil = dilations(params, "base_dilation", n);
  const Ints wdil = dilations(params, "window_dilation", n);
  std::vector<lax::PadConfig> config;
  for (size_t d = 0; d < n; ++d) {
    // _conv_general_vjp_lhs_padding with the window as the kernel.
    const int64_t lhs_d = dilate_dim(x.shape[d], bdil[d]);
    const int64_t rhs_d = dilate_dim(win[d], wdil[d]);
    const int64_t out_d = dilate_dim(ct.shape()[d], strides[d]);
    const int64_t before = rhs_d - padding[2 * d] - 1;
    const int64_t after = lhs_d + rhs_d - 1 - out_d - before;
    config.push_back({before, after, strides[d] - 1});
  }
  const Array padded = lax::pad(ct, constant(0, ct.dtype()), config);
  Array out = core::bind1(Prim::reduce_window_sum, {padded},
                          window_params(params, win, bdil, Ints(2 * n, 0), ones(n), wdil));
  return {out};
}

Batched window_batch(Prim prim, std::span<const Array> in, std::span<const int> dims,
                     const Params& params) {
  const int b = dims[0];
  auto insert = [&](Ints v, int64_t value) {
    v.insert(v.begin() + b, value);
    return v;
  };
  const size_t n = param_ints(params, "window_dimensions").size();
  Ints padding = param_ints(params, "padding");
  padding.insert(padding.begin() + 2 * b, {0, 0});
  Params q = window_params(params, insert(param_ints(params, "window_dimensions"), 1),
                           insert(param_ints(params, "window_strides"), 1), padding,
                           insert(dilations(params, "base_dilation", n), 1),
                           insert(dilations(params, "window_dilation", n), 1));
  return Batched{{core::bind1(prim, {in[0]}, q)}, {b}};
}

template <Prim P>
Batched reduce_window_batch(std::span<const Array> in, std::span<const int> dims,
                            const Params& params, const BatchAxis&) {
  return window_batch(P, in, dims, params);
}

// JAX's _reduce_window_chooser_jvp_rule.
template <bool kMax>
std::vector<Array> chooser_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                               std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  Params q = params;
  q.set("select_prim", std::string(kMax ? "ge" : "le"));
  return {core::bind1(Prim::select_and_gather_add, {tangents[0], primals[0]}, q)};
}

// Both selections are linear in their first operand and reuse the operand as it is.
template <Prim P>
std::vector<Array> selection_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                 std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  return {core::bind1(P, {tangents[0], primals[1]}, params)};
}

// JAX's _select_and_gather_add_transpose.
std::vector<Array> gather_add_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                        std::span<const bool> linear, const Params& params) {
  PARAX_CHECK(linear[0] && !linear[1], "select_and_gather_add is linear in its tangents only");
  if (!cts[0].valid()) return {Array(), Array()};
  const size_t n = param_ints(params, "window_dimensions").size();
  const Ints bdil = dilations(params, "base_dilation", n);
  const Ints wdil = dilations(params, "window_dilation", n);
  for (int64_t d : wdil) {
    if (d != 1) {
      throw NotImplementedError(
          "VJP not implemented for select_and_gather (MaxPool) with window dilation, got "
          "window_dilation=" +
          tuple_str(wdil) + ".");
    }
  }
  const bool ge = params.get<std::string>("select_prim") == "ge";
  Array x = operands[1];
  const bool dilated = std::any_of(bdil.begin(), bdil.end(), [](int64_t d) { return d != 1; });
  if (dilated) {
    std::vector<lax::PadConfig> config;
    for (int64_t d : bdil) config.push_back({0, 0, d - 1});
    x = lax::pad(x, constant(ge ? -INFINITY : INFINITY, x.dtype()), config);
  }
  Params q;
  q.set("select_prim", params.get<std::string>("select_prim"));
  q.set("window_dimensions", param_ints(params, "window_dimensions"));
  q.set("window_strides", param_ints(params, "window_strides"));
  q.set("padding", param_ints(params, "padding"));
  Array out = core::bind1(Prim::select_and_scatter_add, {cts[0], x}, q);
  if (dilated) {
    out = lax::slice(out, Ints(n, 0), Ints(out.shape().begin(), out.shape().end()), bdil);
  }
  return {out, Array()};
}

// JAX's _select_and_scatter_add_transpose.
std::vector<Array> scatter_add_transpose(std::span<const Array> cts,
                                         std::span<const Array> operands,
                                         std::span<const bool> linear, const Params& params) {
  PARAX_CHECK(linear[0] && !linear[1], "select_and_scatter_add is linear in its source only");
  if (!cts[0].valid()) return {Array(), Array()};
  const size_t n = param_ints(params, "window_dimensions").size();
  Params q = params;
  q.set("base_dilation", ones(n));
  q.set("window_dilation", ones(n));
  return {core::bind1(Prim::select_and_gather_add, {cts[0], operands[1]}, q), Array()};
}

// JAX's batching rules of the selections: both operands batched first, a window of 1.
template <Prim P>
Batched selection_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                        const BatchAxis& axis) {
  const Array a = core::batch_first(in[0], dims[0], axis.size);
  const Array b = core::batch_first(in[1], dims[1], axis.size);
  Params q = params;
  auto prepend = [&](std::string_view name, int64_t v) {
    if (!params.has(name)) return;
    Ints x = param_ints(params, name);
    x.insert(x.begin(), v);
    q.set(std::string(name), x);
  };
  prepend("window_dimensions", 1);
  prepend("window_strides", 1);
  prepend("base_dilation", 1);
  prepend("window_dilation", 1);
  Ints padding = param_ints(params, "padding");
  padding.insert(padding.begin(), {0, 0});
  q.set("padding", padding);
  return Batched{{core::bind1(P, {a, b}, q)}, {0}};
}

}  // namespace reduce_window_impl
}  // namespace

extern const core::PrimRules reduce_window_sum_rules = {
    .abstract_eval = reduce_window_impl::reduce_window_sum_abstract_eval,
    .sharding_rule = reduce_window_impl::window_sharding_rule,
    .kernel = kernels::reduce_window_sum,
    .jvp = unary_linear_jvp<core::Prim::reduce_window_sum>,
    .transpose = reduce_window_impl::reduce_window_sum_transpose,
    .batch = reduce_window_impl::reduce_window_batch<core::Prim::reduce_window_sum>,
};
extern const core::PrimRules reduce_window_max_rules = {
    .abstract_eval = reduce_window_impl::reduce_window_abstract_eval,
    .sharding_rule = reduce_window_impl::window_sharding_rule,
    .kernel = kernels::reduce_window_max,
    .jvp = reduce_window_impl::chooser_jvp<true>,
    .batch = reduce_window_impl::reduce_window_batch<core::Prim::reduce_window_max>,
};
extern const core::PrimRules reduce_window_min_rules = {
    .abstract_eval = reduce_window_impl::reduce_window_abstract_eval,
    .sharding_rule = reduce_window_impl::window_sharding_rule,
    .kernel = kernels::reduce_window_min,
    .jvp = reduce_window_impl::chooser_jvp<false>,
    .batch = reduce_window_impl::reduce_window_batch<core::Prim::reduce_window_min>,
};
extern const core::PrimRules select_and_scatter_add_rules = {
    .abstract_eval = reduce_window_impl::scatter_add_abstract_eval,
    .sharding_rule = reduce_window_impl::window_sharding_rule,
    .kernel = kernels::select_and_scatter_add,
    .jvp = reduce_window_impl::selection_jvp<core::Prim::select_and_scatter_add>,
    .transpose = reduce_window_impl::scatter_add_transpose,
    .batch = reduce_window_impl::selection_batch<core::Prim::select_and_scatter_add>,
};
extern const core::PrimRules select_and_gather_add_rules = {
    .abstract_eval = reduce_window_impl::gather_add_abstract_eval,
    .sharding_rule = reduce_window_impl::window_sharding_rule,
    .kernel = kernels::select_and_gather_add,
    .jvp = reduce_window_impl::selection_jvp<core::Prim::select_and_gather_add>,
    .transpose = reduce_window_impl::gather_add_transpose,
    .batch = reduce_window_impl::selection_batch<core::Prim::select_and_gather_add>,
};

}  // namespace parax::prims
