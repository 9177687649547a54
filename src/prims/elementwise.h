// Shared by the elementwise primitive files: JAX's accepted-dtype checks, one generic typed
// loop that every elementwise kernel instantiates per dtype with a scalar functor, and the
// vectorized paths the floating dtypes take first. Internal to src/prims.
#pragma once

#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "prims/batching_util.h"
#include "prims/kernels/simd.h"
#include "prims/prim_util.h"

namespace parax::prims {

// Dtype kinds, as numpy's abstract scalar types that JAX's lax rules accept.
enum Kind : unsigned {
  kBoolKind = 1u << 0,
  kSignedKind = 1u << 1,
  kUnsignedKind = 1u << 2,
  kFloatKind = 1u << 3,
  kIntKinds = kSignedKind | kUnsignedKind,
  kAnyKind = kBoolKind | kIntKinds | kFloatKind,
};

template <class T>
constexpr unsigned kind_of() {
  if constexpr (std::is_same_v<T, bool>) {
    return kBoolKind;
  } else if constexpr (std::is_integral_v<T>) {
    return std::is_signed_v<T> ? kSignedKind : kUnsignedKind;
  } else {
    return kFloatKind;
  }
}

inline unsigned kind_of(DType t) {
  return dispatch_dtype(t, [](auto v) { return kind_of<decltype(v)>(); });
}

// The dtypes a primitive accepts. `names` is the list as JAX prints it in its TypeError,
// complex types included: JAX has them, parax does not.
struct Accepts {
  unsigned kinds;
  const char* names;
};
inline constexpr Accepts kFloating{kFloatKind, "floating"};
inline constexpr Accepts kInexact{kFloatKind, "floating, complexfloating"};
inline constexpr Accepts kNumber{kIntKinds | kFloatKind, "integer, complexfloating, floating"};
inline constexpr Accepts kSignedNumber{kSignedKind | kFloatKind,
                                       "floating, complexfloating, signedinteger"};
inline constexpr Accepts kIntOrFloat{kIntKinds | kFloatKind, "integer, floating"};
inline constexpr Accepts kBoolOrInt{kBoolKind | kIntKinds, "integer, bool_"};
inline constexpr Accepts kInteger{kIntKinds, "integer"};
inline constexpr Accepts kAnyDtype{kAnyKind, ""};

// Throws JAX's TypeError unless `a`'s dtype is accepted. `position` is the operand's index
// for n-ary primitives (JAX names it), or -1 for unary ones.
inline void check_accepts(std::string_view name, const Aval& a, Accepts ok, int position = -1) {
  if (kind_of(a.dtype) & ok.kinds) return;
  const std::string at = position < 0 ? "" : " at position " + std::to_string(position);
  throw TypeError(std::string(name) + " does not accept dtype " + std::string(dtype_name(a.dtype)) +
                  at + ". Accepted dtypes" + at + " are subtypes of " + ok.names + ".");
}

// Returns true if all operands are weakly typed (JAX's rule for elementwise results).
inline bool all_weak(std::span<const Aval> in) {
  for (const Aval& a : in) {
    if (!a.weak_type) return false;
  }
  return true;
}

// Halves compute in float and round once on the way back, as XLA's CPU backend does.
template <class T>
using compute_t =
    std::conditional_t<std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>, float, T>;

// Integer arithmetic wraps around as in XLA; signed overflow is undefined in C++, so it
// runs in an unsigned type at least as wide as int (narrower ones would promote to int).
template <class C>
using wrap_t =
    std::conditional_t<(sizeof(C) < sizeof(unsigned)), unsigned, std::make_unsigned_t<C>>;

// max/min as XLA computes them: NaN wins, and -0 < +0.
template <class C>
C nan_max(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    if (a == b) return std::signbit(a) ? b : a;
  }
  return a > b ? a : b;
}
template <class C>
C nan_min(C a, C b) {
  if constexpr (std::is_floating_point_v<C>) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<C>::quiet_NaN();
    if (a == b) return std::signbit(a) ? a : b;
  }
  return a < b ? a : b;
}

template <class Out, class... In, class F, size_t... K>
void map_elements_impl(const KernelCall& c, F f, std::index_sequence<K...>) {
  const int64_t n = c.out_avals[0].size();
  Out* out = out_ptr<Out>(c, 0);
  const std::tuple<const In*...> in{in_ptr<In>(c, K)...};
  const std::array<int64_t, sizeof...(In)> stride{(c.in_avals[K].size() == n ? 1 : 0)...};
  const bool dense = ((stride[K] == 1) && ...);
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    const std::tuple<const In*...> p = in;  // a local the stores to `out` cannot alias
    if (dense) {
      for (int64_t i = begin; i < end; ++i) out[i] = f(std::get<K>(p)[i]...);
    } else if constexpr (sizeof...(In) > 1) {
      for (int64_t i = begin; i < end; ++i) out[i] = f(std::get<K>(p)[i * stride[K]]...);
    }
  });
}

// Writes out[i] = f(in_0[i], in_1[i], ...) over the call's buffers, where output 0 holds
// Out and input k holds the k-th of In; rank-0 inputs broadcast. The loop over inputs
// without broadcasting stays free of strides so the compiler can vectorize it.
template <class Out, class... In, class F>
void map_elements(const KernelCall& c, F f) {
  map_elements_impl<Out, In...>(c, f, std::index_sequence_for<In...>{});
}

// Runs the call through simd.h's loops if they cover the op and dtype (floating dtypes;
// halves compute in float32 tiles), in parallel chunks. Returns false, having written
// nothing, to leave the call to the generic loop. Defined in simd_kernels.cpp.
bool run_simd(simd::UnaryOp op, const KernelCall& c);
bool run_simd(simd::BinaryOp op, const KernelCall& c);
bool run_simd(simd::CompareOp op, const KernelCall& c);

// Calls f(T{}) for the storage type T of `t`, if `t` is of the accepted kinds; the other
// dtypes are never instantiated (abstract_eval has rejected them).
template <unsigned kKinds, class F>
void dispatch_kinds(DType t, F&& f) {
  dispatch_dtype(t, [&](auto v) {
    using T = decltype(v);
    if constexpr ((kind_of<T>() & kKinds) != 0) {
      f(v);
    } else {
      PARAX_UNREACHABLE();
    }
  });
}

// A binary elementwise primitive as data: its name, accepted dtypes, whether it returns
// bool, its scalar function on compute values (T is the storage type, for the few
// functions that depend on it), and its vector loop in simd.h (BinaryOp::none if none).
// Further columns of a row (its autodiff rules) are read by the file's own rules macro.
#define PARAX_BINARY_OP(prim, accepts, predicate, expr, simd_op, ...) \
  struct prim##_op {                                                  \
    static constexpr core::Prim kPrim = core::Prim::prim;             \
    static constexpr Accepts kAccepts = accepts;                      \
    static constexpr bool kPredicate = predicate;                     \
    static constexpr auto kSimd = simd::simd_op;                      \
    template <class T, class C>                                       \
    static auto f(C a, C b) {                                         \
      return expr;                                                    \
    }                                                                 \
  };

// Shape rule first, then dtypes, in JAX's order: operands of one dtype and equal shapes
// (rank-0 operands broadcast); the result is weak only if every operand is.
template <class Op>
std::vector<Aval> binary_eval(std::span<const Aval> in, const Params&) {
  const std::string_view name = core::prim_name(Op::kPrim);
  PARAX_CHECK(in.size() == 2, "operands of " << name);
  Shape shape = elementwise_shape(name, in);
  for (size_t i = 0; i < in.size(); ++i) check_accepts(name, in[i], Op::kAccepts, int(i));
  check_same_dtypes("lax." + std::string(name), in);
  return {Aval{std::move(shape), Op::kPredicate ? DType::bool_ : in[0].dtype, all_weak(in)}};
}

template <class Op>
void binary_kernel(const KernelCall& c) {
  if (run_simd(Op::kSimd, c)) return;
  dispatch_kinds<Op::kAccepts.kinds>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    using Out = std::conditional_t<Op::kPredicate, bool, T>;
    map_elements<Out, T, T>(c, [](T a, T b) { return Out(Op::template f<T>(C(a), C(b))); });
  });
}

template <class Op>
inline constexpr PrimRules binary_rules{.abstract_eval = &binary_eval<Op>,
                                        .sharding_rule = &elementwise_sharding_rule,
                                        .kernel = &binary_kernel<Op>,
                                        .batch = &elementwise_batch<Op::kPrim>};

}  // namespace parax::prims
