// shard-slice: in a per-device program, keeps this device's block of a value it holds
// whole along `dimension`, split over `mesh_axes` (no communication: reshard's cheapest
// move when a replicated value must become sharded).
#include "base/box_copy.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

void kernel(const KernelCall& c) {
  const auto& axes = c.params.get<std::vector<int64_t>>("mesh_axes");
  const int64_t d = c.params.get<int64_t>("dimension");
  const Shape& in = c.in_avals[0].shape;
  const Shape& out = c.out_avals[0].shape;
  Shape src_off(in.size(), 0);
  src_off[size_t(d)] = c.device.linear_index(axes) * out[size_t(d)];
  base::copy_box(c.inputs[0], in, src_off, c.outputs[0], out, Shape(out.size(), 0), out,
                 size_t(dtype_itemsize(c.in_avals[0].dtype)));
}

}  // namespace

extern const PrimRules shard_slice_rules = {.kernel = kernel};

}  // namespace parax::prims
