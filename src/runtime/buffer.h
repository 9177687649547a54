// Device memory: a Buffer is one device's bytes for one array shard. Written once by the
// kernel or transfer that makes it, then read-only while shared.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>

#include "parax/device.h"

namespace parax::runtime {

class Buffer {
 public:
  // Allocates `nbytes` (64-byte aligned, uninitialised) on `device`.
  static std::shared_ptr<Buffer> allocate(Device device, size_t nbytes);
  // Returns a buffer over memory it does not own (e.g. a caller's host array).
  static std::shared_ptr<Buffer> wrap(Device device, void* data, size_t nbytes);
  // Returns bytes [offset, offset + nbytes) of `parent`, kept alive by the view (a scan's
  // slice of its xs).
  static std::shared_ptr<Buffer> view(std::shared_ptr<Buffer> parent, size_t offset, size_t nbytes);
  // Returns `parent`'s bytes as a buffer of `device`, kept alive by it: one value's
  // replicas on this process's CPU devices, which share the host's memory, without a copy.
  // Requires: both devices are CPU devices of this process (else RuntimeError).
  static std::shared_ptr<Buffer> alias(std::shared_ptr<Buffer> parent, Device device);
  ~Buffer();
  Buffer(const Buffer&) = delete;
  Buffer& operator=(const Buffer&) = delete;

  Device device() const { return device_; }
  size_t nbytes() const { return nbytes_; }
  void* data() { return data_; }
  const void* data() const { return data_; }
  // True when this buffer owns its memory, so a kernel may overwrite it once nothing else
  // holds it (views and wrapped memory belong to someone else).
  bool owns_memory() const { return owned_; }

 private:
  Buffer(Device device, size_t nbytes, void* data, bool owned)
      : device_(device), nbytes_(nbytes), data_(data), owned_(owned) {}
  Device device_;
  size_t nbytes_;
  void* data_;
  bool owned_;
  std::shared_ptr<Buffer> parent_;  // a view's
};

using BufferRef = std::shared_ptr<Buffer>;

// Bytes held by device buffers now, the most held since the last reset, and how many
// buffers were allocated.
struct MemoryStats {
  int64_t live_bytes = 0;
  int64_t peak_bytes = 0;
  int64_t allocations = 0;  // buffers allocated since the process started
};
MemoryStats memory_stats();
void reset_peak_memory();

// The cache of freed large blocks (buffer.cpp): what it holds and has done.
struct BufferCacheStats {
  int64_t cached_bytes = 0;
  int64_t cached_blocks = 0;
  int64_t capacity_bytes = 0;  // config "parax_buffer_cache_bytes"
  int64_t reused = 0;          // allocations served from the cache
  int64_t mapped = 0;          // allocations that mapped fresh memory
  int64_t released = 0;        // blocks returned to the system
};
BufferCacheStats buffer_cache_stats();
// Returns every cached block to the system.
void trim_buffer_cache();

}  // namespace parax::runtime
