// jnp.searchsorted with JAX's default method, "scan": a binary search of ceil(log2(n + 1))
// steps per query, reproduced step for step (unrolled: the step count is static) so that
// the indices agree with JAX's even for an unsorted `a`. random.choice draws through it.
#include <cmath>
#include <cstdint>

#include "lax/promote.h"
#include "parax/indexing.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {
namespace {

// x < y in sort's total order (JAX's _sort_lt_comparator): NaN after everything, -0 equal
// to +0.
Array sort_lt(const Array& x, const Array& y) {
  if (!is_floating(x.dtype())) return lax::lt(x, y);
  return lax::bitwise_or(lax::bitwise_and(lax::bitwise_not(isnan(x)), isnan(y)), lax::lt(x, y));
}

// x <= y in that order (JAX's _sort_le_comparator): not y < x.
Array sort_le(const Array& x, const Array& y) {
  if (!is_floating(x.dtype())) return lax::le(x, y);
  return lax::bitwise_not(sort_lt(y, x));
}

}  // namespace

Array searchsorted(const ArrayLike& a, const ArrayLike& v, std::string_view side,
                   std::optional<ArrayLike> sorter) {
  if (side != "left" && side != "right") {
    throw ValueError("invalid argument side='" + std::string(side) +
                     "', expected 'left' or 'right'");
  }
  std::vector<Array> av = frontend::promote_dtypes({a.array(), v.array()});
  Array sorted = av[0];
  const Array query = av[1];
  if (sorted.ndim() != 1) {
    throw ValueError("a should be 1-dimensional, got shape " + shape_str(sorted.shape()));
  }
  if (sorter) {
    if (sorter->array().shape() != sorted.shape()) {
      throw ValueError("[numpy.searchsorted] sorter has shape " +
                       shape_str(sorter->array().shape()) + "; expected the shape of a, " +
                       shape_str(sorted.shape()));
    }
    sorted = sorted[NumpyIndex(sorter->array())];
  }
  const int64_t n = sorted.shape()[0];
  const DType index = n <= INT32_MAX ? DType::int32 : DType::int64;
  if (n == 0) return zeros(query.shape(), index);
  // The bounds count in the unsigned type of the index's width, as JAX's do.
  const DType bound = index == DType::int32 ? DType::uint32 : DType::uint64;
  const int levels = int(std::ceil(std::log2(double(n + 1))));
  Array low = lax::broadcast_in_dim(frontend::scalar_int(0, bound), query.shape(), {});
  Array high = lax::broadcast_in_dim(frontend::scalar_int(n, bound), query.shape(), {});
  const Array two = frontend::scalar_int(2, bound);
  for (int level = 0; level < levels; ++level) {
    const Array mid = lax::add(low, lax::div(lax::sub(high, low), two));
    const Array pivot = take(sorted, mid, 0, "clip");
    const Array go_left = side == "left" ? sort_le(query, pivot) : sort_lt(query, pivot);
    low = lax::select(go_left, low, mid);
    high = lax::select(go_left, mid, high);
  }
  return lax::convert_element_type(high, index);
}

}  // namespace parax::numpy
