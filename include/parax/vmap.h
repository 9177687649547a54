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

// Where an argument or result carries the mapped axis: an index (negative counts from the
// end), or None (an argument shared by every instance; a result equal for all of them).
class MapAxis {
 public:
  MapAxis(int axis) : axis_(axis) {}  // NOLINT(google-explicit-constructor)
  MapAxis(None_t) {}                  // NOLINT(google-explicit-constructor)
  bool is_none() const { return !axis_.has_value(); }
  int axis() const { return *axis_; }

 private:
  std::optional<int> axis_;
};

// in_axes / out_axes: one MapAxis for every argument (result), or a list with one per
// positional argument (applying to all leaves of that argument), e.g. `{0, parax::None}`;
// out_axes lists one per result leaf.
class MapAxes {
 public:
  MapAxes(int axis) : all_(axis) {}     // NOLINT(google-explicit-constructor)
  MapAxes(None_t) : all_(None) {}       // NOLINT(google-explicit-constructor)
  MapAxes(std::initializer_list<MapAxis> each) : each_(each) {}
  // Returns the axis of entry i of n.
  MapAxis at(size_t i, size_t n, const char* what) const;

 private:
  std::optional<MapAxis> all_;
  std::vector<MapAxis> each_;
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
// Returns one axis per leaf of `defs` (per-argument entries repeated over its leaves).
std::vector<int> leaf_axes(const MapAxes& axes, const std::vector<TreeDef>& defs,
                           const char* what);
std::vector<std::string> leaf_names(const std::vector<TreeDef>& defs);
}  // namespace detail

template <class F>
class Vmapped {
 public:
  Vmapped(F f, VmapOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
    std::vector<Array> leaves;
    std::vector<TreeDef> defs;
    detail::flatten_args(leaves, defs, args...);
    TreeDef out_def;
    auto outs = detail::vmap_flat(leaves, detail::leaf_axes(options_.in_axes, defs, "in_axes"),
                                  detail::leaf_names(defs), detail::flat_fn<F, Args...>(f_, defs),
                                  &out_def, options_);
    return tree::unflatten<R>(out_def, outs);
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
