// An array's elements as exact JSON numbers (bool as 0/1, half floats widened), the form
// the checkpointing goldens and the Python interop script write expected values in.
#pragma once

#include <cstring>
#include <nlohmann/json.hpp>

#include <parax/parax.h>

#include "api/array_impl.h"
#include "core/array_value.h"

namespace parax::testing_support {

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
