#include "runtime/buffer.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <map>
#include <mutex>
#include <new>
#include <string>
#include <vector>

#include "base/sizes.h"

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

// Large blocks are kept for reuse instead of being returned to the system: glibc maps
// and unmaps them, and the kernel zero-fills every page again on first touch, which for
// a 256 MiB array costs as much as a whole elementwise pass over it.
class BlockCache {
 public:
  static constexpr size_t kMinBytes = size_t(1) << 20;
  static constexpr size_t kMaxCachedBytes = size_t(4) << 30;

  void* take(size_t rounded) {
    if (rounded < kMinBytes) return nullptr;
    std::lock_guard<std::mutex> lock(mu_);
    auto it = free_.find(rounded);
    if (it == free_.end() || it->second.empty()) return nullptr;
    void* p = it->second.back();
    it->second.pop_back();
    cached_ -= rounded;
    return p;
  }
  // Returns false when the block should go back to the system.
  bool give(void* p, size_t rounded) {
    if (rounded < kMinBytes) return false;
    std::lock_guard<std::mutex> lock(mu_);
    if (cached_ + rounded > kMaxCachedBytes) return false;
    free_[rounded].push_back(p);
    cached_ += rounded;
    return true;
  }

 private:
  std::mutex mu_;
  std::map<size_t, std::vector<void*>> free_;
  size_t cached_ = 0;
};

BlockCache& cache() {
  static BlockCache* c = new BlockCache;  // never destroyed: buffers may outlive statics
  return *c;
}

size_t rounded_size(size_t nbytes) {
  const size_t r = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  return r == 0 ? kAlignment : r;
}
}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load(), g_allocations.load()}; }
void reset_peak_memory() { g_peak.store(g_live.load()); }

std::shared_ptr<Buffer> Buffer::allocate(Device device, size_t nbytes) {
  // Refused up front when the machine cannot back it: overcommit would let a huge request
  // succeed and then thrash (or meet the OOM killer) while it is filled.
  if (!base::allocation_fits(nbytes, uint64_t(std::max<int64_t>(0, g_live.load()))) ||
      nbytes > SIZE_MAX - kAlignment) {
    base::throw_out_of_memory("device " + std::to_string(device.id()), nbytes);
  }
  const size_t rounded = rounded_size(nbytes);
  void* data = cache().take(rounded);
  if (data == nullptr) data = std::aligned_alloc(kAlignment, rounded);
  if (!data) base::throw_out_of_memory("device " + std::to_string(device.id()), nbytes);
  note_alloc(int64_t(nbytes));
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, true));
}

std::shared_ptr<Buffer> Buffer::wrap(Device device, void* data, size_t nbytes) {
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, false));
}

Buffer::~Buffer() {
  if (owned_) {
    if (!cache().give(data_, rounded_size(nbytes_))) std::free(data_);
    g_live.fetch_sub(int64_t(nbytes_));
  }
}

}  // namespace parax::runtime
