// schedule-memory: the order a per-device program runs in, chosen for its peak memory.
// When a large value is made (a layer's gradient), the elementwise work that consumes it
// (that layer's optimizer update: new moments, new parameters) runs right after it, with
// the small computations it waits on (a bias correction from the step count), if that
// lets go of at least as much as it makes. Traced in the order of the source, all of a
// step's updates come after the whole backward pass, so every gradient is alive at once.
// Only the order of independent equations changes: results are bit for bit the same,
// and every process moves the same equations, so collectives keep one order everywhere.
#pragma once

#include <vector>

#include "core/program.h"

namespace parax::compiler {

// Reorders `p`. `donated`, per program input (constvars, then invars) or empty, marks
// inputs whose buffers the caller gave up: let go of when read for the last time.
void schedule_for_memory(core::Program& p, const std::vector<bool>& donated);

}  // namespace parax::compiler
