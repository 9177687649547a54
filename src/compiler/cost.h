// cost_analysis of a per-device program: flops and collective traffic per device, summed
// over its equations from each primitive's cost rule (or its traits' default).
#pragma once

#include "compiler/spmd.h"
#include "core/program.h"
#include "parax/jit.h"

namespace parax::compiler {

// Returns what `local`, a per-device program over `mesh`, costs each device.
CostAnalysis analyze(const core::Program& local, const MeshInfo& mesh);

}  // namespace parax::compiler
