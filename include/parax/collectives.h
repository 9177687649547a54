// Named-axis collectives (JAX's lax.psum, ...): inside a function mapped by vmap (with an
// axis_name), pmap or shard_map, each instance exchanges values with the others along the
// named axes. They apply leafwise to pytrees. An axis name that no enclosing transform
// binds raises NameError.
#pragma once

#include <initializer_list>
#include <string>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/tree.h"

namespace parax::lax {

// One axis name, or several (acting over their product, the first major): "i", {"i", "j"}.
class AxisNames {
 public:
  AxisNames(const char* name) : names_{name} {}                   // NOLINT
  AxisNames(std::string name) : names_{std::move(name)} {}        // NOLINT
  AxisNames(std::initializer_list<std::string> names) : names_(names) {}
  AxisNames(std::vector<std::string> names) : names_(std::move(names)) {}  // NOLINT
  const std::vector<std::string>& names() const { return names_; }

 private:
  std::vector<std::string> names_;
};

// Sum, mean, maximum and minimum over all instances; every instance gets the result.
// (psum of bool counts: it sums as int32.)
Array psum(const ArrayLike& x, const AxisNames& axis_name);
Array pmean(const ArrayLike& x, const AxisNames& axis_name);
Array pmax(const ArrayLike& x, const AxisNames& axis_name);
Array pmin(const ArrayLike& x, const AxisNames& axis_name);
// Every instance's x, stacked along a new dimension `axis` (tiled: concatenated along it).
Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis = 0, bool tiled = false);
// psum(x) split along `scatter_dimension` into one block per instance, which keeps its own
// (untiled: x.shape[scatter_dimension] must equal the axis size, and that dimension goes).
Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension = 0,
                   bool tiled = false);
// Sends each instance's x to another: `perm` lists (source, destination) index pairs;
// instances that are no destination get zeros.
Array ppermute(const Array& x, const AxisNames& axis_name,
               const std::vector<std::pair<int64_t, int64_t>>& perm);
// Splits x along split_axis into one block per instance, sends block k to instance k, and
// concatenates what arrives along concat_axis (untiled: the split axis must have the axis
// size; it is removed and a new axis of that size appears at concat_axis).
Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis,
                 int64_t concat_axis, bool tiled = false);
// This instance's index along the axes (row-major over several), int32.
Array axis_index(const AxisNames& axis_name);
// The number of instances along the axes.
int64_t axis_size(const AxisNames& axis_name);

// The same, leafwise over a pytree.
template <class T>
  requires(!std::is_convertible_v<T, ArrayLike>)
T psum(const T& tree, const AxisNames& axis_name) {
  return tree::map([&](const Array& x) { return psum(x, axis_name); }, tree);
}
template <class T>
  requires(!std::is_convertible_v<T, ArrayLike>)
T pmean(const T& tree, const AxisNames& axis_name) {
  return tree::map([&](const Array& x) { return pmean(x, axis_name); }, tree);
}
template <class T>
  requires(!std::is_convertible_v<T, ArrayLike>)
T pmax(const T& tree, const AxisNames& axis_name) {
  return tree::map([&](const Array& x) { return pmax(x, axis_name); }, tree);
}
template <class T>
  requires(!std::is_convertible_v<T, ArrayLike>)
T pmin(const T& tree, const AxisNames& axis_name) {
  return tree::map([&](const Array& x) { return pmin(x, axis_name); }, tree);
}

}  // namespace parax::lax
