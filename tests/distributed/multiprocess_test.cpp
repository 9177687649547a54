// Runs tests/distributed/mp_cases.cpp as 1 process x 8 devices and across processes, on
// Gloo (through parax-run) and MPI (through mpirun), and checks every process layout gives
// the same lines: the same bits in every shard, the same shardings and visualizations.
#include <gmock/gmock.h>
#include <gtest/gtest.h>

#include <chrono>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include <unistd.h>

namespace {

namespace fs = std::filesystem;

struct Run {
  int status = -1;
  std::set<std::string> lines;
  std::string log;
};

// Runs `command` (a shell command line) with PARAX_MP_OUT set to a fresh directory and a
// hard time limit; collects the lines every process wrote there.
Run run(const std::string& env, const std::string& command) {
  const fs::path dir = fs::temp_directory_path() /
                       ("parax-mp-" + std::to_string(::getpid()) + "-" + std::to_string(rand()));
  fs::create_directories(dir);
  const fs::path log = dir / "log";
  const std::string line = "env PARAX_MP_OUT=" + dir.string() + " " + env + " timeout -k 5 240 " +
                           command + " > " + log.string() + " 2>&1";
  Run r;
  r.status = std::system(line.c_str());
  for (const auto& entry : fs::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    std::ifstream in(entry.path());
    std::string l;
    if (name.rfind("out.", 0) == 0) {
      while (std::getline(in, l)) r.lines.insert(l);
    } else if (name == "log") {
      r.log.assign(std::istreambuf_iterator<char>(in), {});
    }
  }
  fs::remove_all(dir);
  return r;
}

const Run& baseline() {
  static const Run r = run("PARAX_NUM_CPU_DEVICES=8", PARAX_MP_CASES);
  return r;
}

void expect_same(const Run& got, const std::string& what) {
  const Run& want = baseline();
  ASSERT_EQ(want.status, 0) << "1x8 run failed:\n" << want.log;
  ASSERT_GT(want.lines.size(), 100u);
  ASSERT_EQ(got.status, 0) << what << " failed:\n" << got.log;
  int shown = 0;
  for (const std::string& l : want.lines) {
    if (!got.lines.count(l) && shown++ < 20) ADD_FAILURE() << what << " lacks: " << l;
  }
  for (const std::string& l : got.lines) {
    if (!want.lines.count(l) && shown++ < 20) ADD_FAILURE() << what << " has extra: " << l;
  }
  EXPECT_EQ(got.lines.size(), want.lines.size()) << what;
}

std::string parax_run(int n, int d) {
  return std::string(PARAX_RUN) + " -n " + std::to_string(n) + " --devices-per-process " +
         std::to_string(d) + " " + PARAX_MP_CASES;
}

std::string mpirun(int n, int d) {
  return std::string(PARAX_MPIEXEC) + " --oversubscribe --mca mpi_yield_when_idle 1 -n " +
         std::to_string(n) +
         " -x PARAX_CPU_COLLECTIVES=mpi -x PARAX_NUM_CPU_DEVICES=" + std::to_string(d) +
         " -x PARAX_MP_OUT " + PARAX_MP_CASES;
}

const char* kMpiEnv = "OMPI_ALLOW_RUN_AS_ROOT=1 OMPI_ALLOW_RUN_AS_ROOT_CONFIRM=1";

// parax-run --trace: each process writes its trace, merged into one timeline in which each
// process is a pid with its own devices' tracks, and collectives across processes report
// the time spent in the engine.
TEST(Multiprocess, GlooTracesMergeIntoOneTimelineWithAPidPerProcess) {
  const fs::path dir = fs::temp_directory_path() / ("parax-mp-trace-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  const auto r = run("", std::string(PARAX_RUN) + " -n 2 --devices-per-process 4 --trace " +
                             dir.string() + " " + PARAX_MP_CASES);
  ASSERT_EQ(r.status, 0) << r.log;
  std::ifstream in(dir / "trace.json");
  ASSERT_TRUE(in) << r.log;
  const nlohmann::json trace = nlohmann::json::parse(in);
  std::map<int, std::set<std::string>> tracks;  // pid -> its track names
  std::map<int, int64_t> engine_us;             // pid -> engine time in its collectives
  std::map<int, int> collectives;
  for (const auto& e : trace.at("traceEvents")) {
    const int pid = e.at("pid");
    if (e.at("ph") == "M" && e.at("name") == "thread_name") {
      tracks[pid].insert(e.at("args").at("name").get<std::string>());
    }
    if (e.at("ph") == "X" && e.at("cat") == "collective") {
      ++collectives[pid];
      engine_us[pid] += e.at("args").at("engine_us").get<int64_t>();
    }
  }
  ASSERT_EQ(tracks.size(), 2u);
  std::set<std::string> devices;
  for (int pid = 0; pid < 2; ++pid) {
    // Each process's own devices (process p's k-th is CPU p * 2048 + k, as JAX numbers them).
    for (int d = 0; d < 4; ++d) {
      const std::string name = "CPU " + std::to_string(2048 * pid + d);
      EXPECT_TRUE(tracks[pid].count(name)) << name;
      devices.insert(name);
    }
    EXPECT_GT(collectives[pid], 0) << pid;
    EXPECT_GT(engine_us[pid], 0) << pid;
  }
  EXPECT_EQ(collectives[0], collectives[1]);
  for (int pid = 0; pid < 2; ++pid) {
    for (const std::string& name : tracks[pid]) {
      if (name.rfind("CPU ", 0) == 0) EXPECT_TRUE(devices.count(name)) << pid << " " << name;
    }
  }
  fs::remove_all(dir);
}

TEST(Multiprocess, GlooTwoProcessesOfFourDevicesMatchOneOfEight) {
  expect_same(run("", parax_run(2, 4)), "gloo 2x4");
}

TEST(Multiprocess, GlooFourProcessesOfTwoDevicesMatchOneOfEight) {
  expect_same(run("", parax_run(4, 2)), "gloo 4x2");
}

TEST(Multiprocess, MpiTwoProcessesOfFourDevicesMatchOneOfEight) {
  expect_same(run(kMpiEnv, mpirun(2, 4)), "mpi 2x4");
}

TEST(Multiprocess, MpiFourProcessesOfTwoDevicesMatchOneOfEight) {
  expect_same(run(kMpiEnv, mpirun(4, 2)), "mpi 4x2");
}

// ---------------------------------------------------------------------------------------
// Failures become errors within the distributed timeout (3 s here), never hangs: cases of
// tests/distributed/mp_errors.cpp on 2 processes of 2 devices.

struct Launch {
  int status = -1;
  std::string out;
  double seconds = 0;
};

Launch launch(const std::string& which) {
  const fs::path log =
      fs::temp_directory_path() / ("parax-mp-errors-" + std::to_string(::getpid()) + "-" + which);
  const std::string line = std::string("env PARAX_DISTRIBUTED_TIMEOUT=3 timeout -k 5 60 ") +
                           PARAX_RUN + " -n 2 --devices-per-process 2 --grace-seconds 2 " +
                           PARAX_MP_ERRORS + " " + which + " > " + log.string() + " 2>&1";
  Launch r;
  const auto start = std::chrono::steady_clock::now();
  r.status = std::system(line.c_str());
  r.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::ifstream in(log);
  r.out.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove(log);
  return r;
}

using testing::HasSubstr;

TEST(MultiprocessErrors, ProcessesTracingDifferentProgramsRaiseOnEveryProcess) {
  const Launch r = launch("different_programs");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* p : {"[0] ", "[1] "}) {
    EXPECT_THAT(r.out, HasSubstr(std::string(p) +
                                 "caught DistributedError: processes traced different programs "
                                 "for the same call of 'f'"));
  }
}

TEST(MultiprocessErrors, CollectiveAfterShutdownRaises) {
  const Launch r = launch("after_shutdown");
  EXPECT_EQ(r.status, 0) << r.out;
  EXPECT_THAT(r.out, HasSubstr("[0] caught DistributedError: "));
  EXPECT_THAT(r.out, HasSubstr("not initialized (or was shut down)"));
}

TEST(MultiprocessErrors, PeerExitingBeforeACollectiveRaisesWithinTheTimeout) {
  const Launch r = launch("peer_exits");
  EXPECT_NE(r.status, 0) << r.out;  // process 1 exited with 7
  EXPECT_THAT(r.out, HasSubstr("[0] caught DistributedError: ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("all-reduce(sum)")) << r.out;  // names the collective
  EXPECT_THAT(r.out, HasSubstr("process 1")) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

TEST(MultiprocessErrors, StalledPeerRaisesWithinTheTimeout) {
  const Launch r = launch("peer_stalls");
  EXPECT_NE(r.status, 0) << r.out;  // process 0 exits 3 once it caught the error
  EXPECT_THAT(r.out, HasSubstr("[0] caught DistributedError: ")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("all-reduce(sum)")) << r.out;
  EXPECT_THAT(r.out, HasSubstr("within 3 s")) << r.out;
  EXPECT_LT(r.seconds, 20) << r.out;
}

TEST(MultiprocessErrors, ReadingANonAddressableArrayRaisesAsJaxDoes) {
  const Launch r = launch("read_non_addressable");
  EXPECT_EQ(r.status, 0) << r.out;
  for (const char* p : {"[0] ", "[1] "}) {
    EXPECT_THAT(r.out, HasSubstr(std::string(p) + "Array(shape=(16,), dtype=float32)\n"));
    EXPECT_THAT(r.out, HasSubstr(std::string(p) +
                                 "caught Error: Fetching value for `parax::Array` that spans "
                                 "non-addressable (non process local) devices is not possible."));
  }
}

}  // namespace
