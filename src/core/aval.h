// The abstract value of an array: what tracing knows without data (shape, dtype, weak).
#pragma once

#include <string>

#include "parax/dtype.h"
#include "parax/shape.h"

namespace parax::core {

struct Aval {
  Shape shape;
  DType dtype = DType::float32;
  bool weak_type = false;

  int64_t size() const { return shape_size(shape); }
  size_t nbytes() const { return size_t(size()) * size_t(dtype_itemsize(dtype)); }
  // Returns JAX's form as used in messages: `float32[8,2]`, `int32[]`.
  std::string str() const;
  // Returns the IR form: `f32[8,2]`.
  std::string short_str() const;
  bool operator==(const Aval&) const = default;
};

}  // namespace parax::core
