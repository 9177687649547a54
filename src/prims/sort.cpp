// sort: sorts n operands of one shape along `dimension` by the first `num_keys` of them,
// lexicographically and ascending, in JAX's total order: -0.0 equals 0.0 and every NaN
// sorts last (lax._float_to_int_for_sort), so a stable sort keeps their input order.
#include <algorithm>
#include <cstring>
#include <tuple>

#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {

std::vector<Aval> sort_abstract_eval(std::span<const Aval> in, const Params& params) {
  if (in.empty()) throw TypeError("[sort] operands: got none; expected at least one");
  for (const Aval& a : in) {
    if (a.shape == in[0].shape) continue;
    std::string shapes;
    for (const Aval& b : in) shapes += (shapes.empty() ? "" : " ") + shape_str(b.shape);
    throw TypeError("Arguments to sort must have equal shapes, got: " + shapes);
  }
  const int64_t rank = int64_t(in[0].shape.size());
  const int64_t dimension = param_int(params, "dimension");
  if (dimension < 0 || dimension >= rank) {
    throw ValueError("[sort] dimension: got " + std::to_string(dimension) +
                     " for operands of rank " + std::to_string(rank) +
                     "; expected 0 <= dimension < " + std::to_string(rank));
  }
  const int64_t num_keys = param_int(params, "num_keys");
  if (num_keys < 1 || num_keys > int64_t(in.size())) {
    throw ValueError("num_keys=" + std::to_string(num_keys) +
                     " must be between 1 and len(operand)=" + std::to_string(in.size()));
  }
  return {in.begin(), in.end()};
}

// The sorted dimension must stay whole; every operand and result shares the others.
ShardingRule sort_sharding_rule(std::span<const Aval> in, std::span<const Aval>,
                                const Params& params) {
  const int64_t dimension = param_int(params, "dimension");
  ShardingRule rule;
  std::vector<int> dims;
  for (size_t d = 0; d < in[0].shape.size(); ++d) {
    if (int64_t(d) == dimension) {
      dims.push_back(ShardingRule::kNone);
      continue;
    }
    dims.push_back(rule.num_factors());
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  rule.operands.assign(in.size(), dims);
  rule.results.assign(in.size(), dims);
  rule.keeps_operand_layout = true;  // as JAX returns it
  return rule;
}

// ---------------------------------------------------------------------------------------
// Kernel: every value maps to an unsigned integer whose order is the sort order, so one
// pass per key sorts (key, index) pairs with plain integer compares.

template <int kBytes>
using UInt = std::conditional_t<
    kBytes == 1, uint8_t,
    std::conditional_t<kBytes == 2, uint16_t, std::conditional_t<kBytes == 4, uint32_t, uint64_t>>>;

template <class T>
auto order_key(T v) {
  using U = UInt<sizeof(T)>;
  constexpr U kSign = U(U(1) << (8 * sizeof(T) - 1));
  if constexpr (std::is_same_v<T, bool>) {
    return uint8_t(v);
  } else if constexpr (std::is_integral_v<T> && std::is_unsigned_v<T>) {
    return v;
  } else if constexpr (std::is_integral_v<T>) {
    return U(U(v) ^ kSign);
  } else {
    U bits;
    std::memcpy(&bits, &v, sizeof(T));
    const U magnitude = U(bits & U(~kSign));
    constexpr U kInf = std::is_same_v<T, float16_t>    ? U(0x7C00)
                       : std::is_same_v<T, bfloat16_t> ? U(0x7F80)
                       : std::is_same_v<T, float>      ? U(0x7F800000u)
                                                       : U(0x7FF0000000000000ull);
    if (magnitude > kInf) return U(~U(0));  // every NaN: last, all equal
    if (magnitude == 0) return kSign;       // -0.0 as 0.0
    return (bits & kSign) ? U(~bits) : U(bits | kSign);
  }
}

// Per-task buffers for one line: (key, index) pairs for each key width, and the order.
struct Scratch {
  std::tuple<std::vector<std::pair<uint8_t, int64_t>>, std::vector<std::pair<uint16_t, int64_t>>,
             std::vector<std::pair<uint32_t, int64_t>>, std::vector<std::pair<uint64_t, int64_t>>>
      pairs;
  std::vector<int64_t> order;
};

// Reorders `order` by the key operand's values at `base + order[j] * stride`.
template <class T>
void sort_by_key(const T* key, int64_t base, int64_t stride, bool stable, Scratch& scratch) {
  using U = decltype(order_key(T{}));
  auto& pairs = std::get<std::vector<std::pair<U, int64_t>>>(scratch.pairs);
  std::vector<int64_t>& order = scratch.order;
  pairs.resize(order.size());
  for (size_t j = 0; j < order.size(); ++j) {
    pairs[j] = {order_key(key[base + order[j] * stride]), order[j]};
  }
  auto less = [](const std::pair<U, int64_t>& a, const std::pair<U, int64_t>& b) {
    return a.first < b.first;
  };
  if (stable) {
    std::stable_sort(pairs.begin(), pairs.end(), less);
  } else {
    std::sort(pairs.begin(), pairs.end(), less);
  }
  for (size_t j = 0; j < order.size(); ++j) order[j] = pairs[j].second;
}

template <class W>
void permute_line(const void* src, void* dst, int64_t base, int64_t stride,
                  const std::vector<int64_t>& order) {
  const W* s = static_cast<const W*>(src) + base;
  W* d = static_cast<W*>(dst) + base;
  for (size_t j = 0; j < order.size(); ++j) d[int64_t(j) * stride] = s[order[j] * stride];
}

void sort_kernel(const KernelCall& call) {
  const Aval& first = call.in_avals[0];
  if (first.size() == 0) return;
  const size_t dimension = size_t(param_int(call.params, "dimension"));
  const int64_t num_keys = param_int(call.params, "num_keys");
  const bool is_stable = !call.params.has("is_stable") || call.params.get<bool>("is_stable");
  int64_t p_size = 1;
  int64_t i_size = 1;
  for (size_t d = 0; d < dimension; ++d) p_size *= first.shape[d];
  for (size_t d = dimension + 1; d < first.shape.size(); ++d) i_size *= first.shape[d];
  const int64_t r_size = first.shape[dimension];
  const int64_t grain = std::max<int64_t>(1, kElementGrain / r_size);
  parallel_chunks(p_size * i_size, grain, [&](int64_t begin, int64_t end) {
    Scratch scratch;
    scratch.order.resize(size_t(r_size));
    for (int64_t line = begin; line < end; ++line) {
      const int64_t base = (line / i_size) * r_size * i_size + line % i_size;
      for (int64_t j = 0; j < r_size; ++j) scratch.order[size_t(j)] = j;
      // Least significant key first: stable passes by the earlier keys keep the order
      // the later ones set, which is lexicographic order with ties by input position.
      for (int64_t k = num_keys - 1; k >= 0; --k) {
        const bool stable = is_stable || k < num_keys - 1;
        dispatch_dtype(call.in_avals[size_t(k)].dtype, [&](auto tag) {
          using T = decltype(tag);
          sort_by_key(in_ptr<T>(call, size_t(k)), base, i_size, stable, scratch);
        });
      }
      for (size_t n = 0; n < call.inputs.size(); ++n) {
        const void* src = call.inputs[n];
        void* dst = call.outputs[n];
        switch (dtype_itemsize(call.in_avals[n].dtype)) {
          case 1: permute_line<uint8_t>(src, dst, base, i_size, scratch.order); break;
          case 2: permute_line<uint16_t>(src, dst, base, i_size, scratch.order); break;
          case 4: permute_line<uint32_t>(src, dst, base, i_size, scratch.order); break;
          default: permute_line<uint64_t>(src, dst, base, i_size, scratch.order); break;
        }
      }
    }
  });
}


// Sorting permutes every operand the same way, so the tangents ride along as extra
// (non-key) operands of one sort keyed by the primal keys: linear in them, and its
// transpose (below) is the inverse permutation.
std::vector<Array> sort_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                            std::span<const Array> outs, const Params& params) {
  std::vector<Array> in(primals.begin(), primals.end());
  std::vector<size_t> which;
  for (size_t i = 0; i < tangents.size(); ++i) {
    if (!tangents[i].valid()) continue;
    in.push_back(tangents[i]);
    which.push_back(i);
  }
  std::vector<Array> result(outs.size());
  if (which.empty()) return result;
  const std::vector<Array> sorted = core::bind(core::Prim::sort, std::move(in), params);
  for (size_t k = 0; k < which.size(); ++k) result[which[k]] = sorted[primals.size() + k];
  return result;
}

// Transpose of a sort in its non-key operands (the keys are known): recover the
// permutation p (result j came from position p[j]) by sorting an iota with the keys, then
// send cotangent j back to p[j] by sorting the cotangents keyed by p.
std::vector<Array> sort_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                  std::span<const bool> linear, const Params& params) {
  const int64_t num_keys = param_int(params, "num_keys");
  const int64_t dimension = param_int(params, "dimension");
  for (int64_t k = 0; k < num_keys; ++k) {
    PARAX_CHECK(!linear[size_t(k)], "sort is linear only in its non-key operands");
  }
  std::vector<Array> out(operands.size());
  std::vector<Array> in(operands.begin(), operands.begin() + num_keys);
  in.push_back(lax::broadcasted_iota(DType::int32, operands[0].shape(), dimension));
  const Array perm = core::bind(core::Prim::sort, std::move(in), params).back();
  std::vector<Array> back{perm};
  std::vector<size_t> which;
  for (size_t i = size_t(num_keys); i < operands.size(); ++i) {
    if (!linear[i] || !cts[i].valid()) continue;
    back.push_back(cts[i]);
    which.push_back(i);
  }
  if (which.empty()) return out;
  Params by_perm = params;
  by_perm.set("num_keys", int64_t{1});
  const std::vector<Array> sorted = core::bind(core::Prim::sort, std::move(back), by_perm);
  for (size_t k = 0; k < which.size(); ++k) out[which[k]] = sorted[k + 1];
  return out;
}

// The operands meet at the first batched one's batch dimension; unbatched ones are
// broadcast, as sort's operands share one shape.
Batched sort_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis& axis) {
  const int to = *std::find_if(dims.begin(), dims.end(), [](int d) { return d != kNotMapped; });
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    args.push_back(core::move_batch_dim(in[i], dims[i], to, axis.size));
  }
  Params p = params;
  p.set("dimension", batched_dim(param_int(params, "dimension"), to));
  std::vector<Array> outs = core::bind(core::Prim::sort, std::move(args), p);
  return Batched{std::move(outs), std::vector<int>(in.size(), to)};
}

}  // namespace

extern const core::PrimRules sort_rules = {
    .abstract_eval = sort_abstract_eval,
    .sharding_rule = sort_sharding_rule,
    .kernel = sort_kernel,
    .jvp = sort_jvp,
    .transpose = sort_transpose,
    .batch = sort_batch,
};

}  // namespace parax::prims
