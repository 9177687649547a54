// dot_general: JAX's general contraction. The result's dimensions are (batch..., lhs free
// in order..., rhs free in order...). Its kernel (kernels/dot.cpp) sees every operand as a
// stack of matrices.
#include <algorithm>

#include "prims/batching_util.h"
#include "prims/kernels/dot.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace dot_general_impl {

using kernels::DotDims;

std::vector<int64_t> free_dims(size_t rank, const std::vector<int64_t>& contract,
                               const std::vector<int64_t>& batch) {
  std::vector<int64_t> free;
  for (int64_t d = 0; d < int64_t(rank); ++d) {
    const bool used = std::count(contract.begin(), contract.end(), d) +
                          std::count(batch.begin(), batch.end(), d) >
                      0;
    if (!used) free.push_back(d);
  }
  return free;
}

DotDims dot_dims(std::span<const Aval> in, const Params& params) {
  DotDims d{param_ints(params, "lhs_contracting_dimensions"),
            param_ints(params, "rhs_contracting_dimensions"),
            param_ints(params, "lhs_batch_dimensions"),
            param_ints(params, "rhs_batch_dimensions"),
            {},
            {}};
  d.lhs_free = free_dims(in[0].shape.size(), d.lhs_contract, d.lhs_batch);
  d.rhs_free = free_dims(in[1].shape.size(), d.rhs_contract, d.rhs_batch);
  return d;
}

bool has_duplicates(std::vector<int64_t> v) {
  std::sort(v.begin(), v.end());
  return std::adjacent_find(v.begin(), v.end()) != v.end();
}

bool intersects(const std::vector<int64_t>& a, const std::vector<int64_t>& b) {
  for (int64_t x : a) {
    if (std::count(b.begin(), b.end(), x)) return true;
  }
  return false;
}

Shape sizes_of(const Shape& shape, const std::vector<int64_t>& dims) {
  Shape sizes;
  for (int64_t d : dims) sizes.push_back(shape[size_t(d)]);
  return sizes;
}

// JAX's checks and words (lax._dot_general_shape_rule), split so they run in JAX's order.
void check_in_range(const std::string& side, const std::vector<int64_t>& contract,
                    const std::vector<int64_t>& batch, size_t rank) {
  for (const std::vector<int64_t>* dims : {&contract, &batch}) {
    for (int64_t d : *dims) {
      if (d >= 0 && d < int64_t(rank)) continue;
      throw TypeError("dot_general requires " + side + " dimension numbers to be nonnegative " +
                      "and less than the number of axes of the " + side + " value, got " + side +
                      "_batch of " + shape_str(batch) + " and " + side + "_contracting of " +
                      shape_str(contract) + " for " + side + " of rank " + std::to_string(rank));
    }
  }
}

void check_distinct(const std::string& side, const std::vector<int64_t>& contract,
                    const std::vector<int64_t>& batch) {
  if (has_duplicates(batch)) {
    throw TypeError("dot_general requires " + side + " batch dimensions to be distinct, got " +
                    side + "_batch " + shape_str(batch) + ".");
  }
  if (has_duplicates(contract)) {
    throw TypeError("dot_general requires " + side + " contracting dimensions to be distinct, " +
                    "got " + side + "_contracting " + shape_str(contract) + ".");
  }
}

void check_disjoint(const std::string& side, const std::vector<int64_t>& contract,
                    const std::vector<int64_t>& batch) {
  if (intersects(batch, contract)) {
    throw TypeError("dot_general requires " + side + " batch dimensions to be disjoint from " +
                    "contracting dimensions, got " + side + "_batch " + shape_str(batch) + " and " +
                    side + "_contracting " + shape_str(contract) + ".");
  }
}

std::vector<Aval> dot_general_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& lhs = in[0];
  const Aval& rhs = in[1];
  const DotDims d = dot_dims(in, params);
  check_in_range("lhs", d.lhs_contract, d.lhs_batch, lhs.shape.size());
  check_in_range("rhs", d.rhs_contract, d.rhs_batch, rhs.shape.size());
  if (d.lhs_batch.size() != d.rhs_batch.size()) {
    throw TypeError(
        "dot_general requires equal numbers of lhs_batch and rhs_batch dimensions, "
        "got lhs_batch " +
        shape_str(d.lhs_batch) + " and rhs_batch " + shape_str(d.rhs_batch) + ".");
  }
  check_distinct("lhs", d.lhs_contract, d.lhs_batch);
  check_distinct("rhs", d.rhs_contract, d.rhs_batch);
  check_disjoint("lhs", d.lhs_contract, d.lhs_batch);
  check_disjoint("rhs", d.rhs_contract, d.rhs_batch);
  const Shape batch = sizes_of(lhs.shape, d.lhs_batch);
  if (batch != sizes_of(rhs.shape, d.rhs_batch)) {
    throw TypeError(
        "dot_general requires lhs batch dimensions and rhs batch dimensions to have "
        "the same shape, got " +
        shape_str(batch) + " and " + shape_str(sizes_of(rhs.shape, d.rhs_batch)) + ".");
  }
  const Shape lhs_k = sizes_of(lhs.shape, d.lhs_contract);
  const Shape rhs_k = sizes_of(rhs.shape, d.rhs_contract);
  if (lhs_k != rhs_k) {
    throw TypeError("dot_general requires contracting dimensions to have the same shape, got " +
                    shape_str(lhs_k) + " and " + shape_str(rhs_k) + ".");
  }
  check_same_dtypes("dot_general", in);
  DType dtype = lhs.dtype;
  if (params.has("preferred_element_type")) {
    check_preferred(lhs.dtype, params.get<DType>("preferred_element_type"));
    dtype = params.get<DType>("preferred_element_type");
  }
  Shape shape = batch;
  for (int64_t s : sizes_of(lhs.shape, d.lhs_free)) shape.push_back(s);
  for (int64_t s : sizes_of(rhs.shape, d.rhs_free)) shape.push_back(s);
  const bool weak = lhs.weak_type && rhs.weak_type && dtype == lhs.dtype;
  return {Aval{shape, dtype, weak}};
}

// Factors: batch, lhs free, rhs free (all in the result), then contracting (operands only).
ShardingRule dot_general_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params& params) {
  const DotDims d = dot_dims(in, params);
  ShardingRule rule;
  rule.operands.assign(2, {});
  rule.operands[0].resize(in[0].shape.size());
  rule.operands[1].resize(in[1].shape.size());
  auto label = [&](size_t side, const std::vector<int64_t>& dims) {
    for (int64_t dim : dims) {
      rule.operands[side][size_t(dim)] = rule.num_factors();
      rule.factor_sizes.push_back(in[side].shape[size_t(dim)]);
    }
  };
  auto label_pair = [&](const std::vector<int64_t>& l, const std::vector<int64_t>& r) {
    for (size_t i = 0; i < r.size(); ++i) {
      rule.operands[1][size_t(r[i])] = rule.num_factors() + int(i);
    }
    label(0, l);
  };
  label_pair(d.lhs_batch, d.rhs_batch);
  label(0, d.lhs_free);
  label(1, d.rhs_free);
  rule.results.emplace_back();
  for (int f = 0; f < rule.num_factors(); ++f) rule.results[0].push_back(f);
  label_pair(d.lhs_contract, d.rhs_contract);
  if (!d.lhs_contract.empty()) {
    // A bool dot is an or of ands, so its partial results combine with or.
    rule.reduction = out[0].dtype == DType::bool_ ? core::ReduceOp::or_ : core::ReduceOp::sum;
  }
  // Padded shards of a contracted dimension add nothing once the lhs's padding is zero.
  rule.runs_padded = true;
  rule.masked_operands = 1u << 0;
  return rule;
}

// Two flops (a multiply and an add) per result element and contracted element.
core::Cost dot_general_cost(std::span<const Aval> in, std::span<const Aval> out,
                            const Params& params, std::span<const int64_t>) {
  int64_t k = 1;
  for (int64_t d : params.get<std::vector<int64_t>>("lhs_contracting_dimensions")) {
    k *= in[0].shape[size_t(d)];
  }
  return {.flops = 2.0 * double(out[0].size()) * double(k)};
}

void dot_general_kernel(const KernelCall& call) {
  kernels::dot(call, dot_dims(call.in_avals, call.params));
}

using Ints = std::vector<int64_t>;

// Returns the dimensions of a rank-n operand that are neither contracting nor batch.
Ints kept_dims(int64_t n, const Ints& contracting, const Ints& batch) {
  Ints kept;
  for (int64_t d = 0; d < n; ++d) {
    const bool used = std::find(contracting.begin(), contracting.end(), d) != contracting.end() ||
                      std::find(batch.begin(), batch.end(), d) != batch.end();
    if (!used) kept.push_back(d);
  }
  return kept;
}

Ints range_from(int64_t start, size_t count) {
  Ints r(count);
  for (size_t i = 0; i < count; ++i) r[i] = start + int64_t(i);
  return r;
}

// Bilinear: the tangent is dot(t_lhs, rhs) + dot(lhs, t_rhs).
std::vector<Array> dot_general_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array>, const Params& params) {
  Array out;
  if (tangents[0].valid()) {
    out = core::bind1(core::Prim::dot_general, {tangents[0], primals[1]}, params);
  }
  if (tangents[1].valid()) {
    out =
        add_tangents(out, core::bind1(core::Prim::dot_general, {primals[0], tangents[1]}, params));
  }
  return {out};
}

// JAX's _dot_general_transpose_lhs: x's cotangent is g contracted with y over y's kept
// dimensions (batch dimensions stay batch), then permuted into x's dimension order.
// swap_ans: x is the right operand, so g's free dimensions are (y kept, x kept).
Array dot_transpose_lhs(const Array& g, const Array& y, const Aval& x, const Ints& x_contract,
                        const Ints& y_contract, const Ints& x_batch, const Ints& y_batch,
                        bool swap_ans) {
  const int64_t x_ndim = int64_t(x.shape.size());
  const Ints x_kept = kept_dims(x_ndim, x_contract, x_batch);
  const Ints y_kept = kept_dims(y.ndim(), y_contract, y_batch);
  const int64_t nb = int64_t(x_batch.size());
  const Ints ans_batch = range_from(0, x_batch.size());
  const Ints ans_y = range_from(swap_ans ? nb : nb + int64_t(x_kept.size()), y_kept.size());
  // The product's free dimensions from y come in y's order: x's contracting dimensions
  // sorted by their partners in y.
  Ints by_y = range_from(0, y_contract.size());
  std::sort(by_y.begin(), by_y.end(),
            [&](int64_t a, int64_t b) { return y_contract[size_t(a)] < y_contract[size_t(b)]; });
  Ints produced(x_batch);
  produced.insert(produced.end(), x_kept.begin(), x_kept.end());
  for (int64_t i : by_y) produced.push_back(x_contract[size_t(i)]);
  Ints out_axes(produced.size());
  for (size_t i = 0; i < produced.size(); ++i) out_axes[size_t(produced[i])] = int64_t(i);
  // parax's dot_general takes one operand dtype, so y meets g's (preferred) dtype; the
  // result goes back to x's dtype as JAX converts it.
  const Array yy = y.dtype() == g.dtype() ? y : convert(y, g.dtype());
  // Without batch dimensions, y·g (instead of g·y) yields (x's contracting dimensions, x's
  // kept ones): when that is x's own order, as for a weight gradient Xᵀ·G, it needs no
  // transpose, which would cost a pass over the result (per device, after an all-reduce).
  Ints swapped;
  for (int64_t i : by_y) swapped.push_back(x_contract[size_t(i)]);
  swapped.insert(swapped.end(), x_kept.begin(), x_kept.end());
  if (x_batch.empty() && swapped == range_from(0, swapped.size())) {
    Array x_bar = lax::dot_general(yy, g, {y_kept, ans_y, {}, {}});
    if (x_bar.dtype() != x.dtype) x_bar = convert(x_bar, x.dtype, x.weak_type);
    return x_bar;
  }
  Array x_bar =
      lax::transpose(lax::dot_general(g, yy, {ans_y, y_kept, ans_batch, y_batch}), out_axes);
  if (x_bar.dtype() != x.dtype) x_bar = convert(x_bar, x.dtype, x.weak_type);
  return x_bar;
}

// The linear operand's type: from its placeholder, else inferred (its rank from the
// cotangent's, its dtype the other operand's, which dot_general requires to match).
Aval dot_linear_aval(std::span<const Array> operands, size_t i, const Array& g,
                     const Ints& contract, const Ints& batch) {
  if (operands[i].valid()) return core::aval_of(operands[i]);
  const Array& other = operands[1 - i];
  const int64_t other_free = other.ndim() - int64_t(contract.size() + batch.size());
  const int64_t ndim = g.ndim() - other_free + int64_t(contract.size());
  return Aval{Shape(size_t(ndim), 0), other.dtype(), other.weak_type()};
}

std::vector<Array> dot_general_transpose(std::span<const Array> cts,
                                         std::span<const Array> operands,
                                         std::span<const bool> linear, const Params& params) {
  if (!cts[0].valid()) return {Array(), Array()};
  PARAX_CHECK(!(linear[0] && linear[1]), "dot_general is not linear in both operands at once");
  const Array& g = cts[0];
  const Ints& lc = param_ints(params, "lhs_contracting_dimensions");
  const Ints& rc = param_ints(params, "rhs_contracting_dimensions");
  const Ints& lb = param_ints(params, "lhs_batch_dimensions");
  const Ints& rb = param_ints(params, "rhs_batch_dimensions");
  if (linear[0]) {
    const Aval x = dot_linear_aval(operands, 0, g, lc, lb);
    return {dot_transpose_lhs(g, operands[1], x, lc, rc, lb, rb, false), Array()};
  }
  const Aval x = dot_linear_aval(operands, 1, g, rc, rb);
  return {Array(), dot_transpose_lhs(g, operands[0], x, rc, lc, rb, lb, true)};
}

// JAX's _dot_general_batch_rule without moving operands: two batched operands pair their
// batch dimensions as the first dot batch dimension (the result's first dimension); one
// batched operand carries its batch as a free dimension, which lands among that
// operand's free dimensions of the result in order.
Batched dot_general_batch(std::span<const Array> in, std::span<const int> dims,
                          const Params& params, const BatchAxis&) {
  const int ld = dims[0];
  const int rd = dims[1];
  Ints lc = batched_dims(param_ints(params, "lhs_contracting_dimensions"), ld);
  Ints rc = batched_dims(param_ints(params, "rhs_contracting_dimensions"), rd);
  Ints lb = batched_dims(param_ints(params, "lhs_batch_dimensions"), ld);
  Ints rb = batched_dims(param_ints(params, "rhs_batch_dimensions"), rd);
  int out_dim = 0;
  if (ld != kNotMapped && rd != kNotMapped) {
    lb.insert(lb.begin(), ld);
    rb.insert(rb.begin(), rd);
  } else if (ld != kNotMapped) {
    const Ints free = kept_dims(in[0].ndim(), lc, lb);
    out_dim = int(lb.size() + size_t(std::find(free.begin(), free.end(), ld) - free.begin()));
  } else {
    const Ints lhs_free = kept_dims(in[0].ndim(), lc, lb);
    const Ints free = kept_dims(in[1].ndim(), rc, rb);
    out_dim = int(rb.size() + lhs_free.size() +
                  size_t(std::find(free.begin(), free.end(), rd) - free.begin()));
  }
  Params p = params;
  p.set("lhs_contracting_dimensions", lc);
  p.set("rhs_contracting_dimensions", rc);
  p.set("lhs_batch_dimensions", lb);
  p.set("rhs_batch_dimensions", rb);
  return Batched{{core::bind1(core::Prim::dot_general, {in[0], in[1]}, p)}, {out_dim}};
}

}  // namespace dot_general_impl
}  // namespace

extern const core::PrimRules dot_general_rules = {
    .abstract_eval = dot_general_impl::dot_general_abstract_eval,
    .sharding_rule = dot_general_impl::dot_general_sharding_rule,
    .kernel = dot_general_impl::dot_general_kernel,
    .jvp = dot_general_impl::dot_general_jvp,
    .transpose = dot_general_impl::dot_general_transpose,
    .batch = dot_general_impl::dot_general_batch,
    .cost = dot_general_impl::dot_general_cost,
};

}  // namespace parax::prims
