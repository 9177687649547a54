// The one pool of worker threads, sized to the machine's cores. Every parallel loop in
// parax runs here, so many virtual devices never mean more busy threads than cores.
#pragma once

#include <cstdint>
#include <functional>

namespace parax::base {

// Returns the number of worker threads (the cores available to this process).
int num_threads();
// Returns how many distinct threads have run parallel_for work so far (for tests: never
// more than num_threads(), however many devices share the pool).
int threads_used();
// Runs body(i) for i in [0, n), in parallel on the pool; returns when all are done.
// Exceptions from body propagate to the caller.
void parallel_for(int64_t n, const std::function<void(int64_t)>& body);
// As parallel_for, for work that waits on the disk (checkpoints): on threads of its own
// (PARAX_IO_THREADS, at least 8), taken in index order, so that a computation running
// alongside never loses a pool thread to a wait. The exception of the lowest index that
// raised propagates, and no index is started after one raised.
void parallel_for_io(int64_t n, const std::function<void(int64_t)>& body);

}  // namespace parax::base
