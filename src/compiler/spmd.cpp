#include "compiler/spmd.h"

#include <algorithm>
#include <functional>

#include "base/check.h"
#include "parax/errors.h"
#include "sharding/sharding_impl.h"

namespace parax::compiler {

bool DimShard::is_replicated() const {
  if (!unreduced.empty()) return false;
  return std::all_of(dims.begin(), dims.end(), [](const AxisList& a) { return a.empty(); });
}

AxisList DimShard::used_axes() const {
  AxisList out;
  for (const AxisList& d : dims) out.insert(out.end(), d.begin(), d.end());
  out.insert(out.end(), unreduced.begin(), unreduced.end());
  return out;
}

MeshInfo::MeshInfo(Mesh m) : mesh(std::move(m)) {
  axis_sizes = mesh.axis_sizes();
  names = mesh.axis_names();
}

AxisList MeshInfo::axes_named(const std::vector<std::string>& axis_names,
                              const std::string& user) const {
  AxisList axes;
  for (const std::string& name : axis_names) {
    const int a = mesh.axis_index(name);
    if (a < 0) {
      throw ValueError(user + " names axis '" + name + "', which the computation's mesh " +
                       mesh.to_string() +
                       " does not have; use one mesh for a region and its "
                       "arguments");
    }
    axes.push_back(a);
  }
  return axes;
}

int64_t MeshInfo::size_of(const AxisList& axes) const {
  int64_t n = 1;
  for (int64_t a : axes) n *= axis_sizes[size_t(a)];
  return n;
}

std::vector<int64_t> MeshInfo::coords(int64_t position) const {
  std::vector<int64_t> c(axis_sizes.size());
  for (size_t a = axis_sizes.size(); a-- > 0;) {
    c[a] = position % axis_sizes[a];
    position /= axis_sizes[a];
  }
  return c;
}

std::string MeshInfo::axes_str(const AxisList& axes) const {
  std::string s = "(";
  for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", '" : "'") + names[size_t(axes[i])] + "'";
  return s + (axes.size() == 1 ? ",)" : ")");
}

PartitionSpec MeshInfo::spec(const DimShard& s) const {
  std::vector<SpecEntry> entries;
  for (const AxisList& d : s.dims) {
    if (d.empty()) {
      entries.emplace_back(None);
    } else if (d.size() == 1) {
      entries.emplace_back(names[size_t(d[0])]);
    } else {
      std::vector<std::string> group;
      for (int64_t a : d) group.push_back(names[size_t(a)]);
      entries.emplace_back(std::move(group));
    }
  }
  // Trailing unsharded dimensions are dropped, as JAX's output specs print them.
  while (!entries.empty() && entries.back().is_none()) entries.pop_back();
  return PartitionSpec::from_entries(std::move(entries));
}

std::string MeshInfo::spec_str(const DimShard& s) const {
  std::string out = "P(";
  for (size_t d = 0; d < s.dims.size(); ++d) {
    out += d ? ", " : "";
    const AxisList& axes = s.dims[d];
    if (axes.empty())
      out += "None";
    else if (axes.size() == 1)
      out += "'" + names[size_t(axes[0])] + "'";
    else
      out += axes_str(axes);
  }
  out += ")";
  if (!s.unreduced.empty()) {
    out +=
        "{unreduced=" + axes_str(s.unreduced) + " " + std::string(core::reduce_op_name(s.op)) + "}";
  }
  return out;
}

core::Aval MeshInfo::local_aval(const core::Aval& global, const DimShard& s) const {
  core::Aval local = global;
  for (size_t d = 0; d < s.dims.size(); ++d) {
    const int64_t n = size_of(s.dims[d]);
    // Ceiling division without `size + n - 1`, which wraps for sizes near the int64 limit.
    local.shape[d] = global.shape[d] / n + (global.shape[d] % n != 0 ? 1 : 0);
  }
  return local;
}

DimShard MeshInfo::from_spec(const PartitionSpec& spec, size_t rank) const {
  DimShard s = DimShard::replicated(rank);
  for (size_t d = 0; d < spec.size() && d < rank; ++d) {
    for (const std::string& name : spec[d].axes()) {
      auto it = std::find(names.begin(), names.end(), name);
      if (it == names.end()) {
        throw ShardingError("[jit] sharding names mesh axis '" + name + "' that mesh " +
                            mesh.to_string() + " does not have");
      }
      s.dims[d].push_back(int64_t(it - names.begin()));
    }
  }
  return s;
}

std::string program_text(const core::Program& p, const MeshInfo& mesh) {
  auto printer = [&](std::string_view name,
                     const core::ParamValue& v) -> std::optional<std::string> {
    if (name != "mesh_axes") return std::nullopt;
    return mesh.axes_str(std::get<std::vector<int64_t>>(v));
  };
  return core::to_string(p, printer);
}

namespace {

// Enumerates every way to give each dimension an ordered list of distinct mesh axes whose
// product matches `tiles`, calling `visit` until it returns true.
bool enumerate_layouts(const MeshInfo& mesh, const std::vector<int64_t>& tiles, size_t dim,
                       DimShard& current, std::vector<bool>& used,
                       const std::function<bool(const DimShard&)>& visit) {
  if (dim == tiles.size()) return visit(current);
  const int64_t want = tiles[dim];
  std::function<bool(int64_t)> extend = [&](int64_t have) -> bool {
    if (have == want && enumerate_layouts(mesh, tiles, dim + 1, current, used, visit)) return true;
    if (have >= want) return false;
    for (size_t a = 0; a < mesh.axis_sizes.size(); ++a) {
      if (used[a] || mesh.axis_sizes[a] == 1 || want % (have * mesh.axis_sizes[a]) != 0) continue;
      used[a] = true;
      current.dims[dim].push_back(int64_t(a));
      if (extend(have * mesh.axis_sizes[a])) return true;
      current.dims[dim].pop_back();
      used[a] = false;
    }
    return false;
  };
  return extend(1);
}

}  // namespace

// Same data on the same devices (whatever the sharding's kind or device order); false
// when either does not divide `shape`.
bool same_placement(const Sharding& a, const Sharding& b, const Shape& shape) {
  for (const Sharding* s : {&a, &b}) {
    const auto layout = s->impl().layout(int64_t(shape.size()));
    for (size_t d = 0; d < shape.size(); ++d) {
      if (shape[d] % layout.tiles[d] != 0) return false;
    }
  }
  auto ma = a.devices_indices_map(shape);
  auto mb = b.devices_indices_map(shape);
  auto by_id = [](const auto& x, const auto& y) { return x.first.id() < y.first.id(); };
  std::sort(ma.begin(), ma.end(), by_id);
  std::sort(mb.begin(), mb.end(), by_id);
  return ma == mb;
}

std::optional<DimShard> express_on(const MeshInfo& mesh, const Sharding& sharding, size_t rank,
                                   const Shape& shape) {
  if (auto named = sharding.as_named(); named && named->mesh() == mesh.mesh) {
    return mesh.from_spec(named->spec(), rank);
  }
  const auto& assignment = sharding.device_assignment();
  std::vector<int> ids;
  for (const Device& d : assignment) ids.push_back(d.id());
  std::vector<int> mesh_ids = mesh.mesh.device_ids();
  std::vector<int> a = ids, b = mesh_ids;
  std::sort(a.begin(), a.end());
  std::sort(b.begin(), b.end());
  if (a != b) {
    // A single-device sharding on a one-device mesh, or nothing.
    return std::nullopt;
  }
  detail::TileLayout layout = sharding.impl().layout(int64_t(rank));
  std::optional<DimShard> found;
  DimShard current = DimShard::replicated(rank);
  std::vector<bool> used(mesh.axis_sizes.size(), false);
  enumerate_layouts(mesh, layout.tiles, 0, current, used, [&](const DimShard& s) {
    if (!same_placement(NamedSharding(mesh.mesh, mesh.spec(s)), sharding, shape)) return false;
    found = s;
    return true;
  });
  return found;
}

}  // namespace parax::compiler
