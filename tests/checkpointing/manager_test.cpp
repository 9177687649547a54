// CheckpointManager: steps saved every few steps and the newest kept, Orbax's layout of
// steps, a background save that overlaps a training step, and what is not a step.
#include <gtest/gtest.h>

#include <condition_variable>
#include <filesystem>
#include <fstream>
#include <mutex>

#include <parax/checkpointing.h>
#include <parax/parax.h>

#include "checkpointing/internal.h"
#include "support/checkpoint_data.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace fs = std::filesystem;
namespace jnp = numpy;
namespace ckpt = checkpointing;

using testing_support::TempDir;

using State = std::map<std::string, Array>;

State state_at(int step) {
  const NamedSharding s(make_mesh({4, 2}, {"a", "b"}), P("a", "b"));
  return {{"w", device_put(jnp::full({8, 4}, float(step)), s)}, {"step", jnp::asarray(step)}};
}

int step_of(const State& s) { return s.at("step").item<int>(); }

TEST(CheckpointManager, SavesEveryIntervalAndKeepsTheNewest) {
  TempDir tmp;
  ckpt::CheckpointManager mgr(tmp.str(), {.max_to_keep = 2, .save_interval_steps = 2});
  EXPECT_EQ(mgr.latest_step(), std::nullopt);
  std::vector<int> saved;
  for (int step = 0; step <= 7; ++step) {
    if (mgr.save(step, state_at(step))) saved.push_back(step);
  }
  mgr.wait_until_finished();
  EXPECT_EQ(saved, (std::vector<int>{0, 2, 4, 6}));
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{4, 6}));
  EXPECT_EQ(mgr.latest_step(), 6);
  EXPECT_FALSE(mgr.should_save(6));  // not newer than the latest
  EXPECT_TRUE(mgr.should_save(8));
  EXPECT_TRUE(mgr.save(7, state_at(7), /*force=*/true));
  mgr.wait_until_finished();
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{6, 7}));
  const State back = mgr.restore(6, state_at(0));
  EXPECT_EQ(step_of(back), 6);
  EXPECT_EQ(back.at("w").to_vector<float>(), std::vector<float>(32, 6.0f));
  EXPECT_EQ(back.at("w").sharding(), state_at(0).at("w").sharding());
  EXPECT_THROW_MSG(
      mgr.restore(4, state_at(0)), ValueError,
      "CheckpointManager::restore: no step 4 in " + tmp.str() + " (its steps: [6, 7])");
  // Orbax's layout: the item "default" in each step, the step's metadata beside it
  EXPECT_TRUE(fs::exists(tmp / "7/default/_METADATA"));
  EXPECT_TRUE(fs::exists(tmp / "7/default/w/c/0/0"));
  EXPECT_TRUE(fs::exists(tmp / "7/commit_success.txt"));
  std::ifstream meta(tmp / "7/_CHECKPOINT_METADATA");
  const std::string text(std::istreambuf_iterator<char>(meta), {});
  EXPECT_NE(text.find(R"("item_handlers":{"default":"orbax.checkpoint._src.handlers.)"
                      R"(pytree_checkpoint_handler.PyTreeCheckpointHandler"})"),
            std::string::npos)
      << text;
}

TEST(CheckpointManager, ASaveInFlightOverlapsATrainingStep) {
  TempDir tmp;
  std::mutex m;
  std::condition_variable cv;
  bool writing = false, stepped = false;
  // the first chunk of the save waits until the training step below has run
  ckpt::set_save_observer([&](std::string_view stage) {
    std::unique_lock lock(m);
    if (stage != "chunk" || writing) return;
    writing = true;
    cv.notify_all();
    cv.wait(lock, [&] { return stepped; });
  });
  ckpt::CheckpointManager mgr(tmp.str());
  State s = state_at(1);
  ASSERT_TRUE(mgr.save(1, s));  // returns with the save under way
  {
    std::unique_lock lock(m);
    cv.wait(lock, [&] { return writing; });
  }
  auto train = jit([](const Array& w) { return w * 2.0f + 1.0f; });
  s["w"] = train(s.at("w"));  // runs while the save is stopped at its first chunk
  EXPECT_EQ(s.at("w").to_vector<float>()[0], 3.0f);
  EXPECT_EQ(mgr.latest_step(), std::nullopt);  // nothing is committed yet
  {
    std::lock_guard lock(m);
    stepped = true;
  }
  cv.notify_all();
  mgr.wait_until_finished();
  ckpt::set_save_observer(nullptr);
  EXPECT_EQ(mgr.latest_step(), 1);
  EXPECT_EQ(mgr.restore(1, state_at(0)).at("w").to_vector<float>(), std::vector<float>(32, 1.0f));
}

TEST(CheckpointManager, UnfinishedStepsAreIgnoredAndCleared) {
  TempDir tmp;
  {
    ckpt::CheckpointManager mgr(tmp.str(), {.enable_async_checkpointing = false});
    mgr.save(3, state_at(3));
  }
  fs::create_directories(tmp / "5.orbax-checkpoint-tmp/default");
  fs::create_directories(tmp / "notes");
  ckpt::CheckpointManager mgr(tmp.str());
  EXPECT_FALSE(fs::exists(tmp / "5.orbax-checkpoint-tmp"));
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{3}));
  EXPECT_EQ(step_of(mgr.restore(3, state_at(0))), 3);
  EXPECT_THROW_MSG(ckpt::CheckpointManager(tmp.str(), {.save_interval_steps = 0}), ValueError,
                   "CheckpointManager: save_interval_steps must be at least 1, got 0");
}

TEST(CheckpointManager, ABackgroundFailureIsRaisedByTheNextCall) {
  TempDir tmp;
  ckpt::set_save_observer([](std::string_view stage) {
    if (stage == "chunk") throw RuntimeError("disk on fire");
  });
  ckpt::CheckpointManager mgr(tmp.str());
  mgr.save(1, state_at(1));
  EXPECT_THROW_MSG(mgr.wait_until_finished(), RuntimeError, "disk on fire");
  ckpt::set_save_observer(nullptr);
  EXPECT_EQ(mgr.latest_step(), std::nullopt);
  mgr.save(2, state_at(2));
  mgr.wait_until_finished();
  EXPECT_EQ(mgr.all_steps(), (std::vector<int64_t>{2}));
}

}  // namespace
}  // namespace parax
