// The loop for work that waits on the disk: every index runs once, on threads other than the
// computation's pool, and the lowest failing index's exception is the one raised.
#include <gtest/gtest.h>

#include <atomic>
#include <chrono>
#include <mutex>
#include <set>
#include <stdexcept>
#include <string>
#include <thread>
#include <vector>

#include "base/thread_pool.h"

namespace parax::base {
namespace {

TEST(ParallelForIo, RunsEveryIndexOnce) {
  for (int64_t n : {0, 1, 2, 7, 100}) {
    std::vector<std::atomic<int>> runs(size_t(n + 1));
    parallel_for_io(n, [&](int64_t i) { ++runs[size_t(i)]; });
    for (int64_t i = 0; i < n; ++i) EXPECT_EQ(runs[size_t(i)].load(), 1) << i << " of " << n;
  }
}

// Tasks that wait (as on the disk) overlap: eight 50 ms waits finish well before 400 ms,
// however few cores the machine has.
TEST(ParallelForIo, WaitsOverlapBeyondTheCores) {
  std::mutex mutex;
  std::set<std::thread::id> threads;
  std::atomic<int> running{0}, most{0};
  parallel_for_io(8, [&](int64_t) {
    const int now = ++running;
    int seen = most.load();
    while (now > seen && !most.compare_exchange_weak(seen, now)) {
    }
    {
      std::lock_guard lock(mutex);
      threads.insert(std::this_thread::get_id());
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(50));
    --running;
  });
  EXPECT_EQ(threads.size(), 8u);
  EXPECT_GT(most.load(), num_threads());
}

TEST(ParallelForIo, RaisesTheLowestFailingIndex) {
  std::atomic<int> ran{0};
  try {
    parallel_for_io(64, [&](int64_t i) {
      ++ran;
      if (i == 5 || i == 3) {
        if (i == 5) std::this_thread::sleep_for(std::chrono::milliseconds(1));
        throw std::runtime_error("index " + std::to_string(i));
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(5));
    });
    FAIL() << "no exception";
  } catch (const std::runtime_error& e) {
    EXPECT_EQ(std::string(e.what()), "index 3");
  }
  EXPECT_LT(ran.load(), 64);  // no index starts after one raised
}

}  // namespace
}  // namespace parax::base
