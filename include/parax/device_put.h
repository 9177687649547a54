// Laying data out over devices, and bringing it back to the host.
#pragma once

#include <functional>
#include <initializer_list>
#include <map>
#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "parax/array.h"
#include "parax/tree.h"

namespace parax {

// Returns x laid out as `sharding` (committed). Re-lays an already sharded array.
// Throws ValueError if the sharding does not fit x's rank or does not divide its shape.
Array device_put(const Array& x, const Sharding& sharding);
// Returns x on `device` alone (committed).
Array device_put(const Array& x, const Device& device);
// Returns x unchanged (JAX's device_put without a target keeps uncommitted data uncommitted).
Array device_put(const Array& x);

// Applies device_put to every leaf of a pytree.
template <class T>
T device_put(const T& tree, const Sharding& sharding) {
  return tree::map([&](const Array& leaf) { return device_put(leaf, sharding); }, tree);
}

// Shardings as a prefix of a value's pytree (jax.device_put's pytree of shardings): one
// Sharding for a whole subtree, a list matching a node's children (a vector, tuple, pair
// or struct), or a map matching a std::map's keys. (`{s}` is one Sharding for the whole
// tree; a list of one is `std::vector<Sharding>{s}`.)
class ShardingTree {
 public:
  ShardingTree(Sharding all) : sharding_(std::move(all)) {}  // NOLINT
  ShardingTree(std::initializer_list<ShardingTree> children) : children_(children) {}
  ShardingTree(const std::vector<Sharding>& children)  // NOLINT
      : children_(children.begin(), children.end()) {}
  ShardingTree(const std::map<std::string, ShardingTree>& children);  // NOLINT
  // Returns one sharding per leaf of `tree`; throws JAX's ValueError when this is not a
  // prefix of it.
  std::vector<Sharding> leaves(const TreeDef& tree) const;
  const Sharding* leaf_value() const { return sharding_ ? &*sharding_ : nullptr; }
  const std::vector<ShardingTree>& children() const { return children_; }

 private:
  std::optional<Sharding> sharding_;
  std::vector<ShardingTree> children_;
};

// Returns every leaf of `tree` laid out as its sharding in `shardings`.
template <class T>
T device_put(const T& tree, const ShardingTree& shardings) {
  auto [leaves, def] = tree::flatten(tree);
  std::vector<Sharding> each = shardings.leaves(def);
  for (size_t i = 0; i < leaves.size(); ++i) leaves[i] = device_put(leaves[i], each[i]);
  return tree::unflatten<T>(def, leaves);
}

namespace detail {
// Returns an uncommitted array of `n` host values of dtype `src` (canonicalized), shaped
// `block` if it holds n elements, else 1-D.
Array host_vector_array(const void* values, int64_t n, DType src, const Shape& block);
Array make_array_from_shards(const Shape& shape, const Sharding& sharding,
                             const std::function<Array(const Index&, const Shape&)>& callback,
                             std::optional<DType> dtype);
template <class R>
Array callback_result(R&& r, const Shape& block) {
  if constexpr (std::is_convertible_v<R, Array>) {
    return Array(std::forward<R>(r));
  } else {
    using T = typename std::decay_t<R>::value_type;
    static_assert(is_scalar_type_v<T> && !std::is_same_v<T, bool>,
                  "the callback returns an Array or a std::vector of numbers");
    return host_vector_array(r.data(), int64_t(r.size()), dtype_of<T>(), block);
  }
}
}  // namespace detail

// Returns a committed array of `shape` laid out as `sharding`, whose shards come from
// `callback(index)` (jax.make_array_from_callback): `index` is the shard's Index into the
// global array, and the callback returns that block, as an Array of the block's shape or
// a row-major std::vector of its size. It is called for this process's devices only (once
// if the sharding is fully replicated). The dtype is the blocks' (`dtype` if given: needed
// when this process holds no shard). Throws ValueError for blocks of another size or dtype.
template <class F>
Array make_array_from_callback(const Shape& shape, const Sharding& sharding, F&& callback,
                               std::optional<DType> dtype = std::nullopt) {
  return detail::make_array_from_shards(
      shape, sharding,
      [&](const Index& index, const Shape& block) {
        return detail::callback_result(callback(index), block);
      },
      dtype);
}
template <class T>
T device_put(const T& tree, const Device& device) {
  return tree::map([&](const Array& leaf) { return device_put(leaf, device); }, tree);
}

// An array's values on the host, row-major.
struct HostArray {
  Shape shape;
  DType dtype = DType::float32;
  std::vector<uint8_t> bytes;

  template <class T>
  const T* data() const {
    if (dtype_of<T>() != dtype) {
      throw TypeError("HostArray holds " + std::string(dtype_name(dtype)) + ", not " +
                      std::string(dtype_name(dtype_of<T>())));
    }
    return reinterpret_cast<const T*>(bytes.data());
  }
};

// Copies x's values to the host.
HostArray device_get(const Array& x);

}  // namespace parax
