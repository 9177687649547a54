#include "runtime/transfer.h"

#include <cstring>
#include <set>

#include "base/thread_pool.h"
#include "runtime/client.h"

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

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> s(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) s[d - 1] = s[d] * shape[d];
  return s;
}

// Copies the region `region` (global coordinates of the destination's rank) from a source
// block to a destination block. The source block may have `lead` extra leading dims,
// fixed at src_lead (global coordinates).
struct BoxCopy {
  const char* src;
  const Box& src_box;
  std::vector<int64_t> src_strides;
  char* dst;
  const Box& dst_box;
  std::vector<int64_t> dst_strides;
  const Box& region;
  size_t lead;
  int64_t itemsize;

  void run(size_t d, int64_t src_off, int64_t dst_off) const {
    const size_t rank = region.lo.size();
    if (d == rank) {
      std::memcpy(dst + dst_off * itemsize, src + src_off * itemsize, size_t(itemsize));
      return;
    }
    const int64_t s_stride = src_strides[lead + d];
    const int64_t d_stride = dst_strides[d];
    src_off += (region.lo[d] - src_box.lo[lead + d]) * s_stride;
    dst_off += (region.lo[d] - dst_box.lo[d]) * d_stride;
    if (d + 1 == rank) {  // innermost dimension is contiguous in both blocks
      std::memcpy(dst + dst_off * itemsize, src + src_off * itemsize,
                  size_t(region.extent(d) * itemsize));
      return;
    }
    for (int64_t i = 0; i < region.extent(d); ++i) {
      run(d + 1, src_off + i * s_stride, dst_off + i * d_stride);
    }
  }
};

bool intersect(const Box& a, const Box& b, size_t lead_b, Box& out) {
  out.lo.resize(a.lo.size());
  out.hi.resize(a.lo.size());
  for (size_t d = 0; d < a.lo.size(); ++d) {
    out.lo[d] = std::max(a.lo[d], b.lo[lead_b + d]);
    out.hi[d] = std::min(a.hi[d], b.hi[lead_b + d]);
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
    if (!is_local(device)) continue;
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
                                const Sharding& dst_sharding,
                                const std::vector<int64_t>& leading) {
  const size_t lead = leading.size();
  Shape dst_shape(src_aval.shape.begin() + long(lead), src_aval.shape.end());
  const int64_t itemsize = dtype_itemsize(src_aval.dtype);
  std::vector<SourceBlock> blocks = distinct_blocks(src_aval, src_sharding, src_buffers);
  // Keep only the source blocks that contain the fixed leading indices.
  std::erase_if(blocks, [&](const SourceBlock& b) {
    for (size_t d = 0; d < lead; ++d) {
      if (leading[d] < b.box.lo[d] || leading[d] >= b.box.hi[d]) return true;
    }
    return false;
  });
  std::vector<std::pair<Device, Index>> targets;
  for (auto& t : dst_sharding.devices_indices_map(dst_shape)) {
    if (is_local(t.first)) targets.push_back(std::move(t));
  }
  std::vector<BufferRef> out(targets.size());
  base::parallel_for(int64_t(targets.size()), [&](int64_t t) {
    const auto& [device, index] = targets[size_t(t)];
    Box dst_box = box_of(index, dst_shape);
    BufferRef buf = Buffer::allocate(device, size_t(shape_size(dst_box.shape()) * itemsize));
    auto dst_strides = strides_of(dst_box.shape());
    for (const SourceBlock& b : blocks) {
      Box region;
      if (!intersect(dst_box, b.box, lead, region)) continue;
      BoxCopy copy{b.data, b.box, strides_of(b.box.shape()), static_cast<char*>(buf->data()),
                   dst_box, dst_strides, region, lead, itemsize};
      int64_t src_off = 0;
      for (size_t d = 0; d < lead; ++d) src_off += (leading[d] - b.box.lo[d]) * copy.src_strides[d];
      copy.run(0, src_off, 0);
    }
    out[size_t(t)] = std::move(buf);
  });
  return out;
}

std::vector<BufferRef> scatter_from_host(const void* host, const core::Aval& aval,
                                         const Sharding& sharding) {
  // The host array is one block covering everything: a one-device layout over memory
  // the buffer does not own.
  Device any = Client::get().default_device();
  std::vector<BufferRef> src = {Buffer::wrap(any, const_cast<void*>(host), aval.nbytes())};
  return relayout(aval, SingleDeviceSharding(any), src, sharding);
}

void gather_to_host(const core::Aval& aval, const Sharding& sharding,
                    const std::vector<BufferRef>& buffers, void* host) {
  std::vector<SourceBlock> blocks = distinct_blocks(aval, sharding, buffers);
  const int64_t itemsize = dtype_itemsize(aval.dtype);
  Box whole = box_of(Index(aval.shape.size()), aval.shape);
  auto strides = strides_of(aval.shape);
  base::parallel_for(int64_t(blocks.size()), [&](int64_t i) {
    const SourceBlock& b = blocks[size_t(i)];
    BoxCopy copy{b.data, b.box, strides_of(b.box.shape()), static_cast<char*>(host),
                 whole, strides, b.box, 0, itemsize};
    copy.run(0, 0, 0);
  });
}

}  // namespace parax::runtime
