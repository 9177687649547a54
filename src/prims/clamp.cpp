// clamp(min, x, max) = min(max(x, min), max) with XLA's NaN-propagating max and min; the
// bounds are rank 0 or x's shape.
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

void check_bound_shape(std::string_view which, const Aval& bound, const Aval& x) {
  if (bound.shape.empty() || bound.shape == x.shape) return;
  throw TypeError("clamp requires " + std::string(which) + ".shape == operand.shape or " +
                  std::string(which) + ".shape == (), got " + std::string(which) + ".shape=" +
                  tuple_str(bound.shape) + ", operand.shape=" + tuple_str(x.shape) + ".");
}

std::vector<Aval> clamp_eval(std::span<const Aval> in, const Params&) {
  PARAX_CHECK(in.size() == 3, "operands of clamp");
  check_bound_shape("min", in[0], in[1]);
  check_bound_shape("max", in[2], in[1]);
  check_same_dtypes("lax.clamp", in);
  return {Aval{in[1].shape, in[1].dtype, all_weak(in)}};
}

// float32 and float64 take the vector loop; the bounds are rank 0 or x's shape.
template <class T>
void simd_clamp(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  auto bound = [&](size_t k, int64_t begin) {
    const bool scalar = c.in_avals[k].size() != n;
    return simd::In<T>{in_ptr<T>(c, k) + (scalar ? 0 : begin), scalar};
  };
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    simd::clamp(bound(0, begin), in_ptr<T>(c, 1) + begin, bound(2, begin),
                out_ptr<T>(c, 0) + begin, end - begin);
  });
}

void clamp_kernel(const KernelCall& c) {
  if (c.in_avals[1].dtype == DType::float32) return simd_clamp<float>(c);
  if (c.in_avals[1].dtype == DType::float64) return simd_clamp<double>(c);
  dispatch_kinds<kAnyKind>(c.in_avals[1].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    map_elements<T, T, T, T>(
        c, [](T lo, T x, T hi) { return T(nan_min(nan_max(C(x), C(lo)), C(hi))); });
  });
}

}  // namespace

extern const PrimRules clamp_rules = {&clamp_eval, &elementwise_sharding_rule, &clamp_kernel};

}  // namespace parax::prims
