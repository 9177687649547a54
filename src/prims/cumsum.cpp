// cumsum: running sums along `axis`, from the end when `reverse`. Floats accumulate in
// double (float32 too: a serial float32 running sum loses ~n ulps over long axes, and
// the wider add costs nothing next to memory traffic); integers wrap around.
#include <algorithm>

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

// JAX's lax._cumred_shape_rule and _reduce_number_dtype_rule.
std::vector<Aval> cumsum_abstract_eval(std::span<const Aval> in, const Params& params) {
  const Aval& x = in[0];
  const int64_t axis = param_int(params, "axis");
  if (axis < 0) throw ValueError("XLA operations do not allow negative axes");
  if (axis >= int64_t(x.shape.size())) {
    throw ValueError("axis " + std::to_string(axis) + " is out of bounds for array of shape " +
                     shape_str(x.shape));
  }
  if (x.dtype == DType::bool_) {
    throw TypeError("cumsum does not accept dtype bool. Accepted dtypes are subtypes of number.");
  }
  return {x};
}

// The scanned dimension must stay whole; the others are independent.
ShardingRule cumsum_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                  const Params& params) {
  const int64_t axis = param_int(params, "axis");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == axis) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  rule.operands.push_back(dims);
  rule.results.push_back(dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

template <class T>
constexpr auto cumsum_acc_tag() {
  if constexpr (!std::is_integral_v<T>) {
    return double{};
  } else if constexpr (sizeof(T) < 4) {
    return uint32_t{};  // narrower unsigned types would promote to int and overflow
  } else {
    return std::make_unsigned_t<T>{};
  }
}

constexpr int64_t kColumns = 2048;

// x and out are [P, R, I]; each task scans one block of up to kColumns columns.
template <class T>
void cumsum_typed(const T* x, T* out, int64_t p_size, int64_t r_size, int64_t i_size,
                  bool reverse) {
  using A = decltype(cumsum_acc_tag<T>());
  if (i_size == 1) {
    parallel_chunks(p_size, std::max<int64_t>(1, kElementGrain / r_size), [&](int64_t begin,
                                                                           int64_t end) {
      for (int64_t p = begin; p < end; ++p) {
        const T* src = x + p * r_size;
        T* dst = out + p * r_size;
        A acc = 0;
        for (int64_t step = 0; step < r_size; ++step) {
          const int64_t r = reverse ? r_size - 1 - step : step;
          acc = A(acc + scalar_cast<A>(src[r]));
          dst[r] = scalar_cast<T>(acc);
        }
      }
    });
    return;
  }
  const int64_t blocks = (i_size + kColumns - 1) / kColumns;
  const int64_t grain = std::max<int64_t>(1, kElementGrain / (r_size * std::min(i_size, kColumns)));
  parallel_chunks(p_size * blocks, grain, [&](int64_t begin, int64_t end) {
    A acc[kColumns];
    for (int64_t t = begin; t < end; ++t) {
      const int64_t p = t / blocks;
      const int64_t c0 = (t % blocks) * kColumns;
      const int64_t w = std::min(kColumns, i_size - c0);
      const int64_t offset = p * r_size * i_size + c0;
      std::fill_n(acc, w, A(0));
      for (int64_t step = 0; step < r_size; ++step) {
        const int64_t r = reverse ? r_size - 1 - step : step;
        const T* src = x + offset + r * i_size;
        T* dst = out + offset + r * i_size;
        for (int64_t j = 0; j < w; ++j) {
          acc[j] = A(acc[j] + scalar_cast<A>(src[j]));
          dst[j] = scalar_cast<T>(acc[j]);
        }
      }
    }
  });
}

void cumsum_kernel(const KernelCall& call) {
  const Aval& in = call.in_avals[0];
  if (in.size() == 0) return;
  const size_t axis = size_t(param_int(call.params, "axis"));
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < axis; ++d) p_size *= in.shape[d];
  for (size_t d = axis + 1; d < in.shape.size(); ++d) i_size *= in.shape[d];
  const bool reverse = call.params.has("reverse") && call.params.get<bool>("reverse");
  dispatch_dtype(in.dtype, [&](auto tag) {
    using T = decltype(tag);
    if constexpr (std::is_same_v<T, bool>) {
      PARAX_UNREACHABLE();
    } else {
      cumsum_typed(in_ptr<T>(call, 0), out_ptr<T>(call, 0), p_size, in.shape[axis], i_size,
                   reverse);
    }
  });
}


// The adjoint of a running sum is the running sum the other way.
std::vector<Array> cumsum_transpose(std::span<const Array> cts, std::span<const Array>,
                                    std::span<const bool>, const Params& params) {
  if (!cts[0].valid()) return {Array()};
  const bool reverse = params.has("reverse") && params.get<bool>("reverse");
  return {core::bind1(core::Prim::cumsum, {cts[0]},
                      {{"axis", param_int(params, "axis")}, {"reverse", !reverse}})};
}

Batched cumsum_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                     const BatchAxis&) {
  Params p = params;
  p.set("axis", batched_dim(param_int(params, "axis"), dims[0]));
  return Batched{{core::bind1(core::Prim::cumsum, {in[0]}, p)}, {dims[0]}};
}

// One add per operand element, as a reduction's.
core::Cost cumsum_cost(std::span<const Aval> in, std::span<const Aval>, const Params&,
                       std::span<const int64_t>) {
  return {.flops = double(in[0].size())};
}

}  // namespace

extern const core::PrimRules cumsum_rules = {
    .abstract_eval = cumsum_abstract_eval,
    .sharding_rule = cumsum_sharding_rule,
    .kernel = cumsum_kernel,
    .jvp = unary_linear_jvp<core::Prim::cumsum>,
    .transpose = cumsum_transpose,
    .batch = cumsum_batch,
    .cost = cumsum_cost,
};

}  // namespace parax::prims
