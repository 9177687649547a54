// What lax::scatter_apply and x.at(...).apply share (internal to src/api).
#pragma once

#include <functional>

#include "parax/array.h"
#include "parax/lax.h"

namespace parax::detail {

using UnaryFn = std::function<Array(const Array&)>;

// Returns f(x), whose derivative raises NotImplementedError("scatter_apply JVP not
// implemented"), as JAX's scatter_apply (it has no JVP rule).
Array without_jvp(const Array& x, const UnaryFn& f);

// Returns func applied to each element of v: traced on a scalar of v's dtype, as JAX traces
// scatter_apply's function, and vmapped. Throws TypeError unless func maps such a scalar to
// one of the same type.
Array apply_elementwise(const UnaryFn& func, const Array& v);

// lax::scatter_apply without the JVP guard: the windows of `update_shape` are gathered,
// func is applied to each element as many times as windows cover it (counted by a
// scatter-add), and they are scattered back (repeats then write equal values).
Array scatter_apply_windows(const Array& operand, const Array& indices, const UnaryFn& func,
                            const lax::ScatterDimensionNumbers& dnums, const Shape& update_shape,
                            bool indices_are_sorted, bool unique_indices,
                            lax::GatherScatterMode mode);

}  // namespace parax::detail
