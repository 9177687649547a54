#include "parax/dtype.h"

#include <array>
#include <cmath>

#include "parax/errors.h"

namespace parax {
namespace {

struct DTypeInfo {
  std::string_view name;
  std::string_view short_name;
  int itemsize;
};

constexpr std::array<DTypeInfo, kNumDTypes> kInfo = {{
    {"bool", "bool", 1},
    {"int8", "i8", 1},
    {"int16", "i16", 2},
    {"int32", "i32", 4},
    {"int64", "i64", 8},
    {"uint8", "u8", 1},
    {"uint16", "u16", 2},
    {"uint32", "u32", 4},
    {"uint64", "u64", 8},
    {"float16", "f16", 2},
    {"bfloat16", "bf16", 2},
    {"float32", "f32", 4},
    {"float64", "f64", 8},
}};

const DTypeInfo& info(DType t) { return kInfo[static_cast<int>(t)]; }

}  // namespace

std::string_view dtype_name(DType t) { return info(t).name; }
std::string_view dtype_short_name(DType t) { return info(t).short_name; }
int dtype_itemsize(DType t) { return info(t).itemsize; }

DType dtype_from_name(std::string_view name) {
  for (int i = 0; i < kNumDTypes; ++i) {
    if (kInfo[i].name == name || kInfo[i].short_name == name) return DType(i);
  }
  throw TypeError("Unknown dtype name '" + std::string(name) +
                  "'; expected one of bool, int8..int64, uint8..uint64, "
                  "float16, bfloat16, float32, float64.");
}

bool is_floating(DType t) { return t >= DType::float16; }
bool is_signed_integer(DType t) { return t >= DType::int8 && t <= DType::int64; }
bool is_unsigned_integer(DType t) { return t >= DType::uint8 && t <= DType::uint64; }
bool is_integer(DType t) { return is_signed_integer(t) || is_unsigned_integer(t); }

uint16_t float16_t::from_float(float f) {
  uint32_t x;
  std::memcpy(&x, &f, 4);
  uint32_t sign = (x >> 16) & 0x8000u;
  uint32_t absx = x & 0x7fffffffu;
  if (absx >= 0x7f800000u) {  // inf or nan
    uint32_t nan_bit = absx > 0x7f800000u ? 0x200u | ((absx >> 13) & 0x3ffu) : 0;
    return uint16_t(sign | 0x7c00u | nan_bit);
  }
  if (absx >= 0x477ff000u) return uint16_t(sign | 0x7c00u);  // rounds to inf
  if (absx < 0x38800000u) {
    // Subnormal half (or zero): scale into the integer range and round to even.
    float a;
    std::memcpy(&a, &absx, 4);
    float scaled = a * 16777216.0f;  // 2^24: one half-subnormal ulp becomes 1
    uint32_t r = uint32_t(std::nearbyint(scaled));
    return uint16_t(sign | r);
  }
  uint32_t mant_odd = (absx >> 13) & 1u;
  absx += 0xc8000fffu + mant_odd;  // rebias exponent (-112 << 23) and round to even
  return uint16_t(sign | (absx >> 13));
}

float float16_t::to_float(uint16_t h) {
  uint32_t sign = uint32_t(h & 0x8000u) << 16;
  uint32_t exp = (h >> 10) & 0x1fu;
  uint32_t mant = h & 0x3ffu;
  uint32_t bits;
  if (exp == 0x1f) {
    bits = sign | 0x7f800000u | (mant << 13);
  } else if (exp != 0) {
    bits = sign | ((exp + 112) << 23) | (mant << 13);
  } else {
    float m = float(mant) * (1.0f / 16777216.0f);
    std::memcpy(&bits, &m, 4);
    bits |= sign;
  }
  float f;
  std::memcpy(&f, &bits, 4);
  return f;
}

uint16_t bfloat16_t::from_float(float f) {
  uint32_t u;
  std::memcpy(&u, &f, 4);
  if ((u & 0x7fffffffu) > 0x7f800000u) return uint16_t((u >> 16) | 0x40u);  // quiet nan
  uint32_t lsb = (u >> 16) & 1u;
  u += 0x7fffu + lsb;
  return uint16_t(u >> 16);
}

}  // namespace parax
