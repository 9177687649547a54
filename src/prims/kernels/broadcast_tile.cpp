#include "prims/kernels/broadcast_tile.h"

#include <algorithm>
#include <cstring>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

// Writes `n` copies of the `item`-byte value at `value` to `dst`.
void fill(unsigned char* dst, const unsigned char* value, int64_t n, size_t item) {
  switch (item) {
    case 4: {
      uint32_t v;
      std::memcpy(&v, value, 4);
      std::fill_n(reinterpret_cast<uint32_t*>(dst), n, v);
      return;
    }
    case 8: {
      uint64_t v;
      std::memcpy(&v, value, 8);
      std::fill_n(reinterpret_cast<uint64_t*>(dst), n, v);
      return;
    }
    default:
      for (int64_t j = 0; j < n; ++j) std::memcpy(dst + size_t(j) * item, value, item);
  }
}

}  // namespace

void broadcast_tile(const core::TileCall& call) {
  const Aval& in = call.in;
  const Shape& shape = call.out_shape;
  const size_t item = size_t(dtype_itemsize(in.dtype));
  auto* out = static_cast<unsigned char*>(call.out);
  if (in.shape == shape) {
    std::memmove(out, call.operand, size_t(call.len) * item);
    return;
  }
  const auto* src = static_cast<const unsigned char*>(call.operand);
  // Stride of each output dimension in the operand (0 where it broadcasts).
  const auto& dims = call.params.get<std::vector<int64_t>>("broadcast_dimensions");
  const size_t rank = shape.size();
  std::vector<int64_t> stride(rank, 0), in_strides = strides_of(in.shape), idx(rank, 0);
  for (size_t j = 0; j < dims.size(); ++j) {
    if (in.shape[j] != 1) stride[size_t(dims[j])] = in_strides[j];
  }
  int64_t rest = call.begin, offset = 0;
  for (size_t d = rank; d-- > 0;) {
    idx[d] = rest % shape[d];
    rest /= shape[d];
    offset += idx[d] * stride[d];
  }
  // Runs along the innermost dimension: a contiguous piece of the operand (a bias row)
  // or one value repeated (a column broadcast).
  const size_t last = rank - 1;
  for (int64_t k = 0; k < call.len;) {
    const int64_t run = std::min(shape[last] - idx[last], call.len - k);
    unsigned char* dst = out + size_t(k) * item;
    const unsigned char* from = src + size_t(offset) * item;
    if (stride[last] == 1) {
      std::memcpy(dst, from, size_t(run) * item);
    } else if (stride[last] == 0) {
      fill(dst, from, run, item);
    } else {
      for (int64_t j = 0; j < run; ++j) {
        std::memcpy(dst + size_t(j) * item, from + size_t(j * stride[last]) * item, item);
      }
    }
    k += run;
    offset += stride[last] * run;
    idx[last] += run;
    for (size_t d = last; idx[d] == shape[d] && d > 0; --d) {  // carry into outer dims
      offset -= stride[d] * shape[d];
      idx[d] = 0;
      offset += stride[d - 1];
      ++idx[d - 1];
    }
  }
}

}  // namespace parax::prims::kernels
