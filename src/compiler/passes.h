// The compiler's pipeline as an explicit list of named passes (kebab-case, as dumps and the
// README name them). The type checker (core/verify.h) runs after each pass, and with
// PARAX_DUMP_IR=dir each pass's program is written to `dir`.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <span>
#include <string>
#include <string_view>
#include <vector>

#include "compiler/buffers.h"
#include "compiler/compile.h"
#include "compiler/partition.h"
#include "core/program.h"

namespace parax::compiler {

// What the passes read and write. The program is global until partition-spmd makes the
// per-device one: passes before it rewrite `global`, passes after it `partitioned.local`.
struct PassState {
  core::Program global = {};
  // One per program input (constvars first); a committed argument's layout is fixed.
  std::span<const ArgInfo> args = {};
  // Chooses the computation's devices and mesh from the inlined program (and raises JAX's
  // incompatible-devices error): the caller knows the arguments and the runtime's devices.
  std::function<MeshInfo(const core::Program&)> choose_mesh = {};

  std::optional<MeshInfo> mesh = {};            // set by check-devices
  std::optional<Propagation> propagation = {};  // set by propagate-sharding
  std::optional<Partitioned> partitioned = {};  // set by partition-spmd
  std::optional<BufferPlan> buffers = {};       // set by plan-buffers, of partitioned->local

  bool per_device() const { return partitioned.has_value(); }
  const core::Program& program() const { return per_device() ? partitioned->local : global; }
};

struct Pass {
  std::string_view name;
  void (*run)(PassState& state);
};

// The passes compile() runs, in order.
std::span<const Pass> pass_list();

// Runs `passes` on `state`, checking the program after each one and, when PARAX_DUMP_IR
// names a directory, writing it there as `<compilation>.<name>.<NN>-<pass>.txt` (with
// `00-input` first). Throws parax's internal error, naming the pass, on a program that
// fails the check. `name` names the computation (CompileOptions::name).
void run_passes(PassState& state, std::span<const Pass> passes, std::string_view name);

// Whether run_passes type-checks after every pass: in debug builds, or when
// PARAX_VERIFY_IR=1 (=0 turns it off in debug builds too). SSA form is checked always.
bool verify_after_passes();
void set_verify_after_passes(bool on);

}  // namespace parax::compiler
