// CRC-32C (Castagnoli), the checksum of zarr v3's crc32c codec and of sharded chunk
// indexes, computed by ISA-L (its folding kernels run at memory speed where the CPU has
// PCLMULQDQ; a table elsewhere).
#pragma once

#include <cstddef>
#include <cstdint>

namespace parax::checkpointing {

// Returns the CRC-32C of `n` bytes at `data`, continuing from `crc` (0 to start).
uint32_t crc32c(const void* data, size_t n, uint32_t crc = 0);

}  // namespace parax::checkpointing
