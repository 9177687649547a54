// shard_map and pmap over flat leaves. shard_map traces f on one device's blocks with the
// mesh axes bound as names, checks what its results may vary over, and binds a shard_map
// equation; pmap is a shard_map over a 1-D mesh of the first N devices that squeezes the
// mapped axis before f and restores it after. A pmap traced inside another binds its
// shard_map without a mesh and tells the outer one its axis, which then runs on a mesh with
// both axes: the inner map spreads over the second mesh axis.
#include "parax/shard_map.h"

#include <algorithm>

#include "base/check.h"
#include "core/array_value.h"
#include "core/backend.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "core/rules.h"
#include "parax/device.h"
#include "transforms/map_util.h"

namespace parax {

namespace {
std::string spec_str(const PartitionSpec& s) { return s.to_ir_string(); }
}  // namespace

std::string Specs::to_string() const { return detail::prefix_str(*this, spec_str); }

std::vector<PartitionSpec> Specs::leaves(const TreeDef& tree, const char* what) const {
  return detail::expand_prefix(*this, tree, {std::string("shard_map ") + what, false, ""},
                               spec_str);
}

namespace detail {
namespace {

using core::Aval;
using core::Program;

// The axes (name, size) of pmaps nested in the pmap being traced, in order of appearance.
using NestedAxes = std::vector<std::pair<std::string, int64_t>>;
thread_local NestedAxes* nested_axes = nullptr;

std::string spec_names(const Mesh& mesh) {
  std::string s = "{";
  for (size_t i = 0; i < mesh.axis_names().size(); ++i) s += (i ? ", " : "") + mesh.axis_names()[i];
  return s + "}";
}

std::string mesh_line(const Mesh& mesh) {
  std::string shape = "(", names = "(";
  const auto& n = mesh.axis_names();
  for (size_t i = 0; i < n.size(); ++i) {
    shape += (i ? ", " : "") + std::to_string(mesh.axis_sizes()[i]);
    names += (i ? ", '" : "'") + n[i] + "'";
  }
  if (n.size() == 1) {
    shape += ",";
    names += ",";
  }
  return "The mesh given has shape " + shape + ") with corresponding axis names " + names + ").";
}

// Returns how many blocks dimension d is split into.
int64_t blocks_of(const Mesh& mesh, const PartitionSpec& spec, size_t d) {
  if (d >= spec.size()) return 1;
  int64_t n = 1;
  for (const std::string& a : spec[d].axes()) n *= mesh.axis_size(a);
  return n;
}

// `label` names the spec in messages by its key path: in_specs[0][1], or in_specs for one
// spec covering every argument.
void check_spec(const Mesh& mesh, const PartitionSpec& spec, const Aval& aval, const char* what,
                const std::string& label, const std::string& fname, const std::string& value_desc) {
  for (size_t d = 0; d < spec.size(); ++d) {
    if (spec[d].is_unconstrained()) {
      throw ValueError("shard_map " + std::string(what) + " cannot use P.UNCONSTRAINED");
    }
    for (const std::string& a : spec[d].axes()) {
      if (mesh.axis_index(a) < 0) {
        throw ValueError("shard_map " + std::string(what) +
                         " argument must refer to an axis marked as manual (" + spec_names(mesh) +
                         "), but:\n\n  " + label + " refers to '" + a + "'\n\nCheck the " + what +
                         " values passed to shard_map.");
      }
    }
  }
  if (spec.size() > aval.shape.size()) {
    const bool in = std::string(what) == "in_specs";
    throw ValueError(
        "shard_map applied to the function '" + fname + "' was given an " + what +
        " entry which is too long to be compatible with the corresponding " +
        (in ? "input" : "output") + " value from the function:\n\n" + label + " is " +
        spec.to_string() + " which has length " + std::to_string(spec.size()) + ", but " +
        value_desc + " has shape " + aval.str() + ", which has rank " +
        std::to_string(aval.shape.size()) + " (and " + std::to_string(aval.shape.size()) + " < " +
        std::to_string(spec.size()) + ")\n\nEntries in " + what +
        " must be of length no greater than the number of axes in "
        "the corresponding " +
        (in ? "input" : "output") +
        " value.\n\nEither revise the spec "
        "to be shorter, or modify '" +
        fname + "' so that its " + (in ? "inputs" : "outputs") + " have sufficient rank." +
        (aval.shape.empty() ? std::string("\n\nFor scalar values (rank 0), consider using an ") +
                                  what + " entry of `P()`, where `P = jax.sharding.PartitionSpec`."
                            : std::string()));
  }
}

// JAX's check_vma: which manual axes each value may vary over, as a bit set over
// `axes`. Inputs vary over the axes their spec splits them by; each primitive's vma rule
// says what its results vary over (psum-like collectives make them invariant over their
// axes, axis_index makes them vary), by default the union of its operands'; a call's
// results vary as its program's do.
std::vector<uint64_t> varying(const Program& p, const std::vector<uint64_t>& inputs,
                              const std::vector<std::string>& axes) {
  std::vector<uint64_t> v(p.avals.size(), 0);
  std::vector<int> in_vars(p.constvars);
  in_vars.insert(in_vars.end(), p.invars.begin(), p.invars.end());
  for (size_t i = 0; i < in_vars.size(); ++i) v[size_t(in_vars[i])] = inputs[i];
  for (const core::Eqn& e : p.eqns) {
    uint64_t any = 0;
    std::vector<uint64_t> ins;
    for (const core::Atom& a : e.inputs) {
      ins.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
      any |= ins.back();
    }
    std::vector<uint64_t> outs(e.outputs.size(), any);
    if (core::has_trait(e.prim, core::kCall)) {
      outs = varying(*e.params.get<std::shared_ptr<const Program>>("jaxpr"), ins, axes);
    } else if (const auto vma = core::rules(e.prim).vma) {
      outs = vma(ins, e.params, axes);
    }
    for (size_t r = 0; r < e.outputs.size(); ++r) v[size_t(e.outputs[r])] = outs[r];
  }
  std::vector<uint64_t> result;
  for (const core::Atom& a : p.outvars) result.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
  return result;
}

uint64_t spec_mask(const PartitionSpec& spec, const std::vector<std::string>& axes) {
  uint64_t m = 0;
  for (size_t d = 0; d < spec.size(); ++d) {
    for (const std::string& a : spec[d].axes()) {
      auto it = std::find(axes.begin(), axes.end(), a);
      if (it != axes.end()) m |= uint64_t{1} << (it - axes.begin());
    }
  }
  return m;
}

std::string axis_set(uint64_t m, const std::vector<std::string>& axes) {
  std::string s;
  for (size_t a = 0; a < axes.size(); ++a) {
    if (m & (uint64_t{1} << a)) s += (s.empty() ? "" : ",") + axes[a];
  }
  return "{" + s + "}";
}

std::string axis_list(uint64_t m, const std::vector<std::string>& axes) {
  std::string s = axis_set(m, axes);
  return s.substr(1, s.size() - 2);
}

void check_vma(const Program& body, const std::vector<PartitionSpec>& in_specs,
               const std::vector<PartitionSpec>& out_specs, const Mesh& mesh,
               const std::vector<std::string>& axes, const std::string& fname,
               const std::vector<std::string>& spec_paths) {
  std::vector<uint64_t> inputs;
  for (const PartitionSpec& s : in_specs) inputs.push_back(spec_mask(s, axes));
  std::vector<uint64_t> outs = varying(body, inputs, axes);
  for (size_t o = 0; o < outs.size(); ++o) {
    const uint64_t allowed = spec_mask(out_specs[o], axes);
    const uint64_t extra = outs[o] & ~allowed;
    if (extra == 0) continue;
    const uint64_t all = (axes.size() >= 64 ? ~uint64_t{0} : (uint64_t{1} << axes.size()) - 1);
    const uint64_t unmentioned = all & ~allowed;
    const std::string label = "out_specs" + spec_paths[o];
    std::string bullet;
    if (__builtin_popcountll(unmentioned) == 1) {
      bullet = label + " is " + out_specs[o].to_string() +
               " which implies that the corresponding output value is replicated across mesh "
               "axis '" +
               axes[size_t(__builtin_ctzll(unmentioned))] +
               "', but could not infer replication over any axes";
    } else {
      bullet = label + " is " + out_specs[o].to_string() +
               " which implies that the corresponding output value is replicated across mesh "
               "axes " +
               axis_set(unmentioned, axes) + ", but could only infer replication over " +
               axis_set(unmentioned & ~outs[o], axes) + ", which is missing the required axes " +
               axis_list(extra, axes);
    }
    throw ValueError("shard_map applied to the function '" + fname +
                     "' was given out_specs which require replication which can't be statically "
                     "inferred given the mesh:\n\n" +
                     mesh_line(mesh) + "\n\n" + bullet +
                     "\n\nCheck if these output values are meant to be replicated over those mesh "
                     "axes. If not, consider revising the corresponding out_specs entries. If so, "
                     "consider disabling the check by passing the check_vma=False argument to "
                     "`jax.shard_map`.");
  }
}

struct Region {
  std::vector<std::string> axis_names;  // the manual axes
  std::vector<int64_t> axis_sizes;
  std::shared_ptr<const Sharding> mesh;  // null: a pmap nested in another
};

// Without check_vma, a result whose spec leaves out axes it may vary over is taken from
// the first instance along them, as JAX does: the program gathers it over those axes and
// keeps index 0, so every device holds the same copy.
core::ClosedProgram keep_one_instance(const core::ClosedProgram& closed,
                                      const std::vector<PartitionSpec>& in_specs,
                                      const std::vector<PartitionSpec>& out_specs,
                                      const Region& region) {
  const std::shared_ptr<const Program> body = core::lift_consts(closed);
  const auto& axes = region.axis_names;
  std::vector<uint64_t> inputs;
  for (const PartitionSpec& s : in_specs) inputs.push_back(spec_mask(s, axes));
  const std::vector<uint64_t> vary = varying(*body, inputs, axes);
  std::vector<std::vector<std::string>> gather(vary.size());
  bool any = false;
  for (size_t o = 0; o < vary.size(); ++o) {
    const uint64_t extra = vary[o] & ~spec_mask(out_specs[o], axes);
    for (size_t a = 0; a < axes.size(); ++a) {
      if (extra & (uint64_t{1} << a)) gather[o].push_back(axes[a]);
    }
    any = any || !gather[o].empty();
  }
  if (!any) return closed;
  std::vector<Aval> avals;
  for (int v : closed.program->invars) avals.push_back(closed.program->avals[size_t(v)]);
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> in(closed.consts);
    in.insert(in.end(), xs.begin(), xs.end());
    std::vector<Array> outs =
        core::bind(core::Prim::pjit, std::move(in), {{"jaxpr", body}, {"name", std::string("f")}});
    for (size_t o = 0; o < outs.size(); ++o) {
      if (gather[o].empty()) continue;
      int64_t n = 1;
      for (const std::string& a : gather[o]) {
        n *= region.axis_sizes[size_t(std::find(axes.begin(), axes.end(), a) - axes.begin())];
      }
      Array all = core::bind1(core::Prim::pall_gather, {outs[o]},
                              {{"axes", gather[o]},
                               {"all_gather_dimension", int64_t{0}},
                               {"axis_size", n},
                               {"tiled", false}});
      Shape start(size_t(all.ndim()), 0), limit = all.shape();
      limit[0] = 1;
      outs[o] = core::bind1(core::Prim::squeeze,
                            {core::bind1(core::Prim::slice, {all},
                                         {{"start_indices", start},
                                          {"limit_indices", limit},
                                          {"strides", std::vector<int64_t>{}}})},
                            {{"dimensions", std::vector<int64_t>{0}}});
    }
    return outs;
  });
}

// Traces fn on the blocks (`local`), checks the results' specs, and binds the shard_map.
std::vector<Array> bind_region(const std::vector<Array>& args, std::vector<PartitionSpec> in_specs,
                               const std::vector<Aval>& local, const FlatFn& fn, TreeDef* out_def,
                               const Specs& out_specs_given, const Region& region, const Mesh* mesh,
                               bool vma, const std::string& fname) {
  core::ClosedProgram closed;
  {
    std::vector<std::unique_ptr<core::AxisScope>> scopes;
    for (size_t a = 0; a < region.axis_names.size(); ++a) {
      scopes.push_back(std::make_unique<core::AxisScope>(
          core::AxisFrame{region.axis_names[a], region.axis_sizes[a], true}));
    }
    closed = core::trace_to_program(local,
                                    [&](const std::vector<Array>& xs) { return fn(xs, out_def); });
  }
  const Program& body = *closed.program;
  std::vector<std::string> spec_paths;
  std::vector<PartitionSpec> out_specs = expand_prefix(
      out_specs_given, *out_def, {"shard_map out_specs", false, ""}, spec_str, &spec_paths);
  // JAX names a result by its key path in f's output: a lone array is `f(*args)` itself.
  const std::vector<std::string> out_paths = leaf_key_paths(*out_def);
  for (size_t o = 0; o < body.outvars.size() && mesh != nullptr; ++o) {
    check_spec(*mesh, out_specs[o], body.aval_of(body.outvars[o]), "out_specs",
               "out_specs" + spec_paths[o], fname, fname + "(*args)" + out_paths[o]);
  }
  std::vector<PartitionSpec> all_in(closed.consts.size(), PartitionSpec());
  all_in.insert(all_in.end(), in_specs.begin(), in_specs.end());
  if (vma && mesh != nullptr) {
    check_vma(*core::lift_consts(closed), all_in, out_specs, *mesh, region.axis_names, fname,
              spec_paths);
  } else {
    closed = keep_one_instance(closed, all_in, out_specs, region);
  }
  std::vector<Array> inputs(closed.consts);
  inputs.insert(inputs.end(), args.begin(), args.end());
  core::Params params{{"jaxpr", core::lift_consts(closed)},
                      {"axis_names", region.axis_names},
                      {"axis_sizes", region.axis_sizes},
                      {"in_specs", all_in},
                      {"out_specs", out_specs},
                      {"mesh", region.mesh}};
  return core::bind(core::Prim::shard_map, std::move(inputs), std::move(params));
}

}  // namespace

bool axes_bound() { return !core::bound_axes().empty(); }

Array as_pmap_result(const Array& x) {
  const ArrayImpl& impl = impl_of(x);
  if (impl.tracer || impl.abstract || !impl.sharding || impl.aval.shape.empty()) return x;
  auto marked = std::make_shared<ArrayImpl>(impl);
  marked->pmapped = true;
  return Array(std::move(marked));
}

std::vector<PartitionSpec> leaf_specs(const Specs& specs, const std::vector<TreeDef>& defs) {
  // in_specs is a prefix of the tuple of positional arguments.
  return specs.leaves(TreeDef{TreeDef::Kind::tuple, {}, {}, defs}, "in_specs");
}

std::vector<std::string> leaf_spec_paths(const Specs& specs, const std::vector<TreeDef>& defs) {
  std::vector<std::string> paths;
  expand_prefix(specs, TreeDef{TreeDef::Kind::tuple, {}, {}, defs},
                {"shard_map in_specs", false, ""}, spec_str, &paths);
  return paths;
}

std::vector<Array> shard_map_flat(const std::vector<Array>& leaves,
                                  const std::vector<PartitionSpec>& in_specs,
                                  const std::vector<std::string>& names, const FlatFn& fn,
                                  TreeDef* out_def, const Mesh& mesh, const Specs& out_specs,
                                  const ShardMapOptions& options,
                                  const std::vector<std::string>& spec_paths) {
  for (const std::string& a : mesh.axis_names()) {
    if (const core::AxisFrame* f = core::lookup_axis(a); f != nullptr && f->manual) {
      throw ValueError("shard_map applied to the function '" + options.name + "' maps mesh axis '" +
                       a +
                       "', which an enclosing shard_map or pmap already maps; a nested "
                       "shard_map must use other mesh axes");
    }
  }
  std::vector<Aval> local;
  for (size_t i = 0; i < leaves.size(); ++i) {
    Aval a = core::aval_of(leaves[i]);
    // JAX names the spec by its key path in in_specs and the value by its key path in
    // args (no parameter names in C++, as JAX without a signature).
    const std::string spec_label = "in_specs" + spec_paths[i];
    check_spec(mesh, in_specs[i], a, "in_specs", spec_label, options.name, names[i]);
    for (size_t d = 0; d < a.shape.size(); ++d) {
      const int64_t n = blocks_of(mesh, in_specs[i], d);
      if (a.shape[d] % n == 0) {
        a.shape[d] /= n;
        continue;
      }
      const auto& axes = in_specs[i][d].axes();
      std::string which = axes.size() == 1 ? "mesh axis '" + axes[0] + "'" : "mesh axes (";
      if (axes.size() != 1) {
        for (size_t k = 0; k < axes.size(); ++k) which += (k ? ", '" : "'") + axes[k] + "'";
        which += ") (of total size " + std::to_string(n) + ")";
      } else {
        which += " (of size " + std::to_string(n) + ")";
      }
      throw ValueError(
          "shard_map applied to the function '" + options.name +
          "' was given argument arrays with axis sizes that are not evenly divisible by the "
          "corresponding mesh axis sizes:\n\n" +
          mesh_line(mesh) + "\n\n" + names[i] + " of shape " + core::aval_of(leaves[i]).str() +
          " corresponds to " + spec_label + " of value " + in_specs[i].to_string() +
          ", which maps array "
          "axis " +
          std::to_string(d) + " (of size " + std::to_string(a.shape[d]) + ") to " + which +
          ", but " + std::to_string(n) + " does not evenly divide " + std::to_string(a.shape[d]) +
          "\n\nArray arguments' axis sizes must be evenly divisible "
          "by the mesh axis or axes indicated by the corresponding elements of the argument's "
          "in_specs entry. Consider checking that in_specs are correct, and if so consider "
          "changing the mesh axis sizes or else padding the input and adapting '" +
          options.name + "' appropriately.");
    }
    local.push_back(a);
  }
  Region region{mesh.axis_names(),
                std::vector<int64_t>(mesh.axis_sizes().begin(), mesh.axis_sizes().end()),
                std::make_shared<const Sharding>(NamedSharding(mesh, PartitionSpec()))};
  return bind_region(leaves, in_specs, local, fn, out_def, out_specs, region, &mesh,
                     options.check_vma, options.name);
}

namespace {

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

}  // namespace detail
}  // namespace parax
