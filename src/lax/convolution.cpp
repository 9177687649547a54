// lax's convolution and windowed reductions: argument handling as
// jax/_src/lax/convolution.py and windowed_reductions.py do it, then one primitive each.
// numpy's convolve/correlate (src/numpy/convolution.cpp) and flax-style pooling
// (src/nn/pooling.cpp) compose them.
#include "parax/convolution.h"

#include <algorithm>
#include <cmath>
#include <limits>
#include <set>

#include "base/dtype_dispatch.h"
#include "core/trace.h"
#include "lax/promote.h"
#include "parax/lax.h"

namespace parax::lax {
namespace {

using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;
using Pairs = std::vector<std::pair<int64_t, int64_t>>;

// JAX's conv_general_permutations.
ConvDimensionNumbers conv_general_permutations(const std::vector<std::string>& specs) {
  const std::pair<char, char> charpairs[] = {{'N', 'C'}, {'O', 'I'}, {'N', 'C'}};
  auto repr = [](const std::string& s) { return "'" + s + "'"; };
  for (size_t i = 0; i < 3; ++i) {
    const std::string& spec = specs[i];
    const auto [a, b] = charpairs[i];
    if (std::count(spec.begin(), spec.end(), a) != 1 ||
        std::count(spec.begin(), spec.end(), b) != 1) {
      throw TypeError("convolution dimension_numbers[" + std::to_string(i) +
                      "] must contain the characters '" + a + "' and '" + b +
                      "' exactly once, got " + spec + ".");
    }
    if (std::set<char>(spec.begin(), spec.end()).size() != spec.size()) {
      throw TypeError("convolution dimension_numbers[" + std::to_string(i) +
                      "] cannot have duplicate characters, got " + spec + ".");
    }
  }
  auto spatial_set = [&](size_t i) {
    std::set<char> s(specs[i].begin(), specs[i].end());
    s.erase(charpairs[i].first);
    s.erase(charpairs[i].second);
    return s;
  };
  if (spatial_set(0) != spatial_set(1) || spatial_set(1) != spatial_set(2)) {
    throw TypeError(
        "convolution dimension_numbers elements must each have the same set of spatial "
        "characters, got (" +
        repr(specs[0]) + ", " + repr(specs[1]) + ", " + repr(specs[2]) + ").");
  }
  const std::string& rhs = specs[1];
  auto perm = [&](size_t i) {
    const std::string& spec = specs[i];
    Ints out = {int64_t(spec.find(charpairs[i].first)), int64_t(spec.find(charpairs[i].second))};
    Ints spatial;
    for (size_t j = 0; j < spec.size(); ++j) {
      if (spec[j] != charpairs[i].first && spec[j] != charpairs[i].second) {
        spatial.push_back(int64_t(j));
      }
    }
    if (i != 1) {
      std::stable_sort(spatial.begin(), spatial.end(), [&](int64_t x, int64_t y) {
        return rhs.find(spec[size_t(x)]) < rhs.find(spec[size_t(y)]);
      });
    }
    out.insert(out.end(), spatial.begin(), spatial.end());
    return out;
  };
  return {perm(0), perm(1), perm(2)};
}

int64_t dilate_dim(int64_t d, int64_t dil) { return d == 0 ? 0 : 1 + dil * (d - 1); }

Ints flat_pads(const Pairs& pairs) {
  Ints flat;
  for (const auto& [lo, hi] : pairs) {
    flat.push_back(lo);
    flat.push_back(hi);
  }
  return flat;
}

bool all_ones(const Ints& v) {
  return std::all_of(v.begin(), v.end(), [](int64_t x) { return x == 1; });
}

// JAX's _conv_transpose_padding for a padding mode.
std::pair<int64_t, int64_t> conv_transpose_padding(int64_t k, int64_t s, const std::string& mode) {
  int64_t pad_len = 0, pad_a = 0;
  if (mode == "SAME") {
    pad_len = k + s - 2;
    pad_a = s > k - 1 ? k - 1 : (pad_len + 1) / 2;
  } else if (mode == "VALID") {
    pad_len = k + s - 2 + std::max<int64_t>(k - s, 0);
    pad_a = k - 1;
  } else {
    throw ValueError("Invalid padding mode: " + mode);
  }
  return {pad_a, pad_len - pad_a};
}

Array monoid_window(Prim prim, const Array& x, const Ints& window, const Ints& strides,
                    const Pairs& pads, const Ints& base_dilation, const Ints& window_dilation) {
  return core::bind1(prim, {x},
                     {{"window_dimensions", window},
                      {"window_strides", strides},
                      {"padding", flat_pads(pads)},
                      {"base_dilation", base_dilation},
                      {"window_dilation", window_dilation}});
}

// The identity of a windowed reduction for x's dtype (JAX's _get_max_identity ...).
double window_identity(Prim prim, DType dtype) {
  if (prim == Prim::reduce_window_sum) return 0;
  const bool max = prim == Prim::reduce_window_max;
  if (dtype == DType::bool_) return max ? 0 : 1;
  if (is_floating(dtype)) {
    return max ? -std::numeric_limits<double>::infinity() : std::numeric_limits<double>::infinity();
  }
  return dispatch_dtype(dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_integral_v<T>) {
      return double(max ? std::numeric_limits<T>::lowest() : std::numeric_limits<T>::max());
    } else {
      return 0.0;
    }
  });
}

// The window arguments with JAX's defaults filled in and string padding resolved.
struct WindowArgs {
  Ints window, strides, base_dilation, window_dilation;
  Pairs pads;
};

WindowArgs window_args(const Array& x, Ints window, Ints strides, const Padding& padding,
                       Ints base_dilation, Ints window_dilation) {
  WindowArgs a;
  const size_t n = window.size();
  a.strides = strides.empty() ? Ints(n, 1) : std::move(strides);
  a.base_dilation = base_dilation.empty() ? Ints(n, 1) : std::move(base_dilation);
  a.window_dilation = window_dilation.empty() ? Ints(n, 1) : std::move(window_dilation);
  if (!padding.mode.empty()) {
    Ints dilated;
    for (size_t d = 0; d < n; ++d) {
      dilated.push_back(
          dilate_dim(window[d], d < a.window_dilation.size() ? a.window_dilation[d] : 1));
    }
    a.pads =
        padtype_to_pads(Ints(x.shape().begin(), x.shape().end()), dilated, a.strides, padding.mode);
  } else {
    a.pads = padding.pairs;
  }
  a.window = std::move(window);
  return a;
}

Prim window_prim(WindowComputation computation) {
  if (computation == static_cast<WindowComputation>(&lax::add)) return Prim::reduce_window_sum;
  if (computation == static_cast<WindowComputation>(&lax::max)) return Prim::reduce_window_max;
  if (computation == static_cast<WindowComputation>(&lax::min)) return Prim::reduce_window_min;
  throw NotImplementedError(
      "[reduce_window] only lax::add, lax::max and lax::min are supported as the computation "
      "(the monoids XLA's windowed reductions know); got another function. Compose "
      "reduce_window_sum/max/min with elementwise operations instead.");
}

}  // namespace

ConvDimensionNumbers conv_dimension_numbers(const Shape& lhs_shape, const Shape& rhs_shape,
                                            const ConvDimensions& dimension_numbers) {
  if (dimension_numbers.numbers) return *dimension_numbers.numbers;
  if (lhs_shape.size() != rhs_shape.size()) {
    throw TypeError("convolution requires lhs and rhs ndim to be equal, got " +
                    std::to_string(lhs_shape.size()) + " and " + std::to_string(rhs_shape.size()) +
                    ".");
  }
  if (!dimension_numbers.strings) {
    Ints iota(lhs_shape.size());
    for (size_t i = 0; i < iota.size(); ++i) iota[i] = int64_t(i);
    return {iota, iota, iota};
  }
  const std::vector<std::string>& specs = *dimension_numbers.strings;
  for (size_t i = 0; i < specs.size(); ++i) {
    if (specs[i].size() != lhs_shape.size()) {
      throw TypeError("convolution dimension_numbers[" + std::to_string(i) +
                      "] must have len equal to the ndim of lhs and rhs, got " +
                      std::to_string(specs[i].size()) + " for lhs and rhs shapes " +
                      shape_str(lhs_shape) + " and " + shape_str(rhs_shape) + ".");
    }
  }
  return conv_general_permutations(specs);
}

Pairs padtype_to_pads(const Ints& in_shape, const Ints& window_shape, const Ints& strides,
                      const std::string& padding) {
  std::string mode = padding;
  std::transform(mode.begin(), mode.end(), mode.begin(), ::toupper);
  const size_t n = std::min({in_shape.size(), window_shape.size(), strides.size()});
  Pairs pads;
  if (mode == "VALID") return Pairs(in_shape.size(), {0, 0});
  if (mode != "SAME" && mode != "SAME_LOWER") {
    throw ValueError("Unrecognized padding type: expected 'VALID', 'SAME', or 'SAME_LOWER', got " +
                     padding + ".");
  }
  for (size_t d = 0; d < n; ++d) {
    const int64_t out = (in_shape[d] + strides[d] - 1) / strides[d];
    const int64_t size =
        std::max<int64_t>(0, (out - 1) * strides[d] + window_shape[d] - in_shape[d]);
    if (mode == "SAME") {
      pads.emplace_back(size / 2, size - size / 2);
    } else {
      pads.emplace_back(size - size / 2, size / 2);
    }
  }
  return pads;
}

Array conv_general_dilated(const ArrayLike& lhs_like, const ArrayLike& rhs_like,
                           Ints window_strides, const Padding& padding, Ints lhs_dilation,
                           Ints rhs_dilation, const ConvDimensions& dimension_numbers,
                           int64_t feature_group_count, int64_t batch_group_count,
                           std::optional<Precision>, std::optional<DType> preferred_element_type) {
  const Array& lhs = lhs_like.array();
  const Array& rhs = rhs_like.array();
  const ConvDimensionNumbers dn =
      conv_dimension_numbers(lhs.shape(), rhs.shape(), dimension_numbers);
  const size_t n = lhs.ndim() >= 2 ? size_t(lhs.ndim() - 2) : 0;
  if (lhs_dilation.empty()) {
    lhs_dilation = Ints(n, 1);
  } else if (!padding.mode.empty() && !all_ones(lhs_dilation)) {
    throw ValueError(
        "String padding is not implemented for transposed convolution using this op. Please "
        "either exactly specify the required padding or use conv_transpose.");
  }
  if (rhs_dilation.empty()) rhs_dilation = Ints(n, 1);
  Pairs pads = padding.pairs;
  if (!padding.mode.empty()) {
    Ints in_sp, k_sp;
    for (size_t d = 2; d < dn.lhs_spec.size() && d < dn.rhs_spec.size(); ++d) {
      in_sp.push_back(lhs.shape()[size_t(dn.lhs_spec[d])]);
      k_sp.push_back(dilate_dim(rhs.shape()[size_t(dn.rhs_spec[d])],
                                d - 2 < rhs_dilation.size() ? rhs_dilation[d - 2] : 1));
    }
    pads = padtype_to_pads(in_sp, k_sp, window_strides, padding.mode);
  }
  Params params{{"window_strides", std::move(window_strides)},
                {"padding", flat_pads(pads)},
                {"lhs_dilation", std::move(lhs_dilation)},
                {"rhs_dilation", std::move(rhs_dilation)},
                {"lhs_spec", dn.lhs_spec},
                {"rhs_spec", dn.rhs_spec},
                {"out_spec", dn.out_spec},
                {"feature_group_count", feature_group_count},
                {"batch_group_count", batch_group_count}};
  if (preferred_element_type) params.set("preferred_element_type", *preferred_element_type);
  return core::bind1(Prim::conv_general_dilated, {lhs, rhs}, std::move(params));
}

Array conv(const ArrayLike& lhs, const ArrayLike& rhs, Ints window_strides, const Padding& padding,
           std::optional<Precision> precision, std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, std::move(window_strides), padding, {}, {}, {}, 1, 1,
                              precision, preferred_element_type);
}

Array conv_with_general_padding(const ArrayLike& lhs, const ArrayLike& rhs, Ints window_strides,
                                const Padding& padding, Ints lhs_dilation, Ints rhs_dilation,
                                std::optional<Precision> precision,
                                std::optional<DType> preferred_element_type) {
  return conv_general_dilated(lhs, rhs, std::move(window_strides), padding, std::move(lhs_dilation),
                              std::move(rhs_dilation), {}, 1, 1, precision, preferred_element_type);
}

Array conv_transpose(const ArrayLike& lhs_like, const ArrayLike& rhs_like, Ints strides,
                     const Padding& padding, Ints rhs_dilation,
                     const ConvDimensions& dimension_numbers, bool transpose_kernel,
                     std::optional<Precision> precision,
                     std::optional<DType> preferred_element_type) {
  const Array& lhs = lhs_like.array();
  Array rhs = rhs_like.array();
  const int64_t ndims = lhs.ndim();
  ConvDimensions dims = dimension_numbers;
  if (!dims.numbers && !dims.strings) {
    switch (ndims) {
      case 2:
        dims = ConvDimensions("NC", "IO", "NC");
        break;
      case 3:
        dims = ConvDimensions("NHC", "HIO", "NHC");
        break;
      case 4:
        dims = ConvDimensions("NHWC", "HWIO", "NHWC");
        break;
      case 5:
        dims = ConvDimensions("NHWDC", "HWDIO", "NHWDC");
        break;
      default:
        throw ValueError("No 4+ dimensional dimension_number defaults.");
    }
  }
  const ConvDimensionNumbers dn = conv_dimension_numbers(lhs.shape(), rhs.shape(), dims);
  const size_t n = size_t(std::max<int64_t>(0, ndims - 2));
  if (rhs_dilation.empty()) rhs_dilation = Ints(n, 1);
  Pairs pads = padding.pairs;
  if (padding.mode == "SAME" || padding.mode == "VALID") {
    pads.clear();
    for (size_t d = 0; d < strides.size() && d + 2 < dn.rhs_spec.size(); ++d) {
      const int64_t k = dilate_dim(rhs.shape()[size_t(dn.rhs_spec[d + 2])], rhs_dilation[d]);
      pads.push_back(conv_transpose_padding(k, strides[d], padding.mode));
    }
  } else if (!padding.mode.empty()) {
    throw ValueError("Invalid padding mode: " + padding.mode);
  }
  if (transpose_kernel) {
    rhs = lax::rev(rhs, Ints(dn.rhs_spec.begin() + 2, dn.rhs_spec.end()));
    Ints perm(size_t(rhs.ndim()));
    for (size_t i = 0; i < perm.size(); ++i) perm[i] = int64_t(i);
    std::swap(perm[size_t(dn.rhs_spec[0])], perm[size_t(dn.rhs_spec[1])]);
    rhs = lax::transpose(rhs, perm);
  }
  return conv_general_dilated(lhs, rhs, Ints(n, 1), Padding(pads), strides, rhs_dilation,
                              ConvDimensions(dn), 1, 1, precision, preferred_element_type);
}

Array reduce_window(const ArrayLike& operand, const ArrayLike& init_value,
                    WindowComputation computation, Ints window_dimensions, Ints window_strides,
                    const Padding& padding, Ints base_dilation, Ints window_dilation) {
  const Prim prim = window_prim(computation);
  const Array& x = operand.array();
  const Array& init = init_value.array();
  if (init.ndim() != 0) {
    throw TypeError(
        "reduce_window expected init_values to be scalars but init_values have shapes " +
        shape_str(init.shape()) + ".");
  }
  WindowArgs a = window_args(x, std::move(window_dimensions), std::move(window_strides), padding,
                             std::move(base_dilation), std::move(window_dilation));
  const bool concrete = core::tracer_of(init) == nullptr;
  if (concrete && init.item<double>() == window_identity(prim, x.dtype())) {
    return monoid_window(prim, x, a.window, a.strides, a.pads, a.base_dilation, a.window_dilation);
  }
  // Any other init value starts every window once; XLA's CPU backend (what JAX gives)
  // skips padding and the holes of base dilation as the monoid's identity would.
  const Array v = frontend::convert(init, x.dtype(), x.weak_type());
  const Array r =
      monoid_window(prim, x, a.window, a.strides, a.pads, a.base_dilation, a.window_dilation);
  return computation(r, v);
}

Array reduce_window_sum(const ArrayLike& operand, Ints window_dimensions, Ints window_strides,
                        const Padding& padding, Ints base_dilation, Ints window_dilation) {
  const WindowArgs a =
      window_args(operand.array(), std::move(window_dimensions), std::move(window_strides), padding,
                  std::move(base_dilation), std::move(window_dilation));
  return monoid_window(Prim::reduce_window_sum, operand.array(), a.window, a.strides, a.pads,
                       a.base_dilation, a.window_dilation);
}

Array reduce_window_max(const ArrayLike& operand, Ints window_dimensions, Ints window_strides,
                        const Padding& padding, Ints base_dilation, Ints window_dilation) {
  const WindowArgs a =
      window_args(operand.array(), std::move(window_dimensions), std::move(window_strides), padding,
                  std::move(base_dilation), std::move(window_dilation));
  return monoid_window(Prim::reduce_window_max, operand.array(), a.window, a.strides, a.pads,
                       a.base_dilation, a.window_dilation);
}

Array reduce_window_min(const ArrayLike& operand, Ints window_dimensions, Ints window_strides,
                        const Padding& padding, Ints base_dilation, Ints window_dilation) {
  const WindowArgs a =
      window_args(operand.array(), std::move(window_dimensions), std::move(window_strides), padding,
                  std::move(base_dilation), std::move(window_dilation));
  return monoid_window(Prim::reduce_window_min, operand.array(), a.window, a.strides, a.pads,
                       a.base_dilation, a.window_dilation);
}

}  // namespace parax::lax
