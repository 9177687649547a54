// shard_map over flat leaves: traces f on one device's blocks with the mesh axes bound as
// names, checks what its results may vary over, and binds a shard_map equation (the manual
// region pmap binds too: manual_region.h).
#include "parax/shard_map.h"

#include <algorithm>

#include "core/array_value.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/vma.h"
#include "transforms/manual_region.h"
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
  std::vector<uint64_t> outs = prims::program_vma(body, inputs, axes);
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
  const std::vector<uint64_t> vary = prims::program_vma(*body, inputs, axes);
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

}  // namespace

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

bool axes_bound() { return !core::bound_axes().empty(); }

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

}  // namespace detail
}  // namespace parax
