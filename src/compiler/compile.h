// The compiler's entry point: a global program plus the types and shardings of its
// arguments in (in_shardings, out_shardings and with_sharding_constraint are all
// sharding_constraint equations of the program), a Plan out (passes.h's list). Jit and
// eager execution both come through here, so they agree. A Plan is plain data: every
// process compiling the same program for the same arguments gets the same plan (compare
// fingerprints); the runtime executes it.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/buffers.h"
#include "compiler/explain.h"
#include "compiler/spmd.h"
#include "core/program.h"
#include "parax/jit.h"

namespace parax::compiler {

struct ArgInfo {
  core::Aval aval;
  std::optional<Sharding> sharding;  // of a concrete argument
  bool committed = false;
  // The caller gives the argument's buffers up (jit's donate_argnums): the plan may write
  // over them if an output has the argument's type and layout (BufferPlan::donated says).
  bool donated = false;
};

struct CompileOptions {
  // Names the computation and its arguments in errors: "add" with "x", "y".
  std::string name = "jit";
  std::vector<std::string> arg_names;
};

using CostAnalysis = parax::CostAnalysis;

// A compiled program: what runs on each device, over which mesh, with which layouts.
struct Plan {
  explicit Plan(MeshInfo m) : mesh(std::move(m)) {}
  MeshInfo mesh;
  std::string name;                            // the jit's or operation's name, for errors
  std::shared_ptr<const core::Program> local;  // the per-device program
  std::shared_ptr<const BufferPlan> buffers;   // where `local`'s values live and die
  std::vector<DimShard> in_layouts, out_layouts;
  // Per argument: the sharding it was compiled for (its buffers' layout when given) and
  // the one the program reads.
  std::vector<std::optional<Sharding>> arg_shardings;
  std::vector<Sharding> in_shardings;
  std::vector<Sharding> out_shardings;
  std::vector<core::Aval> in_avals, out_avals;  // global types
  bool committed = false;                       // outputs are committed arrays
  CostAnalysis cost;
  // Every collective of `local`, with why it is there (the explainer's rows).
  std::vector<CollectiveNote> collectives;

  // Returns the partitioned per-device program with its mesh and layouts, then its buffer
  // plan (`#` lines).
  std::string as_text() const;
  // Returns as_text() followed by every other field, one `# name value` line each: the
  // whole plan, device ids included.
  std::string serialize() const;
  // Returns a 64-bit FNV-1a hash of serialize(): equal plans have equal fingerprints.
  uint64_t fingerprint() const;
  // Returns a hash of what every process of a multi-process run must agree on: the
  // program and the layouts it reads and writes, not where the arguments were (a process's
  // own arguments sit on its own devices).
  uint64_t spmd_fingerprint() const;
};

std::shared_ptr<const Plan> compile(std::shared_ptr<const core::Program> program,
                                    std::span<const ArgInfo> args, const CompileOptions& options);

// Returns `p` with every pjit equation replaced by the equations of its program.
core::Program inline_calls(const core::Program& p);

}  // namespace parax::compiler
