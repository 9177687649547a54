// lax::scatter_apply (JAX's, the scatter that applies a function where it writes) and the
// helpers x.at(...).apply shares with it. JAX binds its scatter primitive with the function
// as update_jaxpr; parax composes gathers, a while loop and a scatter instead, so that no
// kernel has to run a traced function per element.
#include "numpy/scatter_apply.h"

#include <algorithm>
#include <tuple>

#include "core/trace.h"
#include "parax/control_flow.h"
#include "parax/custom_derivatives.h"
#include "parax/jit.h"
#include "parax/numpy.h"
#include "parax/vmap.h"

namespace parax {
namespace detail {

namespace jnp = parax::numpy;

Array without_jvp(const Array& x, const UnaryFn& f) {
  // custom_jvp defers its rule's NotImplementedError until a derivative is needed.
  auto g =
      custom_jvp([&](const Array& a) { return f(a); },
                 [](const std::tuple<Array>&, const std::tuple<Array>&) -> std::pair<Array, Array> {
                   throw NotImplementedError("scatter_apply JVP not implemented");
                 },
                 CustomOptions{.name = "scatter_apply"});
  return g(x);
}

Array apply_elementwise(const UnaryFn& func, const Array& v) {
  if (v.size() == 0) return v;
  auto checked = [&](const Array& s) {
    Array r = func(s);
    if (r.ndim() != 0 || r.dtype() != s.dtype()) {
      core::Aval want{{}, s.dtype(), false};
      throw TypeError("[at.apply] func must map a scalar to one of the same type: it maps " +
                      want.str() + " to " + core::aval_of(r).str());
    }
    return r;
  };
  return vmap(checked)(v.reshape({v.size()})).reshape(v.shape());
}

Array scatter_apply_windows(const Array& operand, const Array& indices, const UnaryFn& func,
                            const lax::ScatterDimensionNumbers& dnums, const Shape& update_shape,
                            bool indices_are_sorted, bool unique_indices,
                            lax::GatherScatterMode mode) {
  // Checks the scatter as JAX's shape rule does before anything is computed.
  const Array unused = jnp::zeros(update_shape, operand.dtype());
  (void)eval_shape(
      [&](const Array& x, const Array& i, const Array& u) {
        return lax::scatter(x, i, u, dnums, indices_are_sorted, unique_indices, mode);
      },
      operand, indices, unused);
  const lax::GatherDimensionNumbers g{
      dnums.update_window_dims, dnums.inserted_window_dims, dnums.scatter_dims_to_operand_dims,
      dnums.operand_batching_dims, dnums.scatter_indices_batching_dims};
  Shape slice_sizes;
  size_t pos = 0;
  auto has = [](const std::vector<int64_t>& v, int64_t d) {
    return std::find(v.begin(), v.end(), d) != v.end();
  };
  for (int64_t d = 0; d < operand.ndim(); ++d) {
    if (has(dnums.inserted_window_dims, d) || has(dnums.operand_batching_dims, d)) {
      slice_sizes.push_back(1);
    } else {
      slice_sizes.push_back(update_shape[size_t(dnums.update_window_dims[pos++])]);
    }
  }
  auto gather = [&](const Array& from) {
    return lax::gather(from, indices, g, slice_sizes, indices_are_sorted, unique_indices, mode);
  };
  Array v = gather(operand);
  if (unique_indices) {
    v = apply_elementwise(func, v);
  } else {
    Array hits = gather(lax::scatter_add(jnp::zeros(operand.shape(), DType::int32), indices,
                                         jnp::ones(v.shape(), DType::int32), dnums,
                                         indices_are_sorted, false, mode));
    // (k, how many times at most, hits, v): apply once more where an element is hit more
    // than k times.
    using Carry = std::tuple<Array, Array, Array, Array>;
    Carry init{jnp::array(0), jnp::max(hits), hits, v};
    Carry done =
        lax::while_loop([](const Carry& c) { return lax::lt(std::get<0>(c), std::get<1>(c)); },
                        [&](const Carry& c) {
                          const auto& [k, n, h, w] = c;
                          Array next = lax::select(lax::gt(h, k), apply_elementwise(func, w), w);
                          return Carry{lax::add(k, 1), n, h, next};
                        },
                        init);
    v = std::get<3>(done);
  }
  return lax::scatter(operand, indices, v, dnums, indices_are_sorted, unique_indices, mode);
}

}  // namespace detail

namespace lax {

Array scatter_apply(const ArrayLike& operand, const ArrayLike& scatter_indices,
                    const std::function<Array(const Array&)>& func,
                    const ScatterDimensionNumbers& dimension_numbers, Shape update_shape,
                    bool indices_are_sorted, bool unique_indices,
                    std::optional<GatherScatterMode> mode) {
  const Array indices = scatter_indices.array();
  return detail::without_jvp(operand.array(), [&](const Array& x) {
    return detail::scatter_apply_windows(x, indices, func, dimension_numbers, update_shape,
                                         indices_are_sorted, unique_indices,
                                         mode.value_or(GatherScatterMode::FILL_OR_DROP));
  });
}

}  // namespace lax
}  // namespace parax
