#include "runtime/buffer.h"

#include <atomic>
#include <cstdlib>
#include <new>

namespace parax::runtime {

namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for any SIMD load
std::atomic<int64_t> g_live{0};
std::atomic<int64_t> g_peak{0};

void note_alloc(int64_t n) {
  const int64_t live = g_live.fetch_add(n) + n;
  int64_t peak = g_peak.load();
  while (live > peak && !g_peak.compare_exchange_weak(peak, live)) {
  }
}
}  // namespace

MemoryStats memory_stats() { return {g_live.load(), g_peak.load()}; }
void reset_peak_memory() { g_peak.store(g_live.load()); }

std::shared_ptr<Buffer> Buffer::allocate(Device device, size_t nbytes) {
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!data) throw std::bad_alloc();
  note_alloc(int64_t(nbytes));
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, true));
}

std::shared_ptr<Buffer> Buffer::wrap(Device device, void* data, size_t nbytes) {
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, false));
}

Buffer::~Buffer() {
  if (owned_) {
    std::free(data_);
    g_live.fetch_sub(int64_t(nbytes_));
  }
}

}  // namespace parax::runtime
