// The kernels of the cumulative reductions: the operand seen as [P, R, I] (before, along and
// after the axis), each task scanning a block of up to kScanColumns columns of one P. Floats
// accumulate in double (float32 too: a serial float32 running sum loses ~n ulps over long
// axes, and the wider add costs nothing next to memory traffic; products and logaddexp
// round once into the result's type, as a reduce_window in a wider type would), integers
// in wrapping unsigned arithmetic; max and min keep XLA's semantics (NaN wins, -0 < +0).
#include "prims/kernels/cumulative.h"

#include <algorithm>
#include <cmath>
#include <limits>

#include "prims/elementwise.h"

namespace parax::prims::kernels {
namespace {

constexpr int64_t kScanColumns = 2048;

template <class T>
constexpr auto cumsum_acc_tag() {
  if constexpr (!std::is_integral_v<T>) {
    return double{};
  } else if constexpr (sizeof(T) < 4) {
    return uint32_t{};  // narrower unsigned types would promote to int and overflow
  } else {
    return std::make_unsigned_t<T>{};
  }
}

// x and out are [P, R, I]; each task scans one block of up to kScanColumns columns.
template <class T>
void cumsum_typed(const T* x, T* out, int64_t p_size, int64_t r_size, int64_t i_size,
                  bool reverse) {
  using A = decltype(cumsum_acc_tag<T>());
  if (i_size == 1) {
    parallel_chunks(p_size, std::max<int64_t>(1, kElementGrain / r_size),
                    [&](int64_t begin, int64_t end) {
                      for (int64_t p = begin; p < end; ++p) {
                        const T* src = x + p * r_size;
                        T* dst = out + p * r_size;
                        A acc = 0;
                        for (int64_t step = 0; step < r_size; ++step) {
                          const int64_t r = reverse ? r_size - 1 - step : step;
                          acc = A(acc + scalar_cast<A>(src[r]));
                          dst[r] = scalar_cast<T>(acc);
                        }
                      }
                    });
    return;
  }
  const int64_t blocks = (i_size + kScanColumns - 1) / kScanColumns;
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / (r_size * std::min(i_size, kScanColumns)));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    A acc[kScanColumns];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kScanColumns;
      const int64_t w = std::min(kScanColumns, i_size - c0);
      const int64_t offset = p * r_size * i_size + c0;
      std::fill_n(acc, w, A(0));
      for (int64_t step = 0; step < r_size; ++step) {
        const int64_t r = reverse ? r_size - 1 - step : step;
        const T* src = x + offset + r * i_size;
        T* dst = out + offset + r * i_size;
        for (int64_t j = 0; j < w; ++j) {
          acc[j] = A(acc[j] + scalar_cast<A>(src[j]));
          dst[j] = scalar_cast<T>(acc[j]);
        }
      }
    }
  });
}

// The accumulator type of the running product and logaddexp.
template <class T>
constexpr auto wide_tag() {
  if constexpr (!std::is_integral_v<T>) {
    return double{};
  } else {
    return wrap_t<T>{};
  }
}

struct Prod {
  template <class T>
  using Acc = decltype(wide_tag<T>());
  template <class A>
  static A apply(A acc, A x) {
    return A(acc * x);
  }
};

struct Max {
  template <class T>
  using Acc = compute_t<T>;
  template <class A>
  static A apply(A acc, A x) {
    return nan_max(acc, x);
  }
};

struct Min {
  template <class T>
  using Acc = compute_t<T>;
  template <class A>
  static A apply(A acc, A x) {
    return nan_min(acc, x);
  }
};

// JAX's logaddexp: NaN differences (NaNs, or infinities of one sign) add.
struct LogAddExp {
  template <class T>
  using Acc = double;
  static double apply(double a, double b) {
    const double delta = a - b;
    if (std::isnan(delta)) return a + b;
    return std::max(a, b) + std::log1p(std::exp(-std::abs(delta)));
  }
};

template <class A, class T>
A to_acc(T x) {
  if constexpr (std::is_integral_v<T>) {
    return A(x);
  } else {
    return A(static_cast<compute_t<T>>(x));
  }
}

template <class T, class A>
T from_acc(A a) {
  if constexpr (std::is_integral_v<T>) {
    return T(a);
  } else {
    return T(static_cast<compute_t<T>>(a));
  }
}

// x and out are [P, R, I]; the first step of each column copies, later ones combine.
template <class Op, class T>
void scan_typed(const T* x, T* out, int64_t p_size, int64_t r_size, int64_t i_size, bool reverse) {
  using A = typename Op::template Acc<T>;
  const int64_t blocks = (i_size + kScanColumns - 1) / kScanColumns;
  const int64_t grain =
      std::max<int64_t>(1, kElementGrain / (r_size * std::min(i_size, kScanColumns)));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    A acc[kScanColumns];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kScanColumns;
      const int64_t w = std::min(kScanColumns, i_size - c0);
      const int64_t offset = p * r_size * i_size + c0;
      for (int64_t step = 0; step < r_size; ++step) {
        const int64_t r = reverse ? r_size - 1 - step : step;
        const T* src = x + offset + r * i_size;
        T* dst = out + offset + r * i_size;
        for (int64_t j = 0; j < w; ++j) {
          const A v = to_acc<A>(src[j]);
          acc[j] = step == 0 ? v : Op::apply(acc[j], v);
          dst[j] = from_acc<T>(acc[j]);
        }
      }
    }
  });
}

template <class Op, unsigned kKinds>
void scan(const KernelCall& call) {
  const Aval& in = call.in_avals[0];
  if (in.size() == 0) return;
  const size_t axis = size_t(param_int(call.params, "axis"));
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < axis; ++d) p_size *= in.shape[d];
  for (size_t d = axis + 1; d < in.shape.size(); ++d) i_size *= in.shape[d];
  const bool reverse = call.params.has("reverse") && call.params.get<bool>("reverse");
  dispatch_kinds<kKinds>(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    scan_typed<Op, T>(in_ptr<T>(call, 0), out_ptr<T>(call, 0), p_size, in.shape[axis], i_size,
                      reverse);
  });
}

}  // namespace

void cumsum(const KernelCall& call) {
  const Aval& in = call.in_avals[0];
  if (in.size() == 0) return;
  const size_t axis = size_t(param_int(call.params, "axis"));
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < axis; ++d) p_size *= in.shape[d];
  for (size_t d = axis + 1; d < in.shape.size(); ++d) i_size *= in.shape[d];
  const bool reverse = call.params.has("reverse") && call.params.get<bool>("reverse");
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      PARAX_UNREACHABLE();
    } else {
      cumsum_typed(in_ptr<T>(call, 0), out_ptr<T>(call, 0), p_size, in.shape[axis], i_size,
                   reverse);
    }
  });
}

void cumprod(const KernelCall& call) { scan<Prod, kIntKinds | kFloatKind>(call); }
void cummax(const KernelCall& call) { scan<Max, kIntKinds | kFloatKind>(call); }
void cummin(const KernelCall& call) { scan<Min, kIntKinds | kFloatKind>(call); }
void cumlogsumexp(const KernelCall& call) { scan<LogAddExp, kFloatKind>(call); }

}  // namespace parax::prims::kernels
