// partition-spmd: turns a global program with decided shardings into the one program every
// device runs on its local shards. Where a value's layout differs from what its consumer
// needs, `reshard` inserts the cheapest collective; it is the only place that creates
// communication.
#pragma once

#include <optional>
#include <span>
#include <vector>

#include "compiler/explain.h"
#include "compiler/propagate.h"

namespace parax::compiler {

struct Partitioned {
  core::Program local;            // invars: the global program's constvars then invars
  std::vector<DimShard> inputs;   // the layout each input must arrive in
  std::vector<DimShard> outputs;  // the layout of each output
  // Why each collective is there: a collective of `local` (or of its loop bodies and
  // branches) has param `_note`, its index here.
  std::vector<CollectiveNote> notes;
};

// `out_layouts` optionally fixes the layout of each output (out_shardings).
Partitioned partition(const core::Program& global, const MeshInfo& mesh, const Propagation& prop,
                      std::span<const std::optional<DimShard>> out_layouts);

}  // namespace parax::compiler
