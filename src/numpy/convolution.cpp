// numpy's convolve and correlate as jax/_src/numpy/lax_numpy.py's _conv writes them: one
// lax.conv_general_dilated over the 1-d operands.
#include <string>
#include <utility>

#include "lax/promote.h"
#include "parax/convolution.h"
#include "parax/lax.h"

namespace parax::numpy {
namespace {

// JAX's jnp._conv.
Array conv_1d(const ArrayLike& a, const ArrayLike& v, const std::string& mode, const char* op,
              std::optional<DType> preferred_element_type) {
  if (a.array().ndim() != 1 || v.array().ndim() != 1) {
    throw ValueError(std::string(op) + "() only support 1-dimensional inputs.");
  }
  std::vector<Array> xy = preferred_element_type
                              ? frontend::promote_dtypes({a.array(), v.array()})
                              : frontend::promote_dtypes_inexact({a.array(), v.array()});
  Array x = xy[0], y = xy[1];
  if (x.shape()[0] == 0 || y.shape()[0] == 0) {
    throw ValueError(std::string(op) + ": inputs cannot be empty, got shapes " +
                     shape_str(x.shape()) + " and " + shape_str(y.shape()) + ".");
  }
  bool reverse = false;
  if (x.shape()[0] < y.shape()[0]) {
    std::swap(x, y);
    reverse = std::string(op) == "correlate";
  }
  if (std::string(op) == "convolve") y = lax::rev(y, {0});
  const int64_t k = y.shape()[0];
  std::pair<int64_t, int64_t> pad;
  if (mode == "valid") {
    pad = {0, 0};
  } else if (mode == "same") {
    pad = {k / 2, k - k / 2 - 1};
  } else if (mode == "full") {
    pad = {k - 1, k - 1};
  } else {
    throw ValueError("mode must be one of ['full', 'same', 'valid']");
  }
  const Array r =
      lax::conv_general_dilated(lax::reshape(x, {1, 1, x.shape()[0]}), lax::reshape(y, {1, 1, k}),
                                {1}, lax::Padding(std::vector<std::pair<int64_t, int64_t>>{pad}),
                                {}, {}, {}, 1, 1, std::nullopt, preferred_element_type);
  Array out = lax::reshape(r, {r.shape()[2]});
  return reverse ? lax::rev(out, {0}) : out;
}

}  // namespace

Array convolve(const ArrayLike& a, const ArrayLike& v, const std::string& mode,
               std::optional<DType> preferred_element_type) {
  return conv_1d(a, v, mode, "convolve", preferred_element_type);
}

Array correlate(const ArrayLike& a, const ArrayLike& v, const std::string& mode,
                std::optional<DType> preferred_element_type) {
  return conv_1d(a, v, mode, "correlate", preferred_element_type);
}

}  // namespace parax::numpy
