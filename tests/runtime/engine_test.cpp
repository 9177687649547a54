// The engines between processes (Gloo with each store, MPI) and distributed::initialize.
// In parent mode this binary runs GoogleTest, each test starting the binary again as worker
// processes (`--child <case>`, directly or under mpirun) with a hard deadline; a worker
// prints "[p] OK" when its checks pass and "[p] FAIL: ..." otherwise.
#include <fcntl.h>
#include <gtest/gtest.h>
#include <netinet/in.h>
#include <signal.h>
#include <sys/socket.h>
#include <sys/wait.h>
#include <unistd.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <functional>
#include <iostream>
#include <map>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "base/dtype_dispatch.h"
#include "parax/config.h"
#include "parax/device.h"
#include "parax/distributed.h"
#include "parax/errors.h"
#include "runtime/engine.h"
#include "runtime/reduce.h"
#include "sharding/topology.h"

namespace fs = std::filesystem;
using Clock = std::chrono::steady_clock;
using parax::DType;
using parax::runtime::Engine;
using parax::runtime::ReduceOp;

namespace {

// ---------------------------------------------------------------------------------------
// Worker side.

int g_pid = 0;  // this worker's process id, for its output lines

struct Failure : std::runtime_error {
  using std::runtime_error::runtime_error;
};

#define EXPECT_WORKER(cond, msg)      \
  do {                                \
    if (!(cond)) {                    \
      std::ostringstream os_;         \
      os_ << __LINE__ << ": " << msg; \
      throw Failure(os_.str());       \
    }                                 \
  } while (0)

std::vector<int> range(int n, int start = 0, int step = 1) {
  std::vector<int> v;
  for (int i = 0; i < n; ++i) v.push_back(start + i * step);
  return v;
}

// Element i of member p's operand: small values whose sums and products are exact, a NaN
// on member 0 for the floating max/min, alternating truth values for bool.
std::vector<char> operand(DType dtype, int p, int64_t n) {
  std::vector<char> bytes(size_t(n * parax::dtype_itemsize(dtype)));
  parax::dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    T* t = reinterpret_cast<T*>(bytes.data());
    for (int64_t i = 0; i < n; ++i) {
      double v = double((p * 7 + i * 3) % 11) - (parax::is_unsigned_integer(dtype) ? 0 : 3);
      if (parax::is_floating(dtype)) v += 0.5;
      if (parax::is_floating(dtype) && p == 0 && i == 4) v = std::nan("");
      if (dtype == DType::bool_) v = (p + i) % 2;
      t[i] = parax::scalar_cast<T>(v);
    }
  });
  return bytes;
}

void check_all_reduce(Engine& e, std::span<const int> group) {
  const int64_t n = 7;
  for (int d = 0; d < parax::kNumDTypes; ++d) {
    const DType dtype = DType(d);
    for (int o = 0; o < 6; ++o) {
      const ReduceOp op = ReduceOp(o);
      const bool bitwise = op == ReduceOp::and_ || op == ReduceOp::or_;
      if (bitwise && parax::is_floating(dtype)) continue;
      std::vector<char> expected = operand(dtype, group[0], n);
      for (size_t k = 1; k < group.size(); ++k) {
        std::vector<char> theirs = operand(dtype, group[k], n);
        parax::runtime::combine(expected.data(), expected.data(), theirs.data(), n, dtype, op);
      }
      std::vector<char> data = operand(dtype, g_pid, n);
      e.all_reduce(group, data.data(), n, dtype, op, "test all_reduce");
      EXPECT_WORKER(data == expected,
                    "all_reduce " << parax::dtype_name(dtype) << " op " << o << " differs");
    }
  }
}

void check_all_gather(Engine& e, std::span<const int> group) {
  const size_t bytes = 12;
  std::vector<char> in(bytes, char('a' + g_pid));
  std::vector<char> out(bytes * group.size());
  e.all_gather(group, in.data(), bytes, out.data(), "test all_gather");
  for (size_t k = 0; k < group.size(); ++k) {
    for (size_t b = 0; b < bytes; ++b) {
      EXPECT_WORKER(out[k * bytes + b] == char('a' + group[k]), "all_gather slot " << k);
    }
  }
  // In place: this member's part is already in its slot of the output.
  std::vector<char> inplace(bytes * group.size(), 0);
  const size_t me = size_t(std::find(group.begin(), group.end(), g_pid) - group.begin());
  std::memcpy(inplace.data() + me * bytes, in.data(), bytes);
  e.all_gather(group, inplace.data() + me * bytes, bytes, inplace.data(), "test in place");
  EXPECT_WORKER(inplace == out, "in-place all_gather differs");
}

void check_broadcast(Engine& e, std::span<const int> group, int root) {
  std::vector<char> data(100, char(g_pid == root ? 42 : 0));
  e.broadcast(group, root, data.data(), data.size(), "test broadcast");
  for (char c : data) EXPECT_WORKER(c == 42, "broadcast from " << root);
}

// A ring (every process sends to the next) and, in the same call, a message to itself.
void check_exchange_ring(Engine& e, int n) {
  const int next = (g_pid + 1) % n, prev = (g_pid + n - 1) % n;
  std::vector<int> out(16, g_pid), in(16, -1), self_out(3, 100 + g_pid), self_in(3, -1);
  std::vector<Engine::Message> sends = {{next, out.data(), out.size() * 4},
                                        {g_pid, self_out.data(), 12}};
  std::vector<Engine::Message> recvs = {{prev, in.data(), in.size() * 4},
                                        {g_pid, self_in.data(), 12}};
  e.exchange(sends, recvs, "test exchange ring");
  for (int v : in) EXPECT_WORKER(v == prev, "ring exchange got " << v);
  for (int v : self_in) EXPECT_WORKER(v == 100 + g_pid, "self message got " << v);
}

// Pairs (0,1), (2,3) send two messages each way at once; they arrive in order.
void check_exchange_pairs(Engine& e) {
  const int partner = g_pid ^ 1;
  std::vector<char> small_out(8, char(g_pid)), big_out(100000, char(10 + g_pid));
  std::vector<char> small_in(8), big_in(100000);
  std::vector<Engine::Message> sends = {{partner, small_out.data(), 8},
                                        {partner, big_out.data(), big_out.size()}};
  std::vector<Engine::Message> recvs = {{partner, small_in.data(), 8},
                                        {partner, big_in.data(), big_in.size()}};
  e.exchange(sends, recvs, "test exchange pairs");
  for (char c : small_in) EXPECT_WORKER(c == char(partner), "pair exchange (small)");
  for (char c : big_in) EXPECT_WORKER(c == char(10 + partner), "pair exchange (big)");
}

void check_topology(int n, int per_process) {
  const std::vector<parax::Device> all = parax::devices();
  EXPECT_WORKER(int(all.size()) == n * per_process, "devices() has " << all.size());
  for (int p = 0; p < n; ++p) {
    for (int k = 0; k < per_process; ++k) {
      const parax::Device& d = all[size_t(p * per_process + k)];
      EXPECT_WORKER(d.id() == p * 2048 + k && d.process_index() == p, "device " << d);
    }
  }
  const std::vector<parax::Device> local = parax::local_devices();
  EXPECT_WORKER(int(local.size()) == per_process, "local_devices() has " << local.size());
  EXPECT_WORKER(local[0].id() == g_pid * 2048, "first local device " << local[0]);
  EXPECT_WORKER(parax::process_index() == g_pid, "process_index() " << parax::process_index());
  EXPECT_WORKER(parax::process_count() == n, "process_count() " << parax::process_count());
}

void case_collectives(int per_process) {
  parax::distributed::initialize();
  Engine* e = parax::runtime::engine();
  EXPECT_WORKER(e != nullptr, "no engine after initialize");
  g_pid = e->process_index();
  const int n = e->process_count();
  check_topology(n, per_process);
  const std::vector<int> all = range(n);
  check_all_gather(*e, all);
  check_broadcast(*e, all, n - 1);
  check_exchange_ring(*e, n);
  check_exchange_pairs(*e);
  e->barrier(all, "test barrier");
  if (n == 2) check_all_reduce(*e, all);
  if (n == 4) {
    const std::vector<int> mine = range(2, g_pid % 2, 2);  // {0, 2} or {1, 3}
    check_all_reduce(*e, mine);
    check_all_gather(*e, mine);
    check_broadcast(*e, mine, mine[1]);
    e->barrier(mine, "test sub-group barrier");
    check_all_gather(*e, all);  // the whole group again, after the sub-groups
  }
  parax::distributed::shutdown();
  EXPECT_WORKER(parax::runtime::engine() == nullptr, "engine after shutdown");
  EXPECT_WORKER(!parax::distributed::is_initialized(), "initialized after shutdown");
}

template <class E, class F>
std::string expect_error(F&& f) {
  try {
    f();
  } catch (const E& e) {
    return e.what();
  } catch (const std::exception& e) {
    throw Failure(std::string("wrong exception: ") + e.what());
  }
  throw Failure("no exception");
}

void case_second_initialize() {
  parax::distributed::initialize();
  g_pid = parax::runtime::engine()->process_index();
  std::string msg = expect_error<parax::RuntimeError>([] { parax::distributed::initialize(); });
  EXPECT_WORKER(msg.find("only be called once") != msg.npos, msg);
  parax::distributed::shutdown();
  parax::distributed::shutdown();  // a no-op
}

// The fixed spelling with explicit fields, from variables parax does not read itself.
void case_explicit_options() {
  g_pid = std::atoi(std::getenv("TEST_ID"));
  parax::distributed::initialize({.coordinator_address = std::getenv("TEST_ADDRESS"),
                                  .num_processes = std::atoi(std::getenv("TEST_N")),
                                  .process_id = g_pid});
  EXPECT_WORKER(parax::process_index() == g_pid, "process_index() " << parax::process_index());
  EXPECT_WORKER(parax::runtime::engine()->name() == "gloo", "not gloo");
  parax::distributed::shutdown();
}

void case_after_devices() {
  (void)parax::devices();
  std::string msg = expect_error<parax::RuntimeError>([] { parax::distributed::initialize(); });
  EXPECT_WORKER(msg.find("before any parax computation") != msg.npos, msg);
}

void case_bad_options() {
  std::string msg = expect_error<parax::ValueError>([] {
    parax::distributed::initialize(
        {.coordinator_address = "127.0.0.1:1", .num_processes = 2, .process_id = 5});
  });
  EXPECT_WORKER(msg.find("process_id 5 is outside [0, 2)") != msg.npos, msg);
  msg = expect_error<parax::ValueError>([] {
    parax::distributed::initialize(
        {.num_processes = 1, .process_id = 0, .local_device_ids = {0, 0}});
  });
  EXPECT_WORKER(msg.find("twice") != msg.npos, msg);
  msg = expect_error<parax::ValueError>(
      [] { parax::config::update("jax_cpu_collectives_implementation", "nccl"); });
  EXPECT_WORKER(msg.find("'gloo', 'mpi'") != msg.npos, msg);
  // One process selecting 2 of its 4 devices: a run of one, no engine.
  parax::distributed::initialize({.num_processes = 1, .process_id = 0, .local_device_ids = {3, 1}});
  EXPECT_WORKER(parax::runtime::engine() == nullptr && parax::local_devices().size() == 2,
                "one process with 2 selected devices");
  parax::distributed::shutdown();
}

// `expected` must appear in the DistributedError, raised within the timeout and a margin.
void expect_distributed_error(const std::function<void()>& f, const std::string& expected) {
  const auto start = Clock::now();
  std::string msg = expect_error<parax::DistributedError>(f);
  const double secs = std::chrono::duration<double>(Clock::now() - start).count();
  const double limit = double(parax::config::read_int("parax_distributed_timeout")) + 4;
  std::cout << "[" << g_pid << "] DistributedError after " << secs << " s: " << msg << std::endl;
  EXPECT_WORKER(msg.find(expected) != msg.npos, "expected '" << expected << "' in: " << msg);
  EXPECT_WORKER(secs < limit, "took " << secs << " s");
}

void case_mismatch() {
  expect_distributed_error([] { parax::distributed::initialize(); }, "num_processes=");
}

void case_rendezvous_timeout() {
  expect_distributed_error([] { parax::distributed::initialize(); }, "process 1 did not arrive");
}

// Process 1 leaves (exits, or stops) just before a collective the others are in.
void case_peer_fails(bool stop) {
  parax::distributed::initialize();
  Engine* e = parax::runtime::engine();
  g_pid = e->process_index();
  const std::vector<int> all = range(e->process_count());
  e->barrier(all, "warm-up barrier");
  if (g_pid == 1) {
    std::cout << "[1] leaving" << std::endl;
    if (stop) raise(SIGSTOP);
    _exit(0);
  }
  std::vector<float> data(1000, 1.0f);
  const std::string expected = e->process_count() == 2 ? "process 1" : "psum";
  expect_distributed_error(
      [&] {
        // A few rounds: the first may still complete on data already in flight.
        for (int i = 0; i < 3; ++i) e->all_gather(all, data.data(), 16, data.data() + 100, "psum");
      },
      expected);
  // The engine is poisoned now: immediately another DistributedError.
  const auto start = Clock::now();
  expect_error<parax::DistributedError>([&] { e->barrier(all, "after"); });
  EXPECT_WORKER(Clock::now() - start < std::chrono::seconds(1), "poisoned engine waited");
  // shutdown still leaves the run (reporting the failure) without waiting for the peer.
  expect_error<parax::DistributedError>([] { parax::distributed::shutdown(); });
  EXPECT_WORKER(Clock::now() - start < std::chrono::seconds(1), "shutdown waited");
  EXPECT_WORKER(!parax::distributed::is_initialized() && !parax::runtime::engine(),
                "still initialized after shutdown");
}

int worker_main(const std::string& name, int per_process) {
  const std::map<std::string, std::function<void()>> cases = {
      {"collectives", [&] { case_collectives(per_process); }},
      {"second_initialize", case_second_initialize},
      {"after_devices", case_after_devices},
      {"explicit_options", case_explicit_options},
      {"bad_options", case_bad_options},
      {"mismatch", case_mismatch},
      {"rendezvous_timeout", case_rendezvous_timeout},
      {"peer_exit", [] { case_peer_fails(false); }},
      {"peer_stop", [] { case_peer_fails(true); }},
  };
  try {
    auto it = cases.find(name);
    if (it == cases.end()) throw Failure("unknown case " + name);
    it->second();
  } catch (const std::exception& e) {
    std::cout << "[" << g_pid << "] FAIL: " << e.what() << std::endl;
    return 1;
  }
  std::cout << "[" << g_pid << "] OK" << std::endl;
  return 0;
}

// ---------------------------------------------------------------------------------------
// Parent side.

std::string self_path() { return fs::read_symlink("/proc/self/exe").string(); }

fs::path scratch_dir() {
  fs::path dir =
      fs::temp_directory_path() / ("parax_engine_test_" + std::to_string(getpid()) + "_" +
                                   std::to_string(Clock::now().time_since_epoch().count()));
  fs::create_directories(dir);
  return dir;
}

// A port that was free a moment ago (the servers under test bind it next).
int free_port() {
  int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  bind(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr);
  socklen_t len = sizeof addr;
  getsockname(fd, reinterpret_cast<sockaddr*>(&addr), &len);
  close(fd);
  return ntohs(addr.sin_port);
}

struct Child {
  std::vector<std::string> argv;
  std::vector<std::pair<std::string, std::string>> env;
  bool hangs = false;  // killed once the others are done (a stopped process)
  fs::path log;
  pid_t pid = -1;
  int status = -1;
};

pid_t spawn(Child& c) {
  pid_t pid = fork();
  if (pid == 0) {
    setpgid(0, 0);
    for (auto& [k, v] : c.env) setenv(k.c_str(), v.c_str(), 1);
    int fd = open(c.log.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
    dup2(fd, 1);
    dup2(fd, 2);
    std::vector<char*> args;
    for (auto& a : c.argv) args.push_back(a.data());
    args.push_back(nullptr);
    execvp(args[0], args.data());
    _exit(127);
  }
  return pid;
}

// Starts every child, waits for them up to `deadline_s`, and kills what is left (whole
// process groups: mpirun's ranks too). Returns the children's combined output.
std::string run_all(std::vector<Child>& children, double deadline_s) {
  const fs::path dir = scratch_dir();
  for (size_t i = 0; i < children.size(); ++i) {
    children[i].log = dir / ("child" + std::to_string(i) + ".log");
    children[i].pid = spawn(children[i]);
  }
  const auto deadline = Clock::now() + std::chrono::duration<double>(deadline_s);
  auto running = [&](bool count_hanging) {
    int n = 0;
    for (Child& c : children) n += c.pid > 0 && c.status < 0 && (count_hanging || !c.hangs);
    return n;
  };
  while (running(true) > 0) {
    for (Child& c : children) {
      int status = 0;
      if (c.status < 0 && waitpid(c.pid, &status, WNOHANG) == c.pid) c.status = status;
    }
    const bool late = Clock::now() > deadline;
    if (late || running(false) == 0) {
      for (Child& c : children) {
        if (c.status >= 0) continue;
        if (late) ADD_FAILURE() << "child " << c.argv[0] << " killed at the deadline";
        kill(-c.pid, SIGKILL);
        kill(c.pid, SIGKILL);
        waitpid(c.pid, &c.status, 0);
      }
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  std::string out;
  for (Child& c : children) {
    std::ifstream f(c.log);
    out += std::string(std::istreambuf_iterator<char>(f), {});
  }
  fs::remove_all(dir);
  return out;
}

bool exited_ok(const Child& c) { return WIFEXITED(c.status) && WEXITSTATUS(c.status) == 0; }

using Env = std::vector<std::pair<std::string, std::string>>;

// `n` Gloo workers meeting at `address`; process p gets env extra[p] too.
std::vector<Child> gloo_workers(const std::string& kase, int n, int per_process,
                                const std::string& address, int timeout_s) {
  std::vector<Child> children;
  for (int p = 0; p < n; ++p) {
    Child c;
    c.argv = {self_path(), "--child", kase, std::to_string(per_process)};
    c.env = {{"PARAX_COORDINATOR_ADDRESS", address},
             {"PARAX_NUM_PROCESSES", std::to_string(n)},
             {"PARAX_PROCESS_ID", std::to_string(p)},
             {"PARAX_NUM_CPU_DEVICES", std::to_string(per_process)},
             {"PARAX_CPU_COLLECTIVES", "gloo"},
             {"PARAX_DISTRIBUTED_TIMEOUT", std::to_string(timeout_s)}};
    children.push_back(c);
  }
  return children;
}

void expect_ok(const std::string& out, std::vector<int> pids) {
  for (int p : pids) {
    EXPECT_NE(out.find("[" + std::to_string(p) + "] OK"), std::string::npos)
        << "process " << p << " did not pass:\n"
        << out;
  }
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
}

void run_gloo(const std::string& kase, int n, int per_process, const std::string& address) {
  std::vector<Child> children = gloo_workers(kase, n, per_process, address, 10);
  const std::string out = run_all(children, 30);
  for (const Child& c : children) EXPECT_TRUE(exited_ok(c)) << out;
  expect_ok(out, range(n));
}

std::string zmq_address() { return "127.0.0.1:" + std::to_string(free_port()); }

TEST(GlooEngine, CollectivesTwoProcessesZeroMQ) { run_gloo("collectives", 2, 4, zmq_address()); }

TEST(GlooEngine, CollectivesFourProcessesZeroMQ) { run_gloo("collectives", 4, 2, zmq_address()); }

TEST(GlooEngine, CollectivesFileStore) {
  const fs::path dir = scratch_dir();
  run_gloo("collectives", 2, 4, "file://" + dir.string());
  run_gloo("collectives", 4, 2, "file://" + (dir / "four").string());
  fs::remove_all(dir);
}

TEST(GlooEngine, CollectivesRedisStore) {
  if (system("command -v redis-server >/dev/null") != 0) GTEST_SKIP() << "no redis-server";
  const int port = free_port();
  Child redis;
  redis.argv = {"redis-server", "--port", std::to_string(port), "--bind", "127.0.0.1",
                "--save",       "",       "--appendonly",       "no"};
  const fs::path dir = scratch_dir();
  redis.log = dir / "redis.log";
  redis.pid = spawn(redis);
  for (int i = 0; i < 250; ++i) {  // up to 5 s for "Ready to accept connections"
    std::ifstream f(redis.log);
    if (std::string(std::istreambuf_iterator<char>(f), {}).find("Ready to accept") !=
        std::string::npos) {
      break;
    }
    std::this_thread::sleep_for(std::chrono::milliseconds(20));
  }
  run_gloo("collectives", 2, 4, "redis://127.0.0.1:" + std::to_string(port));
  kill(redis.pid, SIGKILL);
  waitpid(redis.pid, nullptr, 0);
  fs::remove_all(dir);
}

TEST(Distributed, SecondInitialize) { run_gloo("second_initialize", 2, 1, zmq_address()); }

TEST(Distributed, ExplicitOptions) {
  const std::string address = zmq_address();
  std::vector<Child> children = gloo_workers("explicit_options", 2, 1, address, 10);
  for (int p = 0; p < 2; ++p) {
    children[size_t(p)].env = {{"TEST_ADDRESS", address},
                               {"TEST_N", "2"},
                               {"TEST_ID", std::to_string(p)},
                               {"PARAX_DISTRIBUTED_TIMEOUT", "10"}};
  }
  const std::string out = run_all(children, 20);
  expect_ok(out, {0, 1});
}

// Open MPI's, PMI's and Slurm's variables give the rank and size (Gloo still needs the
// coordinator, from PARAX_COORDINATOR_ADDRESS), and PARAX_GLOO_INTERFACE picks the
// network interface.
TEST(Distributed, LauncherEnvironments) {
  const std::pair<const char*, const char*> launchers[] = {
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
      {"PMI_SIZE", "PMI_RANK"},
      {"SLURM_NTASKS", "SLURM_PROCID"}};
  for (const auto& [size, rank] : launchers) {
    std::vector<Child> children = gloo_workers("second_initialize", 2, 1, zmq_address(), 10);
    for (int p = 0; p < 2; ++p) {
      Env& env = children[size_t(p)].env;
      env[1] = {size, "2"};
      env[2] = {rank, std::to_string(p)};
      env.push_back({"PARAX_GLOO_INTERFACE", "lo"});
    }
    const std::string out = run_all(children, 20);
    expect_ok(out, {0, 1});
  }
}

TEST(Distributed, InitializeAfterDevices) { run_gloo("after_devices", 1, 1, zmq_address()); }

TEST(Distributed, BadOptions) {
  std::vector<Child> children = gloo_workers("bad_options", 1, 4, "", 10);
  children[0].env.resize(3);  // no launcher variables
  children[0].env[0] = {"PARAX_NUM_CPU_DEVICES", "4"};
  children[0].env[1] = {"PARAX_CPU_COLLECTIVES", "gloo"};
  children[0].env[2] = {"PARAX_DISTRIBUTED_TIMEOUT", "2"};
  const std::string out = run_all(children, 20);
  expect_ok(out, {0});
}

TEST(Distributed, MismatchedProcessCounts) {
  std::vector<Child> children = gloo_workers("mismatch", 2, 1, zmq_address(), 3);
  children[1].env[1].second = "3";  // process 1 believes in 3 processes
  const std::string out = run_all(children, 20);
  expect_ok(out, {0, 1});
}

TEST(Distributed, RendezvousTimeout) {
  std::vector<Child> children = gloo_workers("rendezvous_timeout", 2, 1, zmq_address(), 2);
  children.resize(1);  // process 1 never starts
  const std::string out = run_all(children, 20);
  expect_ok(out, {0});
  EXPECT_NE(out.find("within 2 s"), std::string::npos) << out;
}

void run_peer_failure(const std::string& kase, int n, const std::string& address) {
  std::vector<Child> children = gloo_workers(kase, n, 1, address, 2);
  children[1].hangs = kase == "peer_stop";
  const std::string out = run_all(children, 25);
  std::vector<int> others = range(n);
  others.erase(others.begin() + 1);
  expect_ok(out, others);
  EXPECT_NE(out.find("DistributedError after"), std::string::npos) << out;
}

TEST(GlooEngine, PeerExitsMidCollective) {
  run_peer_failure("peer_exit", 2, zmq_address());
  run_peer_failure("peer_exit", 4, zmq_address());
}

TEST(GlooEngine, PeerStoppedMidCollective) {
  run_peer_failure("peer_stop", 2, zmq_address());
  run_peer_failure("peer_stop", 4, zmq_address());
}

// ---- MPI: the same workers under mpirun.

bool have_mpirun() { return system("command -v mpirun >/dev/null") == 0; }

std::string run_mpi(const std::string& kase, int n, int per_process, int timeout_s, int* status) {
  Child c;
  c.argv = {"mpirun",
            "--allow-run-as-root",
            "--oversubscribe",
            "--mca",
            "mpi_yield_when_idle",
            "1",
            "-n",
            std::to_string(n),
            "-x",
            "PARAX_CPU_COLLECTIVES",
            "-x",
            "PARAX_NUM_CPU_DEVICES",
            "-x",
            "PARAX_DISTRIBUTED_TIMEOUT",
            self_path(),
            "--child",
            kase,
            std::to_string(per_process)};
  c.env = {{"PARAX_CPU_COLLECTIVES", "mpi"},
           {"PARAX_NUM_CPU_DEVICES", std::to_string(per_process)},
           {"PARAX_DISTRIBUTED_TIMEOUT", std::to_string(timeout_s)}};
  std::vector<Child> children = {c};
  std::string out = run_all(children, 40);
  *status = children[0].status;
  return out;
}

TEST(MpiEngine, CollectivesTwoProcesses) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  int status = 0;
  const std::string out = run_mpi("collectives", 2, 4, 10, &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  expect_ok(out, {0, 1});
}

TEST(MpiEngine, CollectivesFourProcesses) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  int status = 0;
  const std::string out = run_mpi("collectives", 4, 2, 10, &status);
  EXPECT_TRUE(WIFEXITED(status) && WEXITSTATUS(status) == 0) << out;
  expect_ok(out, {0, 1, 2, 3});
}

TEST(MpiEngine, SecondInitialize) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  int status = 0;
  const std::string out = run_mpi("second_initialize", 2, 1, 10, &status);
  expect_ok(out, {0, 1});
}

// A stopped peer: the others raise DistributedError at the timeout; mpirun then ends the
// job (the others exit without MPI_Finalize) and the harness never hangs.
TEST(MpiEngine, PeerStoppedMidCollective) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  int status = 0;
  const std::string out = run_mpi("peer_stop", 2, 1, 2, &status);
  expect_ok(out, {0});
}

// A peer that exits: mpirun ends the whole job (Open MPI's default on an abnormal exit);
// whoever is still running then has raised DistributedError or been stopped by mpirun,
// never hangs.
TEST(MpiEngine, PeerExitsMidCollective) {
  if (!have_mpirun()) GTEST_SKIP() << "no mpirun";
  int status = 0;
  const std::string out = run_mpi("peer_exit", 2, 1, 2, &status);
  EXPECT_EQ(out.find("FAIL"), std::string::npos) << out;
}

}  // namespace

int main(int argc, char** argv) {
  if (argc >= 3 && std::string(argv[1]) == "--child") {
    if (const char* p = std::getenv("PARAX_PROCESS_ID")) g_pid = std::atoi(p);
    if (const char* p = std::getenv("OMPI_COMM_WORLD_RANK")) g_pid = std::atoi(p);
    return worker_main(argv[2], argc >= 4 ? std::atoi(argv[3]) : 1);
  }
  testing::InitGoogleTest(&argc, argv);
  return RUN_ALL_TESTS();
}
