// The runtime's Backend for core (core/backend.h): eager execution and pjit calls on
// concrete arrays, compiled once per signature (compiler::compile) and run as LoadedPlans,
// with their caches; host data made into arrays; data moved between layouts.
#pragma once

#include <memory>
#include <source_location>

#include "base/lru_cache.h"
#include "core/backend.h"

namespace parax::compiler {
struct Plan;
}

namespace parax::runtime {

// Sees every plan the backend runs on this process (debug::CommLog), with the user's line
// running it when there is one, and whether it is an eager operation's (else a jit's).
class PlanObserver {
 public:
  virtual ~PlanObserver() = default;
  virtual void ran(const compiler::Plan& plan, const std::source_location& site, bool eager) = 0;
};
// Adds an observer for as long as the handle lives.
std::shared_ptr<void> observe_plans(PlanObserver* observer);

// Returns the runtime's backend, installing it in core on first use (core::backend() calls
// this through core::default_backend() when nothing is installed yet).
core::Backend& eager_backend();

// Executables of eager operations (one-equation programs).
detail::CacheCounters eager_cache_counters();
// Executables of traced programs run by pjit, over all live programs (capacity: per program).
detail::CacheCounters program_cache_counters();
// Empties both caches (JAX's jax.clear_caches).
void clear_compile_caches();

}  // namespace parax::runtime
