// parax::vmap: vectorizing map. vmap(f) applies f to every slice of its arguments along a
// batch axis at once, by rewriting f's program with each primitive's batching rule; it
// composes with jit, grad and itself. With an axis_name, collectives inside f (lax::psum,
// ...) act across the batch.
#pragma once

#include <initializer_list>
#include <optional>
#include <string>
#include <vector>

#include "parax/jit.h"

namespace parax {

// Where arguments or results carry the mapped axis, as a prefix of their pytree: one entry
// for a whole subtree — an index (negative counts from the end), or None (an argument
// shared by every instance; a result equal for all of them) — or a list matching a node's
// children. in_axes matches the tuple of positional arguments: `0` maps every leaf on its
// axis 0, `{0, parax::None}` maps the first argument and shares the second, and
// `{0, {None, 1}}` goes inside a pair.
class MapAxes {
 public:
  MapAxes(int axis) : axis_(axis), leaf_(true) {}  // NOLINT(google-explicit-constructor)
  MapAxes(None_t) : leaf_(true) {}                 // NOLINT(google-explicit-constructor)
  MapAxes(std::nullopt_t) : leaf_(true) {}         // NOLINT(google-explicit-constructor)
  MapAxes(std::initializer_list<MapAxes> children) : children_(children) {}
  // Returns one axis per leaf of `tree` (nullopt: not mapped); throws ValueError when this
  // is not a prefix of it.
  std::vector<std::optional<int>> leaves(const TreeDef& tree, const std::string& fn,
                                         const char* what) const;
  // Returns Python's form: 0, None, (0, None).
  std::string to_string() const;
  // The node's own axis (nullptr for a list of children), and its children.
  const std::optional<int>* leaf_value() const { return leaf_ ? &axis_ : nullptr; }
  const std::vector<MapAxes>& children() const { return children_; }

 private:
  std::optional<int> axis_;
  bool leaf_ = false;
  std::vector<MapAxes> children_;
};

struct VmapOptions {
  MapAxes in_axes = 0;
  MapAxes out_axes = 0;
  // Names the mapped axis for collectives inside f.
  std::string axis_name = {};
  // The batch size, needed only when no argument is mapped.
  std::optional<int64_t> axis_size = {};
};

namespace detail {
// vmap over flat leaves: `in_dims` per leaf (kNoAxis: not mapped); returns the output leaves.
inline constexpr int kNoAxis = -1000000;
std::vector<Array> vmap_flat(const std::vector<Array>& leaves, const std::vector<int>& in_dims,
                             const std::vector<std::string>& leaf_names, const FlatFn& fn,
                             TreeDef* out_def, const VmapOptions& options);
// Returns one axis per leaf of the arguments `defs` (kNoAxis: not mapped).
std::vector<int> leaf_axes(const MapAxes& axes, const std::vector<TreeDef>& defs,
                           const std::string& fn);
std::vector<std::string> leaf_names(const std::vector<TreeDef>& defs);
// Raises JAX's ValueError for a vmap or pmap (`fn`) called with no array among the
// arguments `defs`.
[[noreturn]] void throw_no_array_args(const char* fn, const std::vector<TreeDef>& defs);
}  // namespace detail

template <class F>
class Vmapped {
 public:
  Vmapped(F f, VmapOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          const std::vector<int> dims = detail::leaf_axes(options_.in_axes, defs, "vmap");
          if (leaves.empty() && !options_.axis_size) detail::throw_no_array_args("vmap", defs);
          return detail::vmap_flat(leaves, dims, detail::leaf_names(defs), fn, out_def, options_);
        },
        args...);
  }

 private:
  F f_;
  VmapOptions options_;
};

// Returns f mapped over axis 0 of every argument (or as `options` says).
template <class F>
Vmapped<std::decay_t<F>> vmap(F&& f, VmapOptions options = {}) {
  return Vmapped<std::decay_t<F>>(std::forward<F>(f), std::move(options));
}

}  // namespace parax
