// concatenate: joins operands of equal shape except along `dimension`.
#include "prims/structural.h"

namespace parax::prims {
namespace {

std::string shapes_str(std::span<const Aval> in) {
  std::string s;
  for (size_t i = 0; i < in.size(); ++i) s += (i ? ", " : "") + tuple_str(in[i].shape);
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
      throw TypeError("Cannot concatenate arrays with shapes that differ in dimensions other "
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
  return rule;
}

void concatenate_kernel(const KernelCall& c) {
  const size_t dim = size_t(param_int(c.params, "dimension"));
  const std::vector<int64_t> out_strides = strides_of(c.out_avals[0].shape);
  const int itemsize = dtype_itemsize(c.out_avals[0].dtype);
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Shape& shape = c.in_avals[i].shape;
    const StridedCopy copy{shape, strides_of(shape), out_strides, 0, offset * out_strides[dim]};
    strided_copy(c.inputs[i], c.outputs[0], itemsize, copy);
    offset += shape[dim];
  }
}

}  // namespace

extern const core::PrimRules concatenate_rules = {
    .abstract_eval = concatenate_abstract_eval,
    .sharding_rule = concatenate_sharding_rule,
    .kernel = concatenate_kernel,
};

}  // namespace parax::prims
