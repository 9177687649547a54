// Where the bytes go. Compiled::explain() lists every collective a compiled program runs:
// the user's line of the operation that needed it (std::source_location, captured at the
// public call and carried on the equation), the collective and its mesh axes, the layout
// before and after, the bytes each device sends and receives (and of those, across
// processes), an estimated time from this machine's measured bandwidths, and why.
// debug::CommLog does the same for the code run inside its scope, eager or jitted, like
// PyTorch's CommDebugMode, with a table per source line.
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <ostream>
#include <string>
#include <vector>

namespace parax {

struct CollectiveInfo {
  std::string primitive;  // "all-gather", "all-reduce", "reduce-scatter", "all-to-all",
                          // "collective-permute"
  std::string file;       // the user's file (relative to parax's checkout when under it);
  int line = 0;           // "" and 0 when no user line made it (a jit's own in_shardings)
  // Why: a kind ("contraction", "operand", "constraint", "out_sharding", "result",
  // "control_flow", "lowering"; the explicit ones "reshard", "region", "named_collective")
  // and a sentence.
  std::string why;
  std::string reason;
  bool is_explicit = false;            // the user asked for it: reshard, shard_map, psum, ...
  std::string before, after;           // the value's layout before and after, as specs
  std::vector<std::string> mesh_axes;  // the axes it runs over (none for a permute)
  std::string operand;                 // its per-device operand's type, e.g. f32[4,8]
  double bytes_sent = 0;               // per device and run
  double bytes_received = 0;           // per device and run (cost_analysis counts these)
  double bytes_across_processes = 0;   // of those received, the most any device gets from
                                       // devices of other processes
  double runs = 1;    // runs per call: a scan body's trip count (a while's counts once)
  std::string where;  // "" or the loop body or branch it runs in
  // Per call, all runs: this process's devices' bytes (its virtual devices share one
  // host's memory) at the measured copy rate, and those from other processes at the
  // measured local-socket rate. Latency is not counted.
  double est_seconds = 0;

  // One line: `file:line: all-reduce over ('y',) of f32[8,8], P(...) -> P(...): why`.
  std::string str() const;
};

struct ExplainOptions {
  // Print the estimated times and the step share (they vary with the machine and its load).
  bool estimates = true;
};

// What a compiled program communicates, per call.
class Explanation {
 public:
  const std::vector<CollectiveInfo>& collectives() const { return collectives_; }
  // Bytes each device receives per call: cost_analysis().collective_bytes (of a cond's
  // branches, the costliest counts, as there).
  double bytes_per_call() const { return bytes_; }
  double est_seconds() const { return est_seconds_; }
  // The collectives' estimated share of a call: their time over theirs plus the flops'
  // (of all this process's devices) at this machine's measured float32 matmul rate.
  double est_share() const { return est_share_; }
  std::string to_string(const ExplainOptions& options = {}) const;

  // Internal: made by Compiled::explain.
  Explanation(std::string name, std::string mesh, std::vector<CollectiveInfo> collectives,
              double bytes, double flops, int64_t sharing);

 private:
  std::string name_, mesh_;
  std::vector<CollectiveInfo> collectives_;
  double bytes_ = 0, flops_ = 0, est_seconds_ = 0, est_share_ = 0;
};
std::ostream& operator<<(std::ostream& os, const Explanation& e);

namespace debug {

// Counts and explains the collectives of what runs on this process while it lives (eager
// operations and jitted calls alike; nested logs each see them). Not for concurrent use
// from several threads.
class CommLog {
 public:
  CommLog();
  ~CommLog();
  CommLog(const CommLog&) = delete;
  CommLog& operator=(const CommLog&) = delete;

  // Every collective run, in order; an eager operation's carries the line that called it.
  std::vector<CollectiveInfo> collectives() const;
  // Runs per collective kind, e.g. {"all-reduce": 2} (CommDebugMode's get_comm_counts).
  std::map<std::string, int64_t> counts() const;
  int64_t total_count() const;
  // Bytes each device received, over all runs.
  double total_bytes() const;
  // A table: per source line and collective, the runs and bytes, then the total.
  std::string table() const;

  struct Impl;

 private:
  std::shared_ptr<Impl> impl_;
};

}  // namespace debug
}  // namespace parax
