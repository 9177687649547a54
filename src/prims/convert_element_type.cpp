// convert_element_type between any two of the 13 dtypes, with XLA's CPU semantics where
// C++ leaves the result undefined or differs: float to int truncates, saturates at the
// int's range and maps NaN to 0; anything to bool is x != 0; conversions to half precision
// round through float32 (XLA does, so results match it even where that double rounding
// differs from a direct rounding).
#include "core/trace.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

template <class T>
constexpr bool kIsHalf = std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>;

template <class To, class From>
To float_to_int(From v) {
  if (std::isnan(v)) return 0;
  // 2^digits is exact in every float type and is one past the int's maximum.
  const From limit = std::ldexp(From(1), std::numeric_limits<To>::digits);
  if (v >= limit) return std::numeric_limits<To>::max();
  if constexpr (std::is_signed_v<To>) {
    if (v <= -limit) return std::numeric_limits<To>::min();
  } else {
    if (v <= From(-1)) return 0;
  }
  return To(v);
}

template <class To, class From>
To convert(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (kIsHalf<From>) {
    return convert<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else if constexpr (kIsHalf<To>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_integral_v<To> && std::is_floating_point_v<From>) {
    return float_to_int<To>(v);
  } else {
    return static_cast<To>(v);  // ints wrap modulo 2^bits (defined since C++20)
  }
}

std::vector<Aval> convert_element_type_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "operands of convert_element_type");
  const bool weak = params.has("weak_type") && params.get<bool>("weak_type");
  return {Aval{in[0].shape, params.get<DType>("new_dtype"), weak}};
}

void convert_element_type_kernel(const KernelCall& c) {
  const DType from = c.in_avals[0].dtype, to = c.out_avals[0].dtype;
  if (simd::convert(from, to, nullptr, nullptr, 0)) {  // a vector loop for this pair
    const int64_t bytes_in = dtype_itemsize(from), bytes_out = dtype_itemsize(to);
    const auto* x = static_cast<const uint8_t*>(c.inputs[0]);
    auto* y = static_cast<uint8_t*>(c.outputs[0]);
    parallel_chunks(c.out_avals[0].size(), kElementGrain, [&](int64_t begin, int64_t end) {
      simd::convert(from, to, x + begin * bytes_in, y + begin * bytes_out, end - begin);
    });
    return;
  }
  dispatch_dtype(c.in_avals[0].dtype, [&](auto from) {
    dispatch_dtype(c.out_avals[0].dtype, [&](auto to) {
      using From = decltype(from);
      using To = decltype(to);
      map_elements<To, From>(c, [](From x) { return convert<To>(x); });
    });
  });
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

}  // namespace

extern const PrimRules convert_element_type_rules = {
    .abstract_eval = &convert_element_type_eval,
    .sharding_rule = &elementwise_sharding_rule,
    .kernel = &convert_element_type_kernel,
    .jvp = &convert_element_type_jvp,
    .transpose = &convert_element_type_transpose,
    .batch = &elementwise_batch<core::Prim::convert_element_type>};

}  // namespace parax::prims
