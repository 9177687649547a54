// Helpers shared by the structural primitives (iota, reshape, slice, pad, ...): their
// kernels only move bytes, so they all reduce to one strided copy between two layouts.
// Internal to src/prims.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>
#include <vector>

#include "prims/prim_util.h"

namespace parax::prims {

// Throws JAX's TypeError unless every element of `values` is >= 0.
inline void check_shapelike(std::string_view fun, std::string_view arg,
                            const std::vector<int64_t>& values) {
  for (int64_t v : values) {
    if (v >= 0) continue;
    throw TypeError(std::string(fun) + " " + std::string(arg) +
                    " must have every element be nonnegative, got " + shape_str(values) + ".");
  }
}

// Adds a factor of `size` to `rule` and returns its number.
inline int add_factor(ShardingRule& rule, int64_t size) {
  rule.factor_sizes.push_back(size);
  return rule.num_factors() - 1;
}

// Renders a list of avals as JAX prints a list of abstract values: `[int32[], int32[2]]`.
inline std::string avals_str(std::span<const Aval> avals) {
  std::string s = "[";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].str();
  return s + "]";
}

// Checks the start-index operands of dynamic_slice / dynamic_update_slice: scalars of one
// integer dtype (JAX's messages).
inline void check_start_indices(std::string_view name, std::span<const Aval> indices) {
  for (const Aval& a : indices) {
    if (a.shape.empty()) continue;
    throw TypeError(std::string(name) + " start_indices must be scalars, got indices " +
                    avals_str(indices));
  }
  for (const Aval& a : indices) {
    if (is_integer(a.dtype) && a.dtype == indices[0].dtype) continue;
    std::string got;
    for (const Aval& b : indices) {
      got += (got.empty() ? "" : ", ") + std::string(dtype_name(b.dtype));
    }
    throw TypeError("index arguments to " + std::string(name) +
                    " must be integers of the same type, got: " + got);
  }
}

// Reads start index operands first.. of `c` and clamps each so that the window of
// `window` fits inside `shape`, as XLA does (so out-of-range starts never fault).
inline std::vector<int64_t> clamped_starts(const KernelCall& c, size_t first, const Shape& shape,
                                           const Shape& window) {
  std::vector<int64_t> starts(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    const int64_t v = dispatch_dtype(c.in_avals[first + d].dtype, [&](auto zero) -> int64_t {
      using T = decltype(zero);
      const T x = *in_ptr<T>(c, first + d);
      if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T> && sizeof(T) == 8) {
        return x > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(x);
      } else {
        return scalar_cast<int64_t>(x);
      }
    });
    starts[d] = std::clamp<int64_t>(v, 0, std::max<int64_t>(0, shape[d] - window[d]));
  }
  return starts;
}

// A copy of an n-dimensional block between two strided layouts. Strides are in elements;
// source strides may be 0 (broadcast) or negative (rev). Distinct block positions must map
// to distinct destination elements.
struct StridedCopy {
  Shape shape;
  std::vector<int64_t> src_strides;
  std::vector<int64_t> dst_strides;
  int64_t src_offset = 0;
  int64_t dst_offset = 0;
};

namespace detail {

// Tile edge of the cache-blocked transpose loop: 32x32 elements of 8 bytes fit in L1.
inline constexpr int64_t kTile = 32;

template <class U>
inline U load(const uint8_t* base, int64_t i) {
  U v;
  std::memcpy(&v, base + i * int64_t(sizeof(U)), sizeof(U));
  return v;
}
template <class U>
inline void store(uint8_t* base, int64_t i, U v) {
  std::memcpy(base + i * int64_t(sizeof(U)), &v, sizeof(U));
}

// Drops size-1 dimensions and merges dimensions contiguous in both layouts, so the inner
// loop is as long as possible (a reshape-like copy becomes one memcpy).
inline StridedCopy simplify(const StridedCopy& c) {
  StridedCopy s{{}, {}, {}, c.src_offset, c.dst_offset};
  for (size_t d = 0; d < c.shape.size(); ++d) {
    if (c.shape[d] == 1) continue;
    if (!s.shape.empty() && s.src_strides.back() == c.src_strides[d] * c.shape[d] &&
        s.dst_strides.back() == c.dst_strides[d] * c.shape[d]) {
      s.shape.back() *= c.shape[d];
      s.src_strides.back() = c.src_strides[d];
      s.dst_strides.back() = c.dst_strides[d];
      continue;
    }
    s.shape.push_back(c.shape[d]);
    s.src_strides.push_back(c.src_strides[d]);
    s.dst_strides.push_back(c.dst_strides[d]);
  }
  if (s.shape.empty()) s = StridedCopy{{1}, {1}, {1}, c.src_offset, c.dst_offset};
  return s;
}

// Copies elements [j0, j1) of one row (the innermost dimension) at offsets so / dof.
template <class U>
inline void copy_span(const uint8_t* src, uint8_t* dst, int64_t so, int64_t dof, int64_t ss,
                      int64_t ds, int64_t j0, int64_t j1) {
  if (ss == 1 && ds == 1) {
    std::memcpy(dst + (dof + j0) * int64_t(sizeof(U)), src + (so + j0) * int64_t(sizeof(U)),
                size_t(j1 - j0) * sizeof(U));
  } else if (ss == 0) {
    const U v = load<U>(src, so);
    for (int64_t j = j0; j < j1; ++j) store<U>(dst, dof + j * ds, v);
  } else {
    for (int64_t j = j0; j < j1; ++j) store<U>(dst, dof + j * ds, load<U>(src, so + j * ss));
  }
}

// Copies work units [begin, end): unit u is column chunk u % per_row of row u / per_row,
// so one long row (a big 1-D copy or fill) still splits across threads.
template <class U>
void copy_units(const uint8_t* src, uint8_t* dst, const StridedCopy& c, int64_t chunk,
                int64_t begin, int64_t end) {
  const size_t outer = c.shape.size() - 1;
  const int64_t n = c.shape.back();
  const int64_t per_row = (n + chunk - 1) / chunk;
  std::vector<int64_t> idx(outer);
  int64_t so = c.src_offset;
  int64_t dof = c.dst_offset;
  int64_t r = begin / per_row;
  for (size_t d = outer; d-- > 0;) {
    idx[d] = r % c.shape[d];
    r /= c.shape[d];
    so += idx[d] * c.src_strides[d];
    dof += idx[d] * c.dst_strides[d];
  }
  for (int64_t unit = begin; unit < end; ++unit) {
    const int64_t j0 = (unit % per_row) * chunk;
    copy_span<U>(src, dst, so, dof, c.src_strides.back(), c.dst_strides.back(), j0,
                 std::min(n, j0 + chunk));
    if (unit % per_row != per_row - 1) continue;
    // Odometer step over the outer dimensions.
    for (size_t d = outer; d-- > 0;) {
      so += c.src_strides[d];
      dof += c.dst_strides[d];
      if (++idx[d] < c.shape[d]) break;
      so -= c.shape[d] * c.src_strides[d];
      dof -= c.shape[d] * c.dst_strides[d];
      idx[d] = 0;
    }
  }
}

// A transpose-like copy: the destination is contiguous along the last dimension and the
// source along dimension k. Copying kTile x kTile tiles keeps both sides in cache.
template <class U>
void copy_tiled(const uint8_t* src, uint8_t* dst, const StridedCopy& c, size_t k) {
  const size_t last = c.shape.size() - 1;
  const int64_t nk = c.shape[k];
  const int64_t nl = c.shape[last];
  const int64_t sl = c.src_strides[last];
  const int64_t dk = c.dst_strides[k];
  const int64_t k_tiles = (nk + kTile - 1) / kTile;
  int64_t outer_count = 1;
  for (size_t d = 0; d < last; ++d) outer_count *= d == k ? 1 : c.shape[d];
  auto body = [&](int64_t begin, int64_t end) {
    for (int64_t unit = begin; unit < end; ++unit) {
      int64_t so = c.src_offset;
      int64_t dof = c.dst_offset;
      int64_t rest = unit / k_tiles;
      for (size_t d = last; d-- > 0;) {
        if (d == k) continue;
        const int64_t i = rest % c.shape[d];
        rest /= c.shape[d];
        so += i * c.src_strides[d];
        dof += i * c.dst_strides[d];
      }
      const int64_t i0 = (unit % k_tiles) * kTile;
      const int64_t i1 = std::min(nk, i0 + kTile);
      for (int64_t j0 = 0; j0 < nl; j0 += kTile) {
        const int64_t j1 = std::min(nl, j0 + kTile);
        for (int64_t i = i0; i < i1; ++i) {
          for (int64_t j = j0; j < j1; ++j) {
            store<U>(dst, dof + i * dk + j, load<U>(src, so + i + j * sl));
          }
        }
      }
    }
  };
  parallel_chunks(outer_count * k_tiles, std::max<int64_t>(1, kElementGrain / (kTile * nl)), body);
}

template <class U>
void strided_copy_typed(const uint8_t* src, uint8_t* dst, const StridedCopy& c) {
  const size_t last = c.shape.size() - 1;
  const int64_t n = c.shape.back();
  if (c.dst_strides[last] == 1 && c.src_strides[last] != 1 && c.src_strides[last] != 0 &&
      n >= kTile) {
    for (size_t k = 0; k < last; ++k) {
      if (c.src_strides[k] != 1 || c.shape[k] < kTile) continue;
      copy_tiled<U>(src, dst, c, k);
      return;
    }
  }
  int64_t rows = 1;
  for (size_t d = 0; d < last; ++d) rows *= c.shape[d];
  const int64_t chunk = std::min(n, kElementGrain);
  const int64_t units = rows * ((n + chunk - 1) / chunk);
  parallel_chunks(units, std::max<int64_t>(1, kElementGrain / chunk),
                  [&](int64_t b, int64_t e) { copy_units<U>(src, dst, c, chunk, b, e); });
}

}  // namespace detail

// Runs `copy` on elements of `itemsize` bytes, in parallel for big blocks.
inline void strided_copy(const void* src, void* dst, int itemsize, const StridedCopy& copy) {
  if (shape_size(copy.shape) == 0) return;
  const StridedCopy c = detail::simplify(copy);
  const auto* s = static_cast<const uint8_t*>(src);
  auto* d = static_cast<uint8_t*>(dst);
  switch (itemsize) {
    case 1:
      return detail::strided_copy_typed<uint8_t>(s, d, c);
    case 2:
      return detail::strided_copy_typed<uint16_t>(s, d, c);
    case 4:
      return detail::strided_copy_typed<uint32_t>(s, d, c);
    case 8:
      return detail::strided_copy_typed<uint64_t>(s, d, c);
  }
  PARAX_CHECK(false, "unsupported itemsize " << itemsize);
}

// Copies `n` bytes between non-overlapping buffers, in parallel for big ones.
inline void copy_bytes(const void* src, void* dst, size_t n) {
  constexpr int64_t kGrain = 1 << 20;
  parallel_chunks(int64_t(n), kGrain, [&](int64_t begin, int64_t end) {
    std::memcpy(static_cast<uint8_t*>(dst) + begin, static_cast<const uint8_t*>(src) + begin,
                size_t(end - begin));
  });
}

// Writes `count` copies of the element at `value` (of `itemsize` bytes) to `dst`.
inline void fill_elements(void* dst, int64_t count, const void* value, int itemsize) {
  // A zero-stride copy from the one value is exactly a fill.
  strided_copy(value, dst, itemsize, StridedCopy{{count}, {0}, {1}, 0, 0});
}

// Returns a gather of a `shape` block read with `src_strides` into a dense row-major result.
inline StridedCopy dense_copy(const Shape& shape, const std::vector<int64_t>& src_strides) {
  return StridedCopy{shape, src_strides, strides_of(shape), 0, 0};
}

}  // namespace parax::prims
