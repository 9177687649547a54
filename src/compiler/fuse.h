// fuse-elementwise: replaces each run of two or more consecutive elementwise equations
// over arrays of one shape by one `fusion` equation holding them as a sub-program, so
// the executor runs them tile by tile and their intermediates never fill memory. A
// reduction over trailing axes that consumes the run joins it.
#pragma once

#include "core/program.h"

namespace parax::compiler {

core::Program fuse_elementwise(const core::Program& p);

// Returns the chain of equations a fusion equation runs, or nullptr for another equation.
const core::Program* fused_program(const core::Eqn& e);

// Replaces operands of elementwise equations that are a rank-0 value broadcast to the
// result's shape by that value (elementwise kernels broadcast rank-0 operands), so filled
// arrays (a jvp's ones and zeros) are not made in memory.
core::Program fold_scalar_broadcasts(const core::Program& p);

// Removes equations none of whose results is used (every primitive is pure).
core::Program eliminate_dead_code(const core::Program& p);

}  // namespace parax::compiler
