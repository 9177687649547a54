// cost_analysis of a per-device program: flops and collective traffic per device, summed
// over its equations from each primitive's cost rule (or its traits' default).
#pragma once

#include "compiler/spmd.h"
#include "core/program.h"
#include "core/rules.h"
#include "parax/jit.h"

namespace parax::compiler {

// Returns what equation `e` of `local`, a per-device program over `mesh`, costs each
// device (control flow's own cost only, not its programs').
core::Cost eqn_cost(const core::Program& local, const core::Eqn& e, const MeshInfo& mesh);

// Returns what `local`, a per-device program over `mesh`, costs each device.
CostAnalysis analyze(const core::Program& local, const MeshInfo& mesh);

}  // namespace parax::compiler
