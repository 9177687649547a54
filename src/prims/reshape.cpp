// reshape: the same elements in row-major order under a new shape.
#include "prims/batching_util.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace reshape_impl {

std::vector<Aval> reshape_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "reshape got " << in.size() << " operands");
  const Aval& x = in[0];
  const Shape& new_sizes = param_ints(params, "new_sizes");
  for (int64_t d : new_sizes) {
    if (d >= 0) continue;
    throw TypeError("reshape new_sizes must all be positive, got " + shape_str(new_sizes) + ".");
  }
  if (shape_size(new_sizes) != x.size()) {
    throw TypeError("reshape total size must be unchanged, got new_sizes " + shape_str(new_sizes) +
                    " (of total size " + std::to_string(shape_size(new_sizes)) + ") for shape " +
                    shape_str(x.shape) + " (of total size " + std::to_string(x.size()) + ").");
  }
  return {Aval{new_sizes, x.dtype, x.weak_type}};
}

// Splits the dimensions into groups of equal product between input and output, skipping
// size-1 dimensions ([2,3,4] -> [6,4] has groups {2,3}->{6} and {4}->{4}). Within a
// group only the major dimensions can shard alike: a block of the leading input dimension
// is a contiguous block of the leading output dimension when one size divides the other,
// and the shared factor is the smaller size.
ShardingRule reshape_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                   const Params&) {
  const Shape& a = in[0].shape;
  const Shape& b = out[0].shape;
  ShardingRule rule;
  std::vector<int> operand(a.size(), ShardingRule::kNone);
  std::vector<int> result(b.size(), ShardingRule::kNone);
  // A zero-size array has nothing to shard, and products of 0 do not form groups.
  if (in[0].size() != 0) {
    size_t i = 0;
    size_t j = 0;
    auto skip_ones = [](const Shape& s, size_t& k) {
      while (k < s.size() && s[k] == 1) ++k;
    };
    skip_ones(a, i);
    skip_ones(b, j);
    while (i < a.size() && j < b.size()) {
      const size_t i0 = i;
      const size_t j0 = j;
      int64_t pa = a[i++];
      int64_t pb = b[j++];
      while (pa != pb) {
        if (pa < pb) {
          pa *= a[i++];
        } else {
          pb *= b[j++];
        }
      }
      const int64_t small = std::min(a[i0], b[j0]);
      if (std::max(a[i0], b[j0]) % small == 0) {
        operand[i0] = result[j0] = add_factor(rule, small);
      }
      skip_ones(a, i);
      skip_ones(b, j);
    }
  }
  rule.operands.push_back(operand);
  rule.results.push_back(result);
  return rule;
}

void reshape_kernel(const KernelCall& c) {
  copy_bytes(c.inputs[0], c.outputs[0], c.out_avals[0].nbytes());
}

Params reshape_localize(const Params& params, const core::LocalizeInfo& info) {
  Params local = params;
  local.set("new_sizes", info.out_avals[0].shape);
  return local;
}

std::vector<Array> reshape_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                     std::span<const bool>, const Params&) {
  if (!cts[0].valid()) return {Array()};
  return {lax::reshape(cts[0], operand_type(operands, 0, "reshape").shape)};
}

// Row-major order interleaves the batch with the element unless it comes first.
Batched reshape_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                      const BatchAxis& axis) {
  Shape new_sizes = param_ints(params, "new_sizes");
  new_sizes.insert(new_sizes.begin(), axis.size);
  Params p = params;
  p.set("new_sizes", new_sizes);
  const Array x = core::batch_first(in[0], dims[0], axis.size);
  return Batched{{core::bind1(core::Prim::reshape, {x}, p)}, {0}};
}

}  // namespace reshape_impl
}  // namespace

extern const core::PrimRules reshape_rules = {
    .abstract_eval = reshape_impl::reshape_abstract_eval,
    .sharding_rule = reshape_impl::reshape_sharding_rule,
    .kernel = reshape_impl::reshape_kernel,
    .localize = reshape_impl::reshape_localize,
    .jvp = unary_linear_jvp<core::Prim::reshape>,
    .transpose = reshape_impl::reshape_transpose,
    .batch = reshape_impl::reshape_batch,
};

}  // namespace parax::prims
