// check_vma's interpreter (JAX's check_vma inside shard_map): which manual axes a program's
// results may vary over, read from its primitives' vma rules. Internal to src/prims and the
// layers above (transforms' shard_map checks its out_specs with it).
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "core/program.h"

namespace parax::prims {

// Returns, per output of `p`, the manual axes it may vary over as a bit set over `axes` (bit
// a: axes[a]), given its inputs' (constvars, then invars). A primitive's vma rule says what
// its results vary over (psum-like collectives make them invariant over their axes,
// axis_index makes them vary), by default the union of its operands'; a call's results vary
// as its program's do.
std::vector<uint64_t> program_vma(const core::Program& p, std::span<const uint64_t> inputs,
                                  std::span<const std::string> axes);

}  // namespace parax::prims
