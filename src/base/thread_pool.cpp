#include "base/thread_pool.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <exception>
#include <memory>
#include <mutex>
#include <thread>
#include <vector>

namespace parax::base {
namespace {

int cores() {
  if (const char* env = std::getenv("PARAX_NUM_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return tbb::info::default_concurrency();
}

tbb::task_arena& arena() {
  static tbb::task_arena a(cores());
  return a;
}

// Work that waits on the disk runs on threads of its own, never on TBB's workers: a worker
// blocked in a read or a write is a core the computation beside it loses (a training step
// next to a background save ran a third slower). More threads than cores keep several
// requests in flight, as the disk needs for its full speed.
int io_threads() {
  if (const char* env = std::getenv("PARAX_IO_THREADS")) {
    int n = std::atoi(env);
    if (n > 0) return n;
  }
  return std::max(8, cores());
}

std::atomic<int> g_threads_used{0};

// Counts each thread the first time it runs work (one thread_local test per task).
void note_thread() {
  thread_local bool seen = false;
  if (!seen) {
    seen = true;
    g_threads_used.fetch_add(1);
  }
}

}  // namespace

int num_threads() { return arena().max_concurrency(); }
int threads_used() { return g_threads_used.load(); }

void parallel_for(int64_t n, const std::function<void(int64_t)>& body) {
  if (n <= 0) return;
  if (n == 1) {
    note_thread();
    body(0);
    return;
  }
  arena().execute([&] {
    tbb::parallel_for(int64_t(0), n, [&](int64_t i) {
      note_thread();
      body(i);
    });
  });
}

void parallel_for_io(int64_t n, const std::function<void(int64_t)>& body) {
  if (n <= 0) return;
  std::atomic<int64_t> next{0};
  std::mutex mutex;
  int64_t failed_at = n;  // the lowest index that raised, whose exception is rethrown
  std::exception_ptr failure;
  auto work = [&] {
    for (int64_t i = next++; i < n; i = next++) {
      try {
        body(i);
      } catch (...) {
        std::lock_guard lock(mutex);
        if (i < failed_at) {
          failed_at = i;
          failure = std::current_exception();
        }
        next = n;  // hands out no more
      }
    }
  };
  std::vector<std::thread> helpers;
  const int64_t extra = std::min<int64_t>(n, io_threads()) - 1;
  for (int64_t t = 0; t < extra; ++t) helpers.emplace_back(work);
  work();
  for (std::thread& t : helpers) t.join();
  if (failure) std::rethrow_exception(failure);
}

}  // namespace parax::base
