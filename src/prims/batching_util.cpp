#include "prims/batching_util.h"

#include <limits>

#include "base/dtype_dispatch.h"
#include "prims/autodiff_util.h"

namespace parax::prims {

std::pair<Array, int64_t> clamp_starts(const Array& starts, int64_t limit) {
  const DType dtype = starts.dtype();
  const int64_t dtype_max = dispatch_dtype(dtype, [](auto v) -> int64_t {
    using T = decltype(v);
    if constexpr (std::is_integral_v<T> && !std::is_same_v<T, bool>) {
      return std::numeric_limits<T>::max() > uint64_t(INT64_MAX)
                 ? INT64_MAX
                 : int64_t(std::numeric_limits<T>::max());
    } else {
      PARAX_UNREACHABLE();
    }
  });
  Array s = starts;
  if (is_signed_integer(dtype)) s = core::bind1(core::Prim::max, {s, constant(0, dtype)});
  if (limit >= dtype_max) return {s, dtype_max};
  return {core::bind1(core::Prim::min, {s, constant(double(limit), dtype)}), limit};
}

Array start_bit(const Array& starts, int64_t bit) {
  const DType dtype = starts.dtype();
  const Array masked = core::bind1(core::Prim::and_, {starts, constant(double(bit), dtype)});
  return core::bind1(core::Prim::ne, {masked, constant(0, dtype)});
}

int64_t top_bit(int64_t n) {
  int64_t b = 1;
  while (b <= n / 2) b *= 2;
  return b;
}

Batched batch_elementwise(core::Prim prim, std::span<const Array> in, std::span<const int> dims,
                          const core::Params& params, const BatchAxis& axis) {
  // The shape of one element of the result, and where its batch dimension goes.
  Shape element;
  int to = kNotMapped;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool batched = dims[i] != kNotMapped;
    if (in[i].ndim() - (batched ? 1 : 0) == 0) continue;
    if (element.empty()) {
      element = in[i].shape();
      if (batched) element.erase(element.begin() + dims[i]);
    }
    if (batched && to == kNotMapped) to = dims[i];
  }
  if (to == kNotMapped) to = 0;
  Shape shape = element;
  shape.insert(shape.begin() + to, axis.size);
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    const int d = dims[i];
    const bool scalar = in[i].ndim() - (d != kNotMapped ? 1 : 0) == 0;
    if (d == kNotMapped && scalar) {
      args.push_back(in[i]);
    } else if (d != kNotMapped && scalar && !element.empty()) {
      args.push_back(
          core::bind1(core::Prim::broadcast_in_dim, {in[i]},
                      {{"shape", shape}, {"broadcast_dimensions", std::vector<int64_t>{to}}}));
    } else {
      args.push_back(core::move_batch_dim(in[i], d, to, axis.size));
    }
  }
  std::vector<Array> outs = core::bind(prim, std::move(args), params);
  std::vector<int> out_dims(outs.size(), to);
  return Batched{std::move(outs), std::move(out_dims)};
}

}  // namespace parax::prims
