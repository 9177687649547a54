// Runs a per-device (SPMD) program for all local devices together, equation by equation:
// kernels of one equation run on all devices in parallel on the shared thread pool,
// collectives are memory operations, and buffers are released, written in place or into
// the caller's result slots as the compiler's buffer plan (compiler/buffers.h) says.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "compiler/buffers.h"
#include "core/program.h"
#include "core/rules.h"
#include "runtime/collectives.h"

namespace parax::runtime {

class Executor {
 public:
  // Requires: `buffers` is plan_buffers(*program).
  Executor(std::shared_ptr<const core::Program> program,
           std::shared_ptr<const compiler::BufferPlan> buffers, MeshLayout mesh);
  // inputs[i][p] is input i on device position p; returns outputs[o][p]. `dests`, when
  // given, holds per output per position a buffer the output may be written into directly
  // (a slot of a scan's stacked result); the returned buffer is then that one, or another
  // the caller copies from.
  std::vector<std::vector<BufferRef>> run(
      std::vector<std::vector<BufferRef>> inputs,
      const std::vector<std::vector<BufferRef>>* dests = nullptr) const;
  const MeshLayout& mesh() const { return mesh_; }

 private:
  using Values = std::vector<std::vector<BufferRef>>;  // per value, per device position
  // Control flow: runs the equation's sub-programs as their roles say (the branch the index
  // picks, a body until its predicate is false, a body trip_count times) on all devices in
  // lockstep, each step a run of the sub-program's executor.
  Values run_control_flow(size_t e, Values in) const;
  Values run_cond(size_t e, const core::ProgramRoles& roles, Values in) const;
  Values run_while(size_t e, const core::ProgramRoles& roles, Values in) const;
  Values run_scan(size_t e, const core::ProgramRoles& roles, Values in) const;
  // Reads a scalar (a predicate, an index) per device position (nullopt: not local).
  // Outside shard_map bodies the partitioner replicates them, so all agree.
  std::vector<std::optional<int64_t>> read_scalars(const std::vector<BufferRef>& value,
                                                   DType dtype) const;
  std::shared_ptr<const core::Program> program_;
  std::shared_ptr<const compiler::BufferPlan> buffers_;
  MeshLayout mesh_;
  std::vector<std::vector<BufferRef>> literal_buffers_;  // per eqn, per input (or null)
  // Per eqn: its result depends only on its operands' values, not on which device runs
  // it, so devices given the very same operand buffers can share one computation.
  std::vector<bool> shareable_;
  // Per eqn: its operand and result types (made once: a loop body runs many times).
  std::vector<std::vector<core::Aval>> in_avals_, out_avals_;
  // Per eqn: the executors of a control-flow equation's sub-programs, in the order of its
  // program roles.
  std::vector<std::vector<std::shared_ptr<const Executor>>> subs_;
};

}  // namespace parax::runtime
