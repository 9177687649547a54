// The kernel of convert_element_type: Highway loops for the pairs they cover, else a scalar
// conversion with XLA's CPU semantics (float to int truncates and saturates, NaN to 0).
#include "prims/kernels/convert_element_type.h"

#include <cmath>
#include <limits>

#include "prims/elementwise.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
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

}  // namespace

void convert_element_type(const KernelCall& c) {
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

}  // namespace parax::prims::kernels
