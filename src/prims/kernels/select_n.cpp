// The kernel of select_n: memcpy-like fast paths for scalar or uniform cases, else a loop
// over the `which` operand.
#include "prims/kernels/select_n.h"

#include <algorithm>
#include <cstring>

#include "prims/elementwise.h"
#include "prims/prim_util.h"

namespace parax::prims::kernels {
namespace {

template <class W>
uint64_t case_index(W w, uint64_t last) {
  if constexpr (std::is_signed_v<W>) {
    if (w < 0) return 0;
  }
  return std::min(uint64_t(w), last);
}

// The case a rank-0 `which` picks.
uint64_t scalar_case(const KernelCall& c) {
  uint64_t k = 0;
  dispatch_kinds<kBoolKind | kIntKinds>(c.in_avals[0].dtype, [&](auto w) {
    using W = decltype(w);
    k = case_index(in_ptr<W>(c, 0)[0], c.inputs.size() - 2);
  });
  return k;
}

template <class W, class V>
void select_loop(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  const W* which = in_ptr<W>(c, 0);
  const int64_t which_stride = c.in_avals[0].size() == n ? 1 : 0;
  std::vector<const V*> cases;
  std::vector<int64_t> strides;  // 0 for a rank-0 case (the compiler's folded fills)
  for (size_t k = 1; k < c.inputs.size(); ++k) {
    cases.push_back(in_ptr<V>(c, k));
    strides.push_back(c.in_avals[k].size() == n ? 1 : 0);
  }
  const uint64_t last = cases.size() - 1;
  V* out = out_ptr<V>(c, 0);
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    for (int64_t i = begin; i < end; ++i) {
      const uint64_t k = case_index(which[i * which_stride], last);
      out[i] = cases[k][i * strides[k]];
    }
  });
}

// A bool `which` over two cases, some of them one value (rank 0): the value is spread over
// a stack tile so the vector select still runs.
bool select_scalar_cases(const KernelCall& c, int64_t n, int64_t bytes) {
  constexpr int64_t kFill = 1024;
  const bool* which = in_ptr<bool>(c, 0);
  auto* out = static_cast<uint8_t*>(c.outputs[0]);
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    alignas(64) uint8_t fill[2][kFill * 8];
    const uint8_t* src[2];
    bool scalar[2];
    for (int k = 0; k < 2; ++k) {
      src[k] = static_cast<const uint8_t*>(c.inputs[size_t(k) + 1]);
      scalar[k] = c.in_avals[size_t(k) + 1].size() != n;
      if (!scalar[k]) continue;
      for (int64_t i = 0; i < kFill; ++i) std::memcpy(fill[k] + i * bytes, src[k], size_t(bytes));
    }
    for (int64_t t = begin; t < end; t += kFill) {
      const int64_t len = std::min(kFill, end - t);
      const uint8_t* f = scalar[0] ? fill[0] : src[0] + t * bytes;
      const uint8_t* u = scalar[1] ? fill[1] : src[1] + t * bytes;
      simd::select(int(bytes), which + t, f, u, out + t * bytes, len);
    }
  });
  return true;
}

// A rank-0 `which` picks one whole case; a bool `which` over two cases (jnp.where) takes
// the vector loop.
bool select_fast(const KernelCall& c) {
  const int64_t n = c.out_avals[0].size();
  const int64_t bytes = dtype_itemsize(c.out_avals[0].dtype);
  if (c.in_avals[0].size() != n) {
    const uint64_t k = scalar_case(c);
    const auto* src = static_cast<const uint8_t*>(c.inputs[1 + k]);
    auto* dst = static_cast<uint8_t*>(c.outputs[0]);
    if (c.in_avals[1 + k].size() != n) {  // one value everywhere
      parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
        for (int64_t i = begin; i < end; ++i) std::memcpy(dst + i * bytes, src, size_t(bytes));
      });
      return true;
    }
    parallel_chunks(n * bytes, 8 * kElementGrain, [&](int64_t begin, int64_t end) {
      std::memcpy(dst + begin, src + begin, size_t(end - begin));
    });
    return true;
  }
  if (c.in_avals[0].dtype != DType::bool_ || c.inputs.size() != 3) return false;
  if (c.in_avals[1].size() != n || c.in_avals[2].size() != n) {
    return select_scalar_cases(c, n, bytes);
  }
  const bool* which = in_ptr<bool>(c, 0);
  const auto* on_false = static_cast<const uint8_t*>(c.inputs[1]);
  const auto* on_true = static_cast<const uint8_t*>(c.inputs[2]);
  auto* out = static_cast<uint8_t*>(c.outputs[0]);
  parallel_chunks(n, kElementGrain, [&](int64_t begin, int64_t end) {
    simd::select(int(bytes), which + begin, on_false + begin * bytes, on_true + begin * bytes,
                 out + begin * bytes, end - begin);
  });
  return true;
}

}  // namespace

void select_n(const KernelCall& c) {
  if (select_fast(c)) return;
  dispatch_kinds<kBoolKind | kIntKinds>(c.in_avals[0].dtype, [&](auto w) {
    using W = decltype(w);
    switch (dtype_itemsize(c.out_avals[0].dtype)) {
      case 1:
        return select_loop<W, uint8_t>(c);
      case 2:
        return select_loop<W, uint16_t>(c);
      case 4:
        return select_loop<W, uint32_t>(c);
      case 8:
        return select_loop<W, uint64_t>(c);
    }
    PARAX_UNREACHABLE();
  });
}

}  // namespace parax::prims::kernels
