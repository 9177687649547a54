// parax::Array: an immutable n-d array whose data may be sharded over several devices,
// and device_put / device_get, which lay data out and bring it back.
#pragma once

#include <cstdint>
#include <memory>
#include <ostream>
#include <source_location>
#include <string>
#include <type_traits>
#include <vector>

#include "parax/device.h"
#include "parax/dtype.h"
#include "parax/errors.h"
#include "parax/shape.h"
#include "parax/sharding.h"

namespace parax {
namespace detail {
struct ArrayImpl;
}

struct Shard;
class NumpyIndex;      // parax/indexing.h: a numpy index expression
class IndexUpdateRef;  // parax/indexing.h: what x.at(index) returns

// An n-d array. Cheap to copy (copies share the immutable data). On concrete data it
// knows its sharding; inside transformed functions it is a tracer.
class Array {
 public:
  // An empty handle, for containers; using it raises parax::ValueError.
  Array() = default;

  const Shape& shape() const;
  int64_t ndim() const;
  int64_t size() const;
  DType dtype() const;
  // True for arrays whose dtype came from a C++ scalar alone; they adopt the other
  // operand's dtype in arithmetic (JAX's weak types).
  bool weak_type() const;
  // Returns the layout over devices (also of a deleted array). Requires: a concrete (not
  // traced) array.
  Sharding sharding() const;
  // True once the array was placed explicitly (device_put, or computed from committed
  // inputs); uncommitted arrays move to wherever a computation runs.
  bool is_committed() const;
  // Returns the shards on this process's devices, in device-assignment order.
  std::vector<Shard> addressable_shards() const;
  // True if every device of the sharding belongs to this process (JAX's "is local"); a
  // fully replicated array can still span processes.
  bool is_fully_addressable() const;
  bool is_fully_replicated() const;
  // Returns the devices holding the array, sorted by id.
  std::vector<Device> devices() const;
  // Returns the one device holding the array (JAX's x.device); ValueError if it spans more.
  Device device() const;
  // Returns device_put(x, target): the array committed to `target` (JAX's x.to_device).
  Array to_device(const Device& target) const;
  Array to_device(const Sharding& target) const;
  // Waits for pending computation; returns *this.
  const Array& block_until_ready() const;
  // Frees the array's buffers now (JAX's x.delete()); every copy of this handle shares the
  // deletion. Reading a deleted array raises RuntimeError; its shape, dtype and sharding
  // stay readable. A jitted call deletes the arguments it was given to donate.
  void delete_();
  bool is_deleted() const;

  // Copies the whole array to the host in row-major order, converting to T as numpy's
  // astype would. Throws RuntimeError if other processes hold parts this one lacks.
  template <class T>
  std::vector<T> to_vector() const;
  // Returns the only element. Requires: size() == 1.
  template <class T>
  T item() const;

  // Returns x[i] (a negative i counts from the end). Requires: ndim() >= 1.
  Array operator[](int64_t i) const;
  // Returns x[s0, s1, ...]: one Slice per leading dimension (numpy's basic slicing;
  // out-of-range bounds clip, negative bounds count from the end).
  Array slice(const Index& index) const;
  // Returns x[index] with numpy's indexing: integers, slices with steps, newaxis,
  // ellipsis, integer and boolean arrays, mixed (parax/indexing.h spells them).
  Array operator[](const NumpyIndex& index) const;
  // Returns JAX's x.at[index]: its set/add/multiply/min/max/get return updated copies.
  IndexUpdateRef at(const NumpyIndex& index) const;
  // Returns x with a new shape holding the same elements (one dimension may be -1).
  Array reshape(Shape shape) const;
  // Returns x converted to `dtype`.
  Array astype(DType dtype) const;

  // Returns JAX's repr, e.g. `Array([1., 2.], dtype=float32)`; `Array(shape=(8, 4),
  // dtype=float32)` for an array spanning processes that is not fully replicated.
  std::string to_string() const;
  // Returns JAX's str (numpy's), e.g. `[1. 2.]`.
  std::string str() const;

  bool valid() const { return impl_ != nullptr; }
  // Internal.
  explicit Array(std::shared_ptr<detail::ArrayImpl> impl) : impl_(std::move(impl)) {}
  const std::shared_ptr<detail::ArrayImpl>& impl() const { return impl_; }

 private:
  // Copies to host as `dtype` into `out` (size() elements; bool as one byte each).
  void copy_to_host(void* out, DType dtype) const;
  std::shared_ptr<detail::ArrayImpl> impl_;
};

namespace detail {
// Returns a 0-d array of `value` (given as `src` dtype), weak-typed when `weak`.
Array scalar_array(const void* value, DType src, bool weak);
// Makes `site` the call site of the equations bound until leave_call_site(prev), unless
// it is in parax's own code; saves the one it replaces in `prev` and returns whether it did.
bool enter_call_site(const std::source_location& site, std::source_location& prev);
void leave_call_site(const std::source_location& prev);
}  // namespace detail

// What functions taking arrays accept: an Array or a C++ scalar. A scalar becomes a
// weak-typed 0-d array (as a Python scalar does in JAX), so `x * 2.0` keeps x's dtype.
// Converting to one also records where the call was written (std::source_location): the
// equations the call makes belong to that line, which the compiler's explainer names.
class ArrayLike {
 public:
  ArrayLike(const Array& a, std::source_location site = std::source_location::current())
      : array_(a), owns_site_(detail::enter_call_site(site, prev_site_)) {}
  ArrayLike(Array&& a, std::source_location site = std::source_location::current())
      : array_(std::move(a)), owns_site_(detail::enter_call_site(site, prev_site_)) {}
  template <class T>
  requires is_scalar_type_v<T> ArrayLike(
      T value, std::source_location site = std::source_location::current())
      : owns_site_(detail::enter_call_site(site, prev_site_)) {
    constexpr bool kWeak = std::is_arithmetic_v<T> && !std::is_same_v<T, bool>;
    if constexpr (std::is_same_v<T, bool>) {
      uint8_t b = value ? 1 : 0;
      array_ = detail::scalar_array(&b, DType::bool_, false);
    } else {
      array_ = detail::scalar_array(&value, dtype_of<T>(), kWeak);
    }
  }
  ArrayLike(const ArrayLike& o) : array_(o.array_) {}
  ArrayLike(ArrayLike&& o) noexcept : array_(std::move(o.array_)) {}
  ArrayLike& operator=(const ArrayLike& o) {
    array_ = o.array_;
    return *this;
  }
  ArrayLike& operator=(ArrayLike&& o) noexcept {
    array_ = std::move(o.array_);
    return *this;
  }
  ~ArrayLike() {
    if (owns_site_) detail::leave_call_site(prev_site_);
  }
  const Array& array() const { return array_; }
  operator const Array&() const { return array_; }

 private:
  Array array_;
  std::source_location prev_site_;
  bool owns_site_ = false;
};

// numpy's operators, with its broadcasting and JAX's type promotion.
Array operator+(const ArrayLike& x, const ArrayLike& y);
Array operator-(const ArrayLike& x, const ArrayLike& y);
Array operator*(const ArrayLike& x, const ArrayLike& y);
Array operator/(const ArrayLike& x, const ArrayLike& y);
Array operator%(const ArrayLike& x, const ArrayLike& y);
Array operator&(const ArrayLike& x, const ArrayLike& y);
Array operator|(const ArrayLike& x, const ArrayLike& y);
Array operator^(const ArrayLike& x, const ArrayLike& y);
Array operator<<(const Array& x, const ArrayLike& y);
Array operator>>(const Array& x, const ArrayLike& y);
Array operator==(const ArrayLike& x, const ArrayLike& y);
Array operator!=(const ArrayLike& x, const ArrayLike& y);
Array operator<(const ArrayLike& x, const ArrayLike& y);
Array operator<=(const ArrayLike& x, const ArrayLike& y);
Array operator>(const ArrayLike& x, const ArrayLike& y);
Array operator>=(const ArrayLike& x, const ArrayLike& y);
Array operator-(const Array& x);
Array operator~(const Array& x);
Array& operator+=(Array& x, const ArrayLike& y);
Array& operator-=(Array& x, const ArrayLike& y);
Array& operator*=(Array& x, const ArrayLike& y);
Array& operator/=(Array& x, const ArrayLike& y);

// One device's piece of an array.
struct Shard {
  Device device;
  Index index;
  int replica_id = 0;
  Array data;  // the piece as a single-device array on `device`
};

// Prints JAX's repr.
std::ostream& operator<<(std::ostream& os, const Array& x);
// Prints `Shard(device=CpuDevice(id=0), index=(...), replica_id=0, data=[...])`.
std::ostream& operator<<(std::ostream& os, const Shard& s);

template <class T>
std::vector<T> Array::to_vector() const {
  static_assert(is_scalar_type_v<T>, "to_vector<T> needs an arithmetic or half type");
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(static_cast<size_t>(size()));
    copy_to_host(bytes.data(), DType::bool_);
    return std::vector<bool>(bytes.begin(), bytes.end());
  } else {
    std::vector<T> out(static_cast<size_t>(size()));
    copy_to_host(out.data(), dtype_of<T>());
    return out;
  }
}

template <class T>
T Array::item() const {
  if (size() != 1) {
    throw ValueError("can only convert an array of size 1 to a C++ scalar; got shape " +
                     shape_str(shape()));
  }
  return to_vector<T>()[0];
}

}  // namespace parax
