// Runs one program over several processes, as jax.distributed does: every process calls
// initialize() first thing, gets its own virtual CPU devices, and sees every process's
// devices in devices() (numbered as JAX numbers them: process p's k-th is p * 2048 + k).
#pragma once

#include <string>
#include <vector>

namespace parax::distributed {

struct Options {
  // Where the processes meet (Gloo; MPI needs none): "host:port" (a key-value service that
  // process 0 hosts on that address), "redis://host:port" (an existing Redis server) or
  // "file:///dir" (a directory on a filesystem all processes share, fresh for each run).
  std::string coordinator_address{};
  int num_processes = -1;  // -1: from the launcher's environment
  int process_id = -1;     // -1: from the launcher's environment
  // Which of this process's virtual CPU devices (0..n-1 of the configured count) it uses;
  // empty: all of them.
  std::vector<int> local_device_ids{};
};

// Joins the run described by the launcher's environment: parax-run's PARAX_COORDINATOR_ADDRESS,
// PARAX_NUM_PROCESSES and PARAX_PROCESS_ID; Open MPI's OMPI_COMM_WORLD_SIZE/RANK; PMI_SIZE/RANK;
// Slurm's SLURM_NTASKS/PROCID. The engine is config "jax_cpu_collectives_implementation"
// ("gloo" or "mpi"; env PARAX_CPU_COLLECTIVES); under "mpi", MPI itself gives rank and size.
// Waits for every process up to config "parax_distributed_timeout" seconds.
// Requires: called once, before any use of devices (else RuntimeError). Processes that
// disagree on the count or do not all arrive raise DistributedError.
void initialize();
// As above, with explicit fields overriding the environment's.
void initialize(const Options& options);

// Waits for every process (up to the timeout), then leaves the run. A no-op when not
// initialized.
void shutdown();

// Returns true between initialize() and shutdown().
bool is_initialized();

}  // namespace parax::distributed
