// parax::lax: JAX's jax.lax, thin checked functions that each bind one primitive. Operands
// must already agree in shape and dtype (rank-0 operands broadcast in elementwise ops);
// parax::numpy adds numpy's broadcasting and type promotion on top.
#pragma once

#include <functional>
#include <optional>
#include <vector>

#include "parax/array.h"
#include "parax/sharding.h"

namespace parax::lax {

// Elementwise, one operand.
Array neg(const ArrayLike& x);
Array abs(const ArrayLike& x);
Array sign(const ArrayLike& x);
Array floor(const ArrayLike& x);
Array ceil(const ArrayLike& x);
enum class RoundingMethod { AWAY_FROM_ZERO = 0, TO_NEAREST_EVEN = 1 };
Array round(const ArrayLike& x, RoundingMethod method = RoundingMethod::AWAY_FROM_ZERO);
Array exp(const ArrayLike& x);
Array exp2(const ArrayLike& x);
Array log(const ArrayLike& x);
Array log1p(const ArrayLike& x);
Array expm1(const ArrayLike& x);
Array sin(const ArrayLike& x);
Array cos(const ArrayLike& x);
Array tan(const ArrayLike& x);
Array asin(const ArrayLike& x);
Array acos(const ArrayLike& x);
Array atan(const ArrayLike& x);
Array sinh(const ArrayLike& x);
Array cosh(const ArrayLike& x);
Array tanh(const ArrayLike& x);
Array sqrt(const ArrayLike& x);
Array rsqrt(const ArrayLike& x);
Array cbrt(const ArrayLike& x);
Array logistic(const ArrayLike& x);
Array erf(const ArrayLike& x);
Array erf_inv(const ArrayLike& x);
Array erfc(const ArrayLike& x);
Array asinh(const ArrayLike& x);
Array acosh(const ArrayLike& x);
Array atanh(const ArrayLike& x);
Array is_finite(const ArrayLike& x);
Array bitwise_not(const ArrayLike& x);
// x ** y for a fixed integer y.
Array integer_pow(const ArrayLike& x, int64_t y);
Array convert_element_type(const ArrayLike& x, DType new_dtype);
// Returns a copy of x (JAX's copy_p).
Array copy(const ArrayLike& x);

// Elementwise, two operands of one dtype.
Array add(const ArrayLike& x, const ArrayLike& y);
Array sub(const ArrayLike& x, const ArrayLike& y);
Array mul(const ArrayLike& x, const ArrayLike& y);
Array div(const ArrayLike& x, const ArrayLike& y);
Array rem(const ArrayLike& x, const ArrayLike& y);
Array pow(const ArrayLike& x, const ArrayLike& y);
Array max(const ArrayLike& x, const ArrayLike& y);
Array min(const ArrayLike& x, const ArrayLike& y);
Array atan2(const ArrayLike& x, const ArrayLike& y);
Array nextafter(const ArrayLike& x, const ArrayLike& y);
Array bitwise_and(const ArrayLike& x, const ArrayLike& y);
Array bitwise_or(const ArrayLike& x, const ArrayLike& y);
Array bitwise_xor(const ArrayLike& x, const ArrayLike& y);
Array shift_left(const ArrayLike& x, const ArrayLike& y);
Array shift_right_logical(const ArrayLike& x, const ArrayLike& y);
Array shift_right_arithmetic(const ArrayLike& x, const ArrayLike& y);
Array eq(const ArrayLike& x, const ArrayLike& y);
Array ne(const ArrayLike& x, const ArrayLike& y);
Array lt(const ArrayLike& x, const ArrayLike& y);
Array le(const ArrayLike& x, const ArrayLike& y);
Array gt(const ArrayLike& x, const ArrayLike& y);
Array ge(const ArrayLike& x, const ArrayLike& y);

// Returns on_true where pred else on_false (pred is bool).
Array select(const ArrayLike& pred, const ArrayLike& on_true, const ArrayLike& on_false);
// Returns cases[which] elementwise (which is bool for two cases, else int32).
Array select_n(const ArrayLike& which, const std::vector<Array>& cases);
Array clamp(const ArrayLike& min, const ArrayLike& x, const ArrayLike& max);

// Shapes and layout.
Array iota(DType dtype, int64_t size);
Array broadcasted_iota(DType dtype, Shape shape, int64_t dimension);
Array broadcast_in_dim(const ArrayLike& x, Shape shape, std::vector<int64_t> broadcast_dimensions);
// Adds leading dimensions `sizes`.
Array broadcast(const ArrayLike& x, Shape sizes);
Array reshape(const ArrayLike& x, Shape new_sizes);
Array transpose(const ArrayLike& x, std::vector<int64_t> permutation);
Array squeeze(const ArrayLike& x, std::vector<int64_t> dimensions);
Array expand_dims(const ArrayLike& x, std::vector<int64_t> dimensions);
Array slice(const ArrayLike& x, std::vector<int64_t> start_indices,
            std::vector<int64_t> limit_indices, std::vector<int64_t> strides = {});
// Slices `slice_sizes` at traced start indices (clamped into range, as JAX does).
Array dynamic_slice(const ArrayLike& x, const std::vector<Array>& start_indices,
                    std::vector<int64_t> slice_sizes);
Array dynamic_update_slice(const ArrayLike& x, const ArrayLike& update,
                           const std::vector<Array>& start_indices);
Array concatenate(const std::vector<Array>& operands, int64_t dimension);
// One (low, high, interior) triple per dimension; low/high may be negative.
struct PadConfig {
  int64_t low = 0, high = 0, interior = 0;
};
Array pad(const ArrayLike& x, const ArrayLike& padding_value, std::vector<PadConfig> config);
Array rev(const ArrayLike& x, std::vector<int64_t> dimensions);

// Contractions and reductions.
struct DotDimensionNumbers {
  std::vector<int64_t> lhs_contracting, rhs_contracting;
  std::vector<int64_t> lhs_batch, rhs_batch;
};
// Result dimensions are (batch..., lhs free..., rhs free...).
Array dot_general(const ArrayLike& lhs, const ArrayLike& rhs, DotDimensionNumbers dims,
                  std::optional<DType> preferred_element_type = std::nullopt);
// Matrix/vector product of rank-1 or rank-2 operands.
Array dot(const ArrayLike& lhs, const ArrayLike& rhs,
          std::optional<DType> preferred_element_type = std::nullopt);
Array reduce_sum(const ArrayLike& x, std::vector<int64_t> axes);
Array reduce_max(const ArrayLike& x, std::vector<int64_t> axes);
Array reduce_min(const ArrayLike& x, std::vector<int64_t> axes);
Array reduce_prod(const ArrayLike& x, std::vector<int64_t> axes);
Array reduce_and(const ArrayLike& x, std::vector<int64_t> axes);
Array reduce_or(const ArrayLike& x, std::vector<int64_t> axes);
Array argmax(const ArrayLike& x, int64_t axis, DType index_dtype = DType::int32);
Array argmin(const ArrayLike& x, int64_t axis, DType index_dtype = DType::int32);
Array cumsum(const ArrayLike& x, int64_t axis = 0, bool reverse = false);
Array cumprod(const ArrayLike& x, int64_t axis = 0, bool reverse = false);
Array cummax(const ArrayLike& x, int64_t axis = 0, bool reverse = false);
Array cummin(const ArrayLike& x, int64_t axis = 0, bool reverse = false);
Array cumlogsumexp(const ArrayLike& x, int64_t axis = 0, bool reverse = false);
Array sort(const ArrayLike& x, int64_t dimension = -1, bool is_stable = true);
// Sorts all operands by the first (lexicographically by the first num_keys).
std::vector<Array> sort(const std::vector<Array>& operands, int64_t dimension = -1,
                        bool is_stable = true, int64_t num_keys = 1);

// Gather and scatter (XLA's, with JAX's dimension numbers; the index vector is always the
// last dimension of the indices).
// JAX's GatherDimensionNumbers / ScatterDimensionNumbers.
struct GatherDimensionNumbers {
  std::vector<int64_t> offset_dims, collapsed_slice_dims, start_index_map;
  std::vector<int64_t> operand_batching_dims = {}, start_indices_batching_dims = {};
};
struct ScatterDimensionNumbers {
  std::vector<int64_t> update_window_dims, inserted_window_dims, scatter_dims_to_operand_dims;
  std::vector<int64_t> operand_batching_dims = {}, scatter_indices_batching_dims = {};
};
// How out-of-bounds indices behave (JAX's GatherScatterMode): CLIP clamps each window into
// range; FILL_OR_DROP fills out-of-bounds gathered windows with the fill value and drops
// out-of-bounds scattered windows; PROMISE_IN_BOUNDS leaves it to the implementation (a
// gather clamps, a scatter drops). ONE_HOT is numpy indexing's (a one-hot contraction):
// lax's scatters treat it as PROMISE_IN_BOUNDS and gather rejects it, as JAX lowers them.
enum class GatherScatterMode { CLIP, FILL_OR_DROP, PROMISE_IN_BOUNDS, ONE_HOT };
// Gathers windows of `slice_sizes` at `start_indices`. mode nullopt means
// PROMISE_IN_BOUNDS (JAX's None); fill_value nullopt under FILL_OR_DROP means NaN for
// inexact dtypes, the minimum for signed, the maximum for unsigned integers, true for bool.
Array gather(const ArrayLike& operand, const ArrayLike& start_indices,
             const GatherDimensionNumbers& dimension_numbers, Shape slice_sizes,
             bool indices_are_sorted = false, bool unique_indices = false,
             std::optional<GatherScatterMode> mode = std::nullopt,
             std::optional<double> fill_value = std::nullopt);
// Writes `updates` windows into `operand` at `scatter_indices` (repeated indices: the last
// update wins). mode nullopt means FILL_OR_DROP (JAX's None).
Array scatter(const ArrayLike& operand, const ArrayLike& scatter_indices, const ArrayLike& updates,
              const ScatterDimensionNumbers& dimension_numbers, bool indices_are_sorted = false,
              bool unique_indices = false, std::optional<GatherScatterMode> mode = std::nullopt);
// Combine `updates` with the operand's values (and repeated indices with each other).
Array scatter_add(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted = false, bool unique_indices = false,
                  std::optional<GatherScatterMode> mode = std::nullopt);
Array scatter_mul(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted = false, bool unique_indices = false,
                  std::optional<GatherScatterMode> mode = std::nullopt);
Array scatter_min(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted = false, bool unique_indices = false,
                  std::optional<GatherScatterMode> mode = std::nullopt);
Array scatter_max(const ArrayLike& operand, const ArrayLike& scatter_indices,
                  const ArrayLike& updates, const ScatterDimensionNumbers& dimension_numbers,
                  bool indices_are_sorted = false, bool unique_indices = false,
                  std::optional<GatherScatterMode> mode = std::nullopt);
// Returns operand with func applied where a scatter of `update_shape` updates would write,
// once per update that writes there (JAX's scatter_apply). func maps a scalar of operand's
// dtype to one of the same type. Not differentiable: a derivative raises
// NotImplementedError, as in JAX. mode nullopt means FILL_OR_DROP.
Array scatter_apply(const ArrayLike& operand, const ArrayLike& scatter_indices,
                    const std::function<Array(const Array&)>& func,
                    const ScatterDimensionNumbers& dimension_numbers, Shape update_shape = {},
                    bool indices_are_sorted = false, bool unique_indices = false,
                    std::optional<GatherScatterMode> mode = std::nullopt);

// Asks the compiler to lay x out with `sharding` here (inside jit; eagerly, a device_put).
// `site` names the caller's line in the compiler's explainer.
Array with_sharding_constraint(const Array& x, const Sharding& sharding,
                               std::source_location site = std::source_location::current());

}  // namespace parax::lax

namespace parax {

// Returns x laid out as `sharding` (JAX's jax.sharding.reshard): with_sharding_constraint
// under another name, the explicit one, whose collectives the parax_implicit_reshard policy
// allows always. A bare PartitionSpec is read on the mesh of the enclosing
// sharding::use_mesh scope or, eagerly, on x's own mesh.
Array reshard(const Array& x, const Sharding& sharding,
              std::source_location site = std::source_location::current());

}  // namespace parax
