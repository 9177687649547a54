// Laying data out over devices, and bringing it back to the host.
#pragma once

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
