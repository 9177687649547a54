// vmap over flat leaves: trace the function on one instance's types (with the axis name
// bound, so collectives find it), then evaluate its program with the batching rules.
#include "parax/vmap.h"

#include "core/batching.h"
#include "core/program_trace.h"
#include "transforms/map_util.h"

#include <algorithm>

namespace parax {

namespace {
std::string axis_str(const std::optional<int>& a) { return a ? std::to_string(*a) : "None"; }
}  // namespace

std::string MapAxes::to_string() const { return detail::prefix_str(*this, axis_str); }

std::vector<std::optional<int>> MapAxes::leaves(const TreeDef& tree, const std::string& fn,
                                                const char* what) const {
  // JAX's vmap words a bad prefix as a specification (flatten_axes); pmap uses tree_util's
  // key-path form, explaining in_axes.
  detail::PrefixError err{fn + " " + what, fn == "vmap", ""};
  if (fn == "pmap" && std::string(what) == "in_axes") {
    err.note =
        "The 'full pytree' here is the tuple of arguments passed positionally to the "
        "pmapped function, and the value of `in_axes` must be a tree prefix of that "
        "tuple. But it was not a prefix.\n\nCheck that the value of the `in_axes` "
        "argument to `pmap` is a tree prefix of the tuple of arguments passed "
        "positionally to the pmapped function.";
  } else if (fn == "pmap") {
    err.note =
        "The full pytree is the output of the pmapped function. Ensure that the "
        "`out_axes` argument to `pmap` is a pytree prefix of the pmapped function's "
        "output.";
  }
  return detail::expand_prefix(*this, tree, err, axis_str);
}

namespace detail {

std::string child_key(const TreeDef& def, size_t i) {
  if (def.kind == TreeDef::Kind::dict) return "['" + def.keys[i] + "']";
  return "[" + std::to_string(i) + "]";
}

std::vector<std::string> leaf_key_paths(const TreeDef& tree) {
  std::vector<std::string> out;
  const auto visit = [&](const auto& self, const TreeDef& def, const std::string& path) -> void {
    if (def.kind == TreeDef::Kind::leaf) {
      out.push_back(path);
      return;
    }
    for (size_t i = 0; i < def.children.size(); ++i) {
      self(self, def.children[i], path + child_key(def, i));
    }
  };
  visit(visit, tree, "");
  return out;
}

namespace {
// A pytree node's Python type name, as tree_util's errors print it.
std::string kind_name(const TreeDef& d) {
  switch (d.kind) {
    case TreeDef::Kind::leaf:
      return "parax::Array";
    case TreeDef::Kind::list:
      return "list";
    case TreeDef::Kind::tuple:
      return "tuple";
    case TreeDef::Kind::dict:
      return "dict";
    case TreeDef::Kind::custom:
      return d.type_name;
  }
  return "";
}
}  // namespace

void throw_prefix_error(const PrefixError& err, const std::string& spec, const TreeDef& tree,
                        const std::string& path, const TreeDef& def, size_t n_prefix, int depth) {
  if (err.spec_form) {
    throw ValueError(err.what +
                     " specification must be a tree prefix of the corresponding "
                     "value, got specification " +
                     spec + " for value tree " + tree.to_string() + ".");
  }
  // A braced list is the positional tuple at the top and a list below (as prefix_str).
  const std::string list_type = depth == 0 ? "tuple" : "list";
  std::string msg;
  if (def.kind == TreeDef::Kind::leaf) {
    msg = "pytree structure error: different types at key path\n    " + err.what + path +
          "\nAt that key path, the prefix pytree " + err.what +
          " has a subtree of type\n    "
          "<class '" +
          list_type +
          "'>\nbut at the same key path the full pytree has a subtree "
          "of different type\n    <class '" +
          kind_name(def) + "'>.";
  } else {
    const std::string type = kind_name(def);
    msg = "pytree structure error: different lengths of " + type + " at key path\n    " + err.what +
          path + "\nAt that key path, the prefix pytree " + err.what + " has a subtree of type " +
          type + " of length " + std::to_string(n_prefix) +
          ", but the full pytree has a subtree of the same type but of length " +
          std::to_string(def.children.size()) + ".";
  }
  if (!err.note.empty()) msg += "\n\n" + err.note;
  throw ValueError(msg);
}

std::vector<int> leaf_axes(const MapAxes& axes, const std::vector<TreeDef>& defs,
                           const std::string& fn) {
  if (fn == "vmap" && !axes.leaf_value() && axes.children().size() != defs.size()) {
    throw ValueError(
        "vmap in_axes must be an int, None, or a tuple of entries corresponding "
        "to the positional arguments passed to the function, but got "
        "len(in_axes)=" +
        std::to_string(axes.children().size()) + ", len(args)=" + std::to_string(defs.size()));
  }
  // in_axes is a prefix of the tuple of positional arguments.
  TreeDef args{TreeDef::Kind::tuple, {}, {}, defs};
  std::vector<int> out;
  for (const std::optional<int>& a : axes.leaves(args, fn, "in_axes")) {
    out.push_back(a ? *a : kNoAxis);
  }
  return out;
}

std::vector<std::string> leaf_names(const std::vector<TreeDef>& defs) {
  // JAX names leaves by the function's parameters ("argument a[1]"); C++ has no parameter
  // names, so as JAX without a signature: args[0], args[1]['w'].
  std::vector<std::string> names;
  for (size_t i = 0; i < defs.size(); ++i) {
    for (const std::string& p : leaf_key_paths(defs[i])) {
      names.push_back("args[" + std::to_string(i) + "]" + p);
    }
  }
  return names;
}

void throw_no_array_args(const char* fn, const std::vector<TreeDef>& defs) {
  // Without leaves the arguments' structure is their value: Python's repr of *args.
  const std::string tree = TreeDef{TreeDef::Kind::tuple, "", {}, defs}.to_string();
  const std::string head = "PyTreeDef(";
  const std::string args = tree.substr(head.size(), tree.size() - head.size() - 1);
  throw ValueError(std::string(fn) +
                   " wrapped function must be passed at least one argument containing an array, "
                   "got empty *args=" +
                   args + " and **kwargs={}");
}

namespace {

// Resolves a possibly negative axis against `rank` (JAX's message when it is out of range).
int resolve(int axis, int64_t rank, const core::Aval& a) {
  const int64_t r = axis < 0 ? axis + rank : axis;
  if (r < 0 || r >= rank) {
    throw ValueError("vmap was requested to map its argument along axis " + std::to_string(axis) +
                     ", which implies that its rank should be at least " +
                     std::to_string((axis < 0 ? -axis : axis + 1)) + ", but is only " +
                     std::to_string(rank) + " (its shape is " + shape_str(a.shape) + ")");
  }
  return int(r);
}

}  // namespace

void throw_inconsistent_sizes(const std::string& fn, const std::vector<core::Aval>& avals,
                              const std::vector<int>& dims, const std::vector<std::string>& names) {
  // Sizes by how many axes have them, most first (ties in order of first appearance).
  std::vector<std::pair<int64_t, std::vector<size_t>>> groups;
  for (size_t i = 0; i < avals.size(); ++i) {
    if (dims[i] < 0) continue;
    const int64_t size = avals[i].shape[size_t(dims[i])];
    auto it =
        std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == size; });
    if (it == groups.end()) {
      groups.push_back({size, {i}});
    } else {
      it->second.push_back(i);
    }
  }
  std::stable_sort(groups.begin(), groups.end(),
                   [](const auto& a, const auto& b) { return a.second.size() > b.second.size(); });
  std::string msg = fn + " got inconsistent sizes for array axes to be mapped:\n";
  for (size_t g = 0; g < groups.size(); ++g) {
    const auto& [size, members] = groups[g];
    const size_t i = members[0];
    const std::string where = "axis " + std::to_string(dims[i]) + " of argument " + names[i] +
                              " of type " + avals[i].str();
    if (members.size() == 1) {
      msg += "  * one axis had size " + std::to_string(size) + ": " + where;
    } else {
      msg += std::string("  * ") + (g == 0 ? "most" : "some") + " axes (" +
             std::to_string(members.size()) + " of them) had size " + std::to_string(size) +
             ", e.g. " + where;
    }
    msg += g + 1 < groups.size() ? ";\n" : "";
  }
  throw ValueError(msg);
}

std::vector<Array> vmap_flat(const std::vector<Array>& leaves, const std::vector<int>& in_dims,
                             const std::vector<std::string>& names, const FlatFn& fn,
                             TreeDef* out_def, const VmapOptions& options) {
  std::vector<core::Aval> avals, element;
  std::vector<int> dims;
  std::optional<int64_t> size = options.axis_size;
  bool mismatch = false;
  for (size_t i = 0; i < leaves.size(); ++i) {
    core::Aval a = core::aval_of(leaves[i]);
    avals.push_back(a);
    if (in_dims[i] == kNoAxis) {
      dims.push_back(core::kNotMapped);
    } else {
      const int d = resolve(in_dims[i], int64_t(a.shape.size()), a);
      dims.push_back(d);
      const int64_t n = a.shape[size_t(d)];
      if (size && *size != n) mismatch = true;
      size = n;
      a.shape.erase(a.shape.begin() + d);
    }
    element.push_back(a);
  }
  if (mismatch) throw_inconsistent_sizes("vmap", avals, dims, names);
  if (!size) throw ValueError("vmap must have at least one non-None value in in_axes");
  const core::BatchAxis axis{*size, options.axis_name};

  core::ClosedProgram closed;
  {
    core::AxisScope scope(core::AxisFrame{options.axis_name, *size, false});
    closed = core::trace_to_program(
        element, [&](const std::vector<Array>& args) { return fn(args, out_def); });
  }
  std::vector<Array> inputs(closed.consts);
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  std::vector<int> input_dims(closed.consts.size(), core::kNotMapped);
  input_dims.insert(input_dims.end(), dims.begin(), dims.end());
  core::Batched r = core::vmap_program(*closed.program, inputs, input_dims, axis);

  std::vector<Array> outs;
  const std::vector<std::optional<int>> out_axes =
      options.out_axes.leaves(*out_def, "vmap", "out_axes");
  for (size_t o = 0; o < r.outs.size(); ++o) {
    const std::optional<int> want = out_axes[o];
    if (!want) {
      if (r.dims[o] != core::kNotMapped) {
        throw ValueError(options.axis_name.empty()
                             ? "at vmap out_axes, got axis spec None but output was batched on "
                               "axis " +
                                   std::to_string(r.dims[o])
                             : "vmap has mapped output (axis_name='" + options.axis_name +
                                   "') but out_axes is None");
      }
      outs.push_back(r.outs[o]);
      continue;
    }
    const int64_t rank = r.outs[o].ndim() + (r.dims[o] == core::kNotMapped ? 1 : 0);
    const int64_t to = *want < 0 ? *want + rank : *want;
    if (to < 0 || to >= rank) {
      throw ValueError("axis " + std::to_string(*want) +
                       " is out of bounds for array of dimension " + std::to_string(rank));
    }
    outs.push_back(core::move_batch_dim(r.outs[o], r.dims[o], int(to), *size));
  }
  return outs;
}

}  // namespace detail
}  // namespace parax
