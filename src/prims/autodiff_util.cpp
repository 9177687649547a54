#include "prims/autodiff_util.h"

#include <numeric>

#include "lax/promote.h"
#include "parax/lax.h"

namespace parax::prims {

bool has_tangent(DType dtype) { return is_floating(dtype); }

Array constant(double value, DType dtype) { return frontend::scalar(value, dtype); }

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
