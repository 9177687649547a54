#include <set>

#include "parax/errors.h"
#include "sharding/named_sharding_impl.h"

namespace parax {
namespace detail {

NamedShardingImpl::NamedShardingImpl(Mesh m, PartitionSpec s)
    : ShardingImpl(Kind::named, m.devices()), mesh(std::move(m)), spec(std::move(s)) {
  std::set<std::string> seen;
  for (const SpecEntry& e : spec.entries()) {
    std::vector<int> axes;
    for (const std::string& name : e.axes()) {
      int a = mesh.axis_index(name);
      if (a < 0) {
        throw ValueError("Resource axis: " + name + " of " + spec.to_string() +
                         " is not found in mesh: " + names_tuple(mesh.axis_names()) + ".");
      }
      if (!seen.insert(name).second) {
        throw ValueError(
            "A single NamedSharding spec specification can map every mesh axis to at most one "
            "positional dimension, but " +
            spec.to_string() + " has duplicate entries for `" + name + "`");
      }
      axes.push_back(a);
    }
    dim_axes.push_back(std::move(axes));
  }
}

std::string NamedShardingImpl::repr() const {
  return "NamedSharding(mesh=" + mesh.to_string() + ", spec=" + spec.to_string() + ")";
}

void NamedShardingImpl::check_rank(int64_t ndim) const {
  if (int64_t(spec.size()) <= ndim) return;
  std::string msg = "Sharding " + repr() + " is only valid for values of rank at least " +
                    std::to_string(spec.size()) + ", but was applied to a value of rank " +
                    std::to_string(ndim) + ".";
  if (ndim == 0) msg += " For scalars the PartitionSpec should be P()";
  throw ValueError(msg);
}

TileLayout NamedShardingImpl::layout(int64_t ndim) const {
  const Shape& sizes = mesh.axis_sizes();
  TileLayout out;
  out.tiles.assign(size_t(ndim), 1);
  std::vector<int> order;  // mesh axes, major to minor, as the layout enumerates them
  std::vector<bool> used(sizes.size(), false);
  for (size_t d = 0; d < dim_axes.size() && d < size_t(ndim); ++d) {
    for (int a : dim_axes[d]) {
      out.tiles[d] *= sizes[size_t(a)];
      order.push_back(a);
      used[size_t(a)] = true;
    }
  }
  for (size_t a = 0; a < sizes.size(); ++a) {
    if (!used[a]) {
      out.replication *= sizes[a];
      order.push_back(int(a));
    }
  }
  // Walk the mesh in `order` (row-major over the permuted axes) and record each
  // device's flat position in the mesh.
  std::vector<int64_t> strides(sizes.size(), 1);
  for (size_t a = sizes.size(); a-- > 1;) strides[a - 1] = strides[a] * sizes[a];
  std::vector<int64_t> counter(order.size(), 0);
  const int64_t n = mesh.size();
  out.positions.reserve(size_t(n));
  for (int64_t k = 0; k < n; ++k) {
    int64_t pos = 0;
    for (size_t i = 0; i < order.size(); ++i) pos += counter[i] * strides[size_t(order[i])];
    out.positions.push_back(int(pos));
    for (size_t i = order.size(); i-- > 0;) {
      if (++counter[i] < sizes[size_t(order[i])]) break;
      counter[i] = 0;
    }
  }
  return out;
}

bool NamedShardingImpl::is_fully_replicated() const {
  int64_t n = 1;
  for (const auto& axes : dim_axes) {
    for (int a : axes) n *= mesh.axis_sizes()[size_t(a)];
  }
  return n == 1;
}

bool NamedShardingImpl::equals(const ShardingImpl& other) const {
  if (other.kind != Kind::named) return false;
  const auto& o = static_cast<const NamedShardingImpl&>(other);
  return mesh == o.mesh && spec == o.spec;
}

}  // namespace detail

NamedSharding::NamedSharding(Mesh mesh, PartitionSpec spec)
    : Sharding(std::make_shared<detail::NamedShardingImpl>(std::move(mesh), std::move(spec))) {}

const Mesh& NamedSharding::mesh() const {
  return static_cast<const detail::NamedShardingImpl&>(*impl_).mesh;
}

const PartitionSpec& NamedSharding::spec() const {
  return static_cast<const detail::NamedShardingImpl&>(*impl_).spec;
}

std::optional<NamedSharding> Sharding::as_named() const {
  if (impl_->kind != detail::ShardingImpl::Kind::named) return std::nullopt;
  return NamedSharding(impl_);
}

NamedSharding Sharding::to_named(int64_t ndim) const {
  if (auto named = as_named()) return *named;
  impl_->check_rank(ndim);
  // Build a mesh whose axes are the tile grid plus one replica axis, so each tile's
  // devices lie along the last axis.
  detail::TileLayout layout = impl_->layout(ndim);
  Shape mesh_shape = layout.tiles;
  mesh_shape.push_back(layout.replication);
  std::vector<Device> devs;
  for (int p : layout.positions) devs.push_back(impl_->assignment[size_t(p)]);
  std::vector<std::string> names;
  std::vector<SpecEntry> entries;
  for (size_t d = 0; d < layout.tiles.size(); ++d) {
    names.push_back("_d" + std::to_string(d));
    entries.push_back(layout.tiles[d] > 1 ? SpecEntry(names.back()) : SpecEntry(None));
  }
  names.push_back("_replica");
  return NamedSharding(Mesh(DeviceGrid(devs, mesh_shape), names),
                       PartitionSpec::from_entries(entries));
}

}  // namespace parax
