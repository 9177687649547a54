// The compiler's entry point: a global program plus the types and shardings of its
// arguments in (in_shardings, out_shardings and with_sharding_constraint are all
// sharding_constraint equations of the program), an executable out (inline-calls, check-devices,
// propagate-sharding, partition-spmd). Jit and eager execution both come through here, so they
// agree.
#pragma once

#include <map>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "compiler/spmd.h"
#include "core/program.h"
#include "parax/array.h"
#include "parax/jit.h"

namespace parax::runtime {
class Executor;
}

namespace parax::compiler {

struct ArgInfo {
  core::Aval aval;
  std::optional<Sharding> sharding;  // of a concrete argument
  bool committed = false;
};

struct CompileOptions {
  // Names the computation and its arguments in errors: "add" with "x", "y".
  std::string name = "jit";
  std::vector<std::string> arg_names;
};

using CostAnalysis = parax::CostAnalysis;

class Executable {
 public:
  // Runs on concrete arguments (constants first, as the program's inputs are ordered).
  std::vector<Array> run(std::span<const Array> args) const;
  // Returns the partitioned per-device program with its mesh and layouts.
  std::string as_text() const;
  const CostAnalysis& cost() const { return cost_; }
  const std::vector<Sharding>& input_shardings() const { return in_shardings_; }
  const std::vector<Sharding>& output_shardings() const { return out_shardings_; }
  ~Executable();

 private:
  friend std::shared_ptr<const Executable> compile(std::shared_ptr<const core::Program>,
                                                   std::span<const ArgInfo>, const CompileOptions&);
  Executable(MeshInfo mesh) : mesh_(std::move(mesh)) {}
  MeshInfo mesh_;
  std::shared_ptr<const core::Program> local_;
  std::vector<DimShard> in_layouts_, out_layouts_;
  std::vector<Sharding> in_shardings_, out_shardings_;
  std::vector<bool> in_direct_;                 // argument already laid out as needed
  std::vector<std::vector<size_t>> in_order_;   // per arg: buffer index per position
  std::vector<std::vector<size_t>> out_order_;  // per output: position per buffer
  std::vector<core::Aval> out_avals_;
  bool committed_ = false;
  CostAnalysis cost_;
  std::shared_ptr<const runtime::Executor> executor_;
};

std::shared_ptr<const Executable> compile(std::shared_ptr<const core::Program> program,
                                          std::span<const ArgInfo> args,
                                          const CompileOptions& options);

// Returns `p` with every pjit equation replaced by the equations of its program.
core::Program inline_calls(const core::Program& p);

}  // namespace parax::compiler
