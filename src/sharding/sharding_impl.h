// The internal side of Sharding: every kind reduces to a TileLayout (XLA's HloSharding:
// tile counts per dimension, a replication factor, and which devices hold each tile),
// from which shard indices, shard shapes and equivalence follow generically.
#pragma once

#include <optional>
#include <string>
#include <vector>

#include "parax/sharding.h"

namespace parax::detail {

struct TileLayout {
  std::vector<int64_t> tiles;  // per array dimension
  int64_t replication = 1;     // devices holding each tile
  // Positions into the device assignment, row-major over (tiles..., replica).
  std::vector<int> positions;

  int64_t num_tiles() const;
  bool is_replicated() const { return num_tiles() == 1; }
  // Equal as XLA compares HloShardings: all replicated layouts are equal.
  bool same_as(const TileLayout& o) const;
};

struct ShardingImpl {
  enum class Kind { named, single_device, positional, bare_spec };

  ShardingImpl(Kind k, std::vector<Device> a) : kind(k), assignment(std::move(a)) {}
  virtual ~ShardingImpl() = default;
  // Returns JAX's repr.
  virtual std::string repr() const = 0;
  // Throws ValueError with JAX's "is only valid for values of rank ..." text if this
  // sharding cannot lay out an array of rank `ndim`.
  virtual void check_rank(int64_t ndim) const = 0;
  // Returns the layout for rank `ndim`. Requires: check_rank(ndim) passed.
  virtual TileLayout layout(int64_t ndim) const = 0;
  virtual bool is_fully_replicated() const = 0;
  virtual bool equals(const ShardingImpl& other) const = 0;

  const Kind kind;
  const std::vector<Device> assignment;
};

// Returns `s` itself, or for a bare PartitionSpec the NamedSharding of that spec on the mesh
// of this thread's innermost sharding::use_mesh scope; nullopt for a bare spec outside any
// (the caller raises its API's error).
std::optional<Sharding> try_resolve_spec(const Sharding& s);
// True for a Sharding made from a bare PartitionSpec.
bool is_bare_spec(const Sharding& s);
// Returns the spec of a bare-spec Sharding. Requires: is_bare_spec(s).
const PartitionSpec& bare_spec(const Sharding& s);

// Sharding::devices_indices_map, except that a dimension its tiles do not divide is tiled
// as the compiler pads it: tiles of ceil(size / tiles), the last ones ending early or
// empty.
std::vector<std::pair<Device, Index>> padded_indices_map(const Sharding& s, const Shape& shape);

// Returns axis names as a Python tuple: `('a', 'b')`, `('x',)`.
std::string names_tuple(const std::vector<std::string>& names);

// Throws ValueError with JAX's shard_shape text if `layout` does not divide `shape`.
void check_divisible(const ShardingImpl& s, const TileLayout& layout, const Shape& shape);

}  // namespace parax::detail
