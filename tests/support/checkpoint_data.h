// What the checkpointing tests share: arrays of random bits and their bytes, an array's
// elements as exact JSON numbers (the form the goldens and the Python interop script write
// expected values in), and a temporary directory removed afterwards.
#pragma once

#include <unistd.h>

#include <cstring>
#include <filesystem>
#include <nlohmann/json.hpp>
#include <random>
#include <string>

#include <parax/parax.h>

#include "api/array_impl.h"
#include "core/array_value.h"

namespace parax::testing_support {

inline std::vector<uint8_t> bytes_of(const Array& x) {
  return detail::host_bytes(detail::concrete_of(x, "bytes_of"));
}

// An array of `shape` and `dtype` whose bytes are random (any bit pattern: NaN payloads,
// negative zeros), but bool's 0 or 1.
inline Array random_bits(const Shape& shape, DType dtype, uint32_t seed) {
  std::vector<uint8_t> bytes(size_t(shape_size(shape)) * size_t(dtype_itemsize(dtype)));
  std::mt19937 gen(seed);
  for (uint8_t& b : bytes) b = uint8_t(gen());
  if (dtype == DType::bool_) {
    for (uint8_t& b : bytes) b &= 1;
  }
  return detail::array_from_host(bytes.data(), core::Aval{shape, dtype, false});
}

// A fresh directory under the system's temporary directory, removed with the object.
class TempDir {
 public:
  TempDir() {
    static int n = 0;
    path_ = std::filesystem::temp_directory_path() /
            ("parax-ckpt-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
    std::filesystem::remove_all(path_);
    std::filesystem::create_directories(path_);
  }
  ~TempDir() { std::filesystem::remove_all(path_); }
  TempDir(const TempDir&) = delete;
  TempDir& operator=(const TempDir&) = delete;
  std::string str() const { return path_.string(); }
  std::string operator/(const std::string& name) const { return (path_ / name).string(); }

 private:
  std::filesystem::path path_;
};

inline nlohmann::json values_of(const Array& x) {
  const std::vector<uint8_t> bytes = detail::host_bytes(detail::concrete_of(x, "values_of"));
  const size_t size = size_t(dtype_itemsize(x.dtype()));
  nlohmann::json out = nlohmann::json::array();
  for (size_t i = 0; i < bytes.size(); i += size) {
    const uint8_t* p = bytes.data() + i;
    auto load = [&](auto v) {
      std::memcpy(&v, p, sizeof v);
      return v;
    };
    switch (x.dtype()) {
      case DType::bool_:
        out.push_back(int(p[0]));
        break;
      case DType::int8:
        out.push_back(load(int8_t{}));
        break;
      case DType::int16:
        out.push_back(load(int16_t{}));
        break;
      case DType::int32:
        out.push_back(load(int32_t{}));
        break;
      case DType::int64:
        out.push_back(load(int64_t{}));
        break;
      case DType::uint8:
        out.push_back(load(uint8_t{}));
        break;
      case DType::uint16:
        out.push_back(load(uint16_t{}));
        break;
      case DType::uint32:
        out.push_back(load(uint32_t{}));
        break;
      case DType::uint64:
        out.push_back(load(uint64_t{}));
        break;
      case DType::float16:
        out.push_back(double(float16_t::to_float(load(uint16_t{}))));
        break;
      case DType::bfloat16:
        out.push_back(double(float(bfloat16_t::from_bits(load(uint16_t{})))));
        break;
      case DType::float32:
        out.push_back(double(load(float{})));
        break;
      case DType::float64:
        out.push_back(load(double{}));
        break;
    }
  }
  return out;
}

}  // namespace parax::testing_support
