#include "base/box_copy.h"

#include <cstdint>
#include <cstring>
#include <vector>

namespace parax::base {

void copy_box(const void* src, const Shape& src_shape, const Shape& src_off, void* dst,
              const Shape& dst_shape, const Shape& dst_off, const Shape& box, size_t itemsize) {
  const size_t rank = box.size();
  if (shape_size(box) == 0) return;
  if (rank == 0) {
    std::memcpy(dst, src, itemsize);
    return;
  }
  // Strides in bytes; the innermost dimension is copied as one contiguous run.
  std::vector<int64_t> ss(rank, int64_t(itemsize)), ds(rank, int64_t(itemsize));
  for (size_t d = rank - 1; d-- > 0;) {
    ss[d] = ss[d + 1] * src_shape[d + 1];
    ds[d] = ds[d + 1] * dst_shape[d + 1];
  }
  const auto* s = static_cast<const uint8_t*>(src);
  auto* t = static_cast<uint8_t*>(dst);
  for (size_t d = 0; d < rank; ++d) {
    s += src_off[d] * ss[d];
    t += dst_off[d] * ds[d];
  }
  const size_t run = size_t(box[rank - 1]) * itemsize;
  const int64_t rows = shape_size(box) / box[rank - 1];
  std::vector<int64_t> idx(rank, 0);
  for (int64_t r = 0; r < rows; ++r) {
    int64_t so = 0, dof = 0;
    for (size_t d = 0; d + 1 < rank; ++d) {
      so += idx[d] * ss[d];
      dof += idx[d] * ds[d];
    }
    std::memcpy(t + dof, s + so, run);
    for (size_t d = rank - 1; d-- > 0;) {
      if (++idx[d] < box[d]) break;
      idx[d] = 0;
    }
  }
}

}  // namespace parax::base
