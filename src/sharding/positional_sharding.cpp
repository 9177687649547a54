#include <algorithm>
#include <set>

#include "base/nested_format.h"
#include "parax/errors.h"
#include "sharding/sharding_impl.h"

namespace parax {
namespace detail {

struct PositionalShardingImpl final : ShardingImpl {
  PositionalShardingImpl(std::vector<Device> devices, Shape s, std::vector<std::vector<int>> i)
      : ShardingImpl(Kind::positional, std::move(devices)),
        shape(std::move(s)),
        ids(std::move(i)) {}

  std::string repr() const override {
    std::string platform(assignment[0].platform());
    for (char& c : platform) c = char(std::toupper(c));
    NestedFormat fmt;
    fmt.separator = " ";
    fmt.prefix_width = int(std::string("PositionalSharding(").size());
    fmt.line_width = 100 - 1;
    std::string body = format_nested(
        shape,
        [&](int64_t i, std::string& out) {
          std::vector<int> dev_ids;
          for (int p : ids[size_t(i)]) dev_ids.push_back(assignment[size_t(p)].id());
          std::sort(dev_ids.begin(), dev_ids.end());
          std::string s = "{" + platform + " ";
          for (size_t k = 0; k < dev_ids.size(); ++k)
            s += (k ? ", " : "") + std::to_string(dev_ids[k]);
          out += s + "}";
        },
        fmt);
    return "PositionalSharding(" + body + ", shape=" + shape_str(shape) + ")";
  }

  void check_rank(int64_t ndim) const override {
    if (is_fully_replicated() || ndim == int64_t(shape.size())) return;
    throw ValueError("Sharding " + repr() + " is only valid for values of rank " +
                     std::to_string(shape.size()) + ", but was applied to a value of rank " +
                     std::to_string(ndim));
  }

  TileLayout layout(int64_t ndim) const override {
    TileLayout out;
    if (is_fully_replicated()) {
      out.tiles.assign(size_t(ndim), 1);
      out.positions = ids[0];
      out.replication = int64_t(ids[0].size());
      return out;
    }
    out.tiles = shape;
    out.replication = int64_t(ids[0].size());
    for (const auto& set : ids) out.positions.insert(out.positions.end(), set.begin(), set.end());
    return out;
  }

  bool is_fully_replicated() const override { return ids.size() == 1; }

  bool equals(const ShardingImpl& other) const override {
    if (other.kind != Kind::positional) return false;
    const auto& o = static_cast<const PositionalShardingImpl&>(other);
    return assignment == o.assignment && shape == o.shape && ids == o.ids;
  }

  Shape shape;
  std::vector<std::vector<int>> ids;  // per grid cell (row-major): sorted device positions
};

}  // namespace detail

namespace {

using detail::PositionalShardingImpl;

const PositionalShardingImpl& pos_impl(const detail::ShardingImpl& s) {
  return static_cast<const PositionalShardingImpl&>(s);
}

std::shared_ptr<PositionalShardingImpl> make_positional(const DeviceGrid& grid) {
  if (grid.size() == 0) {
    throw ValueError("PositionalSharding.__init__ requires at least one device, got []");
  }
  std::vector<std::vector<int>> ids;
  for (int64_t i = 0; i < grid.size(); ++i) ids.push_back({int(i)});
  return std::make_shared<PositionalShardingImpl>(grid.flat(), grid.shape(), std::move(ids));
}

std::vector<int64_t> strides_of(const Shape& shape) {
  std::vector<int64_t> strides(shape.size(), 1);
  for (size_t d = shape.size(); d-- > 1;) strides[d - 1] = strides[d] * shape[d];
  return strides;
}

}  // namespace

PositionalSharding::PositionalSharding(const DeviceGrid& devices)
    : Sharding(make_positional(devices)) {}

PositionalSharding::PositionalSharding(std::vector<Device> devices)
    : Sharding(make_positional(DeviceGrid(std::move(devices)))) {}

const Shape& PositionalSharding::shape() const { return pos_impl(*impl_).shape; }

PositionalSharding PositionalSharding::reshape(Shape shape) const {
  const auto& self = pos_impl(*impl_);
  int64_t size = int64_t(self.ids.size());
  int64_t unknown = -1;
  int64_t known = 1;
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] == -1 && unknown < 0) {
      unknown = int64_t(d);
    } else if (shape[d] < 0) {
      // Sizes like (-2, -4) multiply to the device count but are no arrangement of it.
      throw ValueError("cannot reshape array of size " + std::to_string(size) + " into shape " +
                       shape_str(shape) + ": sizes must be nonnegative, with at most one -1");
    } else if (__builtin_mul_overflow(known, shape[d], &known)) {
      known = -1;  // overflowed: matches no device count
    }
  }
  if (unknown >= 0 && known > 0 && size % known == 0) shape[size_t(unknown)] = size / known;
  if (known < 0 || shape_size(shape) != size) {
    throw ValueError("cannot reshape array of size " + std::to_string(size) + " into shape " +
                     shape_str(shape));
  }
  return PositionalSharding(
      std::make_shared<PositionalShardingImpl>(self.assignment, std::move(shape), self.ids));
}

PositionalSharding PositionalSharding::transpose(std::vector<int> axes) const {
  const auto& self = pos_impl(*impl_);
  const size_t nd = self.shape.size();
  if (axes.empty()) {
    for (size_t d = nd; d-- > 0;) axes.push_back(int(d));
  }
  std::vector<int> sorted_axes = axes;
  std::sort(sorted_axes.begin(), sorted_axes.end());
  for (size_t d = 0; d < nd; ++d) {
    if (axes.size() != nd || sorted_axes[d] != int(d)) {
      throw ValueError("axes don't match array: a permutation of " + std::to_string(nd) +
                       " axes is required");
    }
  }
  Shape out_shape(nd);
  for (size_t d = 0; d < nd; ++d) out_shape[d] = self.shape[size_t(axes[d])];
  auto in_strides = strides_of(self.shape);
  std::vector<std::vector<int>> out_ids(self.ids.size());
  std::vector<int64_t> idx(nd, 0);
  for (size_t k = 0; k < out_ids.size(); ++k) {
    int64_t src = 0;
    for (size_t d = 0; d < nd; ++d) src += idx[d] * in_strides[size_t(axes[d])];
    out_ids[k] = self.ids[size_t(src)];
    for (size_t d = nd; d-- > 0;) {
      if (++idx[d] < out_shape[d]) break;
      idx[d] = 0;
    }
  }
  return PositionalSharding(
      std::make_shared<PositionalShardingImpl>(self.assignment, out_shape, std::move(out_ids)));
}

PositionalSharding PositionalSharding::replicate(std::optional<int> axis, bool keepdims) const {
  const auto& self = pos_impl(*impl_);
  const int nd = int(self.shape.size());
  if (axis && (*axis < -nd || *axis >= nd)) {
    throw ValueError("axis " + std::to_string(*axis) + " is out of bounds for array of dimension " +
                     std::to_string(nd));
  }
  std::vector<bool> reduce(static_cast<size_t>(nd), !axis.has_value());
  if (axis) reduce[size_t((*axis + nd) % nd)] = true;
  Shape kept(self.shape.size());
  for (size_t d = 0; d < kept.size(); ++d) kept[d] = reduce[d] ? 1 : self.shape[d];
  auto in_strides = strides_of(self.shape);
  auto out_strides = strides_of(kept);
  std::vector<std::set<int>> merged(size_t(shape_size(kept)));
  for (size_t k = 0; k < self.ids.size(); ++k) {
    int64_t out = 0;
    for (size_t d = 0; d < kept.size(); ++d) {
      int64_t i = (int64_t(k) / in_strides[d]) % self.shape[d];
      if (!reduce[d]) out += i * out_strides[d];
    }
    merged[size_t(out)].insert(self.ids[k].begin(), self.ids[k].end());
  }
  std::vector<std::vector<int>> ids;
  for (const auto& s : merged) ids.emplace_back(s.begin(), s.end());
  Shape out_shape;
  for (size_t d = 0; d < kept.size(); ++d) {
    if (keepdims || !reduce[d]) out_shape.push_back(kept[d]);
  }
  return PositionalSharding(
      std::make_shared<PositionalShardingImpl>(self.assignment, out_shape, std::move(ids)));
}

}  // namespace parax
