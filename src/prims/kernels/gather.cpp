// Gather and scatter kernels. Both walk the batch of index vectors (every dimension of the
// indices but the last) and, for each, one window of the operand. The window is a strided
// block merged into as few dimensions as its layouts allow, so a row of a table is one
// memcpy. A gather's windows are independent, so positions run in parallel; a scatter's
// may overlap, so it keeps the positions' order (the last write wins, as on XLA:CPU) and
// splits the windows' columns among threads instead.
#include "prims/kernels/gather.h"

#include <cmath>
#include <limits>
#include <type_traits>

#include "base/thread_pool.h"
#include "prims/gather_util.h"
#include "prims/structural.h"

namespace parax::prims::kernels {
namespace {

// Returns the indices as int64 (a uint64 beyond int64's range saturates: out of bounds
// either way).
std::vector<int64_t> read_indices(const void* data, DType dtype, int64_t n) {
  std::vector<int64_t> out(size_t(std::max<int64_t>(n, 0)));
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      const T* p = static_cast<const T*>(data);
      for (int64_t i = 0; i < n; ++i) {
        if constexpr (std::is_unsigned_v<T> && sizeof(T) == 8) {
          out[size_t(i)] = p[i] > uint64_t(INT64_MAX) ? INT64_MAX : int64_t(p[i]);
        } else {
          out[size_t(i)] = int64_t(p[i]);
        }
      }
    } else {
      PARAX_CHECK(false, "gather/scatter indices of dtype " << dtype_name(dtype));
    }
  });
  return out;
}

// Where index vector n of a batch of shape `batch` (row-major) puts its window, as offsets
// into the window's source and destination.
struct Positions {
  Shape batch;
  int64_t k = 0;                        // index vector length
  const std::vector<int64_t>* raw;      // n * k + j: component j of vector n
  std::vector<int64_t> coord_stride_a;  // per batch coordinate, into side a
  std::vector<int64_t> coord_stride_b;  // per batch coordinate, into side b
  std::vector<int64_t> index_stride;    // per component, into the indexed side
  std::vector<int64_t> limit;           // per component: the largest in-bounds start
  bool index_on_a = true;               // which side the components move
  bool clamp = true;                    // clamp (else: out of bounds -> false)

  // Sets a and b for vector n; returns false if the window is out of bounds (not clamping).
  bool at(int64_t n, int64_t& a, int64_t& b) const {
    a = 0;
    b = 0;
    int64_t rest = n;
    for (size_t i = batch.size(); i-- > 0;) {
      const int64_t c = rest % batch[i];
      rest /= batch[i];
      a += c * coord_stride_a[i];
      b += c * coord_stride_b[i];
    }
    int64_t moved = 0;
    for (int64_t j = 0; j < k; ++j) {
      int64_t s = (*raw)[size_t(n * k + j)];
      const int64_t hi = limit[size_t(j)];
      if (clamp) {
        s = std::clamp<int64_t>(s, 0, std::max<int64_t>(hi, 0));
      } else if (s < 0 || s > hi) {
        return false;
      }
      moved += s * index_stride[size_t(j)];
    }
    (index_on_a ? a : b) += moved;
    return true;
  }
};

// Copies one window serially (the caller parallelizes over windows).
template <class U>
void copy_window(const uint8_t* src, uint8_t* dst, const StridedCopy& w, int64_t so, int64_t dof) {
  const size_t r = w.shape.size();
  const int64_t n = w.shape[r - 1];
  const int64_t ss = w.src_strides[r - 1];
  const int64_t ds = w.dst_strides[r - 1];
  if (r == 1) return detail::copy_span<U>(src, dst, so, dof, ss, ds, 0, n);
  std::vector<int64_t> idx(r - 1, 0);
  while (true) {
    detail::copy_span<U>(src, dst, so, dof, ss, ds, 0, n);
    size_t d = r - 1;
    while (d-- > 0) {
      so += w.src_strides[d];
      dof += w.dst_strides[d];
      if (++idx[d] < w.shape[d]) break;
      so -= w.shape[d] * w.src_strides[d];
      dof -= w.shape[d] * w.dst_strides[d];
      idx[d] = 0;
    }
    if (d == size_t(-1)) return;
  }
}

// The fill value of a FILL_OR_DROP gather as the element's bits (JAX's defaults when the
// params give none: NaN for floating dtypes, the minimum of signed integers, the maximum
// of unsigned ones, true).
uint64_t fill_bits(const Params& params, DType dtype) {
  uint64_t bits = 0;
  dispatch_dtype(dtype, [&](auto zero) {
    using T = decltype(zero);
    T v{};
    const bool given = params.has("fill_value");
    const double f = given ? params.get<double>("fill_value") : 0.0;
    if constexpr (std::is_same_v<T, bool>) {
      v = given ? f != 0 : true;
    } else if constexpr (std::is_integral_v<T>) {
      const T dflt =
          std::is_signed_v<T> ? std::numeric_limits<T>::min() : std::numeric_limits<T>::max();
      v = given && !std::isnan(f) ? scalar_cast<T>(f) : dflt;
    } else {
      v = scalar_cast<T>(given ? f : std::numeric_limits<double>::quiet_NaN());
    }
    std::memcpy(&bits, &v, sizeof(T));
  });
  return bits;
}

template <class U>
void gather_typed(const KernelCall& c, const Positions& pos, const StridedCopy& w, int64_t count,
                  uint64_t fill) {
  const auto* src = static_cast<const uint8_t*>(c.inputs[0]);
  auto* dst = static_cast<uint8_t*>(c.outputs[0]);
  U fill_value;
  std::memcpy(&fill_value, &fill, sizeof(U));
  const int64_t window = shape_size(w.shape);
  StridedCopy fill_copy{w.shape, std::vector<int64_t>(w.shape.size(), 0), w.dst_strides, 0, 0};
  // Few big windows: each copy is parallel itself.
  if (count < 2 * int64_t(base::num_threads()) && window >= kElementGrain) {
    for (int64_t n = 0; n < count; ++n) {
      int64_t so = 0, dof = 0;
      const bool in = pos.at(n, so, dof);
      StridedCopy one = in ? w : fill_copy;
      one.src_offset = in ? so : 0;
      one.dst_offset = dof;
      strided_copy(in ? c.inputs[0] : static_cast<const void*>(&fill_value), c.outputs[0],
                   int(sizeof(U)), one);
    }
    return;
  }
  const int64_t grain = std::max<int64_t>(1, kElementGrain / std::max<int64_t>(window, 1));
  // Rows of a table (the embedding lookup): one memcpy each, the source of the rows a few
  // ahead prefetched, since rows scattered over a large table defeat the hardware
  // prefetcher at every page.
  const int64_t row_bytes = window * int64_t(sizeof(U));
  if (w.shape.size() == 1 && w.src_strides[0] == 1 && w.dst_strides[0] == 1 && row_bytes >= 256) {
    parallel_chunks(count, grain, [&](int64_t begin, int64_t end) {
      constexpr int64_t kAhead = 2;
      std::vector<int64_t> from(size_t(end - begin)), to(size_t(end - begin));
      for (int64_t n = begin; n < end; ++n) {
        int64_t so = 0, dof = 0;
        from[size_t(n - begin)] = pos.at(n, so, dof) ? so : -1;
        to[size_t(n - begin)] = dof;
      }
      for (int64_t n = begin; n < end; ++n) {
        const size_t k = size_t(n - begin);
        if (n + kAhead < end && from[k + kAhead] >= 0) {
          const uint8_t* next = src + from[k + kAhead] * int64_t(sizeof(U));
          for (int64_t b = 0; b < row_bytes; b += 64) __builtin_prefetch(next + b);
        }
        uint8_t* out = dst + to[k] * int64_t(sizeof(U));
        if (from[k] >= 0) {
          std::memcpy(out, src + from[k] * int64_t(sizeof(U)), size_t(row_bytes));
        } else {
          for (int64_t j = 0; j < window; ++j)
            std::memcpy(out + j * int64_t(sizeof(U)), &fill_value, sizeof(U));
        }
      }
    });
    return;
  }
  parallel_chunks(count, grain, [&](int64_t begin, int64_t end) {
    for (int64_t n = begin; n < end; ++n) {
      int64_t so = 0, dof = 0;
      if (pos.at(n, so, dof)) {
        copy_window<U>(src, dst, w, so, dof);
      } else {
        copy_window<U>(reinterpret_cast<const uint8_t*>(&fill_value), dst, fill_copy, 0, dof);
      }
    }
  });
}

// The element-wise combiners of the scatters, with the primitives' semantics: integers
// wrap, halves round each result, min/max propagate NaN (as lax.min/max), bool's add is
// or and its mul is and. The operation is a template argument so that the loops over a
// window's row vectorize.
template <Combine C, class T>
T combine(T a, T b) {
  if constexpr (C == Combine::replace) {
    return b;
  } else if constexpr (std::is_same_v<T, bool>) {
    return C == Combine::add || C == Combine::max ? (a || b) : (a && b);
  } else if constexpr (std::is_integral_v<T>) {
    using W = uint64_t;
    using S = std::make_unsigned_t<T>;
    if constexpr (C == Combine::add) return T(S(W(S(a)) + W(S(b))));
    if constexpr (C == Combine::mul) return T(S(W(S(a)) * W(S(b))));
    if constexpr (C == Combine::min) return b < a ? b : a;
    if constexpr (C == Combine::max) return b > a ? b : a;
  } else if constexpr (std::is_floating_point_v<T>) {
    if constexpr (C == Combine::add) return a + b;
    if constexpr (C == Combine::mul) return a * b;
    if constexpr (C == Combine::min) return a != a ? a : b != b ? b : (b < a ? b : a);
    if constexpr (C == Combine::max) return a != a ? a : b != b ? b : (b > a ? b : a);
  } else {
    return T(combine<C, float>(float(a), float(b)));
  }
}

// Combines columns [j0, j1) of the innermost dimension of one update window into `out`.
template <Combine C, class T>
void combine_window(const T* upd, T* out, const StridedCopy& w, int64_t so, int64_t dof, int64_t j0,
                    int64_t j1) {
  const size_t r = w.shape.size();
  const int64_t ss = w.src_strides[r - 1];
  const int64_t ds = w.dst_strides[r - 1];
  auto row = [&](int64_t s, int64_t d) {
    if (ss == 1 && ds == 1) {
      T* o = out + d;
      const T* u = upd + s;
      if constexpr (C == Combine::replace) {
        std::memcpy(o + j0, u + j0, size_t(j1 - j0) * sizeof(T));
      } else {
        for (int64_t j = j0; j < j1; ++j) o[j] = combine<C, T>(o[j], u[j]);
      }
    } else {
      for (int64_t j = j0; j < j1; ++j) {
        T& o = out[d + j * ds];
        o = combine<C, T>(o, upd[s + j * ss]);
      }
    }
  };
  if (r == 1) return row(so, dof);
  std::vector<int64_t> idx(r - 1, 0);
  while (true) {
    row(so, dof);
    size_t d = r - 1;
    while (d-- > 0) {
      so += w.src_strides[d];
      dof += w.dst_strides[d];
      if (++idx[d] < w.shape[d]) break;
      so -= w.shape[d] * w.src_strides[d];
      dof -= w.shape[d] * w.dst_strides[d];
      idx[d] = 0;
    }
    if (d == size_t(-1)) return;
  }
}

template <Combine C, class T>
void scatter_typed(const Positions& pos, const StridedCopy& w, int64_t count, const T* upd,
                   T* out) {
  const int64_t cols = w.shape.back();
  const int64_t work = count * shape_size(w.shape);
  constexpr int64_t kMinColumns = 256;
  const int threads = base::num_threads();
  const bool split = work >= kElementGrain && cols >= 2 * kMinColumns && threads > 1;
  // Rows of a table (the embedding gradient): the places are found first, so that each
  // thread can prefetch the rows it combines a few positions ahead.
  if (split && w.shape.size() == 1) {
    std::vector<int64_t> from(static_cast<size_t>(count)), to(static_cast<size_t>(count));
    for (int64_t n = 0; n < count; ++n) {
      int64_t so = 0, dof = 0;
      from[size_t(n)] = pos.at(n, so, dof) ? so : -1;
      to[size_t(n)] = dof;
    }
    const int64_t ss = w.src_strides[0], ds = w.dst_strides[0];
    parallel_chunks(
        cols, std::max(kMinColumns, (cols + threads - 1) / threads), [&](int64_t j0, int64_t j1) {
          constexpr int64_t kAhead = 2;
          for (int64_t n = 0; n < count; ++n) {
            if (n + kAhead < count && from[size_t(n + kAhead)] >= 0 && ss == 1 && ds == 1) {
              const T* u = upd + from[size_t(n + kAhead)];
              const T* o = out + to[size_t(n + kAhead)];
              for (int64_t j = j0; j < j1; j += 64 / int64_t(sizeof(T))) {
                __builtin_prefetch(u + j);
                __builtin_prefetch(o + j, 1);
              }
            }
            if (from[size_t(n)] < 0) continue;
            combine_window<C, T>(upd, out, w, from[size_t(n)], to[size_t(n)], j0, j1);
          }
        });
    return;
  }
  // Every thread takes all positions in order over its own columns, so overlapping
  // windows combine in the positions' order whatever the split.
  auto columns = [&](int64_t j0, int64_t j1) {
    for (int64_t n = 0; n < count; ++n) {
      int64_t so = 0, dof = 0;
      if (pos.at(n, so, dof)) combine_window<C, T>(upd, out, w, so, dof, j0, j1);
    }
  };
  if (!split) return columns(0, cols);
  parallel_chunks(cols, std::max(kMinColumns, (cols + threads - 1) / threads), columns);
}

}  // namespace

void gather(const KernelCall& c) {
  const Aval& op = c.in_avals[0];
  const Aval& ix = c.in_avals[1];
  const Aval& out = c.out_avals[0];
  if (out.size() == 0) return;
  const GatherDimensionNumbers d = gather_dnums(c.params);
  const Shape& slice = param_ints(c.params, "slice_sizes");
  const GatherScatterMode mode = gather_mode(c.params);
  const size_t q = ix.shape.size();
  const Shape batch(ix.shape.begin(), ix.shape.end() - 1);
  const int64_t count = shape_size(batch);
  const std::vector<int64_t> raw = read_indices(c.inputs[1], ix.dtype, ix.size());
  const std::vector<int64_t> ostr = strides_of(op.shape);
  const std::vector<int64_t> outstr = strides_of(out.shape);
  Positions pos;
  pos.batch = batch;
  pos.k = ix.shape[q - 1];
  pos.raw = &raw;
  pos.clamp = mode != GatherScatterMode::FILL_OR_DROP;
  pos.index_on_a = true;  // a: operand offset, b: output offset
  pos.coord_stride_a.assign(q - 1, 0);
  size_t b = 0;
  for (size_t i = 0; i < out.shape.size(); ++i) {
    if (!contains(d.offset_dims, int64_t(i))) pos.coord_stride_b.push_back(outstr[i]);
  }
  for (size_t j = 0; j < d.operand_batching_dims.size(); ++j) {
    pos.coord_stride_a[size_t(d.start_indices_batching_dims[j])] +=
        ostr[size_t(d.operand_batching_dims[j])];
  }
  for (int64_t dim : d.start_index_map) {
    pos.index_stride.push_back(ostr[size_t(dim)]);
    pos.limit.push_back(op.shape[size_t(dim)] - slice[size_t(dim)]);
  }
  StridedCopy w;
  for (size_t i = 0; i < op.shape.size(); ++i) {
    const bool window = !contains(d.collapsed_slice_dims, int64_t(i)) &&
                        !contains(d.operand_batching_dims, int64_t(i));
    w.shape.push_back(slice[i]);
    w.src_strides.push_back(ostr[i]);
    w.dst_strides.push_back(window ? outstr[size_t(d.offset_dims[b++])] : 0);
  }
  w = detail::simplify(w);
  const uint64_t fill = mode == GatherScatterMode::FILL_OR_DROP ? fill_bits(c.params, op.dtype) : 0;
  switch (dtype_itemsize(op.dtype)) {
    case 1:
      return gather_typed<uint8_t>(c, pos, w, count, fill);
    case 2:
      return gather_typed<uint16_t>(c, pos, w, count, fill);
    case 4:
      return gather_typed<uint32_t>(c, pos, w, count, fill);
    case 8:
      return gather_typed<uint64_t>(c, pos, w, count, fill);
  }
  PARAX_CHECK(false, "gather of itemsize " << dtype_itemsize(op.dtype));
}

void scatter(const KernelCall& c, Combine combine_op) {
  const Aval& op = c.in_avals[0];
  const Aval& ix = c.in_avals[1];
  const Aval& up = c.in_avals[2];
  const size_t itemsize = size_t(dtype_itemsize(op.dtype));
  if (c.inputs[0] != c.outputs[0]) {
    copy_bytes(c.inputs[0], c.outputs[0], size_t(op.size()) * itemsize);
  }
  if (up.size() == 0 || op.size() == 0) return;
  const ScatterDimensionNumbers d = scatter_dnums(c.params);
  const GatherScatterMode mode = gather_mode(c.params);
  const size_t q = ix.shape.size();
  const Shape batch(ix.shape.begin(), ix.shape.end() - 1);
  const int64_t count = shape_size(batch);
  const std::vector<int64_t> raw = read_indices(c.inputs[1], ix.dtype, ix.size());
  const std::vector<int64_t> ostr = strides_of(op.shape);
  const std::vector<int64_t> ustr = strides_of(up.shape);
  const Shape window = scatter_window(op.shape.size(), up.shape, d);
  Positions pos;
  pos.batch = batch;
  pos.k = ix.shape[q - 1];
  pos.raw = &raw;
  pos.clamp = mode == GatherScatterMode::CLIP;
  pos.index_on_a = false;  // a: updates offset, b: operand offset
  for (size_t i = 0; i < up.shape.size(); ++i) {
    if (!contains(d.update_window_dims, int64_t(i))) pos.coord_stride_a.push_back(ustr[i]);
  }
  pos.coord_stride_b.assign(q - 1, 0);
  for (size_t j = 0; j < d.operand_batching_dims.size(); ++j) {
    pos.coord_stride_b[size_t(d.scatter_indices_batching_dims[j])] +=
        ostr[size_t(d.operand_batching_dims[j])];
  }
  for (int64_t dim : d.scatter_dims_to_operand_dims) {
    pos.index_stride.push_back(ostr[size_t(dim)]);
    pos.limit.push_back(op.shape[size_t(dim)] - window[size_t(dim)]);
  }
  StridedCopy w;
  size_t k = 0;
  for (size_t i = 0; i < op.shape.size(); ++i) {
    const bool is_window = !contains(d.inserted_window_dims, int64_t(i)) &&
                           !contains(d.operand_batching_dims, int64_t(i));
    w.shape.push_back(window[i]);
    w.dst_strides.push_back(ostr[i]);
    w.src_strides.push_back(is_window ? ustr[size_t(d.update_window_dims[k++])] : 0);
  }
  w = detail::simplify(w);
  dispatch_dtype(op.dtype, [&](auto zero) {
    using T = decltype(zero);
    const T* upd = static_cast<const T*>(c.inputs[2]);
    T* out = static_cast<T*>(c.outputs[0]);
    switch (combine_op) {
      case Combine::replace:
        return scatter_typed<Combine::replace, T>(pos, w, count, upd, out);
      case Combine::add:
        return scatter_typed<Combine::add, T>(pos, w, count, upd, out);
      case Combine::mul:
        return scatter_typed<Combine::mul, T>(pos, w, count, upd, out);
      case Combine::min:
        return scatter_typed<Combine::min, T>(pos, w, count, upd, out);
      case Combine::max:
        return scatter_typed<Combine::max, T>(pos, w, count, upd, out);
    }
  });
}

}  // namespace parax::prims::kernels
