// Array's operators and methods: each is the numpy function JAX's Array method calls.
#include <limits>

#include "api/array_impl.h"
#include "base/dtype_dispatch.h"
#include "lax/promote.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax {
namespace detail {

Array scalar_array(const void* value, DType src, bool weak) {
  if (!weak) {
    return array_from_host(value, core::Aval{{}, src, false});
  }
  // A weak value is a Python scalar in JAX: its dtype is the default of its kind.
  if (is_floating(src)) {
    double v = dispatch_dtype(src, [&](auto tag) {
      using T = decltype(tag);
      return scalar_cast<double>(*static_cast<const T*>(value));
    });
    return frontend::scalar(v, base::default_float_dtype(), true);
  }
  const DType to = base::default_int_dtype();
  int64_t v = 0;
  std::string text;
  dispatch_dtype(src, [&](auto tag) {
    using T = decltype(tag);
    T x = *static_cast<const T*>(value);
    v = scalar_cast<int64_t>(x);
    if constexpr (std::is_same_v<T, uint64_t>) {
      if (x > uint64_t(std::numeric_limits<int64_t>::max())) text = std::to_string(x);
    }
  });
  if (!text.empty()) {
    // JAX raises OverflowError here; parax has no such kind, and ValueError is closest.
    throw ValueError("Python int " + text + " too large to convert to " +
                     std::string(dtype_name(to)));
  }
  // With x64 off, a value beyond int32 stays a weak int64: an explicit int64 operand keeps
  // it exact (int64 array + 2^40), and frontend::convert raises JAX's OverflowError text
  // when it has to narrow it.
  const bool fits =
      v >= std::numeric_limits<int32_t>::min() && v <= std::numeric_limits<int32_t>::max();
  return frontend::scalar_int(v, fits ? to : DType::int64, true);
}

}  // namespace detail

namespace np = numpy;

Array operator+(const ArrayLike& x, const ArrayLike& y) { return np::add(x, y); }
Array operator-(const ArrayLike& x, const ArrayLike& y) { return np::subtract(x, y); }
Array operator*(const ArrayLike& x, const ArrayLike& y) { return np::multiply(x, y); }
Array operator/(const ArrayLike& x, const ArrayLike& y) { return np::true_divide(x, y); }
Array operator%(const ArrayLike& x, const ArrayLike& y) { return np::remainder(x, y); }
Array operator&(const ArrayLike& x, const ArrayLike& y) { return np::bitwise_and(x, y); }
Array operator|(const ArrayLike& x, const ArrayLike& y) { return np::bitwise_or(x, y); }
Array operator^(const ArrayLike& x, const ArrayLike& y) { return np::bitwise_xor(x, y); }
Array operator<<(const Array& x, const ArrayLike& y) { return np::left_shift(x, y); }
Array operator>>(const Array& x, const ArrayLike& y) { return np::right_shift(x, y); }
Array operator==(const ArrayLike& x, const ArrayLike& y) { return np::equal(x, y); }
Array operator!=(const ArrayLike& x, const ArrayLike& y) { return np::not_equal(x, y); }
Array operator<(const ArrayLike& x, const ArrayLike& y) { return np::less(x, y); }
Array operator<=(const ArrayLike& x, const ArrayLike& y) { return np::less_equal(x, y); }
Array operator>(const ArrayLike& x, const ArrayLike& y) { return np::greater(x, y); }
Array operator>=(const ArrayLike& x, const ArrayLike& y) { return np::greater_equal(x, y); }
Array operator-(const Array& x) { return np::negative(x); }
Array operator~(const Array& x) { return np::invert(x); }

Array& operator+=(Array& x, const ArrayLike& y) { return x = x + y; }
Array& operator-=(Array& x, const ArrayLike& y) { return x = x - y; }
Array& operator*=(Array& x, const ArrayLike& y) { return x = x * y; }
Array& operator/=(Array& x, const ArrayLike& y) { return x = x / y; }

Array Array::slice(const Index& index) const {
  const Shape& shape = this->shape();
  if (index.size() > shape.size()) {
    throw IndexError("Too many indices: " + std::to_string(shape.size()) +
                     "-dimensional array indexed with " + std::to_string(index.size()) +
                     " regular indices.");
  }
  // Python's slice.indices: negative bounds count from the end, then clip into [0, n].
  auto clip = [](int64_t v, int64_t n) {
    if (v < 0) v += n;
    return std::min(std::max<int64_t>(v, 0), n);
  };
  std::vector<int64_t> start(shape.size(), 0);
  std::vector<int64_t> limit = shape;
  bool whole = true;
  for (size_t d = 0; d < index.size(); ++d) {
    const int64_t n = shape[d];
    start[d] = index[d].start ? clip(*index[d].start, n) : 0;
    limit[d] = std::max(start[d], index[d].stop ? clip(*index[d].stop, n) : n);
    whole = whole && start[d] == 0 && limit[d] == n;
  }
  if (whole) return *this;
  return lax::slice(*this, std::move(start), std::move(limit));
}

Array Array::reshape(Shape shape) const { return np::reshape(*this, std::move(shape)); }

Array Array::astype(DType dtype) const { return np::astype(*this, dtype); }

}  // namespace parax
