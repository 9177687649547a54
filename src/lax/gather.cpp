// parax::lax's gather and scatters: each binds its primitive with the dimension numbers as
// flat params (the names of JAX's NamedTuple fields) and the mode as JAX prints it
// (`GatherScatterMode.CLIP`). Shape and dtype errors come from the primitives' rules.
#include <optional>

#include "core/trace.h"
#include "lax/promote.h"
#include "parax/errors.h"
#include "parax/lax.h"

namespace parax::lax {
namespace {

using core::Params;
using core::Prim;

std::string mode_name(GatherScatterMode mode) {
  switch (mode) {
    case GatherScatterMode::CLIP:
      return "GatherScatterMode.CLIP";
    case GatherScatterMode::FILL_OR_DROP:
      return "GatherScatterMode.FILL_OR_DROP";
    case GatherScatterMode::PROMISE_IN_BOUNDS:
      return "GatherScatterMode.PROMISE_IN_BOUNDS";
    case GatherScatterMode::ONE_HOT:
      return "GatherScatterMode.ONE_HOT";
  }
  return "";
}

Array scatter_op(Prim prim, const ArrayLike& operand, const ArrayLike& scatter_indices,
                 const ArrayLike& updates, const ScatterDimensionNumbers& dnums,
                 bool indices_are_sorted, bool unique_indices,
                 std::optional<GatherScatterMode> mode) {
  const Array& x = operand.array();
  Array u = updates.array();
  // A C++ scalar update takes the operand's dtype, as a Python scalar does in JAX.
  if (frontend::is_literal(u) && u.dtype() != x.dtype()) u = frontend::convert(u, x.dtype(), true);
  // JAX's GatherScatterMode.from_any(None) is FILL_OR_DROP.
  const GatherScatterMode m = mode.value_or(GatherScatterMode::FILL_OR_DROP);
  Params params{{"update_window_dims", dnums.update_window_dims},
                {"inserted_window_dims", dnums.inserted_window_dims},
                {"scatter_dims_to_operand_dims", dnums.scatter_dims_to_operand_dims},
                {"operand_batching_dims", dnums.operand_batching_dims},
                {"scatter_indices_batching_dims", dnums.scatter_indices_batching_dims},
                {"indices_are_sorted", indices_are_sorted},
                {"unique_indices", unique_indices},
                {"mode", mode_name(m)}};
  return core::bind1(prim, {x, scatter_indices.array(), u}, std::move(params));
}

}  // namespace

Array gather(const ArrayLike& operand, const ArrayLike& start_indices,
             const GatherDimensionNumbers& dimension_numbers, Shape slice_sizes,
             bool indices_are_sorted, bool unique_indices, std::optional<GatherScatterMode> mode,
             std::optional<double> fill_value) {
  // lax.gather reads None as PROMISE_IN_BOUNDS (unlike the scatters).
  const GatherScatterMode m = mode.value_or(GatherScatterMode::PROMISE_IN_BOUNDS);
  if (m == GatherScatterMode::ONE_HOT) {
    throw NotImplementedError(
        "gather does not implement mode GatherScatterMode.ONE_HOT: one-hot indexing is "
        "jnp's (take_along_axis(..., mode='one_hot')), which contracts with a one-hot "
        "array instead of gathering.");
  }
  Params params{{"offset_dims", dimension_numbers.offset_dims},
                {"collapsed_slice_dims", dimension_numbers.collapsed_slice_dims},
                {"start_index_map", dimension_numbers.start_index_map},
                {"operand_batching_dims", dimension_numbers.operand_batching_dims},
                {"start_indices_batching_dims", dimension_numbers.start_indices_batching_dims},
                {"slice_sizes", std::move(slice_sizes)},
                {"indices_are_sorted", indices_are_sorted},
                {"unique_indices", unique_indices},
                {"mode", mode_name(m)}};
  // Without a fill value the kernel fills with JAX's default for the dtype; other modes
  // ignore it, as JAX drops it.
  if (m == GatherScatterMode::FILL_OR_DROP && fill_value) params.set("fill_value", *fill_value);
  return core::bind1(Prim::gather, {operand.array(), start_indices.array()}, std::move(params));
}

Array scatter(const ArrayLike& operand, const ArrayLike& scatter_indices, const ArrayLike& updates,
              const ScatterDimensionNumbers& dimension_numbers, bool indices_are_sorted,
              bool unique_indices, std::optional<GatherScatterMode> mode) {
  return scatter_op(Prim::scatter, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode);
}

Array scatter_add(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted, bool unique_indices,
                  std::optional<GatherScatterMode> mode) {
  return scatter_op(Prim::scatter_add, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode);
}

Array scatter_mul(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted, bool unique_indices,
                  std::optional<GatherScatterMode> mode) {
  return scatter_op(Prim::scatter_mul, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode);
}

Array scatter_min(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted, bool unique_indices,
                  std::optional<GatherScatterMode> mode) {
  return scatter_op(Prim::scatter_min, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode);
}

Array scatter_max(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted, bool unique_indices,
                  std::optional<GatherScatterMode> mode) {
  return scatter_op(Prim::scatter_max, operand, scatter_indices, updates, dimension_numbers,
                    indices_are_sorted, unique_indices, mode);
}

}  // namespace parax::lax
