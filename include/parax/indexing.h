// numpy's indexing for parax::Array: the index expressions of x[...] and x.at(...), and
// numpy's indexing functions (take, take_along_axis, put_along_axis).
//
//   namespace px = parax; namespace jnp = parax::numpy;
//   x[{0, px::slice(1, px::None, -1)}]             x[0, 1::-1]
//   x[{px::Ellipsis, px::newaxis, i}]               x[..., None, i]       (i an integer Array)
//   x[mask]                                         x[mask]               (a concrete bool Array)
//   x.at({i, 2}).add(y, {.mode = "clip"})           x.at[i, 2].add(y, mode='clip')
//   x.at(1).get({.mode = "fill", .fill_value = 0})  x.at[1].get(mode='fill', fill_value=0)
//   x[{{0, 2}, 1}]                                  x[[0, 2], 1]
//   x[NumpyIndex{}], x[NumpyIndex(true)]            x[()], x[True]
//
// Semantics are JAX's (jax.numpy indexing): basic indices lower to slice/rev/squeeze, a
// traced scalar index to dynamic_slice, everything else to lax::gather; updates lower to
// lax::scatter*. Hence every index is differentiable, vmappable and shardable. Without a
// mode, get() clamps out-of-bound array indices and updates drop them, as in JAX.
// One deliberate difference: a static integer out of range raises IndexError in x[...]
// and x.at(...).get() without a mode (as numpy, and JAX under jax_check_static_indices);
// JAX's default clamps it.
// Names: parax::Slice (shape.h) is a shard's index, without a step; numpy's slice object
// here is IndexSlice, made by parax::slice(...). newaxis is parax::None (sharding.h).
#pragma once

#include <concepts>
#include <cstdint>
#include <functional>
#include <initializer_list>
#include <optional>
#include <string>
#include <string_view>
#include <variant>
#include <vector>

#include "parax/array.h"
#include "parax/lax.h"
#include "parax/sharding.h"

namespace parax {

// One bound of a slice: an integer, or None (absent, as Python's None).
class SliceBound {
 public:
  constexpr SliceBound(None_t) {}          // NOLINT(google-explicit-constructor)
  constexpr SliceBound(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  template <std::integral T>
  requires(!std::same_as<T, bool>) constexpr SliceBound(T v)  // NOLINT
      : value_(static_cast<int64_t>(v)) {}
  constexpr SliceBound(std::optional<int64_t> v) : value_(v) {}  // NOLINT
  constexpr const std::optional<int64_t>& value() const { return value_; }

 private:
  std::optional<int64_t> value_;
};

// numpy's slice(start, stop, step): absent bounds as in Python (x[::-1] reverses).
struct IndexSlice {
  std::optional<int64_t> start, stop, step;
  bool operator==(const IndexSlice&) const = default;
};

// Returns Python's slice(None): the whole dimension, numpy's `:`.
constexpr IndexSlice slice() { return {}; }
// Returns Python's slice(stop).
constexpr IndexSlice slice(SliceBound stop) { return {std::nullopt, stop.value(), std::nullopt}; }
// Returns Python's slice(start, stop, step), e.g. slice(1, None, -1) for `1::-1`.
constexpr IndexSlice slice(SliceBound start, SliceBound stop, SliceBound step = None) {
  return {start.value(), stop.value(), step.value()};
}

// numpy's `...`: as many full slices as the other indices leave dimensions.
struct Ellipsis_t {
  constexpr bool operator==(const Ellipsis_t&) const = default;
};
inline constexpr Ellipsis_t Ellipsis{};
// numpy's newaxis, which is None: inserts a dimension of size 1.
inline constexpr None_t newaxis{};

// One entry of an index tuple: an integer, a bool (numpy's scalar boolean index), a slice,
// None/newaxis, Ellipsis, or an integer or boolean Array.
class IndexItem {
 public:
  using Value = std::variant<int64_t, bool, IndexSlice, None_t, Ellipsis_t, Array>;
  template <std::integral T>
  IndexItem(T i) {  // NOLINT(google-explicit-constructor)
    if constexpr (std::same_as<T, bool>) {
      value_ = i;
    } else {
      value_ = static_cast<int64_t>(i);
    }
  }
  IndexItem(const IndexSlice& s) : value_(s) {}  // NOLINT(google-explicit-constructor)
  // A shard's index (start/stop, step 1) works as the slice it spells.
  IndexItem(const Slice& s) : value_(IndexSlice{s.start, s.stop, std::nullopt}) {}  // NOLINT
  IndexItem(None_t) : value_(None) {}          // NOLINT(google-explicit-constructor)
  IndexItem(Ellipsis_t) : value_(Ellipsis) {}  // NOLINT(google-explicit-constructor)
  IndexItem(const Array& a) : value_(a) {}     // NOLINT(google-explicit-constructor)
  // A list of integers inside a tuple, numpy's x[[0, 2], 1] as x[{{0, 2}, 1}]: an integer
  // array (int32 unless jax_enable_x64, as jnp.asarray makes it).
  IndexItem(std::initializer_list<int64_t> list)  // NOLINT(google-explicit-constructor)
      : IndexItem(std::vector<int64_t>(list)) {}
  IndexItem(const std::vector<int64_t>& list);  // NOLINT(google-explicit-constructor)
  const Value& value() const { return value_; }

 private:
  Value value_;
};

// A numpy index expression: one item (x[i]) or a tuple of them (x[{i, j}], numpy's
// x[i, j]). A lone integer or bool picks Array::operator[](int64_t), so spell numpy's
// x[()] as x[NumpyIndex{}] (x[{}] is x[0]) and x[True] as x[NumpyIndex(true)].
class NumpyIndex {
 public:
  NumpyIndex() = default;
  template <class T>
  requires std::constructible_from<IndexItem, T> NumpyIndex(T&& item)  // NOLINT
      : items_{IndexItem(std::forward<T>(item))}, tuple_(false) {}
  NumpyIndex(std::initializer_list<IndexItem> items) : items_(items) {}
  explicit NumpyIndex(std::vector<IndexItem> items) : items_(std::move(items)) {}
  const std::vector<IndexItem>& items() const { return items_; }
  // False when built from a single item rather than a tuple.
  bool is_tuple() const { return tuple_; }

 private:
  std::vector<IndexItem> items_;
  bool tuple_ = true;
};

// How gathers and scatters treat out-of-bound indices (JAX's GatherScatterMode): the
// enum, or its name "clip", "fill" (= "drop"), "drop", "promise_in_bounds".
class IndexMode {
 public:
  IndexMode(lax::GatherScatterMode mode) : mode_(mode) {}  // NOLINT
  // Throws ValueError `Unknown gather mode "x"` for other names.
  IndexMode(std::string_view name);                                          // NOLINT
  IndexMode(const char* name) : IndexMode(std::string_view(name)) {}         // NOLINT
  IndexMode(const std::string& name) : IndexMode(std::string_view(name)) {}  // NOLINT
  lax::GatherScatterMode value() const { return mode_; }

 private:
  lax::GatherScatterMode mode_;
};

// The keyword arguments of JAX's x.at[...] methods.
struct AtOptions {
  // Absent: get() clamps (JAX's promise_in_bounds), updates drop out-of-bound indices.
  std::optional<IndexMode> mode = std::nullopt;
  bool indices_are_sorted = false;
  bool unique_indices = false;
  // False: negative indices are out of bounds instead of counting from the end.
  bool wrap_negative_indices = true;
  // get() with mode "fill" only: the value of out-of-bound entries (default NaN for
  // floats, the lowest signed / highest unsigned integer, True).
  std::optional<double> fill_value = std::nullopt;
};

// What x.at(index) returns: each method returns an updated copy of x (x itself is never
// changed). Updates convert the values to x's dtype, broadcast them to x[index]'s shape
// and apply every repeated index (numpy's ufunc.at, not x[index] op= y).
class IndexUpdateRef {
 public:
  IndexUpdateRef(Array array, NumpyIndex index)
      : array_(std::move(array)), index_(std::move(index)) {}
  // Returns x[index].
  Array get(const AtOptions& options = {}) const;
  // x[index] = values.
  Array set(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] += values.
  Array add(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] -= values.
  Array subtract(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] *= values.
  Array multiply(const ArrayLike& values, const AtOptions& options = {}) const;
  Array mul(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] /= values (numpy's true divide: integer x gives a float result, as in JAX).
  Array divide(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] **= values.
  Array power(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] = minimum(x[index], values).
  Array min(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] = maximum(x[index], values).
  Array max(const ArrayLike& values, const AtOptions& options = {}) const;
  // x[index] = func(x[index]), func applied once for each time the index names an element
  // (JAX's scatter_apply). func maps a scalar of x's dtype to one of the same type (traced
  // on a scalar, as JAX traces it, and applied elementwise). Not differentiable: a
  // derivative raises NotImplementedError, as in JAX.
  Array apply(const std::function<Array(const Array&)>& func, const AtOptions& options = {}) const;

 private:
  Array array_;
  NumpyIndex index_;
};

}  // namespace parax

namespace parax::numpy {

// Returns a's elements at `indices` along `axis` (of the flattened a when absent). mode:
// "fill" (default: out-of-bound indices give fill_value, NaN/lowest int/True by default),
// "clip" or "wrap"; negative indices count from the end.
Array take(const ArrayLike& a, const ArrayLike& indices, std::optional<int64_t> axis = std::nullopt,
           std::optional<std::string_view> mode = std::nullopt,
           std::optional<double> fill_value = std::nullopt, bool unique_indices = false,
           bool indices_are_sorted = false);

// Returns a's elements at `indices` along `axis` (default -1): indices has a's rank and
// broadcasts against a on the other dimensions (1-D over the flattened a for nullopt).
// Negative indices count from the end (unless wrap_negative_indices is false; by default
// they do except with "promise_in_bounds", as JAX's legacy default); out-of-bound ones give
// fill_value ("fill", the default), clamp ("clip"), or give 0 ("one_hot": a contraction
// with the indices' one-hot encoding, whose NaN or infinite entries anywhere along the axis
// make the result NaN, as JAX's).
Array take_along_axis(const ArrayLike& arr, const ArrayLike& indices,
                      std::optional<int64_t> axis = -1,
                      std::optional<IndexMode> mode = std::nullopt,
                      std::optional<double> fill_value = std::nullopt,
                      std::optional<bool> wrap_negative_indices = std::nullopt);

// Returns a copy of arr with `values` (broadcast to indices' shape) put at `indices` along
// `axis`, as numpy.put_along_axis does in place (JAX's with inplace=False).
Array put_along_axis(const ArrayLike& arr, const ArrayLike& indices, const ArrayLike& values,
                     std::optional<int64_t> axis, std::optional<IndexMode> mode = std::nullopt);

}  // namespace parax::numpy
