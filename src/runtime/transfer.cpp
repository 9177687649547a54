#include "runtime/transfer.h"

#include <cstring>
#include <map>
#include <set>

#include "base/box_copy.h"
#include "base/thread_pool.h"
#include "sharding/topology.h"

namespace parax::runtime {
namespace {

// A shard's region of the global array: [lo[d], hi[d]) per dimension.
struct Box {
  std::vector<int64_t> lo, hi;
  int64_t extent(size_t d) const { return hi[d] - lo[d]; }
  Shape shape() const {
    Shape s(lo.size());
    for (size_t d = 0; d < s.size(); ++d) s[d] = extent(d);
    return s;
  }
};

Box box_of(const Index& index, const Shape& shape) {
  Box b;
  for (size_t d = 0; d < shape.size(); ++d) {
    b.lo.push_back(index[d].begin(shape[d]));
    b.hi.push_back(index[d].end(shape[d]));
  }
  return b;
}

// Copies `region` (global coordinates) from block `src` at `from` to block `dst` at `to`.
void copy_region(const void* src, const Box& from, void* dst, const Box& to, const Box& region,
                 size_t itemsize) {
  Shape src_off(region.lo.size()), dst_off(region.lo.size());
  for (size_t d = 0; d < region.lo.size(); ++d) {
    src_off[d] = region.lo[d] - from.lo[d];
    dst_off[d] = region.lo[d] - to.lo[d];
  }
  base::copy_box(src, from.shape(), src_off, dst, to.shape(), dst_off, region.shape(), itemsize);
}

bool intersect(const Box& a, const Box& b, Box& out) {
  out.lo.resize(a.lo.size());
  out.hi.resize(a.lo.size());
  for (size_t d = 0; d < a.lo.size(); ++d) {
    out.lo[d] = std::max(a.lo[d], b.lo[d]);
    out.hi[d] = std::min(a.hi[d], b.hi[d]);
    if (out.lo[d] >= out.hi[d]) return false;
  }
  return true;
}

// One readable copy of every distinct shard of a source layout.
struct SourceBlock {
  Box box;
  const char* data;
};

std::vector<SourceBlock> distinct_blocks(const core::Aval& aval, const Sharding& sharding,
                                         const std::vector<BufferRef>& buffers) {
  std::vector<SourceBlock> blocks;
  std::set<std::vector<int64_t>> seen;
  auto map = sharding.devices_indices_map(aval.shape);
  size_t next_buffer = 0;
  for (const auto& [device, index] : map) {
    if (!detail::is_local(device)) continue;
    const BufferRef& buf = buffers[next_buffer++];
    Box box = box_of(index, aval.shape);
    std::vector<int64_t> key = box.lo;
    key.insert(key.end(), box.hi.begin(), box.hi.end());
    if (seen.insert(std::move(key)).second) {
      blocks.push_back({box, static_cast<const char*>(buf->data())});
    }
  }
  return blocks;
}

}  // namespace

std::vector<BufferRef> relayout(const core::Aval& src_aval, const Sharding& src_sharding,
                                const std::vector<BufferRef>& src_buffers,
                                const Sharding& dst_sharding) {
  const size_t itemsize = size_t(dtype_itemsize(src_aval.dtype));
  std::vector<SourceBlock> blocks = distinct_blocks(src_aval, src_sharding, src_buffers);
  std::vector<std::pair<Device, Index>> targets;
  for (auto& t : dst_sharding.devices_indices_map(src_aval.shape)) {
    if (detail::is_local(t.first)) targets.push_back(std::move(t));
  }
  // Devices that hold the same block (replicas) share one immutable buffer, as the
  // results of a collective do: one copy to make, and the executor then computes once
  // for all of them what depends only on it.
  std::vector<BufferRef> out(targets.size());
  std::vector<size_t> first(targets.size());
  std::map<std::vector<int64_t>, size_t> by_box;
  std::vector<size_t> todo;
  for (size_t t = 0; t < targets.size(); ++t) {
    const Box box = box_of(targets[t].second, src_aval.shape);
    std::vector<int64_t> key = box.lo;
    key.insert(key.end(), box.hi.begin(), box.hi.end());
    auto [it, inserted] = by_box.emplace(std::move(key), t);
    first[t] = it->second;
    if (inserted) todo.push_back(t);
  }
  base::parallel_for(int64_t(todo.size()), [&](int64_t k) {
    const size_t t = todo[size_t(k)];
    const auto& [device, index] = targets[t];
    const Box dst_box = box_of(index, src_aval.shape);
    BufferRef buf = Buffer::allocate(device, size_t(shape_size(dst_box.shape())) * itemsize);
    for (const SourceBlock& b : blocks) {
      Box region;
      if (intersect(dst_box, b.box, region)) {
        copy_region(b.data, b.box, buf->data(), dst_box, region, itemsize);
      }
    }
    out[t] = std::move(buf);
  });
  for (size_t t = 0; t < targets.size(); ++t) out[t] = out[first[t]];
  return out;
}

std::vector<BufferRef> scatter_from_host(const void* host, const core::Aval& aval,
                                         const Sharding& sharding) {
  // The host array is one block covering everything: a one-device layout over memory
  // the buffer does not own.
  Device any = detail::Topology::get().default_device();
  std::vector<BufferRef> src = {Buffer::wrap(any, const_cast<void*>(host), aval.nbytes())};
  return relayout(aval, SingleDeviceSharding(any), src, sharding);
}

void gather_to_host(const core::Aval& aval, const Sharding& sharding,
                    const std::vector<BufferRef>& buffers, void* host) {
  std::vector<SourceBlock> blocks = distinct_blocks(aval, sharding, buffers);
  const size_t itemsize = size_t(dtype_itemsize(aval.dtype));
  const Box whole = box_of(Index(aval.shape.size()), aval.shape);
  base::parallel_for(int64_t(blocks.size()), [&](int64_t i) {
    const SourceBlock& b = blocks[size_t(i)];
    copy_region(b.data, b.box, host, whole, b.box, itemsize);
  });
}

}  // namespace parax::runtime
