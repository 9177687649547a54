// The collectives of a compiled program, as the explainer (Compiled::explain,
// debug::CommLog) and the implicit-reshard policy read them: partition-spmd notes why each
// collective is there and the user's line that needed it (Partitioned::notes, indexed by
// the collective's `_note` param); this walks the final per-device program (loop bodies
// and branches too) and prices each by its cost rule.
#pragma once

#include <source_location>
#include <span>
#include <string>
#include <vector>

#include "compiler/spmd.h"
#include "core/program.h"

namespace parax::compiler {

struct CollectiveNote {
  std::string primitive;  // "all-reduce", "all-gather", ...
  std::source_location site{};
  std::string why;            // a kind: "contraction", "operand", "constraint", ... (partition.cpp)
  std::string reason;         // a sentence
  bool is_explicit = false;   // the user asked for it (reshard, shard_map, psum)
  std::string before, after;  // the layouts of the reshard it belongs to
  std::vector<std::string> mesh_axes;  // the axes it runs over
  core::Aval local;                    // its per-device operand
  double bytes = 0;                    // each device receives per run (the cost rule's)
  double bytes_across_processes = 0;   // of those, the most any device gets from other processes
  double runs = 1;                     // runs per call: a scan's trip count; a while counts once
  std::string where;                   // "" or where it runs: "scan body", "cond branch 1"

  // One line: `file:line: all-reduce over ('y',) of f32[8,8], P(...) -> P(...): reason`.
  std::string line(const MeshInfo& mesh) const;
};

std::vector<CollectiveNote> collectives_of(const core::Program& local, const MeshInfo& mesh,
                                           std::span<const CollectiveNote> notes);

// Applies config parax_implicit_reshard ("allow", "warn", "error") to a compiled program's
// collectives: with "warn" each implicit one is printed to stderr once; with "error" the
// first raises ShardingError naming its line. `name` is the program's.
void apply_reshard_policy(const std::vector<CollectiveNote>& notes, const MeshInfo& mesh,
                          const std::string& name);

}  // namespace parax::compiler
