// propagate-sharding: decides a sharding for every value of a global program from the
// seeds (committed arguments, sharding_constraint equations: with_sharding_constraint,
// jit's in_shardings and out_shardings), reading only each
// primitive's declared sharding rule. Explicit shardings are kept; everything else is
// inferred, preferring choices that need no communication.
#pragma once

#include <map>
#include <optional>
#include <span>
#include <vector>

#include "compiler/spmd.h"
#include "core/program.h"

namespace parax::compiler {

struct Propagation;

// The layouts of a control-flow equation (branches or a loop, as its program roles say):
// its sub-programs are laid out by propagations of their own, seeded with the layouts
// chosen for their inputs; a loop's carry has one layout on entry, on each step and on exit.
struct ControlFlowLayouts {
  std::vector<DimShard> operands;  // the layout each operand must arrive in
  std::vector<DimShard> results;
  std::vector<Propagation> programs;  // per sub-program, in core::sub_programs' order
  // Per sub-program: the layout each of its outputs is resharded to at its end.
  std::vector<std::vector<DimShard>> program_outputs;
};

struct Propagation {
  std::vector<DimShard> vars;                      // per variable of the program
  std::vector<core::ShardingRule> rules;           // per equation
  std::vector<std::vector<AxisList>> factor_axes;  // per equation, per factor
  // Per equation, per result: the layout its kernel produces, when `vars` asks for another
  // one that a local slice reaches (results of scans, sorts and concatenations keep their
  // operand's layout, as in JAX).
  std::vector<std::vector<std::optional<DimShard>>> computed;
  // Per manual-enter and manual-exit equation (the boundaries of an inlined shard_map):
  // the layout its operand needs. Their results are the same per-device buffers, relabeled.
  std::map<size_t, DimShard> boundary;
  // Per control-flow equation.
  std::map<size_t, ControlFlowLayouts> control_flow;
};

// `seeds` has one entry per invar (constvars first, then invars): the fixed layout of a
// committed argument, or nullopt for one the compiler may place.
Propagation propagate(const core::Program& p, const MeshInfo& mesh,
                      std::span<const std::optional<DimShard>> seeds);

// Returns the layout the operand `i` of equation `e` needs, given the chosen factors.
DimShard required_operand(const core::Program& p, const Propagation& prop, size_t e, size_t i);

}  // namespace parax::compiler
