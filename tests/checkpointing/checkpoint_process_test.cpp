// Checkpoints across processes: a child process killed with SIGKILL at points of a save
// always leaves a restorable checkpoint (the previous one, or the new one once renamed);
// and a checkpoint written by 2 processes x 4 devices restores onto 1 x 8 (here) and
// 4 x 2 (through parax-run), the same values in every shard.
#include <gtest/gtest.h>

#include <chrono>
#include <filesystem>
#include <fstream>
#include <set>
#include <sstream>

#include <parax/checkpointing.h>
#include <parax/parax.h>

namespace parax {
namespace {

namespace fs = std::filesystem;
namespace jnp = numpy;

struct Outcome {
  int status = -1;
  std::string out;
};

Outcome run(const std::string& command) {
  static int n = 0;
  const fs::path log = fs::temp_directory_path() /
                       ("parax-ckpt-log-" + std::to_string(::getpid()) + "-" + std::to_string(n++));
  const std::string line = "timeout -k 5 120 " + command + " > " + log.string() + " 2>&1";
  Outcome r;
  r.status = std::system(line.c_str());
  std::ifstream in(log);
  r.out.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove(log);
  return r;
}

std::string child(const std::string& args) {
  return std::string(PARAX_CHECKPOINT_CHILD) + " " + args;
}

std::map<std::string, Array> target() {
  return {{"w", ShapeDtypeStruct({16, 4}, DType::float32)},
          {"b", ShapeDtypeStruct({8}, DType::int32)},
          {"step", ShapeDtypeStruct({}, DType::int32)}};
}

int restored_version(const std::string& dir) {
  const std::map<std::string, Array> s = checkpointing::restore(dir, target());
  const int version = s.at("step").item<int>();
  // every array is of the same version: no mix of an old and a new save
  EXPECT_EQ(s.at("b").to_vector<int>(), std::vector<int>(8, version));
  EXPECT_EQ(s.at("w").to_vector<float>()[0], float(version));
  return version;
}

TEST(CheckpointCrash, KilledSaveLeavesTheLastCommittedCheckpoint) {
  const fs::path root =
      fs::temp_directory_path() / ("parax-ckpt-crash-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string dir = (root / "ckpt").string();
  ASSERT_EQ(run(child("save " + dir + " 1")).status, 0);
  ASSERT_EQ(restored_version(dir), 1);
  int version = 1;
  struct Kill {
    const char* stage;
    int n;
    bool committed;  // the new checkpoint is in place when the kill comes
  };
  for (const Kill k : {Kill{"chunk", 1, false}, Kill{"chunk", 5, false}, Kill{"metadata", 1, false},
                       Kill{"committed", 1, true}}) {
    const int next = version + 1;
    const Outcome r = run(child("save " + dir + " " + std::to_string(next) + " " + k.stage + " " +
                                std::to_string(k.n)));
    EXPECT_NE(r.status, 0) << k.stage << ": the child was not killed\n" << r.out;
    if (k.committed) version = next;
    EXPECT_EQ(restored_version(dir), version) << "killed at " << k.stage << " " << k.n;
  }
  // the next save clears what the killed one left and commits
  ASSERT_EQ(run(child("save " + dir + " 9")).status, 0);
  EXPECT_EQ(restored_version(dir), 9);
  EXPECT_FALSE(fs::exists(dir + ".orbax-checkpoint-tmp"));
  fs::remove_all(root);
}

TEST(CheckpointProcesses, TwoByFourRestoresOntoOneByEightAndFourByTwo) {
  const fs::path root = fs::temp_directory_path() / ("parax-ckpt-mp-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string dir = (root / "ckpt").string();
  const std::string launch = std::string("env PARAX_DISTRIBUTED_TIMEOUT=30 ") + PARAX_RUN;
  const Outcome saved = run(launch + " -n 2 --devices-per-process 4 " + child("mp-save " + dir));
  ASSERT_EQ(saved.status, 0) << saved.out;
  const Array want = jnp::arange(32.0).astype(DType::float32).reshape({8, 4});
  for (const char* spec : {"ab", "ba", "a-", "-a", "r"}) {
    for (int64_t rows : {4, 2}) {
      // here: one process of 8 devices
      const NamedSharding s(make_mesh({rows, 8 / rows}, {"a", "b"}),
                            std::string(spec) == "ab"   ? P("a", "b")
                            : std::string(spec) == "ba" ? P("b", "a")
                            : std::string(spec) == "a-" ? P("a", None)
                            : std::string(spec) == "-a" ? P(None, "a")
                                                        : P());
      const Array x =
          checkpointing::restore(
              dir, std::map<std::string, Array>{{"x", ShapeDtypeStruct({8, 4}, DType::float32, s)}})
              .at("x");
      EXPECT_EQ(x.to_vector<float>(), want.to_vector<float>()) << spec;
      std::set<std::string> local;
      for (const Shard& shard : x.addressable_shards()) {
        std::ostringstream line;
        line << "shard " << index_str(shard.index) << " ";
        for (float v : shard.data.to_vector<float>()) line << v << ",";
        local.insert(line.str());
      }
      // there: 4 processes of 2 devices, each printing its shards
      const Outcome r = run(launch + " -n 4 --devices-per-process 2 " +
                            child("mp-restore " + dir + " " + std::to_string(rows) + " " + spec));
      ASSERT_EQ(r.status, 0) << r.out;
      std::set<std::string> remote;
      std::istringstream lines(r.out);
      for (std::string line; std::getline(lines, line);) {
        const size_t at = line.find("shard ");
        if (at != std::string::npos) remote.insert(line.substr(at));
      }
      EXPECT_EQ(remote, local) << spec << " rows " << rows << "\n" << r.out;
    }
  }
  fs::remove_all(root);
}

TEST(CheckpointProcesses, PreemptionNoticeStopsEveryProcessAtTheSameStep) {
  const Outcome r = run(std::string("env PARAX_DISTRIBUTED_TIMEOUT=30 ") + PARAX_RUN +
                        " -n 2 --devices-per-process 2 " + child("preempt 5"));
  ASSERT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[0] preempted at step 5"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] preempted at step 5"), std::string::npos) << r.out;
}

// A process that dies mid-save makes the others raise DistributedError within the
// distributed timeout (3 s here), and nothing is committed.
TEST(CheckpointProcesses, AProcessDyingMidSaveMakesTheOthersRaise) {
  const fs::path root =
      fs::temp_directory_path() / ("parax-ckpt-die-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const std::string dir = (root / "ckpt").string();
  const auto start = std::chrono::steady_clock::now();
  const Outcome r =
      run(std::string("env PARAX_DISTRIBUTED_TIMEOUT=3 ") + PARAX_RUN +
          " -n 2 --devices-per-process 4 --grace-seconds 30 " + child("mp-die " + dir));
  const double seconds =
      std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  EXPECT_NE(r.status, 0) << r.out;  // process 1 was killed
  EXPECT_NE(r.out.find("[0] caught DistributedError: "), std::string::npos) << r.out;
  EXPECT_LT(seconds, 25.0) << r.out;
  EXPECT_FALSE(fs::exists(dir));
  fs::remove_all(root);
}

// A background save that fails on the process that commits is not committed, and every
// process hears of it from wait_until_finished.
TEST(CheckpointProcesses, AFailedBackgroundSaveIsCommittedNowhere) {
  const fs::path root =
      fs::temp_directory_path() / ("parax-ckpt-mgr-" + std::to_string(::getpid()));
  fs::remove_all(root);
  const Outcome r =
      run(std::string("env PARAX_DISTRIBUTED_TIMEOUT=10 ") + PARAX_RUN +
          " -n 2 --devices-per-process 4 " + child("mp-manager-fail " + (root / "m").string()));
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_NE(r.out.find("[0] raised disk on fire"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] raised checkpointing: process 0 failed while writing"),
            std::string::npos)
      << r.out;
  EXPECT_NE(r.out.find("[0] steps 0"), std::string::npos) << r.out;
  EXPECT_NE(r.out.find("[1] steps 0"), std::string::npos) << r.out;
  fs::remove_all(root);
}

}  // namespace
}  // namespace parax
