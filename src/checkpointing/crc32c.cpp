#include "checkpointing/crc32c.h"

#include <algorithm>

#include <isa-l/crc.h>

namespace parax::checkpointing {

uint32_t crc32c(const void* data, size_t n, uint32_t crc) {
  // ISA-L's iSCSI CRC is CRC-32C without the final inversion, over an int length.
  constexpr size_t kMaxPiece = size_t(1) << 30;
  auto* p = static_cast<unsigned char*>(const_cast<void*>(data));
  uint32_t c = ~crc;
  do {
    const size_t piece = std::min(n, kMaxPiece);
    c = crc32_iscsi(p, int(piece), c);
    p += piece;
    n -= piece;
  } while (n > 0);
  return ~c;
}

}  // namespace parax::checkpointing
