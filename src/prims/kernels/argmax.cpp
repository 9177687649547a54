// The kernels of argmax and argmin: vectorizing scans for the index of a row's extreme
// (contiguous rows) or a block of columns' extremes (strided rows).
#include "prims/kernels/argmax.h"

#include <algorithm>
#include <memory>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

// Halves compare as float32.
template <class T>
using Key = std::conditional_t<!std::is_integral_v<T> && sizeof(T) == 2, float, T>;

// Returns whether x replaces the best so far: a NaN best is final, a NaN x wins, and only
// a strictly better value replaces (ties keep the first index). Branch-free, so the
// column loop below vectorizes.
template <bool kMax, class K>
bool better(K x, K best) {
  const bool strictly = kMax ? x > best : x < best;
  if constexpr (std::is_integral_v<K>) {
    return strictly;
  } else {
    return (best == best) & ((x != x) | strictly);
  }
}

constexpr int64_t kArgColumns = 2048;
constexpr int kLanes = 8;

// Returns the index of one contiguous row's extreme in two passes that vectorize: the
// extreme itself (NaN if any), then the first element equal to it (or the first NaN).
// Equal means ==, so -0.0 and 0.0 tie as they do in the one-pass scan.
template <bool kMax, class T>
int64_t arg_row(const T* row, int64_t n) {
  using K = Key<T>;
  K lanes[kLanes];
  std::fill_n(lanes, kLanes, scalar_cast<K>(row[0]));
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
    for (int j = 0; j < kLanes; ++j) {
      const K v = scalar_cast<K>(row[i + j]);
      lanes[j] = better<kMax>(v, lanes[j]) ? v : lanes[j];
    }
  }
  for (; i < n; ++i) {
    const K v = scalar_cast<K>(row[i]);
    lanes[0] = better<kMax>(v, lanes[0]) ? v : lanes[0];
  }
  K extreme = lanes[0];
  for (int j = 1; j < kLanes; ++j) extreme = better<kMax>(lanes[j], extreme) ? lanes[j] : extreme;
  for (int64_t k = 0; k < n; ++k) {
    const K v = scalar_cast<K>(row[k]);
    if (v == extreme || (v != v && extreme != extreme)) return k;
  }
  PARAX_UNREACHABLE();
}

// x is [P, R, I]; out is [P, I].
template <bool kMax, class T, class Index>
void arg_typed(const T* x, Index* out, int64_t p_size, int64_t r_size, int64_t i_size) {
  using K = Key<T>;
  if (i_size == 1) {
    parallel_chunks(p_size, std::max<int64_t>(1, kElementGrain / r_size),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p)
                        out[p] = Index(arg_row<kMax>(x + p * r_size, r_size));
                    });
    return;
  }
  const int64_t blocks = (i_size + kArgColumns - 1) / kArgColumns;
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / (r_size * std::min(i_size, kArgColumns)));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    K best[kArgColumns];
    int64_t index[kArgColumns];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kArgColumns;
      const int64_t w = std::min(kArgColumns, i_size - c0);
      const T* block = x + p * r_size * i_size + c0;
      for (int64_t j = 0; j < w; ++j) {
        best[j] = scalar_cast<K>(block[j]);
        index[j] = 0;
      }
      for (int64_t r = 1; r < r_size; ++r) {
        const T* row = block + r * i_size;
        for (int64_t j = 0; j < w; ++j) {
          const K v = scalar_cast<K>(row[j]);
          const bool replace = better<kMax>(v, best[j]);
          best[j] = replace ? v : best[j];
          index[j] = replace ? r : index[j];
        }
      }
      Index* dst = out + p * i_size + c0;
      for (int64_t j = 0; j < w; ++j) dst[j] = Index(index[j]);
    }
  });
}

template <bool kMax>
void arg_kernel(const KernelCall& call) {
  const Aval& in = call.in_avals[0];
  if (call.out_avals[0].size() == 0) return;
  const size_t axis = size_t(param_ints(call.params, "axes")[0]);
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < axis; ++d) p_size *= in.shape[d];
  for (size_t d = axis + 1; d < in.shape.size(); ++d) i_size *= in.shape[d];
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_dtype(call.out_avals[0].dtype, [&](auto index_tag) {
      using Index = decltype(index_tag);
      if constexpr (std::is_integral_v<Index> && !std::is_same_v<Index, bool>) {
        arg_typed<kMax>(in_ptr<T>(call, 0), out_ptr<Index>(call, 0), p_size, in.shape[axis],
                        i_size);
      } else {
        PARAX_UNREACHABLE();
      }
    });
  });
}

}  // namespace

void argmax(const KernelCall& call) { arg_kernel<true>(call); }

void argmin(const KernelCall& call) { arg_kernel<false>(call); }

}  // namespace parax::prims::kernels
