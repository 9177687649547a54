// select_n(which, case0, case1, ...) picks cases[which] per element. `which` is bool (two
// cases) or any integer dtype; out-of-range indices clamp to the first or last case, as
// XLA's lowering to a tree of selects does. Only bytes move, so cases dispatch on width.
#include <algorithm>
#include <cstring>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

std::string shapes_str(std::span<const Aval> avals) {
  std::string s = "[";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + shape_str(avals[i].shape);
  return s + "]";
}

// JAX's messages, in the order JAX checks: shapes, then dtypes.
std::vector<Aval> select_n_eval(std::span<const Aval> in, const Params&) {
  if (in.size() < 2) throw TypeError("select must have at least one case");
  const Aval& which = in[0];
  const std::span<const Aval> cases = in.subspan(1);
  for (const Aval& c : cases) {
    if (c.shape != cases[0].shape) {
      throw TypeError("select cases must have the same shapes, got " + shapes_str(cases) + ".");
    }
  }
  if (!which.shape.empty() && which.shape != cases[0].shape) {
    const std::string msg =
        "select `which` must be scalar or have the same shape as cases, got `which` shape ";
    throw TypeError(msg + shape_str(which.shape) + " but case shape " +
                    shape_str(cases[0].shape) + ".");
  }
  for (const Aval& c : cases) {
    if (c.dtype == cases[0].dtype) continue;
    std::string got;
    for (const Aval& d : cases) got += (got.empty() ? "" : ", ") + std::string(dtype_name(d.dtype));
    throw TypeError("lax.select requires arguments to have the same dtypes, got " + got +
                    ". (Tip: jnp.where is a similar function that does automatic type "
                    "promotion on inputs).");
  }
  if (which.dtype != DType::bool_ && !is_integer(which.dtype)) {
    throw TypeError("select `which` must be boolean or integer type, got " +
                    std::string(dtype_name(which.dtype)) + ".");
  }
  if (which.dtype == DType::bool_ && cases.size() > 2) {
    throw TypeError("select with boolean `which` cannot have > 2 cases.");
  }
  return {Aval{cases[0].shape, cases[0].dtype, all_weak(cases)}};
}

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

void select_n_kernel(const KernelCall& c) {
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

// `which` has no tangent; the result's tangent selects among the cases' tangents, with
// zeros for cases that have none (unless none has one).
std::vector<Array> select_n_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                std::span<const Array> outs, const Params&) {
  if (!has_tangent(outs[0].dtype())) return {Array()};
  const bool any = std::any_of(tangents.begin() + 1, tangents.end(),
                               [](const Array& t) { return t.valid(); });
  if (!any) return {Array()};
  std::vector<Array> cases;
  for (size_t k = 1; k < primals.size(); ++k) {
    cases.push_back(instantiate(tangents[k], core::aval_of(primals[k])));
  }
  return {lax::select_n(primals[0], cases)};
}

// Each linear case receives the cotangent where it was chosen, zeros elsewhere. Unlike
// JAX's eq(which, k), the first and last cases also take out-of-range indices, because
// the kernel clamps them there (so the transpose matches what the forward op computed).
std::vector<Array> select_n_transpose(std::span<const Array> cts, std::span<const Array> operands,
                                      std::span<const bool> linear, const Params&) {
  PARAX_CHECK(!linear[0], "select_n is not linear in `which`");
  std::vector<Array> out(operands.size());
  const Array& ct = cts[0];
  if (!ct.valid()) return out;
  const Array& which = operands[0];
  const size_t last = operands.size() - 2;
  const Array zeros = zeros_like_aval(core::aval_of(ct));
  for (size_t k = 0; k <= last; ++k) {
    if (!linear[k + 1]) continue;
    if (last == 0) {
      out[k + 1] = ct;
      continue;
    }
    const Array index = constant(double(k), which.dtype());
    const Array chosen = k == 0      ? lax::le(which, index)
                         : k == last ? lax::ge(which, index)
                                     : lax::eq(which, index);
    out[k + 1] = lax::select(chosen, ct, zeros);
  }
  return out;
}

}  // namespace

extern const PrimRules select_n_rules = {.abstract_eval = &select_n_eval,
                                         .sharding_rule = &elementwise_sharding_rule,
                                         .kernel = &select_n_kernel,
                                         .jvp = &select_n_jvp,
                                         .transpose = &select_n_transpose,
                                         .batch = &elementwise_batch<core::Prim::select_n>};

}  // namespace parax::prims
