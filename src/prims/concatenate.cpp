// concatenate: joins operands of equal shape except along `dimension`.
#include "prims/batching_util.h"
#include "prims/kernels/copy.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace concatenate_impl {

std::string shapes_str(std::span<const Aval> in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + shape_str(in[i].shape);
  return s;
}

std::vector<Aval> concatenate_abstract_eval(std::span<const Aval> in, const Params& params) {
  const int64_t dim = param_int(params, "dimension");
  if (in.empty()) throw TypeError("concatenate expects at least one operand, got 0.");
  const size_t rank = in[0].shape.size();
  for (const Aval& a : in) {
    if (a.shape.size() == rank) continue;
    throw TypeError("Cannot concatenate arrays with different numbers of dimensions: got " +
                    shapes_str(in) + ".");
  }
  if (dim < 0 || dim >= int64_t(rank)) {
    throw TypeError("concatenate dimension out of bounds: dimension " + std::to_string(dim) +
                    " for shapes " + shapes_str(in) + ".");
  }
  Shape shape = in[0].shape;
  shape[size_t(dim)] = 0;
  for (const Aval& a : in) {
    for (size_t d = 0; d < rank; ++d) {
      if (int64_t(d) == dim || a.shape[d] == shape[d]) continue;
      throw TypeError(
          "Cannot concatenate arrays with shapes that differ in dimensions other "
          "than the one being concatenated: concatenating along dimension " +
          std::to_string(dim) + " for shapes " + shapes_str(in) + ".");
    }
    shape[size_t(dim)] += a.shape[size_t(dim)];
  }
  check_same_dtypes("lax.concatenate", in);
  bool weak = true;
  for (const Aval& a : in) weak = weak && a.weak_type;
  return {Aval{shape, in[0].dtype, weak}};
}

ShardingRule concatenate_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params& params) {
  const size_t dim = size_t(param_int(params, "dimension"));
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < out[0].shape.size(); ++d) {
    dims.push_back(d == dim ? ShardingRule::kNone : add_factor(rule, out[0].shape[d]));
  }
  rule.operands.assign(in.size(), dims);
  rule.results.push_back(dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

std::vector<Array> concatenate_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                   std::span<const Array>, const Params& params) {
  bool any = false;
  for (const Array& t : tangents) any = any || t.valid();
  if (!any) return {Array()};
  std::vector<Array> in;
  for (size_t i = 0; i < primals.size(); ++i) {
    in.push_back(instantiate(tangents[i], core::aval_of(primals[i])));
  }
  return {core::bind1(core::Prim::concatenate, std::move(in), params)};
}

// Each linear operand's cotangent is its slab of the cotangent.
std::vector<Array> concatenate_transpose(std::span<const Array> cts,
                                         std::span<const Array> operands,
                                         std::span<const bool> linear, const Params& params) {
  std::vector<Array> out(operands.size());
  if (!cts[0].valid()) return out;
  const Array& ct = cts[0];
  const size_t dim = size_t(param_int(params, "dimension"));
  int64_t offset = 0;
  for (size_t i = 0; i < operands.size(); ++i) {
    const int64_t size = operand_type(operands, i, "concatenate").shape[dim];
    if (linear[i]) {
      std::vector<int64_t> start(size_t(ct.ndim()), 0);
      std::vector<int64_t> limit = ct.shape();
      start[dim] = offset;
      limit[dim] = offset + size;
      out[i] = lax::slice(ct, start, limit);
    }
    offset += size;
  }
  return out;
}

// The operands meet at the first batched one's batch dimension; unbatched ones are
// broadcast there, since every operand needs the batch.
Batched concatenate_batch(std::span<const Array> in, std::span<const int> dims,
                          const Params& params, const BatchAxis& axis) {
  const int to = *std::find_if(dims.begin(), dims.end(), [](int d) { return d != kNotMapped; });
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    args.push_back(core::move_batch_dim(in[i], dims[i], to, axis.size));
  }
  const int64_t dim = batched_dim(param_int(params, "dimension"), to);
  return Batched{{core::bind1(core::Prim::concatenate, std::move(args), {{"dimension", dim}})},
                 {to}};
}

}  // namespace concatenate_impl
}  // namespace

extern const core::PrimRules concatenate_rules = {
    .abstract_eval = concatenate_impl::concatenate_abstract_eval,
    .sharding_rule = concatenate_impl::concatenate_sharding_rule,
    .kernel = kernels::concatenate,
    .jvp = concatenate_impl::concatenate_jvp,
    .transpose = concatenate_impl::concatenate_transpose,
    .batch = concatenate_impl::concatenate_batch,
};

}  // namespace parax::prims
