#include "base/thread_pool.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

#include <atomic>
#include <cstdlib>
#include <memory>

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

// Work that waits on the disk: its own arena, so that a thread waiting in parallel_for
// (a training step) never picks up one of its tasks and waits on the disk too.
tbb::task_arena& io_arena() {
  static tbb::task_arena a(cores());
  return a;
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
  io_arena().execute([&] { tbb::parallel_for(int64_t(0), n, [&](int64_t i) { body(i); }); });
}

}  // namespace parax::base
