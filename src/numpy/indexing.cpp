// numpy's indexing on lax, following jax/_src/numpy/indexing.py: an index is parsed against
// the array's shape, then lowered by the cheapest strategy that applies — static slicing
// (slice, rev, squeeze, expand_dims), a dynamic_slice for traced scalar indices, or one
// lax::gather for everything else. x.at(...) updates transpose the same gather description
// into a lax::scatter*. Only primitives are bound, so every transform applies.
#include "parax/indexing.h"

#include <algorithm>
#include <limits>
#include <numeric>
#include <string>

#include "api/array_impl.h"
#include "core/array_value.h"
#include "core/trace.h"
#include "lax/promote.h"
#include "numpy/scatter_apply.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using lax::GatherScatterMode;

enum class Kind { kNone, kSlice, kEllipsis, kInteger, kBoolean, kArray };

// One index entry placed against the array's shape (JAX's ParsedIndex).
struct Parsed {
  IndexItem::Value value;
  Kind kind;
  std::vector<int64_t> axes;  // the array axes it consumes
};

struct Indexer {
  Shape shape;
  std::vector<Parsed> items;
};

std::string py_shape(const Shape& s) { return shape_str(s); }

std::string py_list(const std::vector<int64_t>& v) {
  std::string out = "[";
  for (size_t i = 0; i < v.size(); ++i) out += (i ? ", " : "") + std::to_string(v[i]);
  return out + "]";
}

Kind kind_of(const IndexItem::Value& v) {
  if (std::holds_alternative<int64_t>(v)) return Kind::kInteger;
  if (std::holds_alternative<bool>(v)) return Kind::kBoolean;
  if (std::holds_alternative<IndexSlice>(v)) return Kind::kSlice;
  if (std::holds_alternative<None_t>(v)) return Kind::kNone;
  if (std::holds_alternative<Ellipsis_t>(v)) return Kind::kEllipsis;
  const Array& a = std::get<Array>(v);
  if (a.dtype() == DType::bool_) return Kind::kBoolean;
  if (is_integer(a.dtype())) return Kind::kArray;
  throw TypeError("Indexer must have integer or boolean type, got indexer with type " +
                  std::string(dtype_name(a.dtype())));
}

int64_t ndim_of(const IndexItem::Value& v) {
  const Array* a = std::get_if<Array>(&v);
  return a ? a->ndim() : 0;
}

// JAX's _parse_indices: the axes each entry consumes, the ellipsis taking what is left.
Indexer parse(const NumpyIndex& index, const Shape& shape) {
  Indexer ix{shape, {}};
  std::vector<int64_t> consumed;
  std::optional<size_t> ellipsis;
  for (size_t i = 0; i < index.items().size(); ++i) {
    const IndexItem::Value& v = index.items()[i].value();
    Kind k = kind_of(v);
    if (k == Kind::kEllipsis) {
      if (ellipsis) throw IndexError("an index can only have a single ellipsis ('...')");
      ellipsis = i;
    }
    int64_t n = 1;
    if (k == Kind::kNone || k == Kind::kEllipsis) n = 0;
    if (k == Kind::kBoolean) n = ndim_of(v);
    consumed.push_back(n);
    ix.items.push_back({v, k, {}});
  }
  const int64_t total = std::accumulate(consumed.begin(), consumed.end(), int64_t{0});
  const int64_t rank = int64_t(shape.size());
  if (total > rank) {
    throw IndexError("Too many indices: array is " + std::to_string(rank) + "-dimensional, but " +
                     std::to_string(total) + " were indexed");
  }
  if (ellipsis) consumed[*ellipsis] = rank - total;
  int64_t dim = 0;
  for (size_t i = 0; i < ix.items.size(); ++i) {
    for (int64_t k = 0; k < consumed[i]; ++k) ix.items[i].axes.push_back(dim++);
  }
  return ix;
}

// A static integer out of range raises (numpy's contract, and JAX's under
// jax_check_static_indices) instead of clamping.
void validate_static_indices(const Indexer& ix, bool normalize) {
  for (const Parsed& p : ix.items) {
    if (p.kind != Kind::kInteger) continue;
    const int64_t i = std::get<int64_t>(p.value);
    const int64_t axis = p.axes[0];
    const int64_t size = ix.shape[axis];
    const int64_t normed = normalize && i < 0 ? i + size : i;
    if (normed < 0 || normed >= size) {
      throw IndexError("index " + std::to_string(i) + " out of bounds for axis " +
                       std::to_string(axis) + " with size " + std::to_string(size) +
                       " (normalize_indices=" + (normalize ? "True" : "False") + ")");
    }
  }
}

// Replaces the ellipsis, and the implicit trailing dimensions, by full slices.
Indexer expand_ellipses(const Indexer& ix) {
  Indexer out{ix.shape, {}};
  int64_t consumed = 0;
  for (const Parsed& p : ix.items) {
    consumed += int64_t(p.axes.size());
    if (p.kind == Kind::kEllipsis) {
      for (int64_t axis : p.axes) out.items.push_back({IndexSlice{}, Kind::kSlice, {axis}});
    } else {
      out.items.push_back(p);
    }
  }
  for (int64_t axis = consumed; axis < int64_t(ix.shape.size()); ++axis) {
    out.items.push_back({IndexSlice{}, Kind::kSlice, {axis}});
  }
  return out;
}

// Python's slice.indices(size): (start, stop, step) clamped into the dimension.
struct SliceIndices {
  int64_t start, stop, step;
};

SliceIndices slice_indices(const IndexSlice& s, int64_t size) {
  const int64_t step = s.step.value_or(1);
  if (step == 0) throw ValueError("slice step cannot be zero");
  const int64_t lower = step < 0 ? -1 : 0;
  const int64_t upper = step < 0 ? size - 1 : size;
  auto bound = [&](const std::optional<int64_t>& b, int64_t absent) {
    if (!b) return absent;
    int64_t v = *b;
    if (v < 0) {
      v += size;
      return std::max(v, lower);
    }
    return std::min(v, upper);
  };
  return {bound(s.start, step < 0 ? upper : lower), bound(s.stop, step < 0 ? lower : upper), step};
}

// JAX's core.canonicalize_slice: (start, step, number of elements).
SliceIndices canonicalize_slice(const IndexSlice& s, int64_t size) {
  SliceIndices r = slice_indices(s, size);
  const int64_t gap = std::abs(r.step);
  const int64_t distance = r.step > 0 ? r.stop - r.start : r.start - r.stop;
  return {r.start, std::max<int64_t>(0, distance + gap - 1) / gap, r.step};
}

GatherScatterMode parse_mode(const std::optional<IndexMode>& mode, GatherScatterMode absent) {
  return mode ? mode->value() : absent;
}

bool slices_allowed(const std::optional<IndexMode>& mode) {
  if (!mode) return true;
  return mode->value() == GatherScatterMode::PROMISE_IN_BOUNDS ||
         mode->value() == GatherScatterMode::CLIP;
}

std::optional<Array> try_static_slice(const Array& arr, const Indexer& ix, bool normalize,
                                      const std::optional<IndexMode>& mode) {
  if (!slices_allowed(mode)) return std::nullopt;
  for (const Parsed& p : ix.items) {
    if (p.kind == Kind::kArray || p.kind == Kind::kBoolean) return std::nullopt;
  }
  std::vector<int64_t> start, limit, strides, rev_axes, squeeze_axes, newaxis_dims;
  for (const Parsed& p : expand_ellipses(ix).items) {
    if (p.kind == Kind::kNone) {
      newaxis_dims.push_back(int64_t(start.size() - squeeze_axes.size() + newaxis_dims.size()));
    } else if (p.kind == Kind::kInteger) {
      const int64_t axis = p.axes[0];
      const int64_t size = ix.shape[axis];
      if (size == 0) {
        throw IndexError("index is out of bounds for axis " + std::to_string(axis) +
                         " with size 0");
      }
      int64_t i = std::get<int64_t>(p.value);
      if (normalize && i < 0) i += size;
      i = std::clamp<int64_t>(i, 0, size - 1);
      start.push_back(i);
      limit.push_back(i + 1);
      strides.push_back(1);
      squeeze_axes.push_back(axis);
    } else {
      const int64_t axis = p.axes[0];
      const int64_t size = ix.shape[axis];
      SliceIndices s = slice_indices(std::get<IndexSlice>(p.value), size);
      if (s.step < 0) {
        const int64_t new_start =
            std::min(size, s.stop + 1 + std::abs(s.start - s.stop - 1) % -s.step);
        start.push_back(new_start);
        limit.push_back(std::max(new_start, s.start + 1));
        strides.push_back(-s.step);
        rev_axes.push_back(axis);
      } else {
        start.push_back(s.start);
        limit.push_back(std::max(s.start, s.stop));
        strides.push_back(s.step);
      }
    }
  }
  const bool unit = std::all_of(strides.begin(), strides.end(), [](int64_t s) { return s == 1; });
  bool trivial = unit;
  for (size_t d = 0; trivial && d < start.size(); ++d) {
    trivial = start[d] == 0 && limit[d] == ix.shape[d];
  }
  Array y = arr;
  if (!trivial) y = lax::slice(y, start, limit, unit ? std::vector<int64_t>{} : strides);
  if (!rev_axes.empty()) y = lax::rev(y, rev_axes);
  if (!squeeze_axes.empty()) y = lax::squeeze(y, squeeze_axes);
  if (!newaxis_dims.empty()) y = lax::expand_dims(y, newaxis_dims);
  return y;
}

// Traced (or concrete) scalar integer Arrays next to basic indices: one dynamic_slice.
std::optional<Array> try_dynamic_slice(const Array& arr, const Indexer& ix, bool normalize,
                                       const std::optional<IndexMode>& mode) {
  if (!slices_allowed(mode)) return std::nullopt;
  for (const Parsed& p : ix.items) {
    if (p.kind == Kind::kBoolean) return std::nullopt;
    if (p.kind == Kind::kArray && ndim_of(p.value) != 0) return std::nullopt;
    if (p.kind == Kind::kSlice) {
      const auto& step = std::get<IndexSlice>(p.value).step;
      if (step && *step != 1 && *step != -1) return std::nullopt;
    }
  }
  std::vector<Array> starts;
  std::vector<int64_t> sizes, rev_axes, squeeze_axes, newaxis_dims;
  bool trivial = true;
  for (const Parsed& p : expand_ellipses(ix).items) {
    if (p.kind == Kind::kNone) {
      newaxis_dims.push_back(int64_t(starts.size() - squeeze_axes.size() + newaxis_dims.size()));
      continue;
    }
    const int64_t axis = p.axes[0];
    const int64_t size = ix.shape[axis];
    if (p.kind == Kind::kInteger || p.kind == Kind::kArray) {
      trivial = false;
      if (size == 0) {
        throw IndexError("index is out of bounds for axis " + std::to_string(axis) +
                         " with size 0");
      }
      Array i = p.kind == Kind::kArray
                    ? std::get<Array>(p.value)
                    : frontend::scalar_int(std::get<int64_t>(p.value), DType::int32, true);
      // lax::dynamic_slice counts negative starts from the end; without wrapping they
      // clamp to 0, as XLA does.
      if (!normalize && !is_unsigned_integer(i.dtype())) i = lax::max(i, 0);
      starts.push_back(i);
      sizes.push_back(1);
      squeeze_axes.push_back(axis);
    } else {
      const IndexSlice& sl = std::get<IndexSlice>(p.value);
      if (!(sl == IndexSlice{})) trivial = false;
      SliceIndices s = slice_indices(sl, size);
      int64_t first = s.start, n = std::max<int64_t>(0, s.stop - s.start);
      if (s.step < 0) {
        first = s.stop + 1 + std::abs(s.start - s.stop - 1) % -s.step;
        n = std::max<int64_t>(0, s.start + 1 - first);
        rev_axes.push_back(axis);
      }
      starts.push_back(frontend::scalar_int(first, DType::int32, true));
      sizes.push_back(n);
    }
  }
  Array y = arr;
  if (!trivial) {
    // dynamic_slice needs one index dtype (JAX: int_dtype_for_shape).
    if (starts.size() > 1) {
      for (Array& s : starts) s = frontend::convert(s, DType::int32);
    }
    y = lax::dynamic_slice(y, starts, sizes);
  }
  if (!rev_axes.empty()) y = lax::rev(y, rev_axes);
  if (!squeeze_axes.empty()) y = lax::squeeze(y, squeeze_axes);
  if (!newaxis_dims.empty()) y = lax::expand_dims(y, newaxis_dims);
  return y;
}

bool is_concrete(const Array& a) {
  return core::tracer_of(a) == nullptr && !detail::impl_of(a).abstract;
}

// Boolean masks become the integer arrays of their true positions (numpy's nonzero), which
// needs their values: a traced mask raises JAX's NonConcreteBooleanIndexError.
Indexer expand_bool_indices(const Indexer& ix) {
  Indexer out{ix.shape, {}};
  for (size_t position = 0; position < ix.items.size(); ++position) {
    const Parsed& p = ix.items[position];
    if (p.kind != Kind::kBoolean || std::holds_alternative<bool>(p.value)) {
      out.items.push_back(p);
      continue;
    }
    const Array& mask = std::get<Array>(p.value);
    if (!is_concrete(mask)) {
      // JAX's NonConcreteBooleanIndexError, an IndexError.
      throw IndexError("Array boolean indices must be concrete; got " + core::aval_of(mask).str() +
                       "\n\nSee https://docs.jax.dev/en/latest/errors.html#jax.errors."
                       "NonConcreteBooleanIndexError");
    }
    if (mask.ndim() == 0) {
      out.items.push_back({mask.item<bool>(), Kind::kBoolean, {}});
      continue;
    }
    std::vector<int64_t> expected;
    for (int64_t axis : p.axes) expected.push_back(ix.shape[axis]);
    for (size_t d = 0; d < expected.size(); ++d) {
      if (mask.shape()[d] != 0 && mask.shape()[d] != expected[d]) {
        throw IndexError("boolean index did not match shape of indexed array in index " +
                         std::to_string(position) + ": got " + py_shape(mask.shape()) +
                         ", expected " + py_list(expected));
      }
    }
    const std::vector<bool> bits = mask.to_vector<bool>();
    const Shape& ms = mask.shape();
    std::vector<std::vector<int32_t>> coords(ms.size());
    for (int64_t flat = 0; flat < int64_t(bits.size()); ++flat) {
      if (!bits[size_t(flat)]) continue;
      int64_t rest = flat;
      for (int64_t d = int64_t(ms.size()) - 1; d >= 0; --d) {
        coords[size_t(d)].push_back(int32_t(rest % ms[size_t(d)]));
        rest /= ms[size_t(d)];
      }
    }
    for (size_t d = 0; d < ms.size(); ++d) {
      std::vector<int32_t>& c = coords[d];
      Array where = jnp::array(c, Shape{int64_t(c.size())}, DType::int32);
      out.items.push_back({where, Kind::kArray, {p.axes[d]}});
    }
  }
  return out;
}

DType index_dtype_for(const Shape& shape) {
  for (int64_t d : shape) {
    if (d > std::numeric_limits<int32_t>::max()) return DType::int64;
  }
  return DType::int32;
}

Array as_index_array(const IndexItem::Value& v) {
  if (const int64_t* i = std::get_if<int64_t>(&v)) {
    return frontend::scalar_int(*i, DType::int32, true);
  }
  return std::get<Array>(v);
}

// What JAX's _index_to_gather computes: one gather (or, transposed, one scatter) that
// performs the whole index.
struct GatherIndexer {
  Shape slice_shape;         // the shape of x[index]
  Shape gather_slice_shape;  // the gather's slice_sizes
  Array gather_indices;
  lax::GatherDimensionNumbers dnums;
  bool unique_indices = false;
  bool indices_are_sorted = false;
  std::vector<int64_t> reversed_y_dims, newaxis_dims, scalar_bool_dims;
};

GatherIndexer index_to_gather(Indexer ix, bool normalize) {
  // Advanced indices (arrays and integers) that are adjacent put their dimensions where
  // they stand; apart, in front (numpy's rule).
  std::vector<int64_t> advanced_positions;
  for (size_t i = 0; i < ix.items.size(); ++i) {
    if (ix.items[i].kind == Kind::kArray || ix.items[i].kind == Kind::kInteger) {
      advanced_positions.push_back(int64_t(i));
    }
  }
  bool contiguous = true;
  for (size_t i = 1; i < advanced_positions.size(); ++i) {
    contiguous = contiguous && advanced_positions[i] - advanced_positions[i - 1] == 1;
  }
  ix = expand_ellipses(ix);

  GatherIndexer g;
  for (size_t n = 0; n < ix.items.size(); ++n) {
    if (ix.items[n].kind == Kind::kBoolean) g.scalar_bool_dims.push_back(int64_t(n));
  }
  // A scalar boolean adds a dimension of size 1 indexed by arange(1) (True) or
  // arange(0) (False).
  {
    Shape shape = ix.shape;
    int64_t current = 0;
    for (size_t i = 0; i < ix.items.size(); ++i) {
      Parsed& p = ix.items[i];
      if (p.kind == Kind::kBoolean) {
        shape.insert(shape.begin() + std::min<int64_t>(int64_t(i), int64_t(shape.size())), 1);
        const int64_t n = std::get<bool>(p.value) ? 1 : 0;
        p.value = jnp::array(std::vector<int32_t>(size_t(n), 0), Shape{n}, DType::int32);
        p.kind = Kind::kArray;
        p.axes = {current++};
      } else {
        const int64_t n = int64_t(p.axes.size());
        p.axes.clear();
        for (int64_t k = 0; k < n; ++k) p.axes.push_back(current++);
      }
    }
    ix.shape = shape;
  }
  const DType index_dtype = index_dtype_for(ix.shape);

  if (normalize) {
    for (Parsed& p : ix.items) {
      if (p.kind == Kind::kInteger) {
        int64_t& i = std::get<int64_t>(p.value);
        if (i < 0) i += ix.shape[p.axes[0]];
      } else if (p.kind == Kind::kArray) {
        const Array& a = std::get<Array>(p.value);
        if (is_unsigned_integer(a.dtype())) continue;
        // In the index dtype, so that i + size cannot overflow a narrow index type.
        Array i = frontend::convert(a, index_dtype);
        Array size = frontend::scalar_int(ix.shape[p.axes[0]], index_dtype);
        p.value = lax::select(lax::lt(i, 0), lax::add(i, size), i);
      }
    }
  }

  std::vector<Array> advanced;
  std::vector<int64_t> idx_advanced_axes, x_advanced_axes;
  const bool is_advanced = std::any_of(ix.items.begin(), ix.items.end(), [](const Parsed& p) {
    return (p.kind == Kind::kArray || p.kind == Kind::kBoolean) && ndim_of(p.value) > 0;
  });
  if (is_advanced) {
    int64_t j = 0;
    for (size_t i = 0; i < ix.items.size(); ++i) {
      const Parsed& p = ix.items[i];
      if (p.kind == Kind::kNone) continue;
      if (p.kind == Kind::kArray || p.kind == Kind::kInteger) {
        advanced.push_back(as_index_array(p.value));
        idx_advanced_axes.push_back(int64_t(i));
        x_advanced_axes.push_back(j);
      }
      ++j;
    }
  }

  int64_t x_axis = 0, y_axis = 0, collapsed_y_axis = 0;
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<std::pair<Array, int64_t>> gather_indices;  // (array, its first dimension)
  Shape gather_indices_shape;
  for (size_t pos = 0; pos < ix.items.size(); ++pos) {
    const Parsed& p = ix.items[pos];
    if (!advanced.empty() &&
        ((contiguous && int64_t(pos) == idx_advanced_axes[0]) || (!contiguous && pos == 0))) {
      std::vector<Array> arrs = frontend::broadcast_arrays(advanced);
      const Shape shape = arrs[0].shape();
      const int64_t start_dim = int64_t(gather_indices_shape.size());
      for (const Array& a : arrs) {
        gather_indices.emplace_back(frontend::convert(a, index_dtype), start_dim);
      }
      gather_indices_shape.insert(gather_indices_shape.end(), shape.begin(), shape.end());
      start_index_map.insert(start_index_map.end(), x_advanced_axes.begin(), x_advanced_axes.end());
      collapsed_slice_dims.insert(collapsed_slice_dims.end(), x_advanced_axes.begin(),
                                  x_advanced_axes.end());
      g.slice_shape.insert(g.slice_shape.end(), shape.begin(), shape.end());
      y_axis += int64_t(shape.size());
      collapsed_y_axis += int64_t(shape.size());
    }
    if (std::find(idx_advanced_axes.begin(), idx_advanced_axes.end(), int64_t(pos)) !=
        idx_advanced_axes.end()) {
      ++x_axis;
      g.gather_slice_shape.push_back(1);
      continue;
    }
    if ((p.kind == Kind::kInteger || p.kind == Kind::kArray) && ndim_of(p.value) == 0) {
      if (ix.shape[x_axis] == 0) {
        throw IndexError("index is out of bounds for axis " + std::to_string(x_axis) +
                         " with size 0");
      }
      gather_indices.emplace_back(frontend::convert(as_index_array(p.value), index_dtype),
                                  int64_t(gather_indices_shape.size()));
      collapsed_slice_dims.push_back(x_axis);
      g.gather_slice_shape.push_back(1);
      start_index_map.push_back(x_axis);
      ++x_axis;
    } else if (p.kind == Kind::kNone) {
      g.slice_shape.push_back(1);
      g.newaxis_dims.push_back(y_axis);
      ++y_axis;
    } else if (p.kind == Kind::kSlice) {
      const int64_t size = ix.shape[x_axis];
      SliceIndices s = canonicalize_slice(std::get<IndexSlice>(p.value), size);
      const int64_t start = s.start, slice_size = s.stop, step = s.step;
      g.slice_shape.push_back(slice_size);
      if (step == 1) {
        // A full unit-stride slice needs no index at all.
        if (slice_size != size) {
          gather_indices.emplace_back(frontend::scalar_int(start, index_dtype),
                                      int64_t(gather_indices_shape.size()));
          start_index_map.push_back(x_axis);
        }
        g.gather_slice_shape.push_back(slice_size);
        offset_dims.push_back(collapsed_y_axis);
      } else {
        Array indices = lax::add(
            frontend::scalar_int(start, index_dtype),
            lax::mul(frontend::scalar_int(step, index_dtype), lax::iota(index_dtype, slice_size)));
        if (step < 0) {
          g.reversed_y_dims.push_back(collapsed_y_axis);
          indices = lax::rev(indices, {0});
        }
        g.gather_slice_shape.push_back(1);
        gather_indices.emplace_back(indices, int64_t(gather_indices_shape.size()));
        start_index_map.push_back(x_axis);
        gather_indices_shape.push_back(slice_size);
        collapsed_slice_dims.push_back(x_axis);
      }
      ++collapsed_y_axis;
      ++y_axis;
      ++x_axis;
    } else {
      throw IndexError("Got unsupported indexer at position " + std::to_string(pos));
    }
  }

  if (gather_indices.empty()) {
    g.gather_indices = jnp::zeros({0}, index_dtype);
  } else if (gather_indices.size() == 1) {
    const Array& a = gather_indices[0].first;
    g.gather_indices = lax::expand_dims(a, {a.ndim()});
  } else {
    Shape full = gather_indices_shape;
    full.push_back(1);
    std::vector<Array> parts;
    for (const auto& [a, first] : gather_indices) {
      std::vector<int64_t> dims(size_t(a.ndim()));
      std::iota(dims.begin(), dims.end(), first);
      parts.push_back(lax::broadcast_in_dim(a, full, dims));
    }
    g.gather_indices = lax::concatenate(parts, int64_t(gather_indices_shape.size()));
  }
  std::sort(collapsed_slice_dims.begin(), collapsed_slice_dims.end());
  g.dnums.offset_dims = offset_dims;
  g.dnums.collapsed_slice_dims = collapsed_slice_dims;
  g.dnums.start_index_map = start_index_map;
  g.unique_indices = advanced.empty();
  g.indices_are_sorted = advanced.empty();
  return g;
}

bool is_empty(const Shape& s) {
  return std::any_of(s.begin(), s.end(), [](int64_t d) { return d == 0; });
}

Array zeros_like_shape(const Array& y, const Shape& shape) {
  return jnp::detail::broadcast_scalar(frontend::scalar(0, y.dtype(), y.weak_type()), shape);
}

Array gather_take(const Array& arr, const Indexer& parsed, const AtOptions& o) {
  GatherIndexer g = index_to_gather(expand_bool_indices(parsed), o.wrap_negative_indices);
  Array y = arr;
  if (!g.scalar_bool_dims.empty()) y = lax::expand_dims(y, g.scalar_bool_dims);
  // An empty result needs no gather (and zeros(0)[array([], int32)] could not have one).
  if (is_empty(g.slice_shape)) return zeros_like_shape(y, g.slice_shape);
  if (!is_empty(g.gather_indices.shape())) {
    const GatherScatterMode mode = parse_mode(o.mode, GatherScatterMode::PROMISE_IN_BOUNDS);
    std::optional<double> fill;
    if (mode == GatherScatterMode::FILL_OR_DROP) fill = o.fill_value;
    y = lax::gather(y, g.gather_indices, g.dnums, g.gather_slice_shape,
                    o.indices_are_sorted || g.indices_are_sorted,
                    o.unique_indices || g.unique_indices, mode, fill);
  }
  if (!g.reversed_y_dims.empty()) y = lax::rev(y, g.reversed_y_dims);
  if (!g.newaxis_dims.empty()) y = lax::expand_dims(y, g.newaxis_dims);
  return y;
}

// JAX's rewriting_take.
Array rewriting_take(const Array& arr, const NumpyIndex& index, const AtOptions& o) {
  Indexer ix = parse(index, arr.shape());
  if (!o.mode || o.mode->value() == GatherScatterMode::PROMISE_IN_BOUNDS) {
    validate_static_indices(ix, o.wrap_negative_indices);
  }
  if (auto y = try_static_slice(arr, ix, o.wrap_negative_indices, o.mode)) return *y;
  if (auto y = try_dynamic_slice(arr, ix, o.wrap_negative_indices, o.mode)) return *y;
  return gather_take(arr, ix, o);
}

// lax.broadcast_to, with JAX's messages (jnp.broadcast_to of the updates in _scatter_impl).
Array broadcast_updates(const Array& y, const Shape& shape) {
  if (y.shape() == shape) return y;
  const int64_t rank = int64_t(shape.size());
  if (rank < y.ndim()) {
    throw ValueError("Cannot broadcast to shape with fewer dimensions: arr_shape=" +
                     shape_str(y.shape()) + " shape=" + shape_str(shape));
  }
  const int64_t nlead = rank - y.ndim();
  std::vector<int64_t> dims;
  for (int64_t d = 0; d < y.ndim(); ++d) {
    const int64_t have = y.shape()[size_t(d)], want = shape[size_t(nlead + d)];
    if (have != 1 && have != want) {
      core::Aval requested{shape, y.dtype(), false};
      throw ValueError("Incompatible types for broadcasting: input type=" + core::aval_of(y).str() +
                       " and requested type=" + requested.str());
    }
    dims.push_back(nlead + d);
  }
  return lax::broadcast_in_dim(y, shape, dims);
}

enum class UpdateOp { kSet, kAdd, kSub, kMul, kMin, kMax };

bool fits(int64_t v, DType t) {
  auto in = [v](auto lo, auto hi) { return v >= int64_t(lo) && (hi < 0 || v <= int64_t(hi)); };
  switch (t) {
    case DType::int8:
      return in(INT8_MIN, INT8_MAX);
    case DType::int16:
      return in(INT16_MIN, INT16_MAX);
    case DType::int32:
      return in(INT32_MIN, INT32_MAX);
    case DType::int64:
      return true;
    case DType::uint8:
      return in(0, UINT8_MAX);
    case DType::uint16:
      return in(0, UINT16_MAX);
    case DType::uint32:
      return in(0, int64_t(UINT32_MAX));
    case DType::uint64:
      return v >= 0;
    default:
      return false;
  }
}

// JAX's _scatter_update: x[index] op= y as one scatter, in the promoted dtype of x and y,
// converted back to x's type.
Array scatter_update(const Array& x, const NumpyIndex& index, const ArrayLike& values, UpdateOp op,
                     const AtOptions& o) {
  Array y = values.array();
  // A C++ integer that fits x's integer dtype takes it (JAX does so for a Python int).
  if (frontend::is_literal(y) && is_integer(y.dtype()) && is_integer(x.dtype())) {
    const int64_t v = y.item<int64_t>();
    if (fits(v, x.dtype())) y = frontend::scalar_int(v, x.dtype());
  }
  Indexer ix = expand_bool_indices(parse(index, x.shape()));
  const DType dtype = x.dtype();
  const bool weak = x.weak_type();
  GatherIndexer g = index_to_gather(ix, o.wrap_negative_indices);
  if (is_empty(g.slice_shape)) return x;
  std::vector<Array> xy = frontend::promote_dtypes({x, y});
  Array operand = xy[0];
  Array updates = broadcast_updates(xy[1], g.slice_shape);
  if (!g.newaxis_dims.empty()) updates = lax::squeeze(updates, g.newaxis_dims);
  if (op == UpdateOp::kSub) {
    // x - y as x + (-y): exact for floats, modular (so equal) for integers.
    updates = lax::neg(updates);
    op = UpdateOp::kAdd;
  }
  if (!g.reversed_y_dims.empty()) updates = lax::rev(updates, g.reversed_y_dims);
  if (!g.scalar_bool_dims.empty()) operand = lax::expand_dims(operand, g.scalar_bool_dims);
  Array out;
  if (is_empty(g.gather_indices.shape())) {
    // No index at all: every dimension is a full slice, so updates has operand's shape.
    switch (op) {
      case UpdateOp::kSet:
        out = updates;
        break;
      case UpdateOp::kSub:
        break;
      case UpdateOp::kAdd:
        out = lax::add(operand, updates);
        break;
      case UpdateOp::kMul:
        out = lax::mul(operand, updates);
        break;
      case UpdateOp::kMin:
        out = lax::min(operand, updates);
        break;
      case UpdateOp::kMax:
        out = lax::max(operand, updates);
        break;
    }
  } else {
    lax::ScatterDimensionNumbers dnums;
    dnums.update_window_dims = g.dnums.offset_dims;
    dnums.inserted_window_dims = g.dnums.collapsed_slice_dims;
    dnums.scatter_dims_to_operand_dims = g.dnums.start_index_map;
    const GatherScatterMode mode = parse_mode(o.mode, GatherScatterMode::FILL_OR_DROP);
    const bool sorted = g.indices_are_sorted || o.indices_are_sorted;
    const bool unique = g.unique_indices || o.unique_indices;
    const Array& idx = g.gather_indices;
    switch (op) {
      case UpdateOp::kSub:
        break;
      case UpdateOp::kSet:
        out = lax::scatter(operand, idx, updates, dnums, sorted, unique, mode);
        break;
      case UpdateOp::kAdd:
        out = lax::scatter_add(operand, idx, updates, dnums, sorted, unique, mode);
        break;
      case UpdateOp::kMul:
        out = lax::scatter_mul(operand, idx, updates, dnums, sorted, unique, mode);
        break;
      case UpdateOp::kMin:
        out = lax::scatter_min(operand, idx, updates, dnums, sorted, unique, mode);
        break;
      case UpdateOp::kMax:
        out = lax::scatter_max(operand, idx, updates, dnums, sorted, unique, mode);
        break;
    }
  }
  if (!g.scalar_bool_dims.empty()) out = lax::squeeze(out, g.scalar_bool_dims);
  return frontend::convert(out, dtype, weak);
}

// JAX's .at[index].apply: lax::scatter_apply with the scatter an update would be, for
// updates of x[index]'s shape (its None dimensions dropped).
Array scatter_apply(const Array& x, const NumpyIndex& index,
                    const std::function<Array(const Array&)>& func, const AtOptions& o) {
  Indexer ix = expand_bool_indices(parse(index, x.shape()));
  GatherIndexer g = index_to_gather(ix, o.wrap_negative_indices);
  if (is_empty(g.slice_shape)) return x;
  Array operand = x;
  if (!g.scalar_bool_dims.empty()) operand = lax::expand_dims(operand, g.scalar_bool_dims);
  Array out;
  if (is_empty(g.gather_indices.shape())) {
    out = detail::apply_elementwise(func, operand);  // every dimension a full slice
  } else {
    lax::ScatterDimensionNumbers dnums;
    dnums.update_window_dims = g.dnums.offset_dims;
    dnums.inserted_window_dims = g.dnums.collapsed_slice_dims;
    dnums.scatter_dims_to_operand_dims = g.dnums.start_index_map;
    Shape update_shape;
    for (size_t d = 0; d < g.slice_shape.size(); ++d) {
      const bool newaxis = std::find(g.newaxis_dims.begin(), g.newaxis_dims.end(), int64_t(d)) !=
                           g.newaxis_dims.end();
      if (!newaxis) update_shape.push_back(g.slice_shape[d]);
    }
    out = detail::scatter_apply_windows(operand, g.gather_indices, func, dnums, update_shape,
                                        g.indices_are_sorted || o.indices_are_sorted,
                                        g.unique_indices || o.unique_indices,
                                        parse_mode(o.mode, GatherScatterMode::FILL_OR_DROP));
  }
  if (!g.scalar_bool_dims.empty()) out = lax::squeeze(out, g.scalar_bool_dims);
  return out;
}

}  // namespace

IndexMode::IndexMode(std::string_view name) {
  if (name == "clip") {
    mode_ = GatherScatterMode::CLIP;
  } else if (name == "fill" || name == "drop") {
    mode_ = GatherScatterMode::FILL_OR_DROP;
  } else if (name == "promise_in_bounds") {
    mode_ = GatherScatterMode::PROMISE_IN_BOUNDS;
  } else if (name == "one_hot") {
    mode_ = GatherScatterMode::ONE_HOT;
  } else {
    throw ValueError("Unknown gather mode \"" + std::string(name) + "\"");
  }
}

IndexItem::IndexItem(const std::vector<int64_t>& list)
    : value_(jnp::array(list, Shape{int64_t(list.size())},
                        detail::canonicalize_dtype(DType::int64))) {}

Array Array::operator[](const NumpyIndex& index) const { return rewriting_take(*this, index, {}); }

IndexUpdateRef Array::at(const NumpyIndex& index) const { return IndexUpdateRef(*this, index); }

Array IndexUpdateRef::get(const AtOptions& options) const {
  return rewriting_take(array_, index_, options);
}
Array IndexUpdateRef::set(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kSet, options);
}
Array IndexUpdateRef::add(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kAdd, options);
}
Array IndexUpdateRef::subtract(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kSub, options);
}
Array IndexUpdateRef::multiply(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kMul, options);
}
Array IndexUpdateRef::mul(const ArrayLike& values, const AtOptions& options) const {
  return multiply(values, options);
}
Array IndexUpdateRef::divide(const ArrayLike& values, const AtOptions& options) const {
  Array ones = jnp::ones_like(array_);
  return jnp::divide(array_, scatter_update(ones, index_, values, UpdateOp::kMul, options));
}
Array IndexUpdateRef::power(const ArrayLike& values, const AtOptions& options) const {
  Array ones = jnp::ones_like(array_);
  return jnp::power(array_, scatter_update(ones, index_, values, UpdateOp::kMul, options));
}
Array IndexUpdateRef::min(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kMin, options);
}
Array IndexUpdateRef::max(const ArrayLike& values, const AtOptions& options) const {
  return scatter_update(array_, index_, values, UpdateOp::kMax, options);
}
Array IndexUpdateRef::apply(const std::function<Array(const Array&)>& func,
                            const AtOptions& options) const {
  return detail::without_jvp(
      array_, [&](const Array& x) { return scatter_apply(x, index_, func, options); });
}

}  // namespace parax

namespace parax::numpy {

Array take(const ArrayLike& a_in, const ArrayLike& indices_in, std::optional<int64_t> axis,
           std::optional<std::string_view> mode, std::optional<double> fill_value,
           bool unique_indices, bool indices_are_sorted) {
  Array a = a_in.array();
  Array indices = indices_in.array();
  int64_t ax = 0;
  if (axis) {
    ax = frontend::canonicalize_axis(*axis, a.ndim());
  } else {
    a = ravel(a);
  }
  GatherScatterMode gather_mode = GatherScatterMode::FILL_OR_DROP;
  if (!mode || *mode == "fill") {
    // gather has no negative indices: wrap them here.
    indices = where(less(indices, 0), add(indices, a.shape()[size_t(ax)]), indices);
  } else if (*mode == "raise") {
    throw NotImplementedError("The 'raise' mode to jnp.take is not supported.");
  } else if (*mode == "wrap") {
    indices = mod(indices, frontend::scalar_int(a.shape()[size_t(ax)], indices.dtype()));
    gather_mode = GatherScatterMode::PROMISE_IN_BOUNDS;
  } else if (*mode == "clip") {
    gather_mode = GatherScatterMode::CLIP;
  } else {
    throw ValueError("Invalid mode '" + std::string(*mode) + "' for np.take");
  }
  Shape slice_sizes = a.shape();
  if (slice_sizes[size_t(ax)] == 0) {
    if (indices.size() != 0) {
      throw IndexError("Cannot do a non-empty jnp.take() from an empty axis.");
    }
    return a;
  }
  const int64_t index_dims = indices.ndim();
  if (indices.size() == 0) {
    Shape out(slice_sizes.begin(), slice_sizes.begin() + ax);
    out.insert(out.end(), indices.shape().begin(), indices.shape().end());
    out.insert(out.end(), slice_sizes.begin() + ax + 1, slice_sizes.end());
    return zeros_like_shape(a, out);
  }
  slice_sizes[size_t(ax)] = 1;
  lax::GatherDimensionNumbers dnums;
  for (int64_t d = 0; d < ax; ++d) dnums.offset_dims.push_back(d);
  for (int64_t d = ax + index_dims; d < a.ndim() + index_dims - 1; ++d) {
    dnums.offset_dims.push_back(d);
  }
  dnums.collapsed_slice_dims = {ax};
  dnums.start_index_map = {ax};
  std::optional<double> fill;
  if (gather_mode == GatherScatterMode::FILL_OR_DROP) fill = fill_value;
  return lax::gather(a, lax::expand_dims(indices, {index_dims}), dnums, slice_sizes,
                     indices_are_sorted, unique_indices, gather_mode, fill);
}

namespace {

// nn.one_hot(x, n, dtype): x's one-hot encoding along a new last dimension.
Array one_hot_last(const Array& x, int64_t n, DType dtype) {
  const Array lhs = lax::expand_dims(x, {x.ndim()});
  Shape rhs_shape(size_t(x.ndim()), 1);
  rhs_shape.push_back(n);
  const Array rhs = lax::broadcasted_iota(x.dtype(), rhs_shape, x.ndim());
  return astype(equal(lhs, rhs), dtype);
}

// take_along_axis(..., mode="one_hot"), as JAX computes it: the indices' one-hot encoding
// (all zeros out of bounds) contracted with a along `ax` by one dot_general, the other
// dimensions broadcast against each other and batched.
Array one_hot_take(const Array& a, const Array& indices, int64_t ax, const Shape& out_shape) {
  const int64_t rank = a.ndim();
  const int64_t size = a.shape()[size_t(ax)];
  Shape a_shape = out_shape;
  a_shape[size_t(ax)] = size;
  const Array operand = broadcast_to(a, a_shape);
  const Array hot = one_hot_last(broadcast_to(indices, out_shape), size, a.dtype());
  lax::DotDimensionNumbers dims;
  dims.lhs_contracting = {rank};
  dims.rhs_contracting = {ax};
  for (int64_t d = 0; d < rank; ++d) {
    if (d == ax) continue;
    dims.lhs_batch.push_back(d);
    dims.rhs_batch.push_back(d);
  }
  // (batch dimensions..., the indices' dimension `ax`) back into out_shape's order.
  const Array y = lax::dot_general(hot, operand, dims);
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < rank; ++d) {
    if (d == ax) perm.push_back(rank - 1);
    if (d < rank - 1) perm.push_back(d);
  }
  return lax::transpose(y, perm);
}

}  // namespace

Array take_along_axis(const ArrayLike& arr, const ArrayLike& indices_in,
                      std::optional<int64_t> axis, std::optional<IndexMode> mode,
                      std::optional<double> fill_value, std::optional<bool> wrap_negative_indices) {
  Array a = arr.array();
  Array indices = indices_in.array();
  if (!is_integer(indices.dtype())) {
    throw TypeError("take_along_axis indices must be of integer type, got " +
                    std::string(dtype_name(indices.dtype())));
  }
  if (!axis) {
    if (indices.ndim() != 1) {
      throw ValueError("take_along_axis indices must be 1D if axis=None, got shape " +
                       shape_str(indices.shape()));
    }
    a = ravel(a);
    axis = 0;
  }
  const int64_t rank = a.ndim();
  if (rank != indices.ndim()) {
    throw ValueError("indices and arr must have the same number of dimensions; " +
                     std::to_string(indices.ndim()) + " vs. " + std::to_string(rank));
  }
  const int64_t ax = frontend::canonicalize_axis(*axis, rank);
  const Shape idx_shape = indices.shape();
  Shape arr_shape = a.shape();
  const int64_t axis_size = arr_shape[size_t(ax)];
  arr_shape[size_t(ax)] = 1;
  const std::vector<Shape> shapes = {idx_shape, arr_shape};
  const Shape out_shape = frontend::broadcast_shapes("", shapes);
  if (axis_size == 0) {
    return detail::broadcast_scalar(frontend::scalar(0, a.dtype()), out_shape);
  }
  // JAX's legacy default: wrap unless the indices are promised in bounds.
  const bool promise = mode && mode->value() == GatherScatterMode::PROMISE_IN_BOUNDS;
  const bool wrap = wrap_negative_indices.value_or(!promise);
  if (wrap) {
    const DType index_dtype =
        axis_size > std::numeric_limits<int32_t>::max() ? DType::int64 : DType::int32;
    indices = frontend::convert(indices, index_dtype);
    Array size = frontend::scalar_int(axis_size, index_dtype);
    indices = lax::select(lax::lt(indices, 0), lax::add(indices, size), indices);
  }
  if (mode && mode->value() == GatherScatterMode::ONE_HOT) {
    return one_hot_take(a, indices, ax, out_shape);
  }
  Shape gather_index_shape;
  for (int64_t i = 0; i < rank; ++i) {
    if (i == ax || idx_shape[size_t(i)] != 1) gather_index_shape.push_back(out_shape[size_t(i)]);
  }
  gather_index_shape.push_back(1);
  Array gather_indices = lax::reshape(indices, gather_index_shape);
  Shape slice_sizes;
  lax::GatherDimensionNumbers dnums;
  std::vector<int64_t> dims_to_squeeze;
  int64_t new_i = 0, j = 0;
  for (int64_t i = 0; i < rank; ++i) {
    if (i == ax) {
      slice_sizes.push_back(1);
      dnums.start_index_map.push_back(new_i);
      dnums.collapsed_slice_dims.push_back(new_i);
      ++new_i;
      ++j;
    } else if (idx_shape[size_t(i)] == 1) {
      // The whole of a's axis, without an iota index.
      dnums.offset_dims.push_back(i);
      slice_sizes.push_back(arr_shape[size_t(i)]);
      ++new_i;
    } else if (arr_shape[size_t(i)] == 1) {
      dims_to_squeeze.push_back(i);
      ++j;
    } else {
      slice_sizes.push_back(arr_shape[size_t(i)] == 0 ? 0 : 1);
      dnums.operand_batching_dims.push_back(new_i);
      dnums.start_indices_batching_dims.push_back(j);
      ++new_i;
      ++j;
    }
  }
  if (!dims_to_squeeze.empty()) a = lax::squeeze(a, dims_to_squeeze);
  const GatherScatterMode gather_mode = mode ? mode->value() : GatherScatterMode::FILL_OR_DROP;
  std::optional<double> fill;
  if (gather_mode == GatherScatterMode::FILL_OR_DROP) fill = fill_value;
  return lax::gather(a, gather_indices, dnums, slice_sizes, false, false, gather_mode, fill);
}

Array put_along_axis(const ArrayLike& arr_in, const ArrayLike& indices_in,
                     const ArrayLike& values_in, std::optional<int64_t> axis,
                     std::optional<IndexMode> mode) {
  Array arr = arr_in.array();
  const Array& indices = indices_in.array();
  Array values = values_in.array();
  const Shape original_shape = arr.shape();
  if (!axis) {
    arr = ravel(arr);
    axis = 0;
  }
  if (arr.ndim() != indices.ndim()) {
    throw ValueError(
        "put_along_axis arguments 'arr' and 'indices' must have same ndim. Got arr.ndim=" +
        std::to_string(arr.ndim()) + " and indices.ndim=" + std::to_string(indices.ndim()) + ".");
  }
  try {
    values = frontend::broadcast_to(values, indices.shape());
  } catch (const ValueError&) {
    throw ValueError(
        "put_along_axis argument 'values' must be broadcastable to 'indices'. Got "
        "values.shape=" +
        shape_str(values.shape()) + " and indices.shape=" + shape_str(indices.shape()) + ".");
  }
  const int64_t ax = frontend::canonicalize_axis(*axis, arr.ndim());
  // numpy's indices(arr.shape, sparse=True) with `indices` on the axis.
  std::vector<IndexItem> items;
  for (int64_t d = 0; d < arr.ndim(); ++d) {
    if (d == ax) {
      items.emplace_back(indices);
      continue;
    }
    Shape s(size_t(arr.ndim()), 1);
    s[size_t(d)] = arr.shape()[size_t(d)];
    items.emplace_back(lax::broadcasted_iota(DType::int32, s, d));
  }
  AtOptions options;
  options.mode = mode;
  Array result = arr.at(NumpyIndex(std::move(items))).set(values, options);
  if (result.shape() != original_shape) result = result.reshape(original_shape);
  return result;
}

}  // namespace parax::numpy
