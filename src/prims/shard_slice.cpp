// shard-slice: in a per-device program, keeps this device's block of a value it holds
// whole along `dimension`, split over `mesh_axes` (no communication: reshard's cheapest
// move when a replicated value must become sharded).
#include "base/box_copy.h"
#include "core/verify.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace shard_slice_impl {

// The block of `dimension` that one device of a group over `mesh_axes` keeps (the group
// size comes from the program's mesh, core/verify.h).
std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  Aval out = in[0];
  const int64_t d = params.get<int64_t>("dimension");
  const int64_t n =
      core::mesh_group_size(params.get<std::vector<int64_t>>("mesh_axes"), "shard-slice");
  if (d < 0 || d >= int64_t(out.shape.size()) || out.shape[size_t(d)] % n != 0) {
    throw TypeError("shard-slice: dimension " + std::to_string(d) + " of " + out.short_str() +
                    " does not split into " + std::to_string(n) + " blocks");
  }
  out.shape[size_t(d)] /= n;
  return {out};
}

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

}  // namespace shard_slice_impl
}  // namespace

extern const PrimRules shard_slice_rules = {.abstract_eval = shard_slice_impl::shape_rule,
                                            .kernel = shard_slice_impl::kernel};

}  // namespace parax::prims
