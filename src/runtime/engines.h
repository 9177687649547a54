// Starting the engines behind engine.h; distributed.cpp chooses one. One file per engine
// (gloo_engine.cpp, mpi_engine.cpp): a third is one more file and one more case here.
#pragma once

#include <chrono>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "runtime/engine.h"

namespace parax::runtime {

// Joins the processes meeting at `coordinator_address` ("host:port", "redis://host:port",
// "file:///dir"), waiting for all of them up to the distributed timeout.
// Throws DistributedError when they do not all arrive or disagree on `num_processes`.
std::unique_ptr<Engine> start_gloo(const std::string& coordinator_address, int num_processes,
                                   int process_id);

// Joins MPI_COMM_WORLD (initializing MPI unless the program did; the engine finalizes only
// what it initialized).
std::unique_ptr<Engine> start_mpi();

// The config "parax_distributed_timeout", read at each call.
std::chrono::milliseconds distributed_timeout();

// The wording the engines share for a process that did not arrive or left:
// "process 1 did not take part in psum within 10 s (this is process 0 of 2)".
// `peer` < 0: unknown, the message names the other members of `group`.
std::string missing_peer_message(std::string_view what, std::span<const int> group, int peer,
                                 int self, int count, bool left);

}  // namespace parax::runtime
