// What core needs from the layers above it to compute on concrete arrays. Core traces and
// transforms programs without devices; when an equation meets concrete operands (eager
// evaluation) it hands them to the installed Backend, which compiles and runs them.
#pragma once

#include <span>
#include <vector>

#include "core/aval.h"
#include "core/primitive.h"
#include "core/program.h"
#include "parax/array.h"

namespace parax::core {

class Backend {
 public:
  virtual ~Backend() = default;
  // Evaluates one equation on concrete arrays (eager is jit of one primitive; a pjit
  // equation runs its whole program as one compiled call).
  virtual std::vector<Array> eval_eqn(Prim p, std::span<const Array> in, const Params& params) = 0;
  // Returns an uncommitted concrete array on the default device holding `data`, the
  // host bytes of a value of type `aval`.
  virtual Array from_host(const void* data, const Aval& aval) = 0;
  // Copies the concrete array x's global value to `out`, row-major, in x's dtype.
  virtual void to_host(const Array& x, void* out) = 0;
  // Returns the concrete array x with its data laid out as `target` (committed).
  virtual Array relayout(const Array& x, const Sharding& target) = 0;
  // Drops what the backend keeps for programs that no one holds any more.
  virtual void release_dead_programs() = 0;
};

// Installs the backend that evaluates concrete arrays. Requires: `backend` lives until exit.
void install_backend(Backend& backend);
// Returns the installed backend, installing the runtime's (default_backend) on first use, so
// any first call of a program (an eager shard_map of no arguments, an iota, a gradient's
// seed) finds one.
Backend& backend();
// The runtime's backend, defined by the runtime layer (runtime/eager.cpp): core names no
// runtime header, and the linker resolves this from the same library whether it is shared
// or static (a referenced symbol, unlike a static registrar, is never dropped). Installs it.
Backend& default_backend();
// Returns the installed backend, or nullptr before any concrete array exists.
Backend* installed_backend();

}  // namespace parax::core
