// jit's trace caches: their counters summed over every live jit object.
#pragma once

#include "base/lru_cache.h"

namespace parax::detail {

// Traces held by jit objects (capacity: per object).
CacheCounters jit_trace_counters();

}  // namespace parax::detail
