#include "runtime/transfer.h"

#include <cstring>
#include <map>
#include <set>

#include "base/box_copy.h"
#include "base/thread_pool.h"
#include "base/trace_events.h"
#include "parax/errors.h"
#include "runtime/engine.h"
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

std::vector<int64_t> key_of(const Box& b) {
  std::vector<int64_t> key = b.lo;
  key.insert(key.end(), b.hi.begin(), b.hi.end());
  return key;
}

bool on_other_processes(const Sharding& s) {
  for (const Device& d : s.device_assignment()) {
    if (!detail::is_local(d)) return true;
  }
  return false;
}

// The layout change of an array whose shards are partly on other processes. Every process
// derives the same transfer list from the two shardings: each distinct target block of
// process Q takes each region it shares with a distinct source block from Q's own copy
// when Q holds one, else from the lowest process holding it, which sends it. Regions
// between two processes travel as one message, packed in list order.
std::vector<BufferRef> relayout_across(const core::Aval& aval, const Sharding& src,
                                       const std::vector<BufferRef>& src_buffers,
                                       const Sharding& dst) {
  const size_t item = size_t(dtype_itemsize(aval.dtype));
  const int me = detail::Topology::get().process_index();
  struct Source {
    Box box;
    std::set<int> holders;
    const char* local = nullptr;  // this process's copy, if it holds one
  };
  std::vector<Source> sources;
  std::map<std::vector<int64_t>, size_t> source_of;
  size_t next_buffer = 0;
  for (const auto& [device, index] : src.devices_indices_map(aval.shape)) {
    Box box = box_of(index, aval.shape);
    auto [it, fresh] = source_of.emplace(key_of(box), sources.size());
    if (fresh) sources.push_back({box, {}, nullptr});
    Source& s = sources[it->second];
    s.holders.insert(device.process_index());
    if (detail::is_local(device)) {
      const char* data = static_cast<const char*>(src_buffers[next_buffer++]->data());
      if (s.local == nullptr) s.local = data;
    }
  }
  struct Region {
    size_t target;  // index into this process's targets (receiver side)
    size_t source;
    Box box;
  };
  std::map<int, std::vector<Region>> sends, recvs;  // peer -> regions in list order
  std::vector<std::pair<Device, Box>> mine;         // this process's distinct target blocks
  std::vector<BufferRef> out;
  std::map<std::pair<int, std::vector<int64_t>>, size_t> seen;  // (process, box) -> target
  std::vector<size_t> target_of_device;
  for (const auto& [device, index] : dst.devices_indices_map(aval.shape)) {
    const int q = device.process_index();
    const Box box = box_of(index, aval.shape);
    auto [it, fresh] = seen.emplace(std::make_pair(q, key_of(box)), q == me ? mine.size() : 0);
    if (q == me) target_of_device.push_back(it->second);
    if (!fresh) continue;
    if (q == me) mine.push_back({device, box});
    for (size_t si = 0; si < sources.size(); ++si) {
      Region r{it->second, si, {}};
      if (!intersect(box, sources[si].box, r.box) || sources[si].holders.count(q)) continue;
      const int owner = *sources[si].holders.begin();
      if (owner == me) sends[q].push_back(r);
      if (q == me) recvs[owner].push_back(r);
    }
  }
  for (const auto& [device, box] : mine) {
    out.push_back(Buffer::allocate(device, size_t(shape_size(box.shape())) * item));
  }
  auto region_bytes = [&](const Region& r) { return size_t(shape_size(r.box.shape())) * item; };
  std::vector<std::vector<char>> packed;
  std::vector<Engine::Message> send_msgs, recv_msgs;
  for (auto& [peer, regions] : sends) {
    size_t total = 0;
    for (const Region& r : regions) total += region_bytes(r);
    packed.emplace_back(std::max<size_t>(1, total));
    size_t at = 0;
    for (const Region& r : regions) {
      const Source& s = sources[r.source];
      copy_region(s.local, s.box, packed.back().data() + at, r.box, r.box, item);
      at += region_bytes(r);
    }
    send_msgs.push_back({peer, packed.back().data(), total});
  }
  for (auto& [peer, regions] : recvs) {
    size_t total = 0;
    for (const Region& r : regions) total += region_bytes(r);
    packed.emplace_back(std::max<size_t>(1, total));
    recv_msgs.push_back({peer, packed.back().data(), total});
  }
  // Regions this process holds itself are copied while nothing else is pending.
  base::parallel_for(int64_t(mine.size()), [&](int64_t t) {
    const Box& dst_box = mine[size_t(t)].second;
    for (const Source& s : sources) {
      Box region;
      if (s.local != nullptr && intersect(dst_box, s.box, region)) {
        copy_region(s.local, s.box, out[size_t(t)]->data(), dst_box, region, item);
      }
    }
  });
  if (!send_msgs.empty() || !recv_msgs.empty()) {
    Engine* e = engine();
    if (e == nullptr) {
      throw DistributedError("moving an array whose shards are on several processes (" +
                             src.to_string() + " to " + dst.to_string() +
                             ") needs parax::distributed to be initialized");
    }
    e->exchange(
        send_msgs, recv_msgs,
        "relayout of " + aval.short_str() + " from " + src.to_string() + " to " + dst.to_string());
  }
  size_t m = send_msgs.size();
  for (auto& [peer, regions] : recvs) {
    size_t at = 0;
    for (const Region& r : regions) {
      copy_region(packed[m].data() + at, r.box, out[r.target]->data(), mine[r.target].second, r.box,
                  item);
      at += region_bytes(r);
    }
    ++m;
  }
  // Devices with the same block share its buffer, as in the local case.
  std::vector<BufferRef> result;
  for (size_t t : target_of_device) result.push_back(out[t]);
  return result;
}

}  // namespace

std::vector<BufferRef> relayout(const core::Aval& src_aval, const Sharding& src_sharding,
                                const std::vector<BufferRef>& src_buffers,
                                const Sharding& dst_sharding) {
  base::trace::Span span("transfer", "device_put");
  if (span.active()) {
    span.add_args("\"array\": " + base::trace::json_string(src_aval.short_str()) +
                  ", \"bytes\": " + std::to_string(src_aval.nbytes()));
  }
  if (on_other_processes(src_sharding)) {
    return relayout_across(src_aval, src_sharding, src_buffers, dst_sharding);
  }
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

void gather_to_host(const core::Aval& aval, const Sharding& sharding,
                    const std::vector<BufferRef>& buffers, void* host) {
  base::trace::Span span("transfer", "device to host");
  if (span.active()) {
    span.add_args("\"array\": " + base::trace::json_string(aval.short_str()) +
                  ", \"bytes\": " + std::to_string(aval.nbytes()));
  }
  std::vector<SourceBlock> blocks = distinct_blocks(aval, sharding, buffers);
  const size_t itemsize = size_t(dtype_itemsize(aval.dtype));
  const Box whole = box_of(Index(aval.shape.size()), aval.shape);
  base::parallel_for(int64_t(blocks.size()), [&](int64_t i) {
    const SourceBlock& b = blocks[size_t(i)];
    copy_region(b.data, b.box, host, whole, b.box, itemsize);
  });
}

}  // namespace parax::runtime
