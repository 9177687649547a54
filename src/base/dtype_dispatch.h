// Calls a generic lambda with a value of the C++ storage type of a dtype, so kernels
// are written once as templates and instantiated per dtype.
#pragma once

#include "base/check.h"
#include "parax/dtype.h"

namespace parax {

template <class F>
decltype(auto) dispatch_dtype(DType t, F&& f) {
  switch (t) {
    case DType::bool_:
      return f(bool{});
    case DType::int8:
      return f(int8_t{});
    case DType::int16:
      return f(int16_t{});
    case DType::int32:
      return f(int32_t{});
    case DType::int64:
      return f(int64_t{});
    case DType::uint8:
      return f(uint8_t{});
    case DType::uint16:
      return f(uint16_t{});
    case DType::uint32:
      return f(uint32_t{});
    case DType::uint64:
      return f(uint64_t{});
    case DType::float16:
      return f(float16_t{});
    case DType::bfloat16:
      return f(bfloat16_t{});
    case DType::float32:
      return f(float{});
    case DType::float64:
      return f(double{});
  }
  PARAX_UNREACHABLE();
}

// Converts between any two storage types as numpy's astype does (via float for halves).
template <class To, class From>
To scalar_cast(From v) {
  if constexpr (std::is_same_v<To, From>) {
    return v;
  } else if constexpr (std::is_same_v<From, float16_t> || std::is_same_v<From, bfloat16_t>) {
    return scalar_cast<To>(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, float16_t> || std::is_same_v<To, bfloat16_t>) {
    return To(static_cast<float>(v));
  } else if constexpr (std::is_same_v<To, bool>) {
    return v != From(0);
  } else {
    return static_cast<To>(v);
  }
}

}  // namespace parax
