// fuse-elementwise: replaces each run of two or more consecutive elementwise equations
// over arrays of one shape by one `fusion` equation holding them as a sub-program, so
// the executor runs them tile by tile and their intermediates never fill memory. A
// reduction over trailing axes that consumes the run joins it.
#pragma once

#include "core/program.h"

namespace parax::compiler {

core::Program fuse_elementwise(const core::Program& p);

// Removes equations none of whose results is used (every primitive is pure).
core::Program eliminate_dead_code(const core::Program& p);

}  // namespace parax::compiler
