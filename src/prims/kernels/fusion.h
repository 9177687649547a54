// The fusion primitive's kernel.
#pragma once

#include "core/rules.h"

namespace parax::prims::kernels {

// Runs the fused chain (param `jaxpr`) tile by tile, intermediates in cache-sized scratch;
// a final reduction over trailing axes reduces each tile as it is made.
void fusion(const core::KernelCall& call);

}  // namespace parax::prims::kernels
