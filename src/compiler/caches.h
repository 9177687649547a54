// The compile caches of eager execution (eager.cpp): their counters, and releasing what
// dead programs leave behind.
#pragma once

#include "base/lru_cache.h"

namespace parax::compiler {

// Executables of eager operations (one-equation programs).
detail::CacheCounters eager_cache_counters();
// Executables of traced programs run by pjit, over all live programs (capacity: per program).
detail::CacheCounters program_cache_counters();
// Drops the executables of pjit programs that no one holds any more (a jit object died).
void release_dead_programs();
// Empties both caches (JAX's jax.clear_caches).
void clear_compile_caches();

}  // namespace parax::compiler
