// The strided-copy kernels of the structural primitives: each sets up one StridedCopy
// (prims/structural.h) from its params and runs it.
#include "prims/kernels/copy.h"

#include <algorithm>
#include <limits>
#include <set>

#include "base/sizes.h"
#include "prims/prim_util.h"
#include "prims/structural.h"

namespace parax::prims::kernels {

// Fills the result with the padding value, then copies the part of the operand that lands
// inside the result (cropping drops the rest) with a stride of interior + 1.
void pad(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  const Shape& out_shape = c.out_avals[0].shape;
  const std::vector<int64_t>& config = param_ints(c.params, "padding_config");
  const int itemsize = dtype_itemsize(c.out_avals[0].dtype);
  fill_elements(c.outputs[0], shape_size(out_shape), c.inputs[1], itemsize);
  const std::vector<int64_t> in_strides = strides_of(shape);
  const std::vector<int64_t> out_strides = strides_of(out_shape);
  StridedCopy copy{Shape(shape.size()), in_strides, out_strides, 0, 0};
  for (size_t d = 0; d < shape.size(); ++d) {
    // 128-bit: a config near the int64 limits (its result size is checked) must not wrap.
    const __int128 low = config[3 * d];
    const __int128 step = __int128(config[3 * d + 2]) + 1;
    // Operand index i lands at low + i * step; keep the i with 0 <= low + i * step < size.
    const __int128 first = low >= 0 ? 0 : std::min<__int128>(shape[d], (-low + step - 1) / step);
    const __int128 room = out_shape[d] - low;
    const __int128 end = room <= 0 ? 0 : std::min<__int128>(shape[d], (room + step - 1) / step);
    copy.shape[d] = int64_t(std::max<__int128>(0, end - first));
    if (copy.shape[d] == 0) continue;
    copy.src_offset += int64_t(first) * in_strides[d];
    copy.dst_offset += int64_t(low + first * step) * out_strides[d];
    copy.dst_strides[d] = int64_t(copy.dst_strides[d] * step);
  }
  strided_copy(c.inputs[0], c.outputs[0], itemsize, copy);
}

void concatenate(const KernelCall& c) {
  const size_t dim = size_t(param_int(c.params, "dimension"));
  const std::vector<int64_t> out_strides = strides_of(c.out_avals[0].shape);
  const int itemsize = dtype_itemsize(c.out_avals[0].dtype);
  int64_t offset = 0;
  for (size_t i = 0; i < c.inputs.size(); ++i) {
    const Shape& shape = c.in_avals[i].shape;
    const StridedCopy copy{shape, strides_of(shape), out_strides, 0, offset * out_strides[dim]};
    strided_copy(c.inputs[i], c.outputs[0], itemsize, copy);
    offset += shape[dim];
  }
}

void transpose(const KernelCall& c) {
  const std::vector<int64_t>& perm = param_ints(c.params, "permutation");
  const std::vector<int64_t> in_strides = strides_of(c.in_avals[0].shape);
  std::vector<int64_t> src_strides;
  for (int64_t p : perm) src_strides.push_back(in_strides[size_t(p)]);
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype),
               dense_copy(c.out_avals[0].shape, src_strides));
}

void rev(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  StridedCopy copy = dense_copy(shape, strides_of(shape));
  // Read each reversed dimension from its last element backwards.
  for (int64_t d : param_ints(c.params, "dimensions")) {
    const size_t k = size_t(d);
    copy.src_offset += (shape[k] - 1) * copy.src_strides[k];
    copy.src_strides[k] = -copy.src_strides[k];
  }
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}

void dynamic_slice(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  const Shape& out_shape = c.out_avals[0].shape;
  const std::vector<int64_t> starts = clamped_starts(c, 1, shape, out_shape);
  const std::vector<int64_t> in_strides = strides_of(shape);
  StridedCopy copy = dense_copy(out_shape, in_strides);
  for (size_t d = 0; d < starts.size(); ++d) copy.src_offset += starts[d] * in_strides[d];
  strided_copy(c.inputs[0], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}

void dynamic_update_slice(const KernelCall& c) {
  const Shape& shape = c.in_avals[0].shape;
  const Shape& update_shape = c.in_avals[1].shape;
  const std::vector<int64_t> starts = clamped_starts(c, 2, shape, update_shape);
  copy_bytes(c.inputs[0], c.outputs[0], c.out_avals[0].nbytes());
  const std::vector<int64_t> out_strides = strides_of(shape);
  StridedCopy copy{update_shape, strides_of(update_shape), out_strides, 0, 0};
  for (size_t d = 0; d < starts.size(); ++d) copy.dst_offset += starts[d] * out_strides[d];
  strided_copy(c.inputs[1], c.outputs[0], dtype_itemsize(c.out_avals[0].dtype), copy);
}

}  // namespace parax::prims::kernels
