#include "base/promotion.h"

#include <array>
#include <cstdint>

#include "base/check.h"
#include "base/config_internal.h"

namespace parax::base {
namespace {

// Lattice nodes: the dtypes by their enum value, then JAX's weak int and weak float
// categories (Python's int and float). parax has no complex types, so JAX's complex nodes
// are left out; they sit above float64 only and never change a least upper bound here.
constexpr int kWeakInt = kNumDTypes;
constexpr int kWeakFloat = kNumDTypes + 1;
constexpr int kNumNodes = kNumDTypes + 2;

using Mask = uint32_t;
static_assert(kNumNodes <= 32);

constexpr int node(DType t) { return int(t); }
constexpr Mask bit(int n) { return Mask(1) << n; }

// jax._src.dtypes._type_promotion_lattice('standard'): each node's immediate successors.
constexpr std::array<Mask, kNumNodes> successors() {
  std::array<Mask, kNumNodes> s{};
  s[node(DType::bool_)] = bit(kWeakInt);
  s[kWeakInt] = bit(node(DType::uint8)) | bit(node(DType::int8));
  s[node(DType::uint8)] = bit(node(DType::int16)) | bit(node(DType::uint16));
  s[node(DType::uint16)] = bit(node(DType::int32)) | bit(node(DType::uint32));
  s[node(DType::uint32)] = bit(node(DType::int64)) | bit(node(DType::uint64));
  s[node(DType::uint64)] = bit(kWeakFloat);
  s[node(DType::int8)] = bit(node(DType::int16));
  s[node(DType::int16)] = bit(node(DType::int32));
  s[node(DType::int32)] = bit(node(DType::int64));
  s[node(DType::int64)] = bit(kWeakFloat);
  s[kWeakFloat] = bit(node(DType::bfloat16)) | bit(node(DType::float16));
  s[node(DType::bfloat16)] = bit(node(DType::float32));
  s[node(DType::float16)] = bit(node(DType::float32));
  s[node(DType::float32)] = bit(node(DType::float64));
  return s;
}

// Every node's upper bounds (itself included): the transitive closure of successors().
constexpr std::array<Mask, kNumNodes> upper_bounds() {
  constexpr std::array<Mask, kNumNodes> succ = successors();
  std::array<Mask, kNumNodes> ub{};
  for (int n = 0; n < kNumNodes; ++n) {
    Mask reach = bit(n);
    for (bool grew = true; grew;) {
      Mask next = reach;
      for (int m = 0; m < kNumNodes; ++m) {
        if (reach & bit(m)) next |= succ[m];
      }
      grew = next != reach;
      reach = next;
    }
    ub[n] = reach;
  }
  return ub;
}

constexpr std::array<Mask, kNumNodes> kUpperBounds = upper_bounds();

// jax._src.dtypes._least_upper_bound over the nodes in `nodes`.
int least_upper_bound(Mask nodes) {
  Mask common = ~Mask(0);
  for (int n = 0; n < kNumNodes; ++n) {
    if (nodes & bit(n)) common &= kUpperBounds[n];
  }
  // One of the inputs bounds all the others: it is the answer.
  for (int n = 0; n < kNumNodes; ++n) {
    if ((nodes & common & bit(n)) != 0) return n;
  }
  for (int c = 0; c < kNumNodes; ++c) {
    if ((common & bit(c)) && (common & ~kUpperBounds[c]) == 0) return c;
  }
  PARAX_UNREACHABLE();
}

// A lattice node as a value type: the weak categories stand for Python's int and float,
// whose dtypes are int64 and float64 (JAX's dtype(int), dtype(float)).
TypedDType node_type(int n) {
  if (n == kWeakInt) return {DType::int64, true};
  if (n == kWeakFloat) return {DType::float64, true};
  return {DType(n), false};
}

// jax._src.dtypes._jax_type: weak values promote as their Python category.
int jax_type(TypedDType t) {
  if (!t.weak || t.dtype == DType::bool_) return node(t.dtype);
  return is_floating(t.dtype) ? kWeakFloat : kWeakInt;
}

// jax._src.dtypes._lattice_result_type, before canonicalization.
TypedDType raw_lattice_result_type(std::span<const TypedDType> in) {
  PARAX_CHECK(!in.empty(), "result_type of no values");
  TypedDType out;
  bool all_weak = true;
  bool all_same = true;
  for (const TypedDType& t : in) {
    all_weak = all_weak && t.weak;
    all_same = all_same && t.dtype == in[0].dtype;
  }
  if (in.size() == 1) {
    out = in[0];
  } else if (all_same && !all_weak) {
    out = {in[0].dtype, false};
  } else if (all_weak) {
    // JAX bounds the strong counterparts, so weak int16 with weak int16 stays int16.
    Mask nodes = 0;
    for (const TypedDType& t : in) nodes |= bit(node(t.dtype));
    out = {node_type(least_upper_bound(nodes)).dtype, true};
  } else {
    Mask nodes = 0;
    for (const TypedDType& t : in) nodes |= bit(jax_type(t));
    out = node_type(least_upper_bound(nodes));
  }
  out.weak = out.weak && out.dtype != DType::bool_;
  return out;
}

bool is_64bit(DType t) { return t == DType::int64 || t == DType::uint64 || t == DType::float64; }

// True when a strong operand is 64-bit. With x64 off, such a value can only come from an
// explicitly requested dtype, and the README's rule honours it: the operation computes as
// with x64 on instead of narrowing its result to 32 bits. Weak values (C++ scalars) never
// count, so `int32 array + 2^40` still fails as in JAX.
bool explicit_64bit(std::span<const TypedDType> in) {
  for (const TypedDType& t : in) {
    if (!t.weak && is_64bit(t.dtype)) return true;
  }
  return false;
}

}  // namespace

DType canonicalize_dtype(DType t) {
  if (detail::x64_enabled()) return t;
  switch (t) {
    case DType::float64:
      return DType::float32;
    case DType::int64:
      return DType::int32;
    case DType::uint64:
      return DType::uint32;
    default:
      return t;
  }
}

DType default_int_dtype() { return canonicalize_dtype(DType::int64); }
DType default_uint_dtype() { return canonicalize_dtype(DType::uint64); }
DType default_float_dtype() { return canonicalize_dtype(DType::float64); }

DType promote_types(DType a, DType b) {
  return node_type(least_upper_bound(bit(node(a)) | bit(node(b)))).dtype;
}

TypedDType lattice_result_type(std::span<const TypedDType> in) {
  TypedDType t = raw_lattice_result_type(in);
  if (explicit_64bit(in)) return t;
  return {canonicalize_dtype(t.dtype), t.weak};
}

TypedDType result_type(std::span<const TypedDType> in) {
  TypedDType t = raw_lattice_result_type(in);
  const bool wide = explicit_64bit(in);
  if (!t.weak) return {wide ? t.dtype : canonicalize_dtype(t.dtype), false};
  // A weak result takes its kind's default type, so weak int16 data reads as int32.
  if (is_floating(t.dtype)) return {wide ? DType::float64 : default_float_dtype(), true};
  if (is_unsigned_integer(t.dtype)) return {wide ? DType::uint64 : default_uint_dtype(), true};
  return {wide ? DType::int64 : default_int_dtype(), true};
}

DType to_inexact_dtype(DType t) {
  switch (t) {
    case DType::int64:
    case DType::uint64:
      return DType::float64;
    default:
      return is_floating(t) ? t : DType::float32;
  }
}

DType to_numeric_dtype(DType t) { return t == DType::bool_ ? DType::int32 : t; }

}  // namespace parax::base
