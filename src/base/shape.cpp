#include "parax/shape.h"

#include <sstream>

#include "parax/errors.h"

namespace parax {

std::ostream& operator<<(std::ostream& os, const Slice& s) {
  os << "slice(";
  if (s.start)
    os << *s.start;
  else
    os << "None";
  os << ", ";
  if (s.stop)
    os << *s.stop;
  else
    os << "None";
  return os << ", None)";
}

std::string index_str(const Index& index) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < index.size(); ++i) {
    if (i) os << ", ";
    os << index[i];
  }
  if (index.size() == 1) os << ",";
  os << ")";
  return os.str();
}

std::string shape_str(const Shape& shape) {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < shape.size(); ++i) {
    if (i) os << ", ";
    os << shape[i];
  }
  if (shape.size() == 1) os << ",";
  os << ")";
  return os.str();
}

int64_t shape_size(const Shape& shape) {
  for (int64_t d : shape) {
    if (d == 0) return 0;  // zero whatever the other dimensions, as the product is
  }
  int64_t n = 1;
  for (int64_t d : shape) {
    if (__builtin_mul_overflow(n, d, &n)) {
      throw ValueError("[shape_size] the number of elements of shape " + shape_str(shape) +
                       " overflows a 64-bit size");
    }
  }
  return n;
}

}  // namespace parax
