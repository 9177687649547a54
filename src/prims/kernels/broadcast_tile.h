// broadcast_in_dim's tile form inside a fusion (core::TileCall).
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

// Writes elements [begin, begin + len) of the broadcast's result, reading the operand
// where it lies: the tile itself when it has the result's shape, else the whole operand.
void broadcast_tile(const core::TileCall& call);

}  // namespace parax::prims::kernels
