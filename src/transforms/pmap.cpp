// pmap over flat leaves: a shard_map over a 1-D mesh of the first N devices that squeezes
// the mapped axis before f and restores it after. A pmap traced inside another binds its
// shard_map without a mesh and tells the outer one its axis, which then runs on a mesh with
// both axes: the inner map spreads over the second mesh axis.
#include <algorithm>

#include "base/check.h"
#include "core/array_value.h"
#include "core/backend.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "parax/device.h"
#include "parax/shard_map.h"
#include "transforms/manual_region.h"
#include "transforms/map_util.h"

namespace parax::detail {
namespace {

using core::Aval;
using core::Program;

// The axes (name, size) of pmaps nested in the pmap being traced, in order of appearance.
using NestedAxes = std::vector<std::pair<std::string, int64_t>>;
thread_local NestedAxes* nested_axes = nullptr;

// pmap's arguments with the mapped axis taken out: each leaf's aval, one instance's aval,
// its mapped dimension (kNotMapped for in_axes None) and the common mapped size.
struct MappedArgs {
  std::vector<Aval> avals;
  std::vector<Aval> element;
  std::vector<int> dims;
  int64_t size = 0;
};

MappedArgs split_mapped_axis(const std::vector<Array>& leaves, const std::vector<int>& in_dims,
                             const std::vector<std::string>& names) {
  PARAX_CHECK(!leaves.empty(), "pmap checks for array arguments before mapping");
  MappedArgs m;
  std::optional<int64_t> size;
  bool mismatch = false;
  for (size_t i = 0; i < leaves.size(); ++i) {
    Aval a = core::aval_of(leaves[i]);
    m.avals.push_back(a);
    if (in_dims[i] == kNoAxis) {
      m.dims.push_back(core::kNotMapped);
      m.element.push_back(a);
      continue;
    }
    const int64_t rank = int64_t(a.shape.size());
    const int d = in_dims[i] < 0 ? int(in_dims[i] + rank) : in_dims[i];
    if (d < 0 || d >= rank) {
      throw ValueError("pmap was requested to map its argument along axis " +
                       std::to_string(in_dims[i]) +
                       ", which implies that its rank should be at "
                       "least " +
                       std::to_string(d + 1) + ", but is only " + std::to_string(rank) +
                       " (its shape is " + shape_str(a.shape) + ")");
    }
    m.dims.push_back(d);
    if (size && *size != a.shape[size_t(d)]) mismatch = true;
    size = a.shape[size_t(d)];
    a.shape.erase(a.shape.begin() + d);
    m.element.push_back(a);
  }
  if (mismatch) throw_inconsistent_sizes("pmap", m.avals, m.dims, names);
  if (!size) throw ValueError("pmap must have at least one non-None value in in_axes");
  if (*size == 0) {
    throw ValueError(
        "pmap got a mapped axis of size 0; it maps one instance per device, so "
        "the mapped size must be at least 1");
  }
  m.size = *size;
  return m;
}

// True inside another pmap (or shard_map): this map's axis then joins the enclosing mesh.
bool inside_a_map() {
  for (const core::AxisFrame& f : core::bound_axes()) {
    if (f.manual) return true;
  }
  return false;
}

// The axis name: the user's, else JAX's internal name, numbered by nesting depth.
std::string pmap_axis_name(const PmapOptions& options) {
  if (!options.axis_name.empty()) return options.axis_name;
  int depth = 0;
  for (const core::AxisFrame& f : core::bound_axes()) depth += f.manual ? 1 : 0;
  return depth == 0 ? std::string("_internal_pmap_axis_name")
                    : "_internal_pmap_axis_name_" + std::to_string(depth);
}

// A nested pmap's axis joins the enclosing mesh after the enclosing ones, in order of
// nesting, so it registers before its own body (with maps inside it) is traced.
void register_nested_axis(const std::string& name, int64_t n) {
  if (nested_axes == nullptr) return;
  auto it = std::find_if(nested_axes->begin(), nested_axes->end(),
                         [&](const auto& a) { return a.first == name; });
  if (it == nested_axes->end()) {
    nested_axes->push_back({name, n});
  } else if (it->second != n) {
    throw ValueError("nested pmaps named '" + name + "' map axes of different sizes (" +
                     std::to_string(it->second) + " and " + std::to_string(n) + ")");
  }
}

// Traces f on one instance with the axis bound. An outermost pmap collects the axes of the
// pmaps nested in f into `inner`.
core::ClosedProgram trace_one_instance(const std::vector<Aval>& element, const FlatFn& fn,
                                       TreeDef* out_def, const std::string& name, int64_t n,
                                       bool nested, NestedAxes& inner) {
  NestedAxes* saved = nested_axes;
  if (!nested) nested_axes = &inner;
  core::ClosedProgram closed;
  try {
    core::AxisScope scope(core::AxisFrame{name, n, true});
    closed = core::trace_to_program(element,
                                    [&](const std::vector<Array>& xs) { return fn(xs, out_def); });
  } catch (...) {
    nested_axes = saved;
    throw;
  }
  nested_axes = saved;
  return closed;
}

// The per-device arguments: each mapped leaf with the mapped axis moved to the front and
// split over `name`, so a device's block holds it with size 1; unmapped leaves whole.
struct DeviceBlocks {
  std::vector<Array> args;
  std::vector<PartitionSpec> in_specs;
  std::vector<Aval> local;
};

DeviceBlocks blocks_over_axis(const std::vector<Array>& leaves, const MappedArgs& m,
                              const std::string& name) {
  DeviceBlocks b;
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (m.dims[i] == core::kNotMapped) {
      b.args.push_back(leaves[i]);
      b.in_specs.push_back(PartitionSpec());
      b.local.push_back(m.avals[i]);
      continue;
    }
    b.args.push_back(core::move_batch_dim(leaves[i], m.dims[i], 0, m.size));
    b.in_specs.push_back(PartitionSpec(name));
    Aval a = m.element[i];
    a.shape.insert(a.shape.begin(), 1);
    b.local.push_back(a);
  }
  return b;
}

// The per-device program: squeeze the mapped axis, run f (as a pjit of its program), and
// restore the axis on mapped results; returns f's result leaves as a flat tuple.
FlatFn instance_body(const core::ClosedProgram& closed, const std::vector<int>& dims,
                     const std::vector<bool>& mapped_out) {
  std::shared_ptr<const Program> f_program = core::lift_consts(closed);
  const size_t num_outs = f_program->outvars.size();
  return [=](const std::vector<Array>& xs, TreeDef* def) {
    *def = TreeDef{TreeDef::Kind::tuple, {}, {}, std::vector<TreeDef>(num_outs)};
    std::vector<Array> in(closed.consts);
    for (size_t i = 0; i < xs.size(); ++i) {
      in.push_back(dims[i] == core::kNotMapped
                       ? xs[i]
                       : core::bind1(core::Prim::squeeze, {xs[i]},
                                     {{"dimensions", std::vector<int64_t>{0}}}));
    }
    std::vector<Array> outs = core::bind(core::Prim::pjit, std::move(in),
                                         {{"jaxpr", f_program}, {"name", std::string("pmap")}});
    for (size_t o = 0; o < outs.size(); ++o) {
      if (mapped_out[o]) {
        outs[o] = core::bind1(core::Prim::expand_dims, {outs[o]},
                              {{"dimensions", std::vector<int64_t>{0}}});
      }
    }
    return outs;
  };
}

// The mesh of an outermost pmap: its axis, then the axes of the pmaps nested in it, over
// the first devices (or the devices given).
Mesh pmap_mesh(const PmapOptions& options, const std::string& name, int64_t n,
               const NestedAxes& inner) {
  int64_t total = n;
  std::vector<std::string> axis_names{name};
  Shape sizes{n};
  for (const auto& [a, m] : inner) {
    total *= m;
    axis_names.push_back(a);
    sizes.push_back(m);
  }
  // By default the first devices: this process's, or every process's in a run of several.
  std::vector<Device> devices = !options.devices.empty() ? options.devices
                                : process_count() > 1    ? parax::devices()
                                                         : local_devices();
  for (const Device& d : options.devices) {
    if (d.process_index() != process_index()) {
      throw ValueError("pmap's devices must be this process's (" + d.to_string() + " is process " +
                       std::to_string(d.process_index()) +
                       "'s); leave devices empty to map over every process's devices");
    }
  }
  if (!options.devices.empty() && int64_t(devices.size()) != n) {
    throw ValueError(
        "Leading axis size of input to pmapped function must equal the number of "
        "local devices passed to pmap. Got axis_size=" +
        std::to_string(n) + ", num_local_devices=" + std::to_string(devices.size()) + ".");
  }
  if (total > int64_t(devices.size())) {
    throw ValueError("compiling computation that requires " + std::to_string(total) +
                     " logical devices, but only " + std::to_string(devices.size()) +
                     " XLA devices are available (num_replicas=" + std::to_string(total) + ")");
  }
  devices.resize(size_t(total));
  return Mesh(DeviceGrid(devices, sizes), axis_names);
}

// Moves each mapped result's axis from the front to its out_axes position.
void move_out_axes(std::vector<Array>& outs, const std::vector<std::optional<int>>& out_axes,
                   int64_t n) {
  for (size_t o = 0; o < outs.size(); ++o) {
    if (!out_axes[o] || *out_axes[o] == 0) continue;
    const int64_t rank = outs[o].ndim();
    const int64_t to = *out_axes[o] < 0 ? *out_axes[o] + rank : *out_axes[o];
    outs[o] = core::move_batch_dim(outs[o], 0, int(to), n);
  }
}

}  // namespace

Array as_pmap_result(const Array& x) {
  const ArrayImpl& impl = impl_of(x);
  if (impl.tracer || impl.abstract || !impl.sharding || impl.aval.shape.empty()) return x;
  auto marked = std::make_shared<ArrayImpl>(impl);
  marked->pmapped = true;
  return Array(std::move(marked));
}

std::vector<Array> pmap_flat(const std::vector<Array>& leaves, const std::vector<int>& in_dims,
                             const std::vector<std::string>& names, const FlatFn& fn,
                             TreeDef* out_def, const PmapOptions& options) {
  const MappedArgs mapped = split_mapped_axis(leaves, in_dims, names);
  const int64_t n = mapped.size;
  const bool nested = inside_a_map();
  const std::string name = pmap_axis_name(options);
  if (nested && !options.devices.empty()) {
    throw ValueError("Nested pmap with explicit devices argument.");
  }
  if (nested) register_nested_axis(name, n);
  NestedAxes inner;
  const core::ClosedProgram closed =
      trace_one_instance(mapped.element, fn, out_def, name, n, nested, inner);

  const DeviceBlocks blocks = blocks_over_axis(leaves, mapped, name);
  const std::vector<std::optional<int>> out_axes =
      options.out_axes.leaves(*out_def, "pmap", "out_axes");
  std::vector<PartitionSpec> out_specs;
  std::vector<bool> mapped_out;
  for (const std::optional<int>& axis : out_axes) {
    mapped_out.push_back(axis.has_value());
    out_specs.push_back(axis ? PartitionSpec(name) : PartitionSpec());
  }
  const FlatFn body = instance_body(closed, mapped.dims, mapped_out);

  Region region{{name}, {n}, nullptr};
  std::optional<Mesh> mesh;
  if (!nested) {
    mesh.emplace(pmap_mesh(options, name, n, inner));
    region.mesh = std::make_shared<const Sharding>(NamedSharding(*mesh, PartitionSpec()));
  }
  TreeDef ignored;
  // Outputs with out_axes None must be the same on every device (JAX's vmap-style check).
  const bool any_unmapped = std::count(mapped_out.begin(), mapped_out.end(), false) > 0;
  std::vector<Array> outs =
      bind_region(blocks.args, blocks.in_specs, blocks.local, body, &ignored, Specs(out_specs),
                  region, mesh ? &*mesh : nullptr, any_unmapped, "pmap");
  move_out_axes(outs, out_axes, n);
  return outs;
}

namespace {

// In a run of several processes a pmap spans every process's devices, as JAX's does: each
// process passes the rows of its own devices and gets back its own rows.
// The rows are laid out over the pmap's axis, named as the pmap names it, so a result
// prints as it does in a run of one process.
Mesh rows_mesh(std::vector<Device> devices, const std::string& name) {
  const int64_t n = int64_t(devices.size());
  return Mesh(DeviceGrid(std::move(devices), {n}), {name});
}

PartitionSpec rows_at(int dim, const std::string& name) {
  std::vector<SpecEntry> entries(size_t(dim) + 1);
  entries[size_t(dim)] = SpecEntry(name);
  return PartitionSpec::from_entries(std::move(entries));
}

}  // namespace

Array pmap_rows_to_global(const Array& x, int dim, const PmapOptions& options) {
  const std::string name = pmap_axis_name(options);
  if (dim == kNoAxis || x.impl()->tracer) return x;  // unmapped, or inside another trace
  if (dim < 0) dim += int(x.ndim());
  if (x.shape()[size_t(dim)] != local_device_count()) {
    throw ValueError(
        "Leading axis size of input to pmapped function must equal the number of local "
        "devices passed to pmap. Got axis_size=" +
        std::to_string(x.shape()[size_t(dim)]) +
        ", num_local_devices=" + std::to_string(local_device_count()) + ".");
  }
  const Array local = core::backend().relayout(
      x, NamedSharding(rows_mesh(local_devices(), name), rows_at(dim, name)));
  core::Aval aval = local.impl()->aval;
  aval.shape[size_t(dim)] = device_count();
  // The global array's buffers on this process are the local array's, device for device.
  return make_array(aval, NamedSharding(rows_mesh(devices(), name), rows_at(dim, name)), true,
                    local.impl()->buffers);
}

Array pmap_rows_to_local(const Array& x, std::optional<int> axis, const PmapOptions& options) {
  const std::string name = pmap_axis_name(options);
  if (x.impl()->tracer) return x;
  core::Aval aval = x.impl()->aval;
  PartitionSpec spec;
  if (axis) {
    const int dim = *axis < 0 ? *axis + int(x.ndim()) : *axis;
    aval.shape[size_t(dim)] = local_device_count();
    spec = rows_at(dim, name);
  }
  const Array global = core::backend().relayout(x, NamedSharding(rows_mesh(devices(), name), spec));
  return make_array(aval, NamedSharding(rows_mesh(local_devices(), name), spec), true,
                    global.impl()->buffers);
}

}  // namespace parax::detail
