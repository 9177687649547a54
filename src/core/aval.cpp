#include "core/aval.h"

namespace parax::core {
namespace {
std::string dims(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

std::string Aval::str() const { return std::string(dtype_name(dtype)) + dims(shape); }
std::string Aval::short_str() const { return std::string(dtype_short_name(dtype)) + dims(shape); }

}  // namespace parax::core
