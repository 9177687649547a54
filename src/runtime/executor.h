// Runs a per-device (SPMD) program for all local devices together, equation by equation:
// kernels of one equation run on all devices in parallel on the shared thread pool,
// collectives are memory operations, and a buffer is released right after its last use
// or, for elementwise work, taken over by the output its last reader computes (in place).
#pragma once

#include <memory>
#include <vector>

#include "core/program.h"
#include "runtime/collectives.h"

namespace parax::runtime {

class Executor {
 public:
  Executor(std::shared_ptr<const core::Program> program, MeshLayout mesh);
  // inputs[i][p] is input i on device position p; returns outputs[o][p].
  std::vector<std::vector<BufferRef>> run(std::vector<std::vector<BufferRef>> inputs) const;
  const MeshLayout& mesh() const { return mesh_; }

 private:
  std::shared_ptr<const core::Program> program_;
  MeshLayout mesh_;
  std::vector<std::vector<int>> release_after_;          // per eqn: vars dead after it
  std::vector<std::vector<BufferRef>> literal_buffers_;  // per eqn, per input (or null)
  // Per eqn, per output: the input whose buffer the output may take over (-1: none).
  std::vector<std::vector<int>> donor_;
  // Per eqn: its result depends only on its operands' values, not on which device runs
  // it, so devices given the very same operand buffers can share one computation.
  std::vector<bool> shareable_;
};

}  // namespace parax::runtime
