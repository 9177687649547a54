// A compiler plan made ready to run on this process's devices: its executor, and how each
// argument's buffers reach the layout the program reads and each output's buffers become
// an array.
#pragma once

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
  std::shared_ptr<const compiler::Plan> plan_;
  std::shared_ptr<const Executor> executor_;
  std::vector<bool> in_direct_;                 // argument already laid out as needed
  std::vector<std::vector<size_t>> in_order_;   // per arg: buffer index per position
  std::vector<std::vector<size_t>> out_order_;  // per output: position per buffer
};

}  // namespace parax::runtime
