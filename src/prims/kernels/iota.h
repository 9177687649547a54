// iota's kernel, offset by the shard number on a sharded dimension.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

void iota(const core::KernelCall& call);

}  // namespace parax::prims::kernels
