// A compiler plan made ready to run on this process's devices: its executor, and how each
// argument's buffers reach the layout the program reads and each output's buffers become
// an array.
#pragma once

#include <atomic>
#include <memory>
#include <span>
#include <vector>

#include "compiler/compile.h"
#include "parax/array.h"

namespace parax::runtime {

class Executor;

class LoadedPlan {
 public:
  explicit LoadedPlan(std::shared_ptr<const compiler::Plan> plan);
  ~LoadedPlan();
  // Runs on concrete arguments (constants first, as the program's inputs are ordered),
  // each of the type and sharding the plan was compiled for.
  std::vector<Array> run(std::span<const Array> args) const;
  const compiler::Plan& plan() const { return *plan_; }

 private:
  static constexpr size_t kNone = ~size_t(0);
  // On a program over several processes' devices, the first run checks that every process
  // compiled the same plan (else DistributedError, instead of mismatched collectives).
  void check_same_program() const;

  std::shared_ptr<const compiler::Plan> plan_;
  std::shared_ptr<const Executor> executor_;
  std::vector<bool> in_direct_;                // argument already laid out as needed
  std::vector<std::vector<size_t>> in_order_;  // per arg: buffer index per position, or kNone
  mutable std::atomic<bool> checked_{false};
  std::vector<std::vector<size_t>> out_order_;  // per output: position per buffer
};

}  // namespace parax::runtime
