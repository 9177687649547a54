// The kernel of sort, moved out of sort.cpp's rules: every value maps to an unsigned integer
// whose order is JAX's sort order, so one pass per key sorts (key, index) pairs.
#include "prims/kernels/sort.h"

#include <algorithm>
#include <cstring>
#include <tuple>

#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

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

}  // namespace

void sort(const KernelCall& call) {
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
          case 1:
            permute_line<uint8_t>(src, dst, base, i_size, scratch.order);
            break;
          case 2:
            permute_line<uint16_t>(src, dst, base, i_size, scratch.order);
            break;
          case 4:
            permute_line<uint32_t>(src, dst, base, i_size, scratch.order);
            break;
          default:
            permute_line<uint64_t>(src, dst, base, i_size, scratch.order);
            break;
        }
      }
    }
  });
}

}  // namespace parax::prims::kernels
