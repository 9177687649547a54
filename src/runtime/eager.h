// The runtime's Backend for core (core/backend.h): eager execution and pjit calls on
// concrete arrays, compiled once per signature (compiler::compile) and run as LoadedPlans,
// with their caches; host data made into arrays; data moved between layouts.
#pragma once

#include "base/lru_cache.h"
#include "core/backend.h"

namespace parax::runtime {

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
