#include "sharding/sharding_impl.h"

namespace parax {
namespace detail {
namespace {

struct SingleDeviceShardingImpl final : ShardingImpl {
  explicit SingleDeviceShardingImpl(Device d) : ShardingImpl(Kind::single_device, {d}) {}
  std::string repr() const override {
    return "SingleDeviceSharding(device=" + assignment[0].to_string() + ")";
  }
  void check_rank(int64_t) const override {}
  TileLayout layout(int64_t ndim) const override {
    return TileLayout{std::vector<int64_t>(size_t(ndim), 1), 1, {0}};
  }
  bool is_fully_replicated() const override { return true; }
  bool equals(const ShardingImpl& o) const override {
    return o.kind == Kind::single_device && o.assignment == assignment;
  }
};

}  // namespace
}  // namespace detail

SingleDeviceSharding::SingleDeviceSharding(Device device)
    : Sharding(std::make_shared<detail::SingleDeviceShardingImpl>(device)) {}

Device SingleDeviceSharding::device() const { return impl_->assignment[0]; }

}  // namespace parax
