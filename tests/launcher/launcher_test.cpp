// parax-run runs small sh programs: its output, the environment each process sees, exit codes,
// and how a failed or interrupted job ends. Every run has a hard timeout after which the test
// kills parax-run and fails, so the suite never hangs.
#include <fcntl.h>
#include <poll.h>
#include <signal.h>
#include <sys/wait.h>
#include <unistd.h>

#include <gtest/gtest.h>

#include <algorithm>
#include <chrono>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

namespace {

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;

struct Result {
  int status = -1;  // the shell's convention: exit code, or 128+signal
  std::string out, err;
  double seconds = 0;
};

// parax-run started with its stdout and stderr on pipes.
struct Running {
  pid_t pid = -1;
  int out = -1, err = -1;
  Clock::time_point start;
};

Running spawn(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  int out[2], err[2];
  EXPECT_EQ(pipe2(out, O_CLOEXEC), 0);
  EXPECT_EQ(pipe2(err, O_CLOEXEC), 0);
  std::vector<std::string> argv_strings{PARAX_RUN_PATH};
  argv_strings.insert(argv_strings.end(), args.begin(), args.end());
  std::vector<char*> argv;
  for (std::string& s : argv_strings) argv.push_back(s.data());
  argv.push_back(nullptr);
  Running r{fork(), out[0], err[0], Clock::now()};
  if (r.pid == 0) {
    for (const std::string& e : env) putenv(const_cast<char*>(e.c_str()));
    dup2(out[1], 1);
    dup2(err[1], 2);
    execv(argv[0], argv.data());
    _exit(99);
  }
  close(out[1]);
  close(err[1]);
  return r;
}

void read_into(int& fd, std::string& text) {
  char buffer[65536];
  ssize_t n = read(fd, buffer, sizeof buffer);
  if (n > 0) {
    text.append(buffer, n);
  } else if (n == 0) {
    close(fd);
    fd = -1;
  }
}

// Collects the output until both pipes close, then the exit status; kills parax-run if it
// takes longer than timeout_seconds.
Result finish(Running r, double timeout_seconds = 20) {
  Result result;
  auto deadline = r.start + std::chrono::duration_cast<Clock::duration>(
                                std::chrono::duration<double>(timeout_seconds));
  while (r.out >= 0 || r.err >= 0) {
    if (Clock::now() >= deadline) {
      ADD_FAILURE() << "parax-run did not finish within " << timeout_seconds << " s";
      kill(r.pid, SIGKILL);
      break;
    }
    std::vector<pollfd> fds;
    for (int fd : {r.out, r.err}) {
      if (fd >= 0) fds.push_back({fd, POLLIN, 0});
    }
    poll(fds.data(), fds.size(), 100);
    for (const pollfd& f : fds) {
      if (f.revents == 0) continue;
      if (f.fd == r.out) read_into(r.out, result.out);
      if (f.fd == r.err) read_into(r.err, result.err);
    }
  }
  for (int fd : {r.out, r.err}) {
    if (fd >= 0) close(fd);
  }
  int status = 0;
  waitpid(r.pid, &status, 0);
  result.status = WIFSIGNALED(status) ? 128 + WTERMSIG(status) : WEXITSTATUS(status);
  result.seconds = std::chrono::duration<double>(Clock::now() - r.start).count();
  return result;
}

Result run(const std::vector<std::string>& args, const std::vector<std::string>& env = {}) {
  return finish(spawn(args, env));
}

std::vector<std::string> sorted_lines(const std::string& text) {
  std::vector<std::string> lines;
  std::istringstream in(text);
  for (std::string line; std::getline(in, line);) lines.push_back(line);
  std::sort(lines.begin(), lines.end());
  return lines;
}

// Zombies count as gone: in a container nobody may reap what parax-run left to init.
bool alive(pid_t pid) {
  std::ifstream stat("/proc/" + std::to_string(pid) + "/stat");
  std::string text;
  if (!std::getline(stat, text)) return false;
  size_t paren = text.rfind(')');
  return paren != std::string::npos && paren + 2 < text.size() && text[paren + 2] != 'Z';
}

// A scratch directory where the test programs leave their pids.
class Launcher : public ::testing::Test {
 protected:
  void SetUp() override {
    std::string pattern = (fs::temp_directory_path() / "parax-launcher-test.XXXXXX").string();
    ASSERT_NE(mkdtemp(pattern.data()), nullptr);
    dir_ = pattern;
  }

  void TearDown() override {
    for (pid_t pid : pids_) {
      if (alive(pid)) kill(pid, SIGKILL);
    }
    fs::remove_all(dir_);
  }

  std::string pid_file(const std::string& name) const { return (dir_ / name).string(); }

  // The pid the program wrote to pid_file(name), waiting up to 10 s for it.
  pid_t read_pid(const std::string& name) {
    auto deadline = Clock::now() + std::chrono::seconds(10);
    while (Clock::now() < deadline) {
      std::ifstream in(pid_file(name));
      pid_t pid = 0;
      if (in >> pid && pid > 0) {
        pids_.push_back(pid);
        return pid;
      }
      std::this_thread::sleep_for(std::chrono::milliseconds(20));
    }
    ADD_FAILURE() << "no pid in " << pid_file(name);
    return -1;
  }

  fs::path dir_;
  std::vector<pid_t> pids_;
};

TEST_F(Launcher, HelpPrintsUsage) {
  Result r = run({"--help"});
  EXPECT_EQ(r.status, 0);
  EXPECT_NE(r.out.find("Usage: parax-run -n N [--devices-per-process D]"), std::string::npos);
}

TEST_F(Launcher, BadUsageExitsWithTwo) {
  std::vector<std::vector<std::string>> cases{{},
                                              {"true"},
                                              {"-n", "2"},
                                              {"-n", "0", "true"},
                                              {"-n", "x", "true"},
                                              {"-n"},
                                              {"--bogus", "-n", "2", "true"},
                                              {"-n", "2", "--devices-per-process", "0", "true"},
                                              {"-n", "2", "--grace-seconds", "-1", "true"}};
  for (const auto& args : cases) {
    Result r = run(args);
    EXPECT_EQ(r.status, 2) << ::testing::PrintToString(args);
    EXPECT_NE(r.err.find("parax-run: "), std::string::npos) << r.err;
    EXPECT_NE(r.err.find("Usage:"), std::string::npos) << r.err;
  }
}

TEST_F(Launcher, PrefixesStdoutAndStderrLines) {
  Result r = run({"-n", "2", "sh", "-c",
                  "echo out $PARAX_PROCESS_ID; echo err $PARAX_PROCESS_ID >&2; echo two"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(sorted_lines(r.out),
            (std::vector<std::string>{"[0] out 0", "[0] two", "[1] out 1", "[1] two"}));
  EXPECT_EQ(sorted_lines(r.err), (std::vector<std::string>{"[0] err 0", "[1] err 1"}));
}

TEST_F(Launcher, OptionsEndAtTheProgramOrAtDoubleDash) {
  Result r = run({"-n1", "--", "sh", "-c", "printf '%s\\n' \"$*\"", "sh", "-n", "--help"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_EQ(r.out, "[0] -n --help\n");
}

TEST_F(Launcher, FlushesPartialLastLine) {
  Result r = run({"-n", "1", "sh", "-c", "printf 'a\\nno newline'; printf 'e' >&2"});
  EXPECT_EQ(r.status, 0);
  EXPECT_EQ(r.out, "[0] a\n[0] no newline\n");
  EXPECT_EQ(r.err, "[0] e\n");
}

TEST_F(Launcher, LinesOfDifferentProcessesNeverInterleave) {
  std::string payload(300, 'x');
  Result r =
      run({"-n", "4", "sh", "-c", "yes \"p$PARAX_PROCESS_ID " + payload + "\" | head -n 3000"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<int> counts(4);
  std::istringstream in(r.out);
  for (std::string line; std::getline(in, line);) {
    ASSERT_EQ(line.size(), 4 + 3 + payload.size()) << line.substr(0, 80);
    int i = line[1] - '0';
    ASSERT_TRUE(i >= 0 && i < 4) << line.substr(0, 80);
    ASSERT_EQ(line, "[" + std::to_string(i) + "] p" + std::to_string(i) + " " + payload);
    ++counts[i];
  }
  EXPECT_EQ(counts, (std::vector<int>{3000, 3000, 3000, 3000}));
}

TEST_F(Launcher, EachProcessSeesItsEnvironmentAndAPrivateStore) {
  Result r = run({"-n", "3", "--devices-per-process", "4", "sh", "-c",
                  "d=${PARAX_COORDINATOR_ADDRESS#file://}; echo $PARAX_PROCESS_ID "
                  "$PARAX_NUM_PROCESSES $PARAX_NUM_CPU_DEVICES $(stat -c %a \"$d\") "
                  "$PARAX_COORDINATOR_ADDRESS"},
                 {"PARAX_PROCESS_ID=9", "PARAX_NUM_CPU_DEVICES=7"});
  EXPECT_EQ(r.status, 0) << r.err;
  std::vector<std::string> lines = sorted_lines(r.out);
  ASSERT_EQ(lines.size(), 3u) << r.out;
  std::regex pattern(R"(\[(\d)\] (\d) 3 4 700 file://(/.+))");
  std::string address;
  for (int i = 0; i < 3; ++i) {
    std::smatch m;
    ASSERT_TRUE(std::regex_match(lines[i], m, pattern)) << lines[i];
    EXPECT_EQ(m[1], std::to_string(i));
    EXPECT_EQ(m[2], std::to_string(i));
    if (i == 0) address = m[3];
    EXPECT_EQ(m[3], address);
  }
  EXPECT_FALSE(fs::exists(address)) << "the store directory outlived the job";
}

TEST_F(Launcher, DevicesStayInheritedWithoutTheOption) {
  Result r =
      run({"-n", "1", "sh", "-c", "echo $PARAX_NUM_CPU_DEVICES"}, {"PARAX_NUM_CPU_DEVICES=6"});
  EXPECT_EQ(r.out, "[0] 6\n");
}

TEST_F(Launcher, ExitsWithTheFailingProcesssCode) {
  Result r = run({"-n", "3", "sh", "-c", "[ $PARAX_PROCESS_ID = 1 ] && exit 7; exit 0"});
  EXPECT_EQ(r.status, 7);
  EXPECT_NE(r.err.find("parax-run: process 1 exited with code 7"), std::string::npos) << r.err;
}

TEST_F(Launcher, SignalDeathExitsWith128PlusSignal) {
  Result r = run({"-n", "2", "sh", "-c", "[ $PARAX_PROCESS_ID = 0 ] && kill -KILL $$; exit 0"});
  EXPECT_EQ(r.status, 128 + SIGKILL);
  EXPECT_NE(r.err.find("parax-run: process 0 was killed by signal 9"), std::string::npos) << r.err;
}

TEST_F(Launcher, ProgramNotFoundExitsWith127) {
  for (std::string program : {"parax-no-such-program", "/nonexistent/parax-program"}) {
    Result r = run({"-n", "2", program});
    EXPECT_EQ(r.status, 127);
    EXPECT_NE(r.err.find("parax-run: " + program + ": program not found"), std::string::npos)
        << r.err;
    EXPECT_EQ(r.out, "");
  }
}

// Process 1 fails at once; process 0 would sleep 100 s. The job ends one grace period later.
TEST_F(Launcher, FailureEndsTheOthersAfterTheGracePeriod) {
  Result r = run(
      {"-n", "2", "--grace-seconds", "1", "sh", "-c",
       "[ $PARAX_PROCESS_ID = 1 ] && exit 3; echo $$ > " + pid_file("p0") + "; exec sleep 100"});
  EXPECT_EQ(r.status, 3);
  EXPECT_GE(r.seconds, 0.9);
  EXPECT_LT(r.seconds, 1 + 3);
  EXPECT_FALSE(alive(read_pid("p0")));
  EXPECT_NE(r.err.find("process 1 exited with code 3; ending the other processes in 1 s"),
            std::string::npos)
      << r.err;
}

TEST_F(Launcher, DefaultGracePeriodIsFiveSeconds) {
  Result r = run({"-n", "2", "sh", "-c", "[ $PARAX_PROCESS_ID = 1 ] && exit 3; sleep 100"});
  EXPECT_EQ(r.status, 3);
  EXPECT_GE(r.seconds, 4.9);
  EXPECT_LT(r.seconds, 5 + 3);
}

TEST_F(Launcher, ProcessIgnoringSigtermIsKilled) {
  Result r = run({"-n", "2", "--grace-seconds", "0.5", "sh", "-c",
                  "[ $PARAX_PROCESS_ID = 1 ] && exit 4; trap '' TERM; echo $$ > " + pid_file("p0") +
                      "; exec sleep 100"});
  EXPECT_EQ(r.status, 4);
  EXPECT_GE(r.seconds, 2.4);  // SIGKILL comes 2 s after SIGTERM
  EXPECT_LT(r.seconds, 0.5 + 3);
  EXPECT_FALSE(alive(read_pid("p0")));
}

TEST_F(Launcher, LeftoverGrandchildrenEndWithTheJob) {
  Result r = run({"-n", "2", "sh", "-c",
                  "sleep 100 & echo $! > " + pid_file("gc") + "$PARAX_PROCESS_ID; echo started"});
  EXPECT_EQ(r.status, 0) << r.err;
  EXPECT_LT(r.seconds, 3);
  EXPECT_EQ(sorted_lines(r.out), (std::vector<std::string>{"[0] started", "[1] started"}));
  pid_t gc0 = read_pid("gc0"), gc1 = read_pid("gc1");
  EXPECT_FALSE(alive(gc0));
  EXPECT_FALSE(alive(gc1));
}

TEST_F(Launcher, ForwardsSigtermToTheJob) {
  Running job = spawn(
      {"-n", "2", "sh", "-c", "echo $$ > " + pid_file("p") + "$PARAX_PROCESS_ID; exec sleep 100"});
  pid_t p0 = read_pid("p0"), p1 = read_pid("p1");
  kill(job.pid, SIGTERM);
  Result r = finish(job);
  EXPECT_EQ(r.status, 128 + SIGTERM);
  EXPECT_LT(r.seconds, 10);
  EXPECT_FALSE(alive(p0));
  EXPECT_FALSE(alive(p1));
  EXPECT_NE(r.err.find("was killed by signal 15"), std::string::npos) << r.err;
}

}  // namespace
