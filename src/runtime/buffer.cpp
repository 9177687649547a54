#include "runtime/buffer.h"

#include <cstdlib>
#include <new>

namespace parax::runtime {

namespace {
constexpr size_t kAlignment = 64;  // a cache line, and enough for any SIMD load
}

std::shared_ptr<Buffer> Buffer::allocate(Device device, size_t nbytes) {
  size_t rounded = (nbytes + kAlignment - 1) / kAlignment * kAlignment;
  void* data = std::aligned_alloc(kAlignment, rounded == 0 ? kAlignment : rounded);
  if (!data) throw std::bad_alloc();
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, true));
}

std::shared_ptr<Buffer> Buffer::wrap(Device device, void* data, size_t nbytes) {
  return std::shared_ptr<Buffer>(new Buffer(device, nbytes, data, false));
}

Buffer::~Buffer() {
  if (owned_) std::free(data_);
}

}  // namespace parax::runtime
