// Windowed reductions: each result element folds its window in row-major window order,
// as XLA's reduce_window does, starting from the reduction's identity; padding and the
// holes of base dilation hold the identity, so they are skipped. The selections visit the
// same order and keep the first winner (ties go to the earliest element, as XLA's
// select_and_scatter and JAX's variadic reduce_window choose).
#include "prims/kernels/reduce_window.h"

#include <cmath>
#include <cstring>
#include <limits>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

using Ints = std::vector<int64_t>;

struct Window {
  size_t rank = 0;
  Ints in, win, stride, lo, bdil, wdil, out, in_strides;
  int64_t size = 1;  // elements in a window
};

Window window_of(const Shape& in, const Shape& out, const Params& params) {
  Window w;
  w.rank = in.size();
  w.in = Ints(in.begin(), in.end());
  w.out = Ints(out.begin(), out.end());
  w.win = param_ints(params, "window_dimensions");
  w.stride = param_ints(params, "window_strides");
  const Ints& padding = param_ints(params, "padding");
  for (size_t d = 0; d < w.rank; ++d) w.lo.push_back(padding[2 * d]);
  w.bdil = params.has("base_dilation") ? param_ints(params, "base_dilation") : Ints(w.rank, 1);
  w.wdil = params.has("window_dilation") ? param_ints(params, "window_dilation") : Ints(w.rank, 1);
  w.in_strides = strides_of(in);
  for (int64_t s : w.win) w.size *= s;
  return w;
}

// Calls f(offset) for each window element of result index `o` in row-major window order,
// with offset -1 for padding and dilation holes.
template <class F>
void for_window(const Window& w, const int64_t* o, int64_t* k, F&& f) {
  std::fill(k, k + w.rank, 0);
  for (int64_t e = 0; e < w.size; ++e) {
    int64_t off = 0;
    for (size_t d = 0; d < w.rank && off >= 0; ++d) {
      int64_t p = o[d] * w.stride[d] + k[d] * w.wdil[d] - w.lo[d];
      if (p < 0 || p % w.bdil[d] != 0) {
        off = -1;
        break;
      }
      p /= w.bdil[d];
      off = p < w.in[d] ? off + p * w.in_strides[d] : -1;
    }
    f(off);
    for (size_t d = w.rank; d-- > 0;) {
      if (++k[d] < w.win[d]) break;
      k[d] = 0;
    }
  }
}

// Runs body(flat result index, result multi-index) over the result in parallel.
template <class F>
void for_results(const Window& w, F&& body) {
  int64_t n = 1;
  for (int64_t s : w.out) n *= s;
  parallel_chunks(n, std::max<int64_t>(1, kElementGrain / std::max<int64_t>(1, w.size)),
                  [&](int64_t begin, int64_t end) {
                    Ints o(w.rank), k(w.rank);
                    int64_t r = begin;
                    for (size_t d = w.rank; d-- > 0;) {
                      o[d] = r % w.out[d];
                      r /= w.out[d];
                    }
                    for (int64_t i = begin; i < end; ++i) {
                      body(i, o.data(), k.data());
                      for (size_t d = w.rank; d-- > 0;) {
                        if (++o[d] < w.out[d]) break;
                        o[d] = 0;
                      }
                    }
                  });
}

// The arithmetic type of a storage type: halves widen to float, integers wrap in 64 bits.
template <class T>
using Acc = std::conditional_t<
    std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float,
    std::conditional_t<std::is_integral_v<T> && !std::is_same_v<T, bool>, uint64_t, T>>;

template <class T>
void window_sum(const KernelCall& call) {
  const Window w = window_of(call.in_avals[0].shape, call.out_avals[0].shape, call.params);
  const T* x = in_ptr<T>(call, 0);
  T* out = out_ptr<T>(call, 0);
  for_results(w, [&](int64_t i, const int64_t* o, int64_t* k) {
    Acc<T> acc = Acc<T>(0);
    for_window(w, o, k, [&](int64_t off) {
      if (off < 0) return;
      if constexpr (std::is_same_v<Acc<T>, uint64_t>) {
        acc += uint64_t(int64_t(x[off]));
      } else {
        acc += scalar_cast<Acc<T>>(x[off]);
      }
    });
    out[i] = scalar_cast<T>(acc);
  });
}

template <class T, bool kMax>
T identity() {
  if constexpr (std::is_same_v<T, bool>) {
    return !kMax;
  } else if constexpr (std::is_integral_v<T>) {
    return kMax ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max();
  } else {
    return T(kMax ? -INFINITY : INFINITY);
  }
}

// XLA's max and min: NaN wins.
template <class A, bool kMax>
A choose(A a, A b) {
  if constexpr (std::is_floating_point_v<A>) {
    if (std::isnan(a)) return a;
    if (std::isnan(b)) return b;
  }
  return kMax ? (b > a ? b : a) : (b < a ? b : a);
}

template <class T, bool kMax>
void window_extremum(const KernelCall& call) {
  using A = std::conditional_t<std::is_same_v<Acc<T>, uint64_t>, T, Acc<T>>;
  const Window w = window_of(call.in_avals[0].shape, call.out_avals[0].shape, call.params);
  const T* x = in_ptr<T>(call, 0);
  T* out = out_ptr<T>(call, 0);
  for_results(w, [&](int64_t i, const int64_t* o, int64_t* k) {
    A acc = scalar_cast<A>(identity<T, kMax>());
    for_window(w, o, k, [&](int64_t off) {
      if (off >= 0) acc = choose<A, kMax>(acc, scalar_cast<A>(x[off]));
    });
    out[i] = scalar_cast<T>(acc);
  });
}

// JAX's select_prim: ge keeps the current choice over an equal or smaller element.
template <class A>
bool keeps(bool ge, A current, A candidate) {
  return ge ? current >= candidate : current <= candidate;
}

template <class T>
void gather_add(const KernelCall& call) {
  using A = Acc<T>;
  const Window w = window_of(call.in_avals[1].shape, call.out_avals[0].shape, call.params);
  const bool ge = call.params.get<std::string>("select_prim") == "ge";
  const T* t = in_ptr<T>(call, 0);
  const T* x = in_ptr<T>(call, 1);
  T* out = out_ptr<T>(call, 0);
  const A init = A(ge ? -INFINITY : INFINITY);
  for_results(w, [&](int64_t i, const int64_t* o, int64_t* k) {
    A best = init;
    T chosen = T(0);
    for_window(w, o, k, [&](int64_t off) {
      const A v = off < 0 ? init : scalar_cast<A>(x[off]);
      if (!keeps(ge, best, v)) {
        best = v;
        chosen = off < 0 ? T(0) : t[off];
      }
    });
    out[i] = chosen;
  });
}

template <class T>
void scatter_add(const KernelCall& call) {
  using A = Acc<T>;
  const Window w = window_of(call.in_avals[1].shape, call.in_avals[0].shape, call.params);
  const bool ge = call.params.get<std::string>("select_prim") == "ge";
  const T* source = in_ptr<T>(call, 0);
  const T* x = in_ptr<T>(call, 1);
  T* out = out_ptr<T>(call, 0);
  std::fill_n(out, call.out_avals[0].size(), T(0));
  const A pad = A(ge ? -INFINITY : INFINITY);
  // Windows overlap, so the adds run in result order on one thread.
  Ints o(w.rank), k(w.rank);
  const int64_t n = call.in_avals[0].size();
  for (int64_t i = 0; i < n; ++i) {
    int64_t chosen = -2;  // none yet
    A best = pad;
    for_window(w, o.data(), k.data(), [&](int64_t off) {
      const A v = off < 0 ? pad : scalar_cast<A>(x[off]);
      if (chosen == -2 || !keeps(ge, best, v)) {
        best = v;
        chosen = off;
      }
    });
    if (chosen >= 0)
      out[chosen] = scalar_cast<T>(scalar_cast<A>(out[chosen]) + scalar_cast<A>(source[i]));
    for (size_t d = w.rank; d-- > 0;) {
      if (++o[d] < w.out[d]) break;
      o[d] = 0;
    }
  }
}

template <class F>
void floating(DType dtype, F&& f) {
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_integral_v<T>) f(tag);
  });
}

}  // namespace

void reduce_window_sum(const KernelCall& call) {
  if (call.out_avals[0].size() == 0) return;
  dispatch_dtype(call.in_avals[0].dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (!std::is_same_v<T, bool>) window_sum<T>(call);
  });
}

void reduce_window_max(const KernelCall& call) {
  if (call.out_avals[0].size() == 0) return;
  dispatch_dtype(call.in_avals[0].dtype,
                 [&](auto tag) { window_extremum<decltype(tag), true>(call); });
}

void reduce_window_min(const KernelCall& call) {
  if (call.out_avals[0].size() == 0) return;
  dispatch_dtype(call.in_avals[0].dtype,
                 [&](auto tag) { window_extremum<decltype(tag), false>(call); });
}

void select_and_gather_add(const KernelCall& call) {
  if (call.out_avals[0].size() == 0) return;
  floating(call.in_avals[0].dtype, [&](auto tag) { gather_add<decltype(tag)>(call); });
}

void select_and_scatter_add(const KernelCall& call) {
  if (call.out_avals[0].size() == 0) return;
  floating(call.in_avals[0].dtype, [&](auto tag) { scatter_add<decltype(tag)>(call); });
}

}  // namespace parax::prims::kernels
