// numpy.pad with every mode of jnp.pad, following jax.numpy's _pad_* functions step by step
// so that values, dtypes and errors match JAX's.
#include <algorithm>
#include <cmath>
#include <limits>

#include "numpy/numpy_internal.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::numpy {

std::vector<PadWidth::Pair> PadWidth::pairs(int64_t ndim, const char* name) const {
  if (broadcast_) return std::vector<Pair>(size_t(ndim), pairs_[0]);
  if (int64_t(pairs_.size()) != ndim) {
    const std::string n = std::to_string(ndim);
    throw ValueError("jnp.pad: " + std::string(name) + " with nd=" + n +
                     " has unsupported shape (" + std::to_string(pairs_.size()) +
                     ", 2). Valid shapes are (" + n + ", 2), (1, 2), (2,), (1,), or ().");
  }
  return pairs_;
}

namespace {

using detail::slice_in_dim;
using frontend::constant_like;
using Pairs = std::vector<PadWidth::Pair>;

void check_no_padding(const PadWidth::Pair& p, std::string_view mode) {
  if (p.first > 0 || p.second > 0) {
    throw ValueError("Cannot apply '" + std::string(mode) + "' padding to empty axis");
  }
}

// A pad value converted as JAX's _pad_constant does: to the array's dtype, keeping its
// weak type.
Array pad_value(const Array& a, const Array& v) {
  return frontend::convert(v, a.dtype(), a.weak_type());
}

Array pad_constant(Array a, const Pairs& pw, const PadValues& values) {
  const size_t nd = size_t(a.ndim());
  if (values.value()) {
    Array v = pad_value(a, *values.value());
    if (v.ndim() == 1 && v.shape()[0] == 1) v = lax::reshape(v, Shape{});
    if (v.ndim() == 0) {
      std::vector<lax::PadConfig> widths;
      for (const auto& [lo, hi] : pw) widths.push_back({lo, hi, 0});
      return lax::pad(a, v, widths);
    }
    if (v.ndim() > 2 || v.shape().back() != 2) {
      throw ValueError("jnp.pad: constant_values has unsupported shape " + shape_str(v.shape()) +
                       ". If the shape is 1D or 2D, the last dimension must be of size 1 or 2.");
    }
    // (before, after) values per axis, possibly traced: one pad per side.
    v = broadcast_to(v, Shape{int64_t(nd), 2});
    for (size_t i = 0; i < nd; ++i) {
      for (int side = 0; side < 2; ++side) {
        const int64_t width = side == 0 ? pw[i].first : pw[i].second;
        if (width == 0) continue;
        Array value =
            lax::reshape(lax::slice(v, {int64_t(i), side}, {int64_t(i) + 1, side + 1}), Shape{});
        std::vector<lax::PadConfig> widths(nd);
        widths[i] = side == 0 ? lax::PadConfig{width, 0, 0} : lax::PadConfig{0, width, 0};
        a = lax::pad(a, value, widths);
      }
    }
    return a;
  }
  std::vector<PadValues::Pair> vals = values.pairs();
  if (vals.size() == 1) vals.assign(nd, vals[0]);
  if (vals.size() != nd) {
    throw ValueError("Expected constant_values to have shape (" + std::to_string(nd) +
                     ", 2); got (" + std::to_string(vals.size()) + ", 2).");
  }
  for (size_t i = 0; i < nd; ++i) {
    std::vector<lax::PadConfig> widths(nd);
    if (pw[i].first != 0) {
      widths[i] = {pw[i].first, 0, 0};
      a = lax::pad(a, pad_value(a, ArrayLike(vals[i].first).array()), widths);
    }
    if (pw[i].second != 0) {
      widths[i] = {0, pw[i].second, 0};
      a = lax::pad(a, pad_value(a, ArrayLike(vals[i].second).array()), widths);
    }
  }
  return a;
}

Array pad_wrap(Array a, const Pairs& pw) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t size = a.shape()[size_t(i)];
    if (size == 0) {
      check_no_padding(pw[size_t(i)], "wrap");
      continue;
    }
    const auto [before, after] = pw[size_t(i)];
    const int64_t total = before / size + after / size + 1;
    std::vector<Array> parts;
    if (before % size > 0) parts.push_back(slice_in_dim(a, size - before % size, size, i));
    for (int64_t k = 0; k < total; ++k) parts.push_back(a);
    if (after % size > 0) parts.push_back(slice_in_dim(a, 0, after % size, i));
    a = lax::concatenate(parts, i);
  }
  return a;
}

Array pad_symmetric_or_reflect(Array a, const Pairs& pw, std::string_view mode,
                               std::string_view reflect_type) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t axis_size = a.shape()[size_t(i)];
    if (axis_size == 0) {
      check_no_padding(pw[size_t(i)], mode);
      continue;
    }
    if (pw[size_t(i)].first == 0 && pw[size_t(i)].second == 0) continue;
    const int64_t offset = mode == "reflect" && axis_size > 1 ? 1 : 0;
    auto build = [&](Array array, int64_t padding, bool before) {
      const int64_t n0 = array.shape()[size_t(i)];
      Array edge = before ? slice_in_dim(array, 0, 1, i) : slice_in_dim(array, n0 - 1, n0, i);
      while (padding > 0) {
        const int64_t curr = std::min(padding, axis_size - offset);
        padding -= curr;
        const int64_t n = array.shape()[size_t(i)];
        Array x;
        if (before) {
          x = slice_in_dim(array, offset, offset + curr, i);
        } else {
          const bool to_end = mode == "symmetric" || axis_size == 1;
          x = slice_in_dim(array, n - (curr + offset), to_end ? n : n - 1, i);
        }
        x = lax::rev(x, {i});
        if (reflect_type == "odd") {
          x = subtract(multiply(2, edge), x);
          if (axis_size > 1) {
            const int64_t m = x.shape()[size_t(i)];
            edge = before ? slice_in_dim(x, 0, 1, i) : slice_in_dim(x, m - 1, m, i);
          }
        }
        array = before ? lax::concatenate({x, array}, i) : lax::concatenate({array, x}, i);
      }
      return array;
    };
    a = build(a, pw[size_t(i)].first, true);
    a = build(a, pw[size_t(i)].second, false);
  }
  return a;
}

Array pad_edge(Array a, const Pairs& pw) {
  for (int64_t i = 0; i < a.ndim(); ++i) {
    const int64_t n = a.shape()[size_t(i)];
    if (n == 0) {
      check_no_padding(pw[size_t(i)], "edge");
      continue;
    }
    Array before = repeat(slice_in_dim(a, 0, 1, i), pw[size_t(i)].first, i);
    Array after = repeat(slice_in_dim(a, n - 1, n, i), pw[size_t(i)].second, i);
    a = lax::concatenate({before, a, after}, i);
  }
  return a;
}

// jax.numpy's _linspace(start, stop, num, endpoint=False, dtype, axis) for a scalar start
// and an array stop (the edge the ramp runs to).
Array ramp(double start_value, const Array& stop_in, int64_t num, DType dtype, int64_t axis) {
  const DType ct = base::to_inexact_dtype(dtype);
  Array stop = astype(stop_in, ct);
  Array start = lax::broadcast(frontend::scalar(start_value, ct), stop.shape());
  Shape bounds = stop.shape();
  bounds.insert(bounds.begin() + axis, 1);
  Array out;
  if (num > 1) {
    Shape iota_shape(bounds.size(), 1);
    iota_shape[size_t(axis)] = num;
    Array step =
        lax::div(lax::reshape(lax::iota(ct, num), iota_shape), frontend::scalar(double(num), ct));
    out = add(multiply(lax::reshape(start, bounds), subtract(1, step)),
              multiply(lax::reshape(stop, bounds), step));
  } else if (num == 1) {
    out = lax::reshape(start, bounds);
  } else {
    Shape empty = stop.shape();
    empty.insert(empty.begin() + axis, 0);
    out = zeros(empty, dtype);
  }
  if (is_integer(dtype) && !is_integer(out.dtype())) out = lax::floor(out);
  return lax::convert_element_type(out, dtype);
}

Array pad_linear_ramp(Array a, const Pairs& pw, const PadValues& end_values) {
  const size_t nd = size_t(a.ndim());
  std::vector<PadValues::Pair> ends;
  if (end_values.value()) {
    const double v = end_values.value()->item<double>();
    ends.assign(nd, {v, v});
  } else {
    ends = end_values.pairs();
    if (ends.size() == 1) ends.assign(nd, ends[0]);
    if (ends.size() != nd) {
      throw ValueError("Expected end_values to have shape (" + std::to_string(nd) + ", 2); got (" +
                       std::to_string(ends.size()) + ", 2).");
    }
  }
  for (int64_t axis = 0; axis < a.ndim(); ++axis) {
    const int64_t n = a.shape()[size_t(axis)];
    Array edge_before = lax::squeeze(slice_in_dim(a, 0, 1, axis), {axis});
    Array edge_after = lax::squeeze(slice_in_dim(a, n - 1, n, axis), {axis});
    Array before =
        ramp(ends[size_t(axis)].first, edge_before, pw[size_t(axis)].first, a.dtype(), axis);
    Array after =
        ramp(ends[size_t(axis)].second, edge_after, pw[size_t(axis)].second, a.dtype(), axis);
    before = frontend::convert(before, a.dtype(), a.weak_type());
    after = frontend::convert(lax::rev(after, {axis}), a.dtype(), a.weak_type());
    a = lax::concatenate({before, a, after}, axis);
  }
  return a;
}

Array pad_stats(Array a, const Pairs& pw, const std::optional<Pairs>& stat_length,
                std::string_view mode) {
  auto stat = [&](const Array& x, int64_t axis) -> Array {
    if (mode == "maximum") return max(x, Axes(axis), true);
    if (mode == "minimum") return min(x, Axes(axis), true);
    if (mode == "mean") return mean(x, Axes(axis), true);
    return median(x, axis, true);
  };
  for (int64_t i = 0; i < a.ndim(); ++i) {
    Array before, after;
    if (!stat_length) {
      before = stat(a, i);
      after = before;
    } else {
      const int64_t n = a.shape()[size_t(i)];
      auto [lb, la] = (*stat_length)[size_t(i)];
      if (lb == 0 || la == 0) throw ValueError("stat_length of 0 yields no value for padding");
      lb = std::min(lb, n);
      la = std::min(la, n);
      before = stat(slice_in_dim(a, 0, lb, i), i);
      after = stat(slice_in_dim(a, n - la, n, i), i);
    }
    if (is_integer(a.dtype())) {
      before = round(before);
      after = round(after);
    }
    before = frontend::convert(before, a.dtype(), a.weak_type());
    after = frontend::convert(after, a.dtype(), a.weak_type());
    before = repeat(before, pw[size_t(i)].first, i);
    after = repeat(after, pw[size_t(i)].second, i);
    a = lax::concatenate({before, a, after}, i);
  }
  return a;
}

// JAX's empty_like is zeros.
Array pad_empty(const Array& a, const Pairs& pw) {
  std::vector<lax::PadConfig> widths;
  for (const auto& [lo, hi] : pw) widths.push_back({lo, hi, 0});
  return lax::pad(a, constant_like(a, 0), widths);
}

}  // namespace

Array pad(const ArrayLike& x, const PadWidth& pad_width, std::string_view mode,
          const PadValues& constant_values, const PadValues& end_values,
          std::string_view reflect_type, std::optional<PadWidth> stat_length) {
  static const char* const kModes[] = {"constant",  "edge",   "linear_ramp", "maximum",
                                       "mean",      "median", "minimum",     "reflect",
                                       "symmetric", "wrap",   "empty"};
  if (std::find(std::begin(kModes), std::end(kModes), mode) == std::end(kModes)) {
    throw NotImplementedError("Unimplemented padding mode '" + std::string(mode) + "' for np.pad.");
  }
  if (reflect_type != "even" && reflect_type != "odd") {
    throw ValueError("[numpy.pad] reflect_type is '" + std::string(reflect_type) +
                     "'; expected 'even' or 'odd'");
  }
  Array a = x.array();
  const int64_t nd = a.ndim();
  if (nd == 0) return a;
  const Pairs pw = pad_width.pairs(nd);
  for (const auto& [lo, hi] : pw) {
    if (lo < 0 || hi < 0) throw ValueError("index can't contain negative values");
  }
  if (mode == "constant") return pad_constant(a, pw, constant_values);
  if (mode == "wrap") return pad_wrap(a, pw);
  if (mode == "symmetric" || mode == "reflect") {
    return pad_symmetric_or_reflect(a, pw, mode, reflect_type);
  }
  if (mode == "edge") return pad_edge(a, pw);
  if (mode == "linear_ramp") return pad_linear_ramp(a, pw, end_values);
  if (mode == "empty") return pad_empty(a, pw);
  std::optional<Pairs> lengths;
  if (stat_length) lengths = stat_length->pairs(nd, "stat_length");
  return pad_stats(a, pw, lengths, mode);
}

}  // namespace parax::numpy
