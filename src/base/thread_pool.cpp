#include "base/thread_pool.h"

#include <tbb/global_control.h>
#include <tbb/info.h>
#include <tbb/parallel_for.h>
#include <tbb/task_arena.h>

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

}  // namespace

int num_threads() { return arena().max_concurrency(); }

void parallel_for(int64_t n, const std::function<void(int64_t)>& body) {
  if (n <= 0) return;
  if (n == 1) {
    body(0);
    return;
  }
  arena().execute([&] {
    tbb::parallel_for(int64_t(0), n, [&](int64_t i) { body(i); });
  });
}

}  // namespace parax::base
