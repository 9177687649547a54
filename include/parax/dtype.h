// Element types of arrays, the half-precision storage types, and the mapping from C++
// scalar types to dtypes.
#pragma once

#include <cstdint>
#include <cstring>
#include <string>
#include <string_view>
#include <type_traits>

namespace parax {

// The dtypes parax arrays can hold. Names print as numpy's (`float32`, `bool`, ...).
enum class DType : uint8_t {
  bool_,
  int8,
  int16,
  int32,
  int64,
  uint8,
  uint16,
  uint32,
  uint64,
  float16,
  bfloat16,
  float32,
  float64,
};

inline constexpr DType bool_ = DType::bool_;
inline constexpr DType int8 = DType::int8;
inline constexpr DType int16 = DType::int16;
inline constexpr DType int32 = DType::int32;
inline constexpr DType int64 = DType::int64;
inline constexpr DType uint8 = DType::uint8;
inline constexpr DType uint16 = DType::uint16;
inline constexpr DType uint32 = DType::uint32;
inline constexpr DType uint64 = DType::uint64;
inline constexpr DType float16 = DType::float16;
inline constexpr DType bfloat16 = DType::bfloat16;
inline constexpr DType float32 = DType::float32;
inline constexpr DType float64 = DType::float64;
inline constexpr int kNumDTypes = 13;

// Returns numpy's name of `t`: "float32", "bool", "bfloat16", ...
std::string_view dtype_name(DType t);
// Returns the short IR name of `t`: "f32", "bool", "bf16", "i32", "u8", ...
std::string_view dtype_short_name(DType t);
// Returns the size of one element in bytes.
int dtype_itemsize(DType t);
// Parses a numpy dtype name; throws TypeError for an unknown one.
DType dtype_from_name(std::string_view name);

bool is_floating(DType t);
bool is_integer(DType t);  // signed or unsigned, not bool
bool is_signed_integer(DType t);
bool is_unsigned_integer(DType t);

// IEEE half precision, stored as its 16 bits; converts to and from float exactly /
// with round-to-nearest-even.
struct float16_t {
  uint16_t bits = 0;
  float16_t() = default;
  explicit float16_t(float f) : bits(from_float(f)) {}
  explicit operator float() const { return to_float(bits); }
  static float16_t from_bits(uint16_t b) {
    float16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f);
  static float to_float(uint16_t b);
};

// Brain float (the top 16 bits of a float32), round-to-nearest-even from float.
struct bfloat16_t {
  uint16_t bits = 0;
  bfloat16_t() = default;
  explicit bfloat16_t(float f) : bits(from_float(f)) {}
  explicit operator float() const {
    uint32_t u = uint32_t(bits) << 16;
    float f;
    std::memcpy(&f, &u, 4);
    return f;
  }
  static bfloat16_t from_bits(uint16_t b) {
    bfloat16_t h;
    h.bits = b;
    return h;
  }
  static uint16_t from_float(float f);
};

// The dtype that stores C++ type T exactly (double -> float64, bool -> bool, ...).
template <class T>
constexpr DType dtype_of() {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, bool>)
    return DType::bool_;
  else if constexpr (std::is_same_v<U, float16_t>)
    return DType::float16;
  else if constexpr (std::is_same_v<U, bfloat16_t>)
    return DType::bfloat16;
  else if constexpr (std::is_same_v<U, float>)
    return DType::float32;
  else if constexpr (std::is_same_v<U, double>)
    return DType::float64;
  else if constexpr (std::is_integral_v<U> && std::is_signed_v<U>) {
    if constexpr (sizeof(U) == 1)
      return DType::int8;
    else if constexpr (sizeof(U) == 2)
      return DType::int16;
    else if constexpr (sizeof(U) == 4)
      return DType::int32;
    else
      return DType::int64;
  } else if constexpr (std::is_integral_v<U> && std::is_unsigned_v<U>) {
    if constexpr (sizeof(U) == 1)
      return DType::uint8;
    else if constexpr (sizeof(U) == 2)
      return DType::uint16;
    else if constexpr (sizeof(U) == 4)
      return DType::uint32;
    else
      return DType::uint64;
  } else {
    static_assert(sizeof(U) == 0, "no parax dtype for this C++ type");
  }
}

// True for the C++ types that have a dtype.
template <class T>
inline constexpr bool is_scalar_type_v =
    std::is_arithmetic_v<std::remove_cv_t<T>> || std::is_same_v<std::remove_cv_t<T>, float16_t> ||
    std::is_same_v<std::remove_cv_t<T>, bfloat16_t>;

}  // namespace parax
