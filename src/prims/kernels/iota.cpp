// The kernel of iota: rows filled with their index along `dimension`, plus the shard
// offset on a sharded dimension.
#include "prims/kernels/iota.h"

#include "prims/prim_util.h"
#include "prims/structural.h"

namespace parax::prims::kernels {

void iota(const KernelCall& c) {
  const Shape& shape = c.out_avals[0].shape;
  // An empty result may still have huge dimensions: (2, 2^40, 0) must not loop 2^41 rows.
  if (c.out_avals[0].size() == 0) return;
  const size_t dim = size_t(param_int(c.params, "dimension"));
  const int64_t n = shape[dim];
  int64_t outer = 1;
  int64_t inner = 1;
  for (size_t d = 0; d < dim; ++d) outer *= shape[d];
  for (size_t d = dim + 1; d < shape.size(); ++d) inner *= shape[d];
  // A shard of a dimension sharded over `offset_axes` starts at its shard number times
  // the local size.
  int64_t offset = 0;
  if (c.params.has("offset_axes")) {
    offset = c.device.linear_index(param_ints(c.params, "offset_axes")) * n;
  }
  dispatch_dtype(c.out_avals[0].dtype, [&](auto zero) {
    using T = decltype(zero);
    T* out = out_ptr<T>(c, 0);
    auto body = [&](int64_t begin, int64_t end) {
      for (int64_t row = begin; row < end; ++row) {
        std::fill_n(out + row * inner, inner, scalar_cast<T>(row % n + offset));
      }
    };
    parallel_chunks(outer * n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, inner)),
                    body);
  });
}

}  // namespace parax::prims::kernels
