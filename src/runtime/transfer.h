// Moving array data between the host and device buffers, and between layouts. These are
// plain memory copies: every virtual device of this process shares its address space.
#pragma once

#include <vector>

#include "core/aval.h"
#include "parax/sharding.h"
#include "runtime/buffer.h"

namespace parax::runtime {

// Assembles the global row-major array from the shards of a concrete array.
void gather_to_host(const core::Aval& aval, const Sharding& sharding,
                    const std::vector<BufferRef>& buffers, void* host);

// Lays out the data of (src_aval, src_sharding, src_buffers) under `dst_sharding`.
std::vector<BufferRef> relayout(const core::Aval& src_aval, const Sharding& src_sharding,
                                const std::vector<BufferRef>& src_buffers,
                                const Sharding& dst_sharding);

}  // namespace parax::runtime
