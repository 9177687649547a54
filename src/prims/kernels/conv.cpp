// conv_general_dilated's kernel. float32 convolutions go to oneDNN where it has a fast
// kernel (conv_dnnl.cpp); the rest come here. Floating results are GEMMs: for each group g,
// the result's [out features, (batch, output position)] block is the packed kernel [out
// features, (in feature, window position)] times the im2col matrix [(in feature, window
// position), (batch, output position)] of the input, built panel by panel (so it never
// exists whole) straight from the operand's strides, whatever its layout. Panels of columns
// run in parallel, each a single-threaded GEMM (gemm.h) accumulating over panels of rows.
// The same loop serves a weight gradient (few output positions, a window as large as the
// image): there the panel is built transposed, so its inner loop runs along the window's
// last dimension, which is contiguous in the input. Integer and bool results take a direct
// loop (wrapping, or an or of ands).
#include "prims/kernels/conv.h"

#include <algorithm>
#include <climits>
#include <cstring>

#include "base/thread_pool.h"
#include "parax/config.h"
#include "prims/kernels/conv_dnnl.h"
#include "prims/kernels/gemm.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

using Ints = std::vector<int64_t>;

// The convolution in canonical order: batch, feature, spatial dimensions, with each
// operand's element strides, so the loops never move an operand.
struct Geometry {
  int64_t nout = 0, groups = 1, og = 0, cg = 0;
  int64_t fgc = 1, bgc = 1;
  size_t rank = 0;  // spatial dimensions (at least 1: a 0-d convolution gets one of size 1)
  Ints in, k, out;  // spatial sizes
  int64_t kprod = 1, sprod = 1;
  int64_t ls_n = 0, ls_c = 0, rs_o = 0, rs_i = 0, os_n = 0, os_c = 0;
  Ints ls, rs, os;  // spatial strides
  Ints stride, lo, ldil, rdil;
};

Geometry geometry(const KernelCall& call) {
  const ConvParams p = conv_params(call.params);
  const Shape& lhs = call.in_avals[0].shape;
  const Shape& rhs = call.in_avals[1].shape;
  const Shape& out = call.out_avals[0].shape;
  const Ints lst = strides_of(lhs), rst = strides_of(rhs), ost = strides_of(out);
  Geometry g;
  g.fgc = p.feature_group_count;
  g.bgc = p.batch_group_count;
  g.groups = g.fgc * g.bgc;
  g.nout = out[size_t(p.out_spec[0])];
  g.og = rhs[size_t(p.rhs_spec[0])] / g.groups;
  g.cg = rhs[size_t(p.rhs_spec[1])];
  g.ls_n = lst[size_t(p.lhs_spec[0])];
  g.ls_c = lst[size_t(p.lhs_spec[1])];
  g.rs_o = rst[size_t(p.rhs_spec[0])];
  g.rs_i = rst[size_t(p.rhs_spec[1])];
  g.os_n = ost[size_t(p.out_spec[0])];
  g.os_c = ost[size_t(p.out_spec[1])];
  g.rank = p.strides.size();
  for (size_t d = 0; d < g.rank; ++d) {
    const size_t l = size_t(p.lhs_spec[d + 2]), r = size_t(p.rhs_spec[d + 2]),
                 o = size_t(p.out_spec[d + 2]);
    g.in.push_back(lhs[l]);
    g.k.push_back(rhs[r]);
    g.out.push_back(out[o]);
    g.ls.push_back(lst[l]);
    g.rs.push_back(rst[r]);
    g.os.push_back(ost[o]);
  }
  g.stride = p.strides;
  g.lo = p.pad_lo;
  g.ldil = p.lhs_dilation;
  g.rdil = p.rhs_dilation;
  if (g.rank == 0) {
    g.rank = 1;
    g.in = g.k = g.out = {1};
    g.ls = g.rs = g.os = {0};
    g.stride = g.ldil = g.rdil = {1};
    g.lo = {0};
  }
  for (size_t d = 0; d < g.rank; ++d) {
    g.kprod *= g.k[d];
    g.sprod *= g.out[d];
  }
  return g;
}

// Splits flat index `i` over `sizes` (row-major) into `idx`.
void unflatten(int64_t i, const Ints& sizes, int64_t* idx) {
  for (size_t d = sizes.size(); d-- > 0;) {
    idx[d] = i % sizes[d];
    i /= sizes[d];
  }
}

// Advances a row-major multi-index over the first `n` dimensions of `sizes`.
void advance(int64_t* idx, const Ints& sizes, size_t n) {
  for (size_t d = n; d-- > 0;) {
    if (++idx[d] < sizes[d]) return;
    idx[d] = 0;
  }
}

// Where input position p (in the dilated, padded frame, pad already subtracted) lands in
// the operand along one dimension, or -1 for padding and dilation holes.
inline int64_t source_index(int64_t p, int64_t size, int64_t dil) {
  if (p < 0) return -1;
  if (dil != 1) {
    if (p % dil != 0) return -1;
    p /= dil;
  }
  return p < size ? p : -1;
}

// The input offset of the spatial dimensions before the last for window position k and
// output position s, or -1 when it falls in padding.
int64_t outer_offset(const Geometry& g, const int64_t* s, const int64_t* k) {
  int64_t off = 0;
  for (size_t d = 0; d + 1 < g.rank; ++d) {
    const int64_t q =
        source_index(s[d] * g.stride[d] + k[d] * g.rdil[d] - g.lo[d], g.in[d], g.ldil[d]);
    if (q < 0) return -1;
    off += q * g.ls[d];
  }
  return off;
}

// Fills dst[0, len) with the input along the last spatial dimension at positions
// t * step + p0 for t in [t0, t0 + len).
template <class C, class T>
void fill_line(C* dst, const T* base, int64_t src_stride, int64_t t0, int64_t len, int64_t step,
               int64_t p0, int64_t size, int64_t dil) {
  if (base == nullptr) {
    std::fill_n(dst, len, C(0));
    return;
  }
  if (dil == 1 && step == 1 && src_stride == 1) {
    // Contiguous: zeros, a copy, zeros.
    const int64_t a = std::clamp(-p0 - t0, int64_t{0}, len);
    const int64_t b = std::clamp(size - p0 - t0, a, len);
    std::fill_n(dst, a, C(0));
    const T* src = base + t0 + p0 + a;
    for (int64_t i = a; i < b; ++i) dst[i] = scalar_cast<C>(src[i - a]);
    std::fill_n(dst + b, len - b, C(0));
    return;
  }
  for (int64_t i = 0; i < len; ++i) {
    const int64_t q = source_index((t0 + i) * step + p0, size, dil);
    dst[i] = q < 0 ? C(0) : scalar_cast<C>(base[q * src_stride]);
  }
}

// The im2col panel of rows [r0, r1) (in feature, window position) by columns [j0, j1)
// (batch, output position) of group `grp`, row-major: col[(r - r0) * (j1 - j0) + j - j0].
template <class C, class T>
void panel_rows(const Geometry& g, const T* lhs, int64_t grp, int64_t r0, int64_t r1, int64_t j0,
                int64_t j1, C* col) {
  const size_t last = g.rank - 1;
  const int64_t c_off = g.fgc > 1 ? grp * g.cg : 0;
  const int64_t n_off = g.bgc > 1 ? grp * g.nout : 0;
  const int64_t jn = j1 - j0;
  Ints k(g.rank), s(g.rank);
  for (int64_t r = r0; r < r1; ++r) {
    const int64_t c = r / g.kprod;
    unflatten(r % g.kprod, g.k, k.data());
    const int64_t p0 = k[last] * g.rdil[last] - g.lo[last];
    C* row = col + (r - r0) * jn;
    int64_t j = j0;
    while (j < j1) {
      const int64_t n = j / g.sprod;
      unflatten(j % g.sprod, g.out, s.data());
      const int64_t len = std::min(g.out[last] - s[last], j1 - j);
      const int64_t off = outer_offset(g, s.data(), k.data());
      const T* base = off < 0 ? nullptr : lhs + (n_off + n) * g.ls_n + (c_off + c) * g.ls_c + off;
      fill_line(row + (j - j0), base, g.ls[last], s[last], len, g.stride[last], p0, g.in[last],
                g.ldil[last]);
      j += len;
    }
  }
}

// The same panel transposed: colT[(j - j0) * (r1 - r0) + r - r0].
template <class C, class T>
void panel_cols(const Geometry& g, const T* lhs, int64_t grp, int64_t r0, int64_t r1, int64_t j0,
                int64_t j1, C* colt) {
  const size_t last = g.rank - 1;
  const int64_t c_off = g.fgc > 1 ? grp * g.cg : 0;
  const int64_t n_off = g.bgc > 1 ? grp * g.nout : 0;
  const int64_t rn = r1 - r0;
  Ints k(g.rank), s(g.rank);
  for (int64_t j = j0; j < j1; ++j) {
    const int64_t n = j / g.sprod;
    unflatten(j % g.sprod, g.out, s.data());
    const int64_t p0 = s[last] * g.stride[last] - g.lo[last];
    C* line = colt + (j - j0) * rn;
    int64_t r = r0;
    while (r < r1) {
      const int64_t c = r / g.kprod;
      unflatten(r % g.kprod, g.k, k.data());
      const int64_t len = std::min(g.k[last] - k[last], r1 - r);
      const int64_t off = outer_offset(g, s.data(), k.data());
      const T* base = off < 0 ? nullptr : lhs + (n_off + n) * g.ls_n + (c_off + c) * g.ls_c + off;
      fill_line(line + (r - r0), base, g.ls[last], k[last], len, g.rdil[last], p0, g.in[last],
                g.ldil[last]);
      r += len;
    }
  }
}

// The kernel as [groups * og, cg * kprod] row-major, converted to C.
template <class C, class T>
std::vector<C> pack_kernel(const Geometry& g, const T* rhs) {
  const int64_t width = g.cg * g.kprod;
  std::vector<C> w(size_t(g.groups * g.og * width));
  parallel_chunks(g.groups * g.og,
                  std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, width)),
                  [&](int64_t begin, int64_t end) {
                    Ints k(g.rank);
                    for (int64_t o = begin; o < end; ++o) {
                      C* dst = w.data() + o * width;
                      for (int64_t c = 0; c < g.cg; ++c) {
                        std::fill(k.begin(), k.end(), 0);
                        for (int64_t kk = 0; kk < g.kprod; ++kk) {
                          int64_t off = o * g.rs_o + c * g.rs_i;
                          for (size_t d = 0; d < g.rank; ++d) off += k[d] * g.rs[d];
                          *dst++ = scalar_cast<C>(rhs[off]);
                          advance(k.data(), g.k, g.rank);
                        }
                      }
                    }
                  });
  return w;
}

// Offsets in the result of columns [j0, j1) of output feature 0.
Ints column_offsets(const Geometry& g, int64_t j0, int64_t j1) {
  Ints offs;
  offs.reserve(size_t(j1 - j0));
  Ints s(g.rank);
  unflatten(j0 % g.sprod, g.out, s.data());
  int64_t n = j0 / g.sprod;
  for (int64_t j = j0; j < j1; ++j) {
    int64_t off = n * g.os_n;
    for (size_t d = 0; d < g.rank; ++d) off += s[d] * g.os[d];
    offs.push_back(off);
    advance(s.data(), g.out, g.rank);
    if (std::all_of(s.begin(), s.end(), [](int64_t v) { return v == 0; })) ++n;
  }
  return offs;
}

template <class C, class T, class Out>
void float_conv(const KernelCall& call, const Geometry& g) {
  const T* lhs = static_cast<const T*>(call.inputs[0]);
  const std::vector<C> w = pack_kernel<C>(g, static_cast<const T*>(call.inputs[1]));
  Out* out = static_cast<Out*>(call.outputs[0]);
  const int64_t kdim = g.cg * g.kprod;
  const int64_t cols = g.nout * g.sprod;
  if (std::max({kdim, cols, g.og}) > INT_MAX) {
    throw NotImplementedError("[conv_general_dilated] dimension too large for BLAS: " +
                              std::to_string(std::max(kdim, cols)) + "; expected below 2^31");
  }
  // Row panels bound the im2col buffer; column panels feed the threads (at least two per
  // thread when the problem allows, so a noisy core can be balanced).
  const int64_t kt = kdim <= 2560 ? kdim : 2048;
  const int64_t threads =
      call.device.parallelism > 0 ? call.device.parallelism : int64_t(base::num_threads());
  const int64_t want = std::max<int64_t>(1, (2 * threads + g.groups - 1) / g.groups);
  const int64_t jt = std::clamp<int64_t>((cols + want - 1) / want, 16, 768);
  const int64_t tiles = (cols + jt - 1) / jt;
  const bool transposed = g.k.back() > g.out.back();
  parallel_chunks(g.groups * tiles, 1, [&](int64_t begin, int64_t end) {
    std::vector<C> col(size_t(std::min(kt, kdim) * std::min(jt, cols)));
    std::vector<C> tile(size_t(g.og * std::min(jt, cols)));
    for (int64_t task = begin; task < end; ++task) {
      const int64_t grp = task / tiles;
      const int64_t j0 = (task % tiles) * jt;
      const int64_t j1 = std::min(cols, j0 + jt);
      const int64_t jn = j1 - j0;
      for (int64_t r0 = 0; r0 < kdim; r0 += kt) {
        const int64_t r1 = std::min(kdim, r0 + kt);
        if (transposed) {
          panel_cols(g, lhs, grp, r0, r1, j0, j1, col.data());
        } else {
          panel_rows(g, lhs, grp, r0, r1, j0, j1, col.data());
        }
        gemm(false, transposed, g.og, jn, r1 - r0, w.data() + grp * g.og * kdim + r0, kdim,
             col.data(), transposed ? r1 - r0 : jn, r0 == 0 ? C(0) : C(1), tile.data(), jn);
      }
      const Ints offs = column_offsets(g, j0, j1);
      for (int64_t o = 0; o < g.og; ++o) {
        Out* dst = out + (grp * g.og + o) * g.os_c;
        const C* src = tile.data() + o * jn;
        for (int64_t jj = 0; jj < jn; ++jj) dst[offs[size_t(jj)]] = scalar_cast<Out>(src[jj]);
      }
    }
  });
}

// Integers wrap as XLA's do (accumulated in 64 bits, truncated on store); bool is an or
// of ands. One result element at a time: these convolutions are small.
template <class T, class Out>
void direct_conv(const KernelCall& call, const Geometry& g) {
  const T* lhs = static_cast<const T*>(call.inputs[0]);
  const T* rhs = static_cast<const T*>(call.inputs[1]);
  Out* out = static_cast<Out*>(call.outputs[0]);
  const int64_t cols = g.nout * g.sprod;
  const Ints offs = column_offsets(g, 0, cols);
  parallel_chunks(g.groups * g.og, 1, [&](int64_t begin, int64_t end) {
    Ints k(g.rank), s(g.rank);
    for (int64_t o = begin; o < end; ++o) {
      const int64_t grp = o / g.og;
      const int64_t c_off = g.fgc > 1 ? grp * g.cg : 0;
      const int64_t n_off = g.bgc > 1 ? grp * g.nout : 0;
      for (int64_t j = 0; j < cols; ++j) {
        const int64_t n = j / g.sprod;
        unflatten(j % g.sprod, g.out, s.data());
        uint64_t acc = 0;
        for (int64_t c = 0; c < g.cg; ++c) {
          std::fill(k.begin(), k.end(), 0);
          for (int64_t kk = 0; kk < g.kprod; ++kk, advance(k.data(), g.k, g.rank)) {
            int64_t loff = (n_off + n) * g.ls_n + (c_off + c) * g.ls_c;
            int64_t roff = o * g.rs_o + c * g.rs_i;
            bool inside = true;
            for (size_t d = 0; d < g.rank && inside; ++d) {
              const int64_t q =
                  source_index(s[d] * g.stride[d] + k[d] * g.rdil[d] - g.lo[d], g.in[d], g.ldil[d]);
              inside = q >= 0;
              loff += q * g.ls[d];
              roff += k[d] * g.rs[d];
            }
            if (!inside) continue;
            if constexpr (std::is_same_v<Out, bool>) {
              acc |= uint64_t(lhs[loff] != T(0) && rhs[roff] != T(0));
            } else {
              acc += uint64_t(int64_t(lhs[loff])) * uint64_t(int64_t(rhs[roff]));
            }
          }
        }
        out[o * g.os_c + offs[size_t(j)]] = Out(acc);
      }
    }
  });
}

}  // namespace

ConvParams conv_params(const core::Params& params) {
  ConvParams p;
  p.strides = param_ints(params, "window_strides");
  const Ints& padding = param_ints(params, "padding");
  for (size_t i = 0; i + 1 < padding.size(); i += 2) {
    p.pad_lo.push_back(padding[i]);
    p.pad_hi.push_back(padding[i + 1]);
  }
  p.lhs_dilation = param_ints(params, "lhs_dilation");
  p.rhs_dilation = param_ints(params, "rhs_dilation");
  p.lhs_spec = param_ints(params, "lhs_spec");
  p.rhs_spec = param_ints(params, "rhs_spec");
  p.out_spec = param_ints(params, "out_spec");
  p.feature_group_count = param_int(params, "feature_group_count");
  p.batch_group_count = param_int(params, "batch_group_count");
  return p;
}

void conv(const KernelCall& call) {
  const Aval& out = call.out_avals[0];
  if (out.size() == 0) return;
  const Geometry g = geometry(call);
  if (g.cg * g.kprod == 0) {
    std::memset(call.outputs[0], 0, out.nbytes());
    return;
  }
  const DType in_dtype = call.in_avals[0].dtype;
  if (out.dtype == DType::float32 && in_dtype == DType::float32) {
    const std::string impl = config::read_string("parax_conv_implementation");
    if (impl != "im2col" && conv_onednn(call, conv_params(call.params), impl == "onednn")) return;
  }
  if (is_floating(out.dtype)) {
    count_im2col_conv();
    dispatch_dtype(in_dtype, [&](auto in_tag) {
      using T = decltype(in_tag);
      dispatch_dtype(out.dtype, [&](auto out_tag) {
        using Out = decltype(out_tag);
        if constexpr (std::is_floating_point_v<Out> || std::is_same_v<Out, float16_t> ||
                      std::is_same_v<Out, bfloat16_t>) {
          if (out.dtype == DType::float64 || in_dtype == DType::float64) {
            float_conv<double, T, Out>(call, g);
          } else {
            float_conv<float, T, Out>(call, g);
          }
        }
      });
    });
    return;
  }
  dispatch_dtype(in_dtype, [&](auto in_tag) {
    using T = decltype(in_tag);
    dispatch_dtype(out.dtype, [&](auto out_tag) {
      using Out = decltype(out_tag);
      if constexpr (std::is_integral_v<T> && std::is_integral_v<Out>) {
        direct_conv<T, Out>(call, g);
      }
    });
  });
}

}  // namespace parax::prims::kernels
