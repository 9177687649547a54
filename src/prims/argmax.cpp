// argmax and argmin: the index of the largest / smallest element along one axis, as
// `index_dtype`. NaN counts as the extreme (the first NaN wins); ties go to the first
// index. One file for both: they differ in one comparison.
#include <algorithm>
#include <memory>

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

int64_t arg_axis(const Params& params, std::string_view name) {
  const std::vector<int64_t>& axes = param_ints(params, "axes");
  if (axes.size() != 1) {
    throw ValueError("[" + std::string(name) + "] axes: got " + shape_str(axes) +
                     "; expected exactly one axis");
  }
  return axes[0];
}

// JAX's lax._argminmax_shape_rule and _argminmax_dtype_rule.
template <bool kMax>
std::vector<Aval> arg_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  const int64_t axis = arg_axis(params, kMax ? "argmax" : "argmin");
  if (axis < 0 || axis >= int64_t(x.shape.size())) {
    throw ValueError("Invalid axis " + std::to_string(axis) + " for operand shape " +
                     shape_str(x.shape));
  }
  if (x.shape[size_t(axis)] < 1) {
    throw ValueError("argmin and argmax require non-empty reduced dimension. operand.shape=" +
                     shape_str(x.shape) + " axis=" + std::to_string(axis));
  }
  const DType index_dtype =
      params.has("index_dtype") ? params.get<DType>("index_dtype") : DType::int32;
  if (!is_integer(index_dtype)) {
    throw TypeError("index_dtype must be an integer type, but got " +
                    std::string(dtype_name(index_dtype)));
  }
  Shape shape = x.shape;
  shape.erase(shape.begin() + axis);
  return {Aval{shape, index_dtype, false}};
}

// The reduced dimension must stay whole: an index is not a partial result that combines.
ShardingRule arg_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                               const Params& params) {
  const int64_t axis = param_ints(params, "axes")[0];
  ShardingRule rule;
  rule.operands.emplace_back();
  rule.results.emplace_back();
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == axis) {
      rule.operands[0].push_back(ShardingRule::kNone);
      continue;
    }
    rule.operands[0].push_back(rule.num_factors());
    rule.results[0].push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  return rule;
}

// Halves compare as float32.
template <class T>
using Key = std::conditional_t<!std::is_integral_v<T> && sizeof(T) == 2, float, T>;

// Returns whether x replaces the best so far: a NaN best is final, a NaN x wins, and only
// a strictly better value replaces (ties keep the first index). Branch-free, so the
// column loop below vectorizes.
template <bool kMax, class K>
bool better(K x, K best) {
  const bool strictly = kMax ? x > best : x < best;
  if constexpr (std::is_integral_v<K>) {
    return strictly;
  } else {
    return (best == best) & ((x != x) | strictly);
  }
}

constexpr int64_t kColumns = 2048;
constexpr int kLanes = 8;

// Returns the index of one contiguous row's extreme in two passes that vectorize: the
// extreme itself (NaN if any), then the first element equal to it (or the first NaN).
// Equal means ==, so -0.0 and 0.0 tie as they do in the one-pass scan.
template <bool kMax, class T>
int64_t arg_row(const T* row, int64_t n) {
  using K = Key<T>;
  K lanes[kLanes];
  std::fill_n(lanes, kLanes, scalar_cast<K>(row[0]));
  int64_t i = 0;
  for (; i + kLanes <= n; i += kLanes) {
#pragma GCC unroll 1
    for (int j = 0; j < kLanes; ++j) {
      const K v = scalar_cast<K>(row[i + j]);
      lanes[j] = better<kMax>(v, lanes[j]) ? v : lanes[j];
    }
  }
  for (; i < n; ++i) {
    const K v = scalar_cast<K>(row[i]);
    lanes[0] = better<kMax>(v, lanes[0]) ? v : lanes[0];
  }
  K extreme = lanes[0];
  for (int j = 1; j < kLanes; ++j) extreme = better<kMax>(lanes[j], extreme) ? lanes[j] : extreme;
  for (int64_t k = 0; k < n; ++k) {
    const K v = scalar_cast<K>(row[k]);
    if (v == extreme || (v != v && extreme != extreme)) return k;
  }
  PARAX_UNREACHABLE();
}

// x is [P, R, I]; out is [P, I].
template <bool kMax, class T, class Index>
void arg_typed(const T* x, Index* out, int64_t p_size, int64_t r_size, int64_t i_size) {
  using K = Key<T>;
  if (i_size == 1) {
    parallel_chunks(p_size, std::max<int64_t>(1, kElementGrain / r_size), [&](int64_t begin,
                                                                           int64_t end) {
      for (int64_t p = begin; p < end; ++p) out[p] = Index(arg_row<kMax>(x + p * r_size, r_size));
    });
    return;
  }
  const int64_t blocks = (i_size + kColumns - 1) / kColumns;
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (r_size * std::min(i_size, kColumns)));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    K best[kColumns];
    int64_t index[kColumns];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kColumns;
      const int64_t w = std::min(kColumns, i_size - c0);
      const T* block = x + p * r_size * i_size + c0;
      for (int64_t j = 0; j < w; ++j) {
        best[j] = scalar_cast<K>(block[j]);
        index[j] = 0;
      }
      for (int64_t r = 1; r < r_size; ++r) {
        const T* row = block + r * i_size;
        for (int64_t j = 0; j < w; ++j) {
          const K v = scalar_cast<K>(row[j]);
          const bool replace = better<kMax>(v, best[j]);
          best[j] = replace ? v : best[j];
          index[j] = replace ? r : index[j];
        }
      }
      Index* dst = out + p * i_size + c0;
      for (int64_t j = 0; j < w; ++j) dst[j] = Index(index[j]);
    }
  });
}

template <bool kMax>
void arg_kernel(const KernelCall& call) {
  const Aval& in = call.in_avals[0];
  if (call.out_avals[0].size() == 0) return;
  const size_t axis = size_t(param_ints(call.params, "axes")[0]);
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < axis; ++d) p_size *= in.shape[d];
  for (size_t d = axis + 1; d < in.shape.size(); ++d) i_size *= in.shape[d];
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    dispatch_dtype(call.out_avals[0].dtype, [&](auto index_tag) {
      using Index = decltype(index_tag);
      if constexpr (std::is_integral_v<Index> && !std::is_same_v<Index, bool>) {
        arg_typed<kMax>(in_ptr<T>(call, 0), out_ptr<Index>(call, 0), p_size, in.shape[axis],
                        i_size);
      } else {
        PARAX_UNREACHABLE();
      }
    });
  });
}

template <core::Prim P>
Batched arg_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                  const BatchAxis&) {
  const std::vector<int64_t>& axes = param_ints(params, "axes");
  Params p = params;
  p.set("axes", batched_dims(axes, dims[0]));
  return Batched{{core::bind1(P, {in[0]}, p)}, {batch_dim_without(dims[0], axes)}};
}

}  // namespace

extern const core::PrimRules argmax_rules = {
    .abstract_eval = arg_abstract_eval<true>,
    .sharding_rule = arg_sharding_rule,
    .kernel = arg_kernel<true>,
    .jvp = zero_jvp,
    .batch = arg_batch<core::Prim::argmax>,
};

extern const core::PrimRules argmin_rules = {
    .abstract_eval = arg_abstract_eval<false>,
    .sharding_rule = arg_sharding_rule,
    .kernel = arg_kernel<false>,
    .jvp = zero_jvp,
    .batch = arg_batch<core::Prim::argmin>,
};

}  // namespace parax::prims
