// The compiler's view of shardings: every value of a program is laid out over one mesh,
// each dimension split by a list of mesh axes (major to minor), possibly with pending
// partial sums over some axes ("unreduced"). Shardings of any kind are translated to and
// from this form at the program's boundary.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "core/aval.h"
#include "core/rules.h"
#include "parax/sharding.h"

namespace parax::compiler {

using AxisList = std::vector<int64_t>;

struct DimShard {
  std::vector<AxisList> dims;  // per array dimension
  AxisList unreduced;          // axes holding partial results, combined by `op`
  core::ReduceOp op = core::ReduceOp::none;

  static DimShard replicated(size_t rank) { return DimShard{std::vector<AxisList>(rank), {}, {}}; }
  bool is_replicated() const;
  // Returns the mesh axes used anywhere (dims and unreduced).
  AxisList used_axes() const;
  bool operator==(const DimShard&) const = default;
};

// The mesh a program runs on.
struct MeshInfo {
  Mesh mesh;
  Shape axis_sizes;
  std::vector<std::string> names;

  explicit MeshInfo(Mesh m);
  int64_t num_devices() const { return mesh.size(); }
  int64_t size_of(const AxisList& axes) const;
  // Returns the coordinates of the device at `position` in the mesh's flat order.
  std::vector<int64_t> coords(int64_t position) const;
  // Returns `P('a', None)` (with ` {unreduced: ('b',)}` when partial), as the IR prints.
  std::string spec_str(const DimShard& s) const;
  // Returns the axes as a Python tuple of names: `('a', 'b')`.
  std::string axes_str(const AxisList& axes) const;
  PartitionSpec spec(const DimShard& s) const;
  // Returns the per-device type of a value of type `global` laid out as `s`; dimensions
  // that do not divide are padded up (ceil).
  core::Aval local_aval(const core::Aval& global, const DimShard& s) const;
  // Returns the mesh axes of `names` (shard_map regions and named collectives refer to
  // axes by name); throws ValueError naming `user` (e.g. "shard_map spec P('k')") when
  // the mesh lacks one.
  AxisList axes_named(const std::vector<std::string>& names, const std::string& user) const;
  // Translates a NamedSharding spec on this mesh (or throws ShardingError naming it).
  DimShard from_spec(const PartitionSpec& spec, size_t rank) const;
};

// Returns a per-device program as text, with the mesh axes of collectives (`mesh_axes`)
// printed as names: `all-reduce[mesh_axes=('a',) op=sum] c`.
std::string program_text(const core::Program& p, const MeshInfo& mesh);

// True when a and b put the same data on the same devices (whatever their kind or device
// order); false when either does not divide `shape`.
bool same_placement(const Sharding& a, const Sharding& b, const Shape& shape);

// Tries to express `sharding` for rank `rank` on `mesh` (same layout of data over
// devices); nullopt if it cannot be.
std::optional<DimShard> express_on(const MeshInfo& mesh, const Sharding& sharding, size_t rank,
                                   const Shape& shape);

}  // namespace parax::compiler
