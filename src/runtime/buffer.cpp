#include "runtime/buffer.h"

#include "parax/errors.h"

#include <sys/mman.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <list>
#include <mutex>
#include <new>
#include <string>
#include <unordered_map>
#include <vector>

#include "base/config_internal.h"
#include "base/sizes.h"
#include "sharding/topology.h"

namespace parax::runtime {

namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for any SIMD load
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};
std::atomic<int64_t> g_allocations{0};

void note_alloc(int64_t n) {
  g_allocations.fetch_add(1, std::memory_order_relaxed);
  const int64_t live = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}

void raise_to(std::atomic<int64_t>& most, int64_t value) {
  int64_t m = most.load();
  while (value > m && !most.compare_exchange_weak(m, value)) {
  }
}

void note_device_alloc(const Device& device, int64_t n) {
  detail::MemoryCounters& c = detail::memory_counters(device);
  c.num_allocs.fetch_add(1, std::memory_order_relaxed);
  raise_to(c.peak_bytes_in_use, c.bytes_in_use.fetch_add(n) + n);
  raise_to(c.largest_alloc_size, n);
}

// Blocks from 64 KiB up are mapped from the system directly, in size classes (eight per
// power of two, so a class wastes under 12.5%, and only in untouched virtual pages), and
// freed ones are kept for reuse up to parax_buffer_cache_bytes, least recently freed
// unmapped first. Reuse matters: a fresh mapping is zero-filled by the kernel page by page
// on first touch, which for a 256 MiB array costs as much as a whole elementwise pass.
// Mapping them ourselves rather than through malloc matters too: glibc serves blocks of
// many sizes from its heap once its adaptive mmap threshold has risen, and the holes they
// leave are never returned, so a long run over distinct shapes grew to gigabytes.
class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t(64) << 10;

  static size_t size_class(size_t rounded) {
    size_t step = 4096;
    while ((step << 4) <= rounded) step <<= 1;  // rounded / 16 < step <= rounded / 8
    return (rounded + step - 1) / step * step;
  }

  void* take(size_t cls) {
    std::lock_guard<std::mutex> lock(mu_);
    auto it = by_class_.find(cls);
    if (it == by_class_.end() || it->second.empty()) {
      ++mapped_;
      return nullptr;
    }
    auto node = it->second.back();
    it->second.pop_back();
    void* p = node->p;
    lru_.erase(node);
    cached_ -= cls;
    ++reused_;
    return p;
  }

  // Keeps the block for reuse, unmapping the least recently freed ones beyond the cap.
  void give(void* p, size_t cls) {
    std::vector<Block> victims;
    {
      std::lock_guard<std::mutex> lock(mu_);
      const size_t cap = size_t(detail::int_setting(detail::IntSettingId::kBufferCacheBytes));
      if (cls > cap) {
        victims.push_back({cls, p});
      } else {
        lru_.push_front({cls, p});
        by_class_[cls].push_back(lru_.begin());
        cached_ += cls;
      }
      evict_to(cap, victims);
      released_ += int64_t(victims.size());
    }
    for (const Block& b : victims) munmap(b.p, b.cls);
  }

  // Unmaps every cached block.
  void trim() {
    std::vector<Block> victims;
    {
      std::lock_guard<std::mutex> lock(mu_);
      evict_to(0, victims);
      released_ += int64_t(victims.size());
    }
    for (const Block& b : victims) munmap(b.p, b.cls);
  }

  BufferCacheStats stats() {
    std::lock_guard<std::mutex> lock(mu_);
    return {int64_t(cached_),
            int64_t(lru_.size()),
            detail::int_setting(detail::IntSettingId::kBufferCacheBytes),
            reused_,
            mapped_,
            released_};
  }

 private:
  struct Block {
    size_t cls;
    void* p;
  };
  using Node = std::list<Block>::iterator;

  // Requires: mu_ held.
  void evict_to(size_t cap, std::vector<Block>& victims) {
    while (cached_ > cap) {
      const Block b = lru_.back();
      // Within a class, blocks are in the order they were freed: the oldest is first.
      std::vector<Node>& same = by_class_[b.cls];
      same.erase(same.begin());
      lru_.pop_back();
      cached_ -= b.cls;
      victims.push_back(b);
    }
  }

  std::mutex mu_;
  std::list<Block> lru_;  // most recently freed first
  std::unordered_map<size_t, std::vector<Node>> by_class_;
  size_t cached_ = 0;
  int64_t reused_ = 0, mapped_ = 0, released_ = 0;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: buffers may outlive statics
  return *c;
}

size_t rounded_size(size_t nbytes) {
  const size_t r = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  return r == 0 ? kAlignment : r;
}

#if defined(__SANITIZE_ADDRESS__)
// Under AddressSanitizer every buffer comes from malloc, whose redzones catch a kernel
// writing past its buffer; mapped blocks have none.
bool is_mapped(size_t) { return false; }
#else
bool is_mapped(size_t rounded) { return rounded >= BlockCache::kMinBytes; }
#endif

void* map_block(size_t cls) {
  if (void* p = cache().take(cls)) return p;
  void* p = mmap(nullptr, cls, PROT_READ | PROT_WRITE, MAP_PRIVATE | MAP_ANONYMOUS, -1, 0);
  return p == MAP_FAILED ? nullptr : p;
}
}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load(), g_allocations.load()}; }
void reset_peak_memory() { g_peak.store(g_live.load()); }
BufferCacheStats buffer_cache_stats() { return cache().stats(); }
void trim_buffer_cache() { cache().trim(); }

std::shared_ptr<Buffer> Buffer::allocate(Device device, size_t nbytes) {
  // Refused up front when the machine cannot back it: overcommit would let a huge request
  // succeed and then thrash (or meet the OOM killer) while it is filled.
  if (!base::allocation_fits(nbytes, uint64_t(std::max<int64_t>(0, g_live.load()))) ||
      nbytes > SIZE_MAX - kAlignment) {
    base::throw_out_of_memory("device " + std::to_string(device.id()), nbytes);
  }
  const size_t rounded = rounded_size(nbytes);
  void* data = is_mapped(rounded) ? map_block(BlockCache::size_class(rounded))
                                  : std::aligned_alloc(kAlignment, rounded);
  if (!data) base::throw_out_of_memory("device " + std::to_string(device.id()), nbytes);
  note_alloc(int64_t(nbytes));
  note_device_alloc(device, int64_t(nbytes));
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, true));
}

std::shared_ptr<Buffer> Buffer::wrap(Device device, void* data, size_t nbytes) {
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, false));
}

std::shared_ptr<Buffer> Buffer::view(std::shared_ptr<Buffer> parent, size_t offset, size_t nbytes) {
  auto* data = static_cast<char*>(parent->data()) + offset;
  std::shared_ptr<Buffer> v(new Buffer(parent->device(), nbytes, data, false));
  v->parent_ = std::move(parent);
  return v;
}

std::shared_ptr<Buffer> Buffer::alias(std::shared_ptr<Buffer> parent, Device device) {
  const Device from = parent->device();
  if (from.platform() != "cpu" || device.platform() != "cpu" ||
      from.process_index() != device.process_index()) {
    throw RuntimeError("Buffer::alias: device " + std::to_string(device.id()) +
                       " cannot share the memory of device " + std::to_string(from.id()));
  }
  std::shared_ptr<Buffer> v(new Buffer(device, parent->nbytes(), parent->data(), false));
  v->parent_ = std::move(parent);
  return v;
}

Buffer::~Buffer() {
  if (owned_) {
    const size_t rounded = rounded_size(nbytes_);
    if (is_mapped(rounded)) {
      cache().give(data_, BlockCache::size_class(rounded));
    } else {
      std::free(data_);
    }
    g_live.fetch_sub(int64_t(nbytes_));
    detail::memory_counters(device_).bytes_in_use.fetch_sub(int64_t(nbytes_));
  }
}

}  // namespace parax::runtime
