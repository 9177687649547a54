// parax::numpy: JAX's jax.numpy. Creation functions make uncommitted arrays on the
// default device; dtypes inferred from C++ values follow JAX's defaults (double ->
// float32, int64 -> int32 unless jax_enable_x64); an explicit dtype is always honoured.
#pragma once

#include <initializer_list>
#include <optional>
#include <type_traits>
#include <vector>

#include "parax/array.h"

namespace parax::numpy {
namespace detail {
// Builds an array from `n` host values of `src` dtype, shaped `shape`, converted to
// `dtype` (or the canonical form of `src` when absent).
Array array_from_values(const void* values, int64_t n, DType src, Shape shape,
                        std::optional<DType> dtype);
Array arange_impl(double start, double stop, double step, DType dtype);
}  // namespace detail

// Returns an array of `values` with `shape` (default: 1-D).
// Requires: the shape holds values.size() elements.
template <class T>
  requires is_scalar_type_v<T>
Array array(const std::vector<T>& values, std::optional<Shape> shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt) {
  Shape s = shape ? *shape : Shape{int64_t(values.size())};
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> bytes(values.begin(), values.end());
    return detail::array_from_values(bytes.data(), int64_t(bytes.size()), DType::bool_, s, dtype);
  } else {
    return detail::array_from_values(values.data(), int64_t(values.size()), dtype_of<T>(), s,
                                     dtype);
  }
}

template <class T>
  requires is_scalar_type_v<T>
Array array(std::initializer_list<T> values, std::optional<Shape> shape = std::nullopt,
            std::optional<DType> dtype = std::nullopt) {
  return array(std::vector<T>(values), std::move(shape), dtype);
}

// Returns a 2-D array from nested braces: array({{1.f, 2.f}, {3.f, 4.f}}).
template <class T>
  requires is_scalar_type_v<T>
Array array(std::initializer_list<std::initializer_list<T>> rows,
            std::optional<DType> dtype = std::nullopt) {
  std::vector<T> flat;
  int64_t cols = rows.size() ? int64_t(rows.begin()->size()) : 0;
  for (const auto& row : rows) {
    if (int64_t(row.size()) != cols) {
      throw ValueError("[array] rows have different lengths (" + std::to_string(cols) + " and " +
                       std::to_string(row.size()) + "); expected a rectangular nested list");
    }
    flat.insert(flat.end(), row.begin(), row.end());
  }
  return array(flat, Shape{int64_t(rows.size()), cols}, dtype);
}

// Returns a 0-d array holding `value`.
template <class T>
  requires is_scalar_type_v<T>
Array array(T value, std::optional<DType> dtype = std::nullopt) {
  return array(std::vector<T>{value}, Shape{}, dtype);
}

Array zeros(Shape shape, DType dtype = DType::float32);
Array ones(Shape shape, DType dtype = DType::float32);

// Returns an array of `shape` filled with `value` (dtype inferred from T unless given).
template <class T>
  requires is_scalar_type_v<T>
Array full(Shape shape, T value, std::optional<DType> dtype = std::nullopt) {
  int64_t n = shape_size(shape);
  if constexpr (std::is_same_v<T, bool>) {
    std::vector<uint8_t> v(size_t(n), value ? 1 : 0);
    return detail::array_from_values(v.data(), n, DType::bool_, std::move(shape), dtype);
  } else {
    std::vector<T> v(size_t(n), value);
    return detail::array_from_values(v.data(), n, dtype_of<T>(), std::move(shape), dtype);
  }
}

// Returns [start, stop) in steps of `step`: int32 for integer arguments, float32 for
// floating ones (unless `dtype` says otherwise).
template <class T>
  requires std::is_arithmetic_v<T>
Array arange(T stop, std::optional<DType> dtype = std::nullopt) {
  DType t = dtype ? *dtype : (std::is_floating_point_v<T> ? DType::float32 : DType::int32);
  return detail::arange_impl(0.0, double(stop), 1.0, t);
}
template <class A, class B, class C = int>
  requires std::is_arithmetic_v<A> && std::is_arithmetic_v<B> && std::is_arithmetic_v<C>
Array arange(A start, B stop, C step = 1, std::optional<DType> dtype = std::nullopt) {
  constexpr bool kFloat =
      std::is_floating_point_v<A> || std::is_floating_point_v<B> || std::is_floating_point_v<C>;
  DType t = dtype ? *dtype : (kFloat ? DType::float32 : DType::int32);
  return detail::arange_impl(double(start), double(stop), double(step), t);
}

// Returns `num` evenly spaced values from start to stop (inclusive when `endpoint`).
Array linspace(double start, double stop, int64_t num = 50, bool endpoint = true,
               DType dtype = DType::float32);

// Returns an n x m array with ones on the k-th diagonal.
Array eye(int64_t n, std::optional<int64_t> m = std::nullopt, int64_t k = 0,
          DType dtype = DType::float32);

// Returns x with a new shape holding the same elements (one dimension may be -1).
Array reshape(const Array& x, Shape shape);

}  // namespace parax::numpy
