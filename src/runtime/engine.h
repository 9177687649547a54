// The engine that moves bytes between processes: the one seam between parax's runtime and
// a collective library (Gloo over TCP, MPI; an accelerator library later is one more
// implementation). The runtime combines within a process in memory and calls the engine
// only for what crosses processes, with the groups of processes a collective spans.
//
// Every process of `group` makes the same calls in the same order (the programs are the
// same on every process). A call that cannot complete within the distributed timeout
// (config "parax_distributed_timeout", seconds) raises parax::DistributedError naming
// `what` (the collective and its caller) and the processes involved.
#pragma once

#include <cstddef>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "parax/dtype.h"

namespace parax::runtime {

// The reductions of all-reduce and reduce-scatter. `combine_into` (reduce.h) is the one
// definition of each, which an engine uses for what its library does not provide itself.
enum class ReduceOp { sum, prod, max, min, and_, or_ };

class Engine {
 public:
  virtual ~Engine() = default;
  virtual std::string_view name() const = 0;  // "gloo" or "mpi"
  virtual int process_index() const = 0;
  virtual int process_count() const = 0;

  // `group` lists process indices in ascending order and contains this process.

  // out[k * bytes, (k + 1) * bytes) receives member k's `bytes` from `in`.
  virtual void all_gather(std::span<const int> group, const void* in, size_t bytes, void* out,
                          std::string_view what) = 0;
  // In place: data[i] = op over the members' data[i], for `count` elements of `dtype`.
  // Only for two-member groups, where the order of the two operands cannot change the
  // result (callers needing a fixed order over more members all-gather and combine).
  virtual void all_reduce(std::span<const int> group, void* data, int64_t count, DType dtype,
                          ReduceOp op, std::string_view what) = 0;
  // Member `root` (a process index) sends `bytes` at `data` to every member.
  virtual void broadcast(std::span<const int> group, int root, void* data, size_t bytes,
                         std::string_view what) = 0;
  // Point to point: every send must be matched by a receive of the same size posted by
  // its peer in its own exchange call; all are posted before any is waited for, so any
  // pattern (a permutation, pairs in both directions) completes.
  struct Message {
    int peer;  // process index
    void* data;
    size_t bytes;
  };
  virtual void exchange(std::span<const Message> sends, std::span<const Message> recvs,
                        std::string_view what) = 0;
  virtual void barrier(std::span<const int> group, std::string_view what) = 0;
};

// The engine of this process: null until distributed::initialize (and after shutdown),
// and in a run of one process.
Engine* engine();

}  // namespace parax::runtime
