// convert_element_type between any two of the 13 dtypes, with XLA's CPU semantics where
// C++ leaves the result undefined or differs: float to int truncates, saturates at the
// int's range and maps NaN to 0; anything to bool is x != 0; conversions to half precision
// round through float32 (XLA does, so results match it even where that double rounding
// differs from a direct rounding).
#include "prims/kernels/convert_element_type.h"

#include "core/trace.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {
namespace convert_element_type_impl {

std::vector<Aval> convert_element_type_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "operands of convert_element_type");
  const bool weak = params.has("weak_type") && params.get<bool>("weak_type");
  return {Aval{in[0].shape, params.get<DType>("new_dtype"), weak}};
}

// Linear between floating dtypes: the tangent converts the same way. Integer and bool
// values have no tangents, on either side.
std::vector<Array> convert_element_type_jvp(std::span<const Array> primals,
                                            std::span<const Array> tangents,
                                            std::span<const Array> outs, const Params& params) {
  if (!tangents[0].valid() || !has_tangent(primals[0].dtype()) || !has_tangent(outs[0].dtype())) {
    return {Array()};
  }
  return {core::bind1(core::Prim::convert_element_type, {tangents[0]}, params)};
}

// Converts the cotangent back to the operand's dtype, which only the operand's placeholder
// knows (the result's dtype is the new one).
std::vector<Array> convert_element_type_transpose(std::span<const Array> cts,
                                                  std::span<const Array> operands,
                                                  std::span<const bool>, const Params&) {
  PARAX_CHECK(!operands.empty() && operands[0].valid(),
              "convert_element_type's transpose needs a placeholder of the operand's type");
  const Aval old = core::aval_of(operands[0]);
  if (!cts[0].valid() || !has_tangent(old.dtype)) return {Array()};
  return {core::bind1(core::Prim::convert_element_type, {cts[0]},
                      {{"new_dtype", old.dtype}, {"weak_type", old.weak_type}})};
}

}  // namespace convert_element_type_impl
}  // namespace

extern const PrimRules convert_element_type_rules = {
    .abstract_eval = &convert_element_type_impl::convert_element_type_eval,
    .sharding_rule = &elementwise_sharding_rule,
    .kernel = kernels::convert_element_type,
    .jvp = &convert_element_type_impl::convert_element_type_jvp,
    .transpose = &convert_element_type_impl::convert_element_type_transpose,
    .batch = &elementwise_batch<core::Prim::convert_element_type>};

}  // namespace parax::prims
