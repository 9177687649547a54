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
  return detail::expand_prefix(*this, tree, fn + " " + what, axis_str);
}

namespace detail {

std::vector<int> leaf_axes(const MapAxes& axes, const std::vector<TreeDef>& defs,
                           const std::string& fn) {
  // in_axes is a prefix of the tuple of positional arguments.
  TreeDef args{TreeDef::Kind::tuple, {}, {}, defs};
  std::vector<int> out;
  for (const std::optional<int>& a : axes.leaves(args, fn, "in_axes")) {
    out.push_back(a ? *a : kNoAxis);
  }
  return out;
}

std::vector<std::string> leaf_names(const std::vector<TreeDef>& defs) {
  std::vector<std::string> names;
  for (size_t i = 0; i < defs.size(); ++i) {
    names.insert(names.end(), size_t(defs[i].num_leaves()), "args[" + std::to_string(i) + "]");
  }
  return names;
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
    auto it = std::find_if(groups.begin(), groups.end(), [&](const auto& g) { return g.first == size; });
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
    const std::string where = "axis " + std::to_string(dims[i]) + " of " + names[i] +
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
    closed = core::trace_to_program(element, [&](const std::vector<Array>& args) {
      return fn(args, out_def);
    });
  }
  std::vector<Array> inputs(closed.consts);
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  std::vector<int> input_dims(closed.consts.size(), core::kNotMapped);
  input_dims.insert(input_dims.end(), dims.begin(), dims.end());
  core::Batched r = core::vmap_program(*closed.program, inputs, input_dims, axis);

  std::vector<Array> outs;
  const std::vector<std::optional<int>> out_axes = options.out_axes.leaves(*out_def, "vmap", "out_axes");
  for (size_t o = 0; o < r.outs.size(); ++o) {
    const std::optional<int> want = out_axes[o];
    if (!want) {
      if (r.dims[o] != core::kNotMapped) {
        throw ValueError(options.axis_name.empty()
                             ? "at vmap out_axes, got axis spec None but output was batched on "
                               "axis " + std::to_string(r.dims[o])
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
