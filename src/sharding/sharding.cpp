// Sharding's generic queries, computed from each kind's TileLayout.
#include <algorithm>
#include <set>

#include "parax/errors.h"
#include "sharding/sharding_impl.h"

namespace parax {
namespace detail {

int64_t TileLayout::num_tiles() const {
  int64_t n = 1;
  for (int64_t t : tiles) n *= t;
  return n;
}

bool TileLayout::same_as(const TileLayout& o) const {
  if (is_replicated() && o.is_replicated()) return true;
  return tiles == o.tiles && replication == o.replication && positions == o.positions;
}

void check_divisible(const ShardingImpl& s, const TileLayout& layout, const Shape& shape) {
  for (size_t d = 0; d < shape.size(); ++d) {
    if (shape[d] % layout.tiles[d] == 0) continue;
    std::string factors = "[";
    for (size_t i = 0; i < layout.tiles.size(); ++i) {
      factors += (i ? ", " : "") + std::to_string(layout.tiles[i]);
    }
    throw ValueError("Sharding " + s.repr() + " implies that array axis " + std::to_string(d) +
                     " is partitioned " + std::to_string(layout.tiles[d]) +
                     " times, but the dimension size is " + std::to_string(shape[d]) +
                     " (full shape: " + shape_str(shape) + ", per-dimension tiling factors: " +
                     factors + "] should evenly divide the shape)");
  }
}

}  // namespace detail

const std::vector<Device>& Sharding::device_assignment() const { return impl_->assignment; }

std::vector<Device> Sharding::device_set() const {
  std::vector<Device> out = impl_->assignment;
  std::sort(out.begin(), out.end());
  return out;
}

int64_t Sharding::num_devices() const { return int64_t(impl_->assignment.size()); }

namespace {

// Every device's index into an array of `shape`; where a dimension's tiles do not divide
// it (only when `padded`), tiles of ceil(size / tiles) whose last ones end early or hold
// nothing, as the compiler pads such a dimension.
std::vector<std::pair<Device, Index>> indices_map(const detail::ShardingImpl& impl,
                                                  const Shape& shape, bool padded) {
  const int64_t ndim = int64_t(shape.size());
  impl.check_rank(ndim);
  detail::TileLayout layout = impl.layout(ndim);
  const auto& devs = impl.assignment;
  std::vector<Index> by_position(devs.size(), Index(size_t(ndim)));  // replicated: full slices
  if (!layout.is_replicated()) {
    if (!padded) detail::check_divisible(impl, layout, shape);
    std::vector<int64_t> tile(size_t(ndim), 0);  // row-major counter over tiles
    for (int64_t t = 0; t < layout.num_tiles(); ++t) {
      Index index(static_cast<size_t>(ndim));
      for (size_t d = 0; d < size_t(ndim); ++d) {
        if (layout.tiles[d] == 1) continue;
        const int64_t chunk = (shape[d] + layout.tiles[d] - 1) / layout.tiles[d];
        index[d] =
            Slice{std::min(tile[d] * chunk, shape[d]), std::min((tile[d] + 1) * chunk, shape[d])};
      }
      for (int64_t r = 0; r < layout.replication; ++r) {
        by_position[size_t(layout.positions[size_t(t * layout.replication + r)])] = index;
      }
      for (size_t d = size_t(ndim); d-- > 0;) {
        if (++tile[d] < layout.tiles[d]) break;
        tile[d] = 0;
      }
    }
  }
  std::vector<std::pair<Device, Index>> out;
  for (size_t p = 0; p < devs.size(); ++p) out.emplace_back(devs[p], by_position[p]);
  return out;
}

}  // namespace

std::vector<std::pair<Device, Index>> Sharding::devices_indices_map(const Shape& shape) const {
  return indices_map(*impl_, shape, false);
}

namespace detail {
std::vector<std::pair<Device, Index>> padded_indices_map(const Sharding& s, const Shape& shape) {
  return indices_map(s.impl(), shape, true);
}
}  // namespace detail

Shape Sharding::shard_shape(const Shape& shape) const {
  impl_->check_rank(int64_t(shape.size()));
  detail::TileLayout layout = impl_->layout(int64_t(shape.size()));
  detail::check_divisible(*impl_, layout, shape);
  Shape out = shape;
  for (size_t d = 0; d < out.size(); ++d) out[d] /= layout.tiles[d];
  return out;
}

bool Sharding::is_fully_replicated() const { return impl_->is_fully_replicated(); }

bool Sharding::is_equivalent_to(const Sharding& other, int64_t ndim) const {
  if (impl_->assignment != other.impl_->assignment) return false;
  return impl_->layout(ndim).same_as(other.impl_->layout(ndim));
}

std::string Sharding::to_string() const { return impl_->repr(); }

bool Sharding::operator==(const Sharding& other) const {
  return impl_ == other.impl_ || impl_->equals(*other.impl_);
}

std::ostream& operator<<(std::ostream& os, const Sharding& s) { return os << s.to_string(); }

}  // namespace parax
