// numpy's own argument helpers, on top of lax/promote.h: broadcasting binaries staged as
// one program, and numpy's axis and reshape arguments. Internal to the front ends.
#pragma once

#include <cstdint>
#include <vector>

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/array.h"
#include "parax/jit.h"
#include "parax/numpy.h"

namespace parax::frontend {

// Runs a numpy binary function whose operands broadcast against each other as one staged
// program, as JAX's jitted jnp functions do, so sharding propagation sees the broadcast
// and the operation together (a broadcast operand then yields to the other's layout).
// Inside a trace, or without broadcasting, it just calls f.
template <class F>
Array staged_binary(const char* name, const ArrayLike& x, const ArrayLike& y, F f) {
  const Array& a = x.array();
  const Array& b = y.array();
  const bool broadcasts = a.ndim() != 0 && b.ndim() != 0 && a.shape() != b.shape();
  if (!broadcasts || core::current_trace() != nullptr || core::tracer_of(a) != nullptr ||
      core::tracer_of(b) != nullptr) {
    return f(x, y);
  }
  static const auto jitted =
      jit([f](const Array& p, const Array& q) { return f(p, q); }, JitOptions{.name = name});
  return jitted(a, b);
}

// Returns the reduction axes of `axes` for a rank-`ndim` operand, canonical and in the
// given order; throws ValueError for duplicates.
std::vector<int64_t> reduction_axes(const numpy::Axes& axes, int64_t ndim);

// Returns `shape` with its -1 (at most one) resolved for reshaping `a`; throws JAX's
// TypeError when the sizes do not match.
Shape compute_newshape(const Array& a, Shape shape);

}  // namespace parax::frontend
