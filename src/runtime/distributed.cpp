// distributed::initialize and shutdown: where this process learns its place in a run (from
// the launcher's environment or explicit options), starts the chosen engine, and places
// its devices among every process's (sharding/topology.h).
#include "parax/distributed.h"

#include <algorithm>
#include <atomic>
#include <cstdlib>
#include <mutex>
#include <numeric>
#include <set>

#include "base/config_internal.h"
#include "base/trace_events.h"
#include "parax/config.h"
#include "parax/errors.h"
#include "runtime/engines.h"
#include "sharding/topology.h"

namespace parax::runtime {
namespace {

std::mutex g_mu;
bool g_initialized = false;
int g_process_index = 0;
int g_process_count = 1;
std::unique_ptr<Engine> g_engine;
std::atomic<Engine*> g_engine_ptr{nullptr};

}  // namespace

Engine* engine() { return g_engine_ptr.load(std::memory_order_acquire); }

std::chrono::milliseconds distributed_timeout() {
  return std::chrono::seconds(detail::int_setting(detail::IntSettingId::kDistributedTimeout));
}

std::string missing_peer_message(std::string_view what, std::span<const int> group, int peer,
                                 int self, int count, bool left) {
  std::string who;
  if (peer < 0) {
    std::vector<int> others;
    for (int p : group) {
      if (p != self) others.push_back(p);
    }
    if (others.size() == 1) {
      peer = others[0];
    } else {
      who = "one of processes ";
      for (size_t i = 0; i < others.size(); ++i) who += (i ? ", " : "") + std::to_string(others[i]);
    }
  }
  if (peer >= 0) who = "process " + std::to_string(peer);
  const auto secs = std::chrono::duration_cast<std::chrono::seconds>(distributed_timeout());
  const std::string where =
      " (this is process " + std::to_string(self) + " of " + std::to_string(count) + ")";
  if (left)
    return "[" + std::string(what) + "] " + who + " left the run during " + std::string(what) +
           where;
  return "[" + std::string(what) + "] " + who + " did not take part in " + std::string(what) +
         " within " + std::to_string(secs.count()) + " s" + where;
}

}  // namespace parax::runtime

namespace parax::distributed {
namespace {

using runtime::g_engine;
using runtime::g_engine_ptr;
using runtime::g_initialized;
using runtime::g_mu;
using runtime::g_process_count;
using runtime::g_process_index;

// Slurm's default coordinator port (JAX derives one from the job id; one fixed port is
// easier to open in a firewall).
constexpr int kSlurmCoordinatorPort = 61234;

std::string env(const char* name) {
  const char* v = std::getenv(name);
  return v ? std::string(v) : std::string();
}

int env_int(const char* name) {
  const std::string v = env(name);
  if (v.empty()) return -1;
  char* end = nullptr;
  const long n = std::strtol(v.c_str(), &end, 10);
  if (*end != '\0' || n < 0) {
    throw ValueError("[distributed.initialize] " + std::string(name) +
                     " must be a non-negative integer; got '" + v + "'");
  }
  return int(n);
}

// The first host of a Slurm node list: "node[03-05,9],gpu1" -> "node03".
std::string first_slurm_host(const std::string& list) {
  const size_t bracket = list.find('[');
  const size_t comma = list.find(',');
  if (bracket == std::string::npos || (comma != std::string::npos && comma < bracket)) {
    return list.substr(0, comma);
  }
  const size_t end = list.find_first_of("-,]", bracket + 1);
  return list.substr(0, bracket) + list.substr(bracket + 1, end - bracket - 1);
}

// The launcher's view of this process: parax-run, then Open MPI, PMI and Slurm.
Options from_environment() {
  Options o;
  o.coordinator_address = env("PARAX_COORDINATOR_ADDRESS");
  const std::pair<const char*, const char*> launchers[] = {
      {"PARAX_NUM_PROCESSES", "PARAX_PROCESS_ID"},
      {"OMPI_COMM_WORLD_SIZE", "OMPI_COMM_WORLD_RANK"},
      {"PMI_SIZE", "PMI_RANK"},
      {"SLURM_NTASKS", "SLURM_PROCID"},
  };
  for (const auto& [size, rank] : launchers) {
    if (env_int(size) < 0) continue;
    o.num_processes = env_int(size);
    o.process_id = env_int(rank);
    if (o.coordinator_address.empty() && std::string(size) == "SLURM_NTASKS") {
      const std::string nodes = env("SLURM_STEP_NODELIST");
      if (!nodes.empty()) {
        o.coordinator_address =
            first_slurm_host(nodes) + ":" + std::to_string(kSlurmCoordinatorPort);
      }
    }
    break;
  }
  return o;
}

Options merged(const Options& given) {
  Options o = from_environment();
  if (!given.coordinator_address.empty()) o.coordinator_address = given.coordinator_address;
  if (given.num_processes >= 0) o.num_processes = given.num_processes;
  if (given.process_id >= 0) o.process_id = given.process_id;
  o.local_device_ids = given.local_device_ids;
  return o;
}

// Returns this process's device count: the configured one, or as many as local_device_ids
// selects from it.
int local_device_count(const std::vector<int>& ids) {
  const int configured = detail::freeze_num_cpu_devices();
  if (ids.empty()) return configured;
  std::set<int> seen;
  for (int id : ids) {
    if (id < 0 || id >= configured) {
      throw ValueError("[distributed.initialize] local_device_ids has " + std::to_string(id) +
                       " but this process has " + std::to_string(configured) +
                       " CPU devices (ids 0 to " + std::to_string(configured - 1) + ")");
    }
    if (!seen.insert(id).second) {
      throw ValueError("[distributed.initialize] local_device_ids lists device " +
                       std::to_string(id) + " twice");
    }
  }
  return int(ids.size());
}

void check_gloo_options(const Options& o) {
  if (o.num_processes < 1) {
    throw ValueError(
        "[distributed.initialize] the number of processes is unknown: pass "
        "Options.num_processes or start the program with parax-run, mpirun or srun");
  }
  if (o.process_id < 0 || o.process_id >= o.num_processes) {
    throw ValueError("[distributed.initialize] process_id " + std::to_string(o.process_id) +
                     " is outside [0, " + std::to_string(o.num_processes) + ")");
  }
  if (o.num_processes > 1 && o.coordinator_address.empty()) {
    throw ValueError(
        "[distributed.initialize] the gloo engine needs a coordinator_address (host:port, "
        "redis://host:port or file:///dir; env PARAX_COORDINATOR_ADDRESS), or use MPI: "
        "config jax_cpu_collectives_implementation=\"mpi\" (env PARAX_CPU_COLLECTIVES=mpi)");
  }
}

std::unique_ptr<runtime::Engine> start_engine(const Options& given) {
  const std::string impl = config::read_string("jax_cpu_collectives_implementation");
  if (impl == "mpi") {
    auto e = runtime::start_mpi();
    if ((given.num_processes >= 0 && given.num_processes != e->process_count()) ||
        (given.process_id >= 0 && given.process_id != e->process_index())) {
      throw ValueError(
          "[distributed.initialize] Options give process " + std::to_string(given.process_id) +
          " of " + std::to_string(given.num_processes) + " but MPI started process " +
          std::to_string(e->process_index()) + " of " + std::to_string(e->process_count()));
    }
    return e;
  }
  const Options o = merged(given);
  check_gloo_options(o);
  if (o.num_processes == 1) return nullptr;
  return runtime::start_gloo(o.coordinator_address, o.num_processes, o.process_id);
}

std::vector<int> every_process(int n) {
  std::vector<int> all(static_cast<size_t>(n));
  std::iota(all.begin(), all.end(), 0);
  return all;
}

}  // namespace

void initialize() { initialize(Options{}); }

void initialize(const Options& options) {
  std::lock_guard<std::mutex> lock(g_mu);
  if (g_initialized) {
    throw RuntimeError(
        "[distributed.initialize] distributed::initialize should only be called once; this "
        "process is process " +
        std::to_string(g_process_index) + " of " + std::to_string(g_process_count) + " already");
  }
  if (detail::Topology::created()) {
    throw RuntimeError(
        "[distributed.initialize] parax::distributed::initialize() must be called before any "
        "parax computation: this process has already created its devices");
  }
  const int count = local_device_count(options.local_device_ids);
  std::unique_ptr<runtime::Engine> engine = start_engine(options);
  if (!engine) {
    detail::Topology::configure(0, {count});
  } else {
    const int n = engine->process_count();
    std::vector<int> all(size_t(n), 0);
    engine->all_gather(every_process(n), &count, sizeof count, all.data(),
                       "distributed.initialize");
    detail::Topology::configure(engine->process_index(), all);
  }
  g_process_index = engine ? engine->process_index() : 0;
  g_process_count = engine ? engine->process_count() : 1;
  base::trace::set_process(g_process_index);  // this process's pid in traces
  g_engine = std::move(engine);
  // engine() stays null in a run of one process (mpirun -n 1): nothing crosses processes.
  g_engine_ptr.store(g_process_count > 1 ? g_engine.get() : nullptr, std::memory_order_release);
  g_initialized = true;
}

void shutdown() {
  std::lock_guard<std::mutex> lock(g_mu);
  if (!g_initialized) return;
  g_initialized = false;
  std::unique_ptr<runtime::Engine> engine = std::move(g_engine);
  g_engine_ptr.store(nullptr, std::memory_order_release);
  if (!engine) return;
  const int n = engine->process_count();
  // The engine goes either way; a peer missing at the barrier is still reported.
  engine->barrier(every_process(n), "distributed.shutdown");
}

bool is_initialized() {
  std::lock_guard<std::mutex> lock(g_mu);
  return g_initialized;
}

}  // namespace parax::distributed
