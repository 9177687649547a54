// Convolution and pooling: lax::conv_general_dilated, lax::conv, lax::reduce_window,
// numpy::convolve, and flax-style pooling (nn::max_pool, nn::avg_pool).
#pragma once

#include <cstdint>
#include <initializer_list>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parax/array.h"

namespace parax::lax {

// JAX's ConvDimensionNumbers: for lhs, rhs and out, the dimension indices of (batch or
// output feature, feature or input feature, spatial dimensions in the rhs's order).
struct ConvDimensionNumbers {
  std::vector<int64_t> lhs_spec, rhs_spec, out_spec;
  bool operator==(const ConvDimensionNumbers&) const = default;
};

// The dimension_numbers argument: nothing (JAX's None: NC..., OI..., NC...), a
// ConvDimensionNumbers, or three strings such as {"NHWC", "HWIO", "NHWC"}.
struct ConvDimensions {
  ConvDimensions() = default;
  ConvDimensions(std::nullopt_t) {}  // NOLINT(google-explicit-constructor)
  ConvDimensions(None_t) {}          // NOLINT(google-explicit-constructor)
  ConvDimensions(ConvDimensionNumbers numbers) : numbers(std::move(numbers)) {}
  ConvDimensions(std::string lhs, std::string rhs, std::string out)
      : strings{{std::move(lhs), std::move(rhs), std::move(out)}} {}
  std::optional<ConvDimensionNumbers> numbers;
  std::optional<std::vector<std::string>> strings;
};

// Padding: "SAME", "SAME_LOWER", "VALID", or explicit (low, high) pairs per spatial
// dimension, e.g. {{1, 1}, {0, 2}}.
struct Padding {
  Padding(const char* mode) : mode(mode) {}
  Padding(std::string mode) : mode(std::move(mode)) {}
  Padding(std::vector<std::pair<int64_t, int64_t>> pairs) : pairs(std::move(pairs)) {}
  Padding(std::initializer_list<std::pair<int64_t, int64_t>> pairs) : pairs(pairs) {}
  std::string mode;
  std::vector<std::pair<int64_t, int64_t>> pairs;
};

// Accepted for JAX compatibility; parax computes in the operands' precision (float32
// accumulates in float32, as XLA's CPU backend does).
enum class Precision { DEFAULT, HIGH, HIGHEST };

// Returns the ConvDimensionNumbers of a string or default spec for operands of the given
// shapes (JAX's conv_dimension_numbers); throws TypeError for malformed specs.
ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvDimensions& dimension_numbers);

// Returns the (low, high) pads of a padding mode for inputs, windows and strides
// (JAX's padtype_to_pads).
std::vector<std::pair<int64_t, int64_t>> padtype_to_pads(const std::vector<int64_t>& in_shape,
                                                         const std::vector<int64_t>& window_shape,
                                                         const std::vector<int64_t>& strides,
                                                         const std::string& padding);

// Computes the general n-d convolution with strides, padding, lhs (transposed) and rhs
// (atrous) dilation and feature or batch groups. Empty dilations mean 1.
Array conv_general_dilated(const ArrayLike& lhs, const ArrayLike& rhs,
                           std::vector<int64_t> window_strides, const Padding& padding,
                           std::vector<int64_t> lhs_dilation = {},
                           std::vector<int64_t> rhs_dilation = {},
                           const ConvDimensions& dimension_numbers = {},
                           int64_t feature_group_count = 1, int64_t batch_group_count = 1,
                           std::optional<Precision> precision = std::nullopt,
                           std::optional<DType> preferred_element_type = std::nullopt);

// Convolves NC... inputs with OI... kernels ("SAME" or "VALID" padding).
Array conv(const ArrayLike& lhs, const ArrayLike& rhs, std::vector<int64_t> window_strides,
           const Padding& padding, std::optional<Precision> precision = std::nullopt,
           std::optional<DType> preferred_element_type = std::nullopt);

// conv with explicit padding and dilations.
Array conv_with_general_padding(const ArrayLike& lhs, const ArrayLike& rhs,
                                std::vector<int64_t> window_strides, const Padding& padding,
                                std::vector<int64_t> lhs_dilation,
                                std::vector<int64_t> rhs_dilation,
                                std::optional<Precision> precision = std::nullopt,
                                std::optional<DType> preferred_element_type = std::nullopt);

// Computes the fractionally strided ("transposed") convolution as JAX's conv_transpose
// (default dimension numbers NH..C, H..IO, NH..C).
Array conv_transpose(const ArrayLike& lhs, const ArrayLike& rhs, std::vector<int64_t> strides,
                     const Padding& padding, std::vector<int64_t> rhs_dilation = {},
                     const ConvDimensions& dimension_numbers = {}, bool transpose_kernel = false,
                     std::optional<Precision> precision = std::nullopt,
                     std::optional<DType> preferred_element_type = std::nullopt);

// A reduction that reduce_window recognises: lax::add, lax::max or lax::min.
using WindowComputation = Array (*)(const ArrayLike&, const ArrayLike&);

// Reduces padded windows of `operand` with `computation` (lax::add, lax::max or lax::min;
// other callables raise NotImplementedError), starting each window from init_value.
// Empty strides and dilations mean 1.
Array reduce_window(const ArrayLike& operand, const ArrayLike& init_value,
                    WindowComputation computation, std::vector<int64_t> window_dimensions,
                    std::vector<int64_t> window_strides = {}, const Padding& padding = "VALID",
                    std::vector<int64_t> base_dilation = {},
                    std::vector<int64_t> window_dilation = {});

// Sums, maxima and minima over windows (reduce_window with the identity as init_value).
Array reduce_window_sum(const ArrayLike& operand, std::vector<int64_t> window_dimensions,
                        std::vector<int64_t> window_strides = {}, const Padding& padding = "VALID",
                        std::vector<int64_t> base_dilation = {},
                        std::vector<int64_t> window_dilation = {});
Array reduce_window_max(const ArrayLike& operand, std::vector<int64_t> window_dimensions,
                        std::vector<int64_t> window_strides = {}, const Padding& padding = "VALID",
                        std::vector<int64_t> base_dilation = {},
                        std::vector<int64_t> window_dilation = {});
Array reduce_window_min(const ArrayLike& operand, std::vector<int64_t> window_dimensions,
                        std::vector<int64_t> window_strides = {}, const Padding& padding = "VALID",
                        std::vector<int64_t> base_dilation = {},
                        std::vector<int64_t> window_dilation = {});

}  // namespace parax::lax

namespace parax::numpy {

// Returns the discrete linear convolution of 1-d a and v (mode "full", "same" or "valid").
Array convolve(const ArrayLike& a, const ArrayLike& v, const std::string& mode = "full",
               std::optional<DType> preferred_element_type = std::nullopt);
// Returns the cross-correlation of 1-d a and v (mode "valid", "same" or "full").
Array correlate(const ArrayLike& a, const ArrayLike& v, const std::string& mode = "valid",
                std::optional<DType> preferred_element_type = std::nullopt);

}  // namespace parax::numpy

namespace parax::nn {

// Flax's pooling over inputs (batch..., spatial..., features): windows over the spatial
// dimensions (window_shape's length of them, before the last), empty strides mean 1.
Array max_pool(const ArrayLike& inputs, std::vector<int64_t> window_shape,
               std::vector<int64_t> strides = {}, const lax::Padding& padding = "VALID");
// The window mean; count_include_pad=false divides by the elements inside the input.
Array avg_pool(const ArrayLike& inputs, std::vector<int64_t> window_shape,
               std::vector<int64_t> strides = {}, const lax::Padding& padding = "VALID",
               bool count_include_pad = true);

}  // namespace parax::nn
