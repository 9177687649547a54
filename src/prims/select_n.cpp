// select_n(which, case0, case1, ...) picks cases[which] per element. `which` is bool (two
// cases) or any integer dtype; out-of-range indices clamp to the first or last case, as
// XLA's lowering to a tree of selects does. Only bytes move, so cases dispatch on width.
#include "prims/kernels/select_n.h"

#include <algorithm>

#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {
namespace select_n_impl {

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
    throw TypeError(msg + shape_str(which.shape) + " but case shape " + shape_str(cases[0].shape) +
                    ".");
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

// `which` has no tangent; the result's tangent selects among the cases' tangents, with
// zeros for cases that have none (unless none has one).
std::vector<Array> select_n_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                std::span<const Array> outs, const Params&) {
  if (!has_tangent(outs[0].dtype())) return {Array()};
  const bool any =
      std::any_of(tangents.begin() + 1, tangents.end(), [](const Array& t) { return t.valid(); });
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

// The elementwise batching rule, except that the cases keep one shape: select_n does not
// broadcast a rank-0 case as lax's other elementwise primitives do, so every case is
// brought to the batched shape (an unbatched one broadcast), and `which` too unless it is
// an unbatched scalar.
Batched select_n_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                       const BatchAxis& axis) {
  Shape element = in[1].shape();
  if (dims[1] != kNotMapped) element.erase(element.begin() + dims[1]);
  Shape full = element;
  full.insert(full.begin(), axis.size);
  auto broadcast = [&](const Array& x, std::vector<int64_t> broadcast_dims) {
    return core::bind1(core::Prim::broadcast_in_dim, {x},
                       {{"shape", full}, {"broadcast_dimensions", std::move(broadcast_dims)}});
  };
  std::vector<Array> args;
  for (size_t i = 0; i < in.size(); ++i) {
    if (dims[i] != kNotMapped) {
      Array x = core::move_batch_dim(in[i], dims[i], 0, axis.size);
      if (x.ndim() == 1 && !element.empty()) x = broadcast(x, {0});  // a batch of scalar `which`
      args.push_back(std::move(x));
    } else if (i == 0 && in[i].ndim() == 0) {
      args.push_back(in[i]);
    } else {
      std::vector<int64_t> bd;
      for (int64_t k = 0; k < in[i].ndim(); ++k) bd.push_back(k + 1);
      args.push_back(broadcast(in[i], std::move(bd)));
    }
  }
  return Batched{core::bind(core::Prim::select_n, std::move(args), params), {0}};
}

}  // namespace select_n_impl
}  // namespace

extern const PrimRules select_n_rules = {.abstract_eval = &select_n_impl::select_n_eval,
                                         .sharding_rule = &elementwise_sharding_rule,
                                         .kernel = kernels::select_n,
                                         .jvp = &select_n_impl::select_n_jvp,
                                         .transpose = &select_n_impl::select_n_transpose,
                                         .batch = &select_n_impl::select_n_batch};

}  // namespace parax::prims
