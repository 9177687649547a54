#pragma once

#include "sharding/sharding_impl.h"

namespace parax::detail {

struct NamedShardingImpl final : ShardingImpl {
  NamedShardingImpl(Mesh mesh, PartitionSpec spec);
  std::string repr() const override;
  void check_rank(int64_t ndim) const override;
  TileLayout layout(int64_t ndim) const override;
  bool is_fully_replicated() const override;
  bool equals(const ShardingImpl& other) const override;

  Mesh mesh;
  PartitionSpec spec;
  std::vector<std::vector<int>> dim_axes;  // mesh axis positions per spec entry
};

}  // namespace parax::detail
