// The kernel of clamp: a Highway loop for float32 and float64, a scalar map for the rest.
#include "prims/kernels/clamp.h"

#include "prims/elementwise.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

// float32 and float64 take the vector loop; the bounds are rank 0 or x's shape.
template <class T>
void simd_clamp(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  auto bound = [&](size_t k, int64_t begin) {
    const bool scalar = c.in_avals[k].size() != n;
    return simd::In<T>{in_ptr<T>(c, k) + (scalar ? 0 : begin), scalar};
  };
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    simd::clamp(bound(0, begin), in_ptr<T>(c, 1) + begin, bound(2, begin), out_ptr<T>(c, 0) + begin,
                end - begin);
  });
}

}  // namespace

void clamp(const KernelCall& c) {
  if (c.in_avals[1].dtype == DType::float32) return simd_clamp<float>(c);
  if (c.in_avals[1].dtype == DType::float64) return simd_clamp<double>(c);
  dispatch_kinds<kAnyKind>(c.in_avals[1].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    map_elements<T, T, T, T>(
        c, [](T lo, T x, T hi) { return T(nan_min(nan_max(C(x), C(lo)), C(hi))); });
  });
}

}  // namespace parax::prims::kernels
