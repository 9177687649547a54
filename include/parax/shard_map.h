// SPMD by hand. shard_map(f, mesh, in_specs, out_specs) runs f once per device of `mesh`
// on that device's block of each argument, with the mesh axes bound as names for
// collectives; pmap(f) maps the leading axis of its arguments over devices the same way.
// Both compile through jit, and a shard_map inside a jitted function is a region of
// per-device code in a program the compiler partitions automatically around it.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "parax/jit.h"
#include "parax/vmap.h"

namespace parax {

// The specs of shard_map's arguments or results, as a prefix of their pytree: one
// PartitionSpec for a whole subtree, or a list matching a node's children. in_specs matches
// the tuple of positional arguments: `P("i")` for all of them, `{P("i"), P()}` one each,
// `{P("i"), {P(), P("j")}}` inside a pair.
class Specs {
 public:
  Specs(PartitionSpec all) : spec_(std::move(all)) {}  // NOLINT(google-explicit-constructor)
  Specs(std::initializer_list<Specs> children) : children_(children) {}
  Specs(const std::vector<PartitionSpec>& children)  // NOLINT(google-explicit-constructor)
      : children_(children.begin(), children.end()) {}
  // Returns one spec per leaf of `tree`; throws ValueError when this is not a prefix of it.
  std::vector<PartitionSpec> leaves(const TreeDef& tree, const char* what) const;
  std::string to_string() const;
  // The node's own spec (nullptr for a list of children), and its children.
  const PartitionSpec* leaf_value() const { return spec_ ? &*spec_ : nullptr; }
  const std::vector<Specs>& children() const { return children_; }

 private:
  std::optional<PartitionSpec> spec_;
  std::vector<Specs> children_;
};

struct ShardMapOptions {
  // Checks that results whose out_specs omit a mesh axis do not vary along it.
  bool check_vma = true;
  // Names the function in errors.
  std::string name = "f";
};

struct PmapOptions {
  std::string axis_name = {};
  MapAxes in_axes = 0;
  MapAxes out_axes = 0;
  // The devices to map over (default: the first N local devices).
  std::vector<Device> devices = {};
};

namespace detail {
// Binds the shard_map of `fn` (traced per device) on flat leaves; returns the result leaves.
std::vector<Array> shard_map_flat(const std::vector<Array>& leaves,
                                  const std::vector<PartitionSpec>& in_specs,
                                  const std::vector<std::string>& leaf_names, const FlatFn& fn,
                                  TreeDef* out_def, const Mesh& mesh, const Specs& out_specs,
                                  const ShardMapOptions& options,
                                  const std::vector<std::string>& spec_paths);
// Returns one spec per leaf of the arguments `defs`.
std::vector<PartitionSpec> leaf_specs(const Specs& specs, const std::vector<TreeDef>& defs);
// Returns each leaf's key path in `specs`, for messages: in_specs[0][1] is "[0][1]", and a
// spec covering all arguments is "".
std::vector<std::string> leaf_spec_paths(const Specs& specs, const std::vector<TreeDef>& defs);
// True while a transform that binds axis names traces its function: a trace made then
// depends on those names, so it is not cached.
bool axes_bound();
// Returns x marked as a pmap result: x[i] is then device i's shard (JAX's PmapSharding).
Array as_pmap_result(const Array& x);
// `call` compiled and cached per signature through jit, except while axis names are bound
// (see axes_bound), when it is traced in place. lower() gives the jitted program.
// In a run of several processes, a pmap's mapped argument (this process's rows) as the
// global array over every process's devices (kNoAxis: unmapped, returned as is), and a
// result's global array as this process's rows (no axis: unmapped).
Array pmap_rows_to_global(const Array& x, int dim, const PmapOptions& options);
Array pmap_rows_to_local(const Array& x, std::optional<int> axis, const PmapOptions& options);

template <class G>
class Cached {
 public:
  Cached(G call, std::string name, std::optional<PmapOptions> pmap = std::nullopt)
      : call_(call),
        jitted_(std::move(call), JitOptions{.name = std::move(name)}),
        pmap_(std::move(pmap)) {}
  template <class... Args>
  auto operator()(const Args&... args) const {
    if (axes_bound()) return call_(args...);
    // Over every process's devices unless the pmap was given its own (local) devices.
    if (pmap_ && pmap_->devices.empty() && process_count() > 1) return across_processes(args...);
    auto out = jitted_(args...);
    if (pmap_) for_each_leaf(out, [](Array& leaf) { leaf = as_pmap_result(leaf); });
    return out;
  }
  template <class... Args>
  Lowered lower(const Args&... args) const {
    return jitted_.lower(args...);
  }

 private:
  // A pmap over every process's devices: each process's rows in, its rows out.
  template <class... Args>
  auto across_processes(const Args&... args) const {
    const std::vector<int> dims =
        leaf_axes(pmap_->in_axes, std::vector<TreeDef>{tree_structure(args)...}, "pmap");
    std::tuple<Args...> global(args...);
    size_t k = 0;
    std::apply(
        [&](auto&... a) {
          (for_each_leaf(a,
                         [&](Array& leaf) { leaf = pmap_rows_to_global(leaf, dims[k++], *pmap_); }),
           ...);
        },
        global);
    auto out = std::apply([&](const auto&... a) { return jitted_(a...); }, global);
    const auto out_axes = pmap_->out_axes.leaves(tree_structure(out), "pmap", "out_axes");
    k = 0;
    for_each_leaf(out, [&](Array& leaf) {
      leaf = as_pmap_result(pmap_rows_to_local(leaf, out_axes[k++], *pmap_));
    });
    return out;
  }

  G call_;
  Jitted<G> jitted_;
  std::optional<PmapOptions> pmap_;
};
template <class G>
Cached<G> cached(G call, std::string name, std::optional<PmapOptions> pmap = std::nullopt) {
  return Cached<G>(std::move(call), std::move(name), std::move(pmap));
}
std::vector<Array> pmap_flat(const std::vector<Array>& leaves, const std::vector<int>& in_dims,
                             const std::vector<std::string>& leaf_names, const FlatFn& fn,
                             TreeDef* out_def, const PmapOptions& options);
}  // namespace detail

// Returns f run per device over `mesh`: called like f, on global arrays; `.lower(args...)`
// gives the compiled program, as jit's does.
template <class F>
auto shard_map(F f, Mesh mesh, Specs in_specs, Specs out_specs, ShardMapOptions options = {}) {
  auto per_call = [f, mesh, in_specs, out_specs, options](const auto&... args) {
    return detail::call_flattened(
        f,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          return detail::shard_map_flat(leaves, detail::leaf_specs(in_specs, defs),
                                        detail::leaf_names(defs), fn, out_def, mesh, out_specs,
                                        options, detail::leaf_spec_paths(in_specs, defs));
        },
        args...);
  };
  return detail::cached(std::move(per_call), options.name);
}

// Returns f mapped over the leading axis of its arguments (or as `options` says), one
// instance per device: results are sharded one slice per device. `.lower(args...)` as jit's.
template <class F>
auto pmap(F f, PmapOptions options = {}) {
  auto per_call = [f, options](const auto&... args) {
    return detail::call_flattened(
        f,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          const std::vector<int> dims = detail::leaf_axes(options.in_axes, defs, "pmap");
          if (leaves.empty()) detail::throw_no_array_args("pmap", defs);
          return detail::pmap_flat(leaves, dims, detail::leaf_names(defs), fn, out_def, options);
        },
        args...);
  };
  return detail::cached(std::move(per_call), "pmap", options);
}

}  // namespace parax
