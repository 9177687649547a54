// Named-axis collectives (JAX's lax.psum, ...): inside a function mapped by vmap (with an
// axis_name), pmap or shard_map, each instance exchanges values with the others along the
// named axes. They apply leafwise to pytrees. An axis name that no enclosing transform
// binds raises NameError.
#pragma once

#include <cstdint>
#include <initializer_list>
#include <string>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/tree.h"

namespace parax::lax {

// One axis name, or several (acting over their product, the first major): "i", {"i", "j"}.
class AxisNames {
 public:
  AxisNames(const char* name) : names_{name} {}             // NOLINT
  AxisNames(std::string name) : names_{std::move(name)} {}  // NOLINT
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}
  AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}  // NOLINT
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Groups of instance indices along the axes (row-major over several), as JAX's
// axis_index_groups: {{0, 1}, {2, 3}} runs a collective over an axis of size 4 within the
// first two and within the last two instances. The groups must partition the axis into
// groups of one size (else ValueError). Empty: one group of every instance.
using AxisIndexGroups = std::vector<std::vector<int64_t>>;

// Sum, mean, maximum and minimum over all instances (of this instance's group); every
// instance gets the result. (psum of bool counts: it sums as int32.)
Array psum(const ArrayLike& x, const AxisNames& axis_name,
           const AxisIndexGroups& axis_index_groups = {});
Array pmean(const ArrayLike& x, const AxisNames& axis_name,
            const AxisIndexGroups& axis_index_groups = {});
Array pmax(const ArrayLike& x, const AxisNames& axis_name,
           const AxisIndexGroups& axis_index_groups = {});
Array pmin(const ArrayLike& x, const AxisNames& axis_name,
           const AxisIndexGroups& axis_index_groups = {});
// Every instance's x (of this instance's group, in the group's order), stacked along a new
// dimension `axis` (tiled: concatenated along it).
Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis = 0, bool tiled = false,
                 const AxisIndexGroups& axis_index_groups = {});
// psum(x) split along `scatter_dimension` into one block per instance, which keeps its own
// (untiled: x.shape[scatter_dimension] must equal the axis (group) size, and that dimension
// goes).
Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension = 0,
                   bool tiled = false, const AxisIndexGroups& axis_index_groups = {});
// Sends each instance's x to another: `perm` lists (source, destination) index pairs;
// instances that are no destination get zeros.
Array ppermute(const Array& x, const AxisNames& axis_name,
               const std::vector<std::pair<int64_t, int64_t>>& perm);
// ppermute by a permutation of sources: instance i receives instance perm[i]'s x.
// Requires: perm holds each of 0 .. perm.size() - 1 once (else ValueError).
Array pshuffle(const Array& x, const AxisNames& axis_name, const std::vector<int64_t>& perm);
// Splits x along split_axis into one block per instance (of the group), sends block k to
// the group's k-th instance, and concatenates what arrives along concat_axis (untiled: the
// split axis must have the axis (group) size; it is removed and a new axis of that size
// appears at concat_axis).
Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis,
                 int64_t concat_axis, bool tiled = false,
                 const AxisIndexGroups& axis_index_groups = {});
// Swaps the mapped axis with x's dimension `axis` (whose size must be the axis (group)
// size): all_to_all(x, axis_name, axis, axis).
Array pswapaxes(const Array& x, const AxisNames& axis_name, int64_t axis,
                const AxisIndexGroups& axis_index_groups = {});
// This instance's index along the axes (row-major over several), int32.
Array axis_index(const AxisNames& axis_name);
// The number of instances along the axes.
int64_t axis_size(const AxisNames& axis_name);

// The same, leafwise over a pytree.
template <class T>
concept CollectiveTree = !std::is_convertible_v<T, ArrayLike>;

template <CollectiveTree T>
T psum(const T& tree, const AxisNames& axis_name, const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return psum(x, axis_name, groups); }, tree);
}
template <CollectiveTree T>
T pmean(const T& tree, const AxisNames& axis_name, const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return pmean(x, axis_name, groups); }, tree);
}
template <CollectiveTree T>
T pmax(const T& tree, const AxisNames& axis_name, const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return pmax(x, axis_name, groups); }, tree);
}
template <CollectiveTree T>
T pmin(const T& tree, const AxisNames& axis_name, const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return pmin(x, axis_name, groups); }, tree);
}
template <CollectiveTree T>
T all_gather(const T& tree, const AxisNames& axis_name, int64_t axis = 0, bool tiled = false,
             const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return all_gather(x, axis_name, axis, tiled, groups); },
                   tree);
}
template <CollectiveTree T>
T ppermute(const T& tree, const AxisNames& axis_name,
           const std::vector<std::pair<int64_t, int64_t>>& perm) {
  return tree::map([&](const Array& x) { return ppermute(x, axis_name, perm); }, tree);
}
template <CollectiveTree T>
T pshuffle(const T& tree, const AxisNames& axis_name, const std::vector<int64_t>& perm) {
  return tree::map([&](const Array& x) { return pshuffle(x, axis_name, perm); }, tree);
}
template <CollectiveTree T>
T all_to_all(const T& tree, const AxisNames& axis_name, int64_t split_axis, int64_t concat_axis,
             bool tiled = false, const AxisIndexGroups& groups = {}) {
  return tree::map(
      [&](const Array& x) {
        return all_to_all(x, axis_name, split_axis, concat_axis, tiled, groups);
      },
      tree);
}
template <CollectiveTree T>
T pswapaxes(const T& tree, const AxisNames& axis_name, int64_t axis,
            const AxisIndexGroups& groups = {}) {
  return tree::map([&](const Array& x) { return pswapaxes(x, axis_name, axis, groups); }, tree);
}

}  // namespace parax::lax
