// rev: reverses the order of elements along each of `dimensions`.
#include <set>

#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace rev_impl {

std::vector<Aval> rev_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "rev got " << in.size() << " operands");
  const Aval& x = in[0];
  const std::vector<int64_t>& dims = param_ints(params, "dimensions");
  check_shapelike("rev", "dimensions", dims);
  if (std::set<int64_t>(dims.begin(), dims.end()).size() != dims.size()) {
    throw TypeError("rev dimensions must be unique, got " + shape_str(dims) + ".");
  }
  for (int64_t d : dims) {
    if (d < int64_t(x.shape.size())) continue;
    throw TypeError("rev dimensions must all be less than operand ndim, got dimensions " +
                    shape_str(dims) + " for operand ndim " + std::to_string(x.shape.size()) + ".");
  }
  return {x};
}

// Every dimension keeps its layout, as in JAX (a reversed one stays sharded):
// rev_lower_local reverses each block and trades blocks between mirror devices.
ShardingRule rev_sharding_rule(std::span<const Aval> in, std::span<const Aval>, const Params&) {
  ShardingRule rule;
  std::vector<int> result;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    result.push_back(add_factor(rule, in[0].shape[d]));
  }
  rule.operands.push_back(result);
  rule.results.push_back(result);
  rule.runs_padded = true;
  return rule;
}

// Per device: reverse the block, then for each reversed sharded dimension take the
// blocks from the mirror devices. With n shards of b elements holding N (padding
// P = n*b - N at the end), the reversed padded array starts with the padding, so result
// block k is the reversed array shifted by P = q*b + r: the tail [r, b) of the block of
// tile n-1-q-k, then the head [0, r) of tile n-2-q-k's.
std::vector<core::Atom> rev_lower_local(std::span<const core::Atom> in, const Params& params,
                                        const core::LowerContext& c) {
  using core::Atom;
  using core::Prim;
  const Aval& local = c.out_avals[0];
  Atom cur = c.emit(Prim::rev, {in[0]}, params, local);
  for (int64_t d : param_ints(params, "dimensions")) {
    const std::vector<int64_t>& axes = c.in_dim_axes[0][size_t(d)];
    if (axes.empty()) continue;
    int64_t n = 1;
    for (int64_t a : axes) n *= c.axis_sizes[size_t(a)];
    const int64_t b = local.shape[size_t(d)];
    if (b == 0) continue;
    const int64_t pad = n * b - c.global_in[0].shape[size_t(d)];
    const int64_t q = pad / b, r = pad % b;
    auto piece = [&](Atom x, int64_t lo, int64_t hi, int64_t shift) {
      Aval part = local;
      part.shape[size_t(d)] = hi - lo;
      if (lo != 0 || hi != b) {
        Shape start(local.shape.size(), 0), limit = local.shape;
        start[size_t(d)] = lo;
        limit[size_t(d)] = hi;
        x = c.emit(Prim::slice, {x},
                   {{"start_indices", start},
                    {"limit_indices", limit},
                    {"strides", std::vector<int64_t>{}}},
                   part);
      }
      // Tile t's piece goes to the device whose result block needs it.
      return c.move_blocks(x, part, axes, [&](int64_t t) {
        const int64_t k = n - 1 - shift - t;
        return k >= 0 ? k : int64_t(-1);
      });
    };
    Atom tail = piece(cur, r, b, q);
    if (r == 0) {
      cur = tail;
      continue;
    }
    Atom head = piece(cur, 0, r, q + 1);
    cur = c.emit(Prim::concatenate, {tail, head}, {{"dimension", d}}, local);
  }
  return {cur};
}

std::vector<Array> rev_transpose(std::span<const Array> cts, std::span<const Array>,
                                 std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  return {lax::rev(cts[0], param_ints(params, "dimensions"))};
}

Batched rev_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis&) {
  const std::vector<int64_t> reversed = batched_dims(param_ints(params, "dimensions"), dims[0]);
  return Batched{{core::bind1(core::Prim::rev, {in[0]}, {{"dimensions", reversed}})}, {dims[0]}};
}

}  // namespace rev_impl
}  // namespace

extern const core::PrimRules rev_rules = {
    .abstract_eval = rev_impl::rev_abstract_eval,
    .sharding_rule = rev_impl::rev_sharding_rule,
    .kernel = kernels::rev,
    .lower_local = rev_impl::rev_lower_local,
    .jvp = unary_linear_jvp<core::Prim::rev>,
    .transpose = rev_impl::rev_transpose,
    .batch = rev_impl::rev_batch,
};

}  // namespace parax::prims
