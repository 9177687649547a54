// The IR's type checker. A program is well typed when it is in SSA form and each equation's
// result types are what its primitive's shape rule (abstract_eval) makes of its operand
// types, in its sub-programs too. The compiler checks every program it makes
// (compiler/passes.h).
#pragma once

#include <cstdint>
#include <optional>
#include <span>
#include <string>

#include "core/program.h"
#include "core/rules.h"

namespace parax::core {

struct VerifyOptions {
  // Check types; false checks SSA form only.
  bool types = true;
  // The sizes of the mesh axes of a per-device program (empty for a global one). Its
  // collectives name mesh axes by number (param `mesh_axes`), and the sizes of those axes
  // belong to the program's mesh, not to any one equation, as for the executor.
  std::span<const int64_t> mesh_axis_sizes = {};
  // Compare weak types too. They steer dtype promotion while tracing and become the weak
  // type of a computation's results, so they matter in global programs; per-device values
  // take their types from the global ones, and nothing after partitioning reads them.
  bool weak_types = true;
};

// Checks SSA form (each variable defined once, before use; literals rank 0) and types.
// Returns the first violation, naming the equation by index and printed form (`equation 1
// (c:f32[4] = sin b): sin gives f32[8], the program says f32[4]`), or nullopt.
std::optional<std::string> verify(const Program& p, const VerifyOptions& options);

// Checks that `roles` say what the programs `e` (an equation of `p`) holds are for: one
// entry per program, in sub_programs' order; operand ranges within its operands; and each
// program's input and output types as its role makes them of the operands' and results'
// (shapes and dtypes; a manual program's, which sees blocks, by count). The verifier checks
// every equation against its primitive's roles. Returns the first mismatch, or nullopt.
std::optional<std::string> check_program_roles(const Program& p, const Eqn& e,
                                               const ProgramRoles& roles);

// Binds the mesh axis sizes of the per-device program being checked, for the scope's
// lifetime (the verifier binds them; shape rules read them through mesh_group_size).
class MeshAxesScope {
 public:
  explicit MeshAxesScope(std::span<const int64_t> axis_sizes);
  ~MeshAxesScope();
  MeshAxesScope(const MeshAxesScope&) = delete;
  MeshAxesScope& operator=(const MeshAxesScope&) = delete;

 private:
  std::optional<std::span<const int64_t>> saved_;
};

// Returns the number of devices in each group of a per-device collective over `mesh_axes`
// (the product of their sizes in the bound mesh). Throws TypeError naming `prim` when no
// mesh is bound or an axis is not one of its axes.
int64_t mesh_group_size(std::span<const int64_t> mesh_axes, std::string_view prim);

}  // namespace parax::core
