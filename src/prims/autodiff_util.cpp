#include "prims/autodiff_util.h"

#include <cstring>
#include <numeric>

#include "base/dtype_dispatch.h"
#include "core/backend.h"
#include "parax/lax.h"

namespace parax::prims {
namespace {

// A C++ scalar passed as an operand: concrete, rank 0, weak and uncommitted.
bool is_literal(const Array& x) {
  return core::tracer_of(x) == nullptr && x.ndim() == 0 && x.weak_type() && !x.is_committed();
}

template <class V>
Array host_constant(V value, DType dtype, bool weak) {
  std::vector<uint8_t> bytes(size_t(dtype_itemsize(dtype)));
  dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    const T v = scalar_cast<T>(value);
    std::memcpy(bytes.data(), &v, sizeof(T));
  });
  return core::backend().from_host(bytes.data(), core::Aval{{}, dtype, weak});
}

}  // namespace

bool has_tangent(DType dtype) { return is_floating(dtype); }

Array constant(double value, DType dtype, bool weak) { return host_constant(value, dtype, weak); }

Array convert(const Array& x, DType dtype, bool weak) {
  if (x.dtype() == dtype && x.weak_type() == weak) return x;
  if (is_literal(x)) {
    // Weak literals hold C++ ints (exact in int64) or floats (exact in double).
    if (is_floating(x.dtype())) return host_constant(x.item<double>(), dtype, weak);
    return host_constant(x.item<int64_t>(), dtype, weak);
  }
  return core::bind1(core::Prim::convert_element_type, {x},
                     {{"new_dtype", dtype}, {"weak_type", weak}});
}

Array full_like(const Array& x, double value) {
  const bool weak = x.weak_type();
  Array out = lax::broadcast(constant(value, x.dtype(), weak), x.shape());
  // As lax.full puts its result, a committed x gives a result committed to x's layout.
  const bool keep_sharding = core::tracer_of(x) == nullptr && x.is_committed() && !weak;
  return keep_sharding ? core::backend().relayout(out, x.sharding()) : out;
}

Array zeros_like_aval(const core::Aval& aval) {
  return broadcast_to(constant(0, aval.dtype), aval.shape);
}

Array instantiate(const Array& t, const core::Aval& like) {
  return t.valid() ? t : zeros_like_aval(like);
}

Array broadcast_to(const Array& t, const Shape& shape) {
  if (!t.valid() || t.ndim() != 0 || shape.empty()) return t;
  return lax::broadcast_in_dim(t, shape, {});
}

Array add_tangents(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return lax::add(a, b);
}

Array unbroadcast(const Array& ct, const core::Aval& aval) {
  if (!ct.valid() || !aval.shape.empty() || ct.ndim() == 0) return ct;
  std::vector<int64_t> axes(size_t(ct.ndim()));
  std::iota(axes.begin(), axes.end(), int64_t{0});
  return lax::reduce_sum(ct, std::move(axes));
}

core::Aval operand_aval(std::span<const Array> operands, size_t i, const core::Aval& fallback) {
  if (i < operands.size() && operands[i].valid()) return core::aval_of(operands[i]);
  return fallback;
}

std::vector<Array> zero_jvp(std::span<const Array>, std::span<const Array>,
                            std::span<const Array> outs, const core::Params&) {
  return std::vector<Array>(outs.size());
}

}  // namespace parax::prims
