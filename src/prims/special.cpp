// Special functions: log-gamma, digamma, polygamma, the regularized incomplete gamma
// function and the gamma sampler's gradient. Elementwise over floating dtypes (so they
// fuse and batch like the other elementwise primitives); their kernels follow XLA's and
// JAX's algorithms (kernels/special_math.h). igamma with param `derivative` = 1 is JAX's
// igamma_grad_a, its derivative in a: one primitive, since both run the same loops.
#include "parax/special.h"

#include "parax/lax.h"

#include "prims/autodiff_util.h"
#include "prims/elementwise.h"
#include "prims/kernels/special_math.h"

namespace parax::prims {
namespace {
namespace special_impl {

namespace k = kernels;

std::vector<Aval> unary_special_eval(core::Prim prim, std::span<const Aval> in) {
  PARAX_CHECK(in.size() == 1, "operands of " << core::prim_name(prim));
  check_accepts(core::prim_name(prim), in[0], kFloating);
  return {in[0]};
}

template <core::Prim P>
std::vector<Aval> unary_eval(std::span<const Aval> in, const Params&) {
  return unary_special_eval(P, in);
}

// Operands of one floating dtype and equal shapes (rank 0 broadcasts), as lax's
// standard_naryop([_float, _float]).
template <core::Prim P>
std::vector<Aval> binary_eval(std::span<const Aval> in, const Params&) {
  const std::string_view name = core::prim_name(P);
  PARAX_CHECK(in.size() == 2, "operands of " << name);
  Shape shape = elementwise_shape(name, in);
  for (size_t i = 0; i < in.size(); ++i) check_accepts(name, in[i], kFloating, int(i));
  check_same_dtypes("lax." + std::string(name), in);
  return {Aval{std::move(shape), in[0].dtype, all_weak(in)}};
}

template <class F>
void unary_kernel(const KernelCall& c, F f) {
  dispatch_kinds<kFloatKind>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    map_elements<T, T>(c, [&f](T x) { return T(f(C(x))); });
  });
}

template <class F>
void binary_kernel(const KernelCall& c, F f) {
  dispatch_kinds<kFloatKind>(c.in_avals[0].dtype, [&](auto v) {
    using T = decltype(v);
    using C = compute_t<T>;
    map_elements<T, T, T>(c, [&f](T a, T b) { return T(f(C(a), C(b))); });
  });
}

void lgamma_kernel(const KernelCall& c) {
  unary_kernel(c, [](auto x) { return k::lgamma_xla(x); });
}
void digamma_kernel(const KernelCall& c) {
  unary_kernel(c, [](auto x) { return k::digamma_xla(x); });
}
void polygamma_kernel(const KernelCall& c) {
  binary_kernel(c, [](auto m, auto x) { return k::polygamma_xla(m, x); });
}
bool is_grad_a(const Params& params) {
  return params.has("derivative") && params.get<int64_t>("derivative") == 1;
}
void igamma_kernel(const KernelCall& c) {
  if (is_grad_a(c.params)) {
    binary_kernel(c, [](auto a, auto x) {
      return k::igamma_derivative_xla(a, x, k::IgammaMode::kDerivative);
    });
  } else {
    binary_kernel(c, [](auto a, auto x) { return k::igamma_xla(a, x); });
  }
}
void random_gamma_grad_kernel(const KernelCall& c) {
  binary_kernel(c, [](auto a, auto x) {
    return k::igamma_derivative_xla(a, x, k::IgammaMode::kSampleDerivative);
  });
}

Array one_like(const Array& x, double v) { return constant(v, x.dtype()); }

[[noreturn]] void no_rule(const char* name) {
  // JAX's text for a primitive without a differentiation rule.
  throw NotImplementedError(std::string("Differentiation rule for '") + name + "' not implemented");
}

std::vector<Array> lgamma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                              std::span<const Array>, const Params&) {
  if (!tangents[0].valid()) return {Array()};
  return {lax::mul(tangents[0], lax::digamma(primals[0]))};
}

std::vector<Array> digamma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                               std::span<const Array>, const Params&) {
  if (!tangents[0].valid()) return {Array()};
  const Array& x = primals[0];
  return {lax::mul(tangents[0], lax::polygamma(one_like(x, 1), x))};
}

std::vector<Array> polygamma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                                 std::span<const Array> outs, const Params&) {
  if (tangents[0].valid()) {
    throw ValueError("polygamma gradient with respect to m is not supported");
  }
  if (!tangents[1].valid()) return {Array()};
  const Array &m = primals[0], &x = primals[1];
  return {broadcast_to(lax::mul(tangents[1], lax::polygamma(lax::add(m, one_like(m, 1)), x)),
                       outs[0].shape())};
}

std::vector<Array> igamma_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                              std::span<const Array> outs, const Params& params) {
  if (is_grad_a(params)) no_rule("igamma_grad_a");
  const Array &a = primals[0], &x = primals[1];
  Array t;
  if (tangents[0].valid()) t = lax::mul(tangents[0], lax::igamma_grad_a(a, x));
  if (tangents[1].valid()) {
    // d/dx P(a, x) = x^(a-1) e^-x / Gamma(a).
    const Array density = lax::exp(lax::sub(
        lax::add(lax::neg(x), lax::mul(lax::sub(a, one_like(a, 1)), lax::log(x))), lax::lgamma(a)));
    t = add_tangents(t, lax::mul(tangents[1], density));
  }
  return {broadcast_to(t, outs[0].shape())};
}

std::vector<Array> random_gamma_grad_jvp(std::span<const Array>, std::span<const Array>,
                                         std::span<const Array>, const Params&) {
  no_rule("random_gamma_grad");
}

template <core::Prim P>
constexpr PrimRules rules(core::AbstractEvalFn eval, core::KernelFn kernel, core::JvpFn jvp) {
  return {.abstract_eval = eval,
          .sharding_rule = &elementwise_sharding_rule,
          .kernel = kernel,
          .jvp = jvp,
          .batch = &elementwise_batch<P>};
}

}  // namespace special_impl
}  // namespace

extern const PrimRules lgamma_rules = special_impl::rules<core::Prim::lgamma>(
    &special_impl::unary_eval<core::Prim::lgamma>, &special_impl::lgamma_kernel,
    &special_impl::lgamma_jvp);
extern const PrimRules digamma_rules = special_impl::rules<core::Prim::digamma>(
    &special_impl::unary_eval<core::Prim::digamma>, &special_impl::digamma_kernel,
    &special_impl::digamma_jvp);
extern const PrimRules polygamma_rules = special_impl::rules<core::Prim::polygamma>(
    &special_impl::binary_eval<core::Prim::polygamma>, &special_impl::polygamma_kernel,
    &special_impl::polygamma_jvp);
extern const PrimRules igamma_rules = special_impl::rules<core::Prim::igamma>(
    &special_impl::binary_eval<core::Prim::igamma>, &special_impl::igamma_kernel,
    &special_impl::igamma_jvp);
extern const PrimRules random_gamma_grad_rules = special_impl::rules<core::Prim::random_gamma_grad>(
    &special_impl::binary_eval<core::Prim::random_gamma_grad>,
    &special_impl::random_gamma_grad_kernel, &special_impl::random_gamma_grad_jvp);

}  // namespace parax::prims
