// Automatic differentiation over pytrees of Arrays: jvp, vjp, grad, value_and_grad. They
// compose with each other and with jit in any order (jit(grad(f)), grad(grad(f)), grad of
// a jitted function), and the gradient of a sharded program is a sharded program.
#pragma once

#include <functional>
#include <memory>
#include <tuple>
#include <utility>
#include <vector>

#include "parax/jit.h"
#include "parax/vmap.h"

namespace parax {

namespace detail {

struct LinearState;

// f linearized at a point: its flat outputs, and a map from output cotangents to input
// cotangents (one per input leaf).
struct FlatVjp {
  std::vector<Array> outs;
  std::shared_ptr<const LinearState> state;
};
// What grad checks of the function's output before differentiating anything.
enum class GradOutput { any, scalar, scalar_with_aux };
// For `scalar` (grad), checks that the output is one real scalar; for `scalar_with_aux`,
// that it is a pair whose first element is one. Differentiates with respect to the leaves
// `wrt` marks (empty: all); the others get invalid cotangents.
FlatVjp vjp_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                 const FlatFn& fn, TreeDef* out_def, GradOutput check = GradOutput::any,
                 const std::vector<bool>& wrt = {});
// Checks the cotangents against the outputs' types (JAX's _vjp_pullback_wrapper) and
// transposes. `ct_def`, when given, is the cotangent's tree structure, checked against
// `out_def` first.
std::vector<Array> vjp_apply(const FlatVjp& v, const std::vector<Array>& cts,
                             const TreeDef* ct_def = nullptr, const TreeDef* out_def = nullptr);
// JAX's checks on jvp's arguments: equal tree structures, and per leaf the tangent dtype
// (the primal's for floats; parax has no float0, so an integer or bool primal takes a
// tangent of its own dtype, which counts as zero) and shape.
void check_jvp_args(const std::vector<Array>& primals, const std::vector<TreeDef>& defs,
                    const std::vector<Array>& tangents, const std::vector<TreeDef>& tdefs);
// grad's check on the leaves it differentiates with respect to (JAX's
// _check_input_dtype_revderiv): floating dtypes only.
void check_grad_inputs(const std::vector<Array>& leaves);

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const std::vector<Array>& leaves,
                                                           const std::vector<Array>& tangents,
                                                           const std::vector<TreeDef>& defs,
                                                           const FlatFn& fn, TreeDef* out_def);
// Checks that a grad output is a real scalar (JAX's TypeError) and returns ones like it.
Array grad_seed(const Array& out);
// Raises TypeError (JAX's "Gradient only defined for scalar-output functions") when the
// function's output has no array leaves to differentiate.
void check_grad_has_output(size_t leaves, const TreeDef& out_def);
Array stop_gradient(const Array& x);

// The leaves of argument `i` out of the flat cotangents of all arguments.
inline std::vector<Array> arg_leaves(const std::vector<Array>& all,
                                     const std::vector<TreeDef>& defs, size_t i) {
  size_t begin = 0;
  for (size_t k = 0; k < i; ++k) begin += size_t(defs[k].num_leaves());
  return {all.begin() + long(begin), all.begin() + long(begin + size_t(defs[i].num_leaves()))};
}

// Marks the leaves of the arguments `args`, as grad's argnums: the others are held
// constant (as JAX closes over them), so no cotangent is computed for them.
inline std::vector<bool> arg_mask(const std::vector<TreeDef>& defs,
                                  std::initializer_list<size_t> args) {
  std::vector<size_t> begin{0};
  for (const TreeDef& d : defs) begin.push_back(begin.back() + size_t(d.num_leaves()));
  std::vector<bool> mask(begin.back(), false);
  for (size_t a : args) {
    for (size_t j = begin[a]; j < begin[a + 1]; ++j) mask[j] = true;
  }
  return mask;
}

// jacfwd / jacrev over flat leaves: the Jacobian blocks, one per (output leaf, input leaf
// `wrt` marks), output-major; block (i, j) has shape out_i.shape + in_j.shape. With `aux`,
// fn returns (out, aux): the blocks are out's, and *aux receives aux's leaves, undifferentiated.
std::vector<Array> jacfwd_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                               const FlatFn& fn, TreeDef* out_def, const std::vector<bool>& wrt,
                               std::vector<Array>* aux = nullptr);
std::vector<Array> jacrev_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                               const FlatFn& fn, TreeDef* out_def, const std::vector<bool>& wrt,
                               std::vector<Array>* aux = nullptr);
// Returns `outer` with each leaf replaced by `inner` (JAX's tree_transpose of a Jacobian).
TreeDef nest_tree(const TreeDef& outer, const TreeDef& inner);
// Evaluates the linear part of `v` forward on input tangents (one per input leaf): the
// output tangents (linearize's f_jvp).
std::vector<Array> linear_apply(const FlatVjp& v, const std::vector<Array>& tangents);
// Checks that a has_aux function returned a pair (JAX's TypeError).
void check_aux_output(const TreeDef& out_def);

// The type of pytree `T` with every Array leaf replaced by `Leaf` (a Jacobian's type).
template <class T, class Leaf>
struct ReplaceLeaf {
  static_assert(sizeof(T) == 0,
                "jacfwd/jacrev: the output must be a pytree of std containers (a registered "
                "struct cannot hold other leaf types)");
};
template <class Leaf>
struct ReplaceLeaf<Array, Leaf> {
  using type = Leaf;
};
template <class T, class A, class Leaf>
struct ReplaceLeaf<std::vector<T, A>, Leaf> {
  using type = std::vector<typename ReplaceLeaf<T, Leaf>::type>;
};
template <class T, size_t N, class Leaf>
struct ReplaceLeaf<std::array<T, N>, Leaf> {
  using type = std::array<typename ReplaceLeaf<T, Leaf>::type, N>;
};
template <class A, class B, class Leaf>
struct ReplaceLeaf<std::pair<A, B>, Leaf> {
  using type = std::pair<typename ReplaceLeaf<A, Leaf>::type, typename ReplaceLeaf<B, Leaf>::type>;
};
template <class... T, class Leaf>
struct ReplaceLeaf<std::tuple<T...>, Leaf> {
  using type = std::tuple<typename ReplaceLeaf<T, Leaf>::type...>;
};
template <class T, class C, class A, class Leaf>
struct ReplaceLeaf<std::map<std::string, T, C, A>, Leaf> {
  using type = std::map<std::string, typename ReplaceLeaf<T, Leaf>::type>;
};

}  // namespace detail

// Positions of the arguments to differentiate with respect to: argnums<0, 2>.
template <size_t... I>
struct Argnums {};
template <size_t... I>
inline constexpr Argnums<I...> argnums{};
// Marks a function returning (value, aux) for grad, value_and_grad, jvp, vjp, jacfwd,
// jacrev and hessian.
struct HasAux {};
inline constexpr HasAux has_aux{};

// Returns x, with a zero derivative.
inline Array stop_gradient(const Array& x) { return detail::stop_gradient(x); }

// Returns (f(primals...), the directional derivative of f along tangents...), both pytrees.
template <class F, class... Args>
auto jvp(const F& f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  std::vector<Array> leaves, tleaves;
  std::vector<TreeDef> defs, tdefs;
  std::apply([&](const auto&... a) { detail::flatten_args(leaves, defs, a...); }, primals);
  std::apply([&](const auto&... a) { detail::flatten_args(tleaves, tdefs, a...); }, tangents);
  detail::check_jvp_args(leaves, defs, tleaves, tdefs);
  TreeDef out_def;
  auto [outs, touts] =
      detail::jvp_flat(leaves, tleaves, defs, detail::flat_fn<F, Args...>(f, defs), &out_def);
  return std::make_pair(tree::unflatten<R>(out_def, outs), tree::unflatten<R>(out_def, touts));
}

// Returns (f(args...), vjp_fn) where vjp_fn(cotangent of the output) returns the tuple of
// the arguments' cotangents.
template <class F, class... Args>
auto vjp(const F& f, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  detail::flatten_args(leaves, defs, args...);
  TreeDef out_def;
  detail::FlatVjp v =
      detail::vjp_flat(leaves, defs, detail::flat_fn<F, Args...>(f, defs), &out_def);
  R out = tree::unflatten<R>(out_def, v.outs);
  auto pullback = [v, defs, out_def](const R& ct) {
    auto [ct_leaves, ct_def] = tree::flatten(ct);
    std::vector<Array> all = detail::vjp_apply(v, ct_leaves, &ct_def, &out_def);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(
          tree::unflatten<std::decay_t<Args>>(defs[I], detail::arg_leaves(all, defs, I))...);
    }
    (std::index_sequence_for<Args...>{});
  };
  return std::make_pair(std::move(out), std::move(pullback));
}

namespace detail {

// value_and_grad's engine: returns (value or (value, aux), gradients of the chosen args).
template <bool kAux, size_t... I, class F, class... Args>
auto value_and_grad_impl(const F& f, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  flatten_args(leaves, defs, args...);
  TreeDef out_def;
  std::vector<Array> wrt;
  (
      [&] {
        std::vector<Array> part = arg_leaves(leaves, defs, I);
        wrt.insert(wrt.end(), part.begin(), part.end());
      }(),
      ...);
  check_grad_inputs(wrt);
  FlatVjp v =
      vjp_flat(leaves, defs, flat_fn<F, Args...>(f, defs), &out_def,
               kAux ? GradOutput::scalar_with_aux : GradOutput::scalar, arg_mask(defs, {I...}));
  // With aux, the function's first output leaf is the value.
  check_grad_has_output(v.outs.size(), out_def);
  std::vector<Array> cts(v.outs.size());
  cts[0] = grad_seed(v.outs[0]);
  std::vector<Array> all = vjp_apply(v, cts);
  using ArgsTuple = std::tuple<std::decay_t<Args>...>;
  auto grads = [&] {
    if constexpr (sizeof...(I) == 1) {
      constexpr size_t k = (I, ...);
      return tree::unflatten<std::tuple_element_t<k, ArgsTuple>>(defs[k], arg_leaves(all, defs, k));
    } else {
      return std::make_tuple(tree::unflatten<std::tuple_element_t<I, ArgsTuple>>(
          defs[I], arg_leaves(all, defs, I))...);
    }
  }();
  return std::make_pair(tree::unflatten<R>(out_def, v.outs), std::move(grads));
}

}  // namespace detail

// Returns a function computing (f(args...), gradient of f with respect to argument 0).
template <class F>
auto value_and_grad(F f) {
  return [f](const auto&... args) { return detail::value_and_grad_impl<false, 0>(f, args...); };
}
// ... with respect to the arguments in `argnums` (a tuple of gradients for several).
template <class F, size_t... I>
auto value_and_grad(F f, Argnums<I...>) {
  return [f](const auto&... args) { return detail::value_and_grad_impl<false, I...>(f, args...); };
}
// ... for f returning (value, aux): returns ((value, aux), gradients).
template <class F, size_t... I>
auto value_and_grad(F f, Argnums<I...>, HasAux) {
  return [f](const auto&... args) { return detail::value_and_grad_impl<true, I...>(f, args...); };
}

// Returns a function computing the gradient of scalar-valued f with respect to argument 0
// (a pytree shaped like that argument).
template <class F>
auto grad(F f) {
  return
      [f](const auto&... args) { return detail::value_and_grad_impl<false, 0>(f, args...).second; };
}
template <class F, size_t... I>
auto grad(F f, Argnums<I...>) {
  return [f](const auto&... args) {
    return detail::value_and_grad_impl<false, I...>(f, args...).second;
  };
}

// ... for f returning (value, aux): returns (gradients, aux).
template <class F>
auto grad(F f, HasAux) {
  return [f](const auto&... args) {
    auto [value_aux, grads] = detail::value_and_grad_impl<true, 0>(f, args...);
    return std::make_pair(std::move(grads), std::get<1>(std::move(value_aux)));
  };
}
template <class F, size_t... I>
auto grad(F f, Argnums<I...>, HasAux) {
  return [f](const auto&... args) {
    auto [value_aux, grads] = detail::value_and_grad_impl<true, I...>(f, args...);
    return std::make_pair(std::move(grads), std::get<1>(std::move(value_aux)));
  };
}
// ... for f returning (value, aux), with respect to argument 0.
template <class F>
auto value_and_grad(F f, HasAux) {
  return [f](const auto&... args) { return detail::value_and_grad_impl<true, 0>(f, args...); };
}

// jvp of f returning (out, aux): returns (out, tangent of out, aux).
template <class F, class... Args>
auto jvp(const F& f, const std::tuple<Args...>& primals, const std::tuple<Args...>& tangents,
         HasAux) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  using Out = std::decay_t<std::tuple_element_t<0, R>>;
  using Aux = std::decay_t<std::tuple_element_t<1, R>>;
  std::vector<Array> leaves, tleaves;
  std::vector<TreeDef> defs, tdefs;
  std::apply([&](const auto&... a) { detail::flatten_args(leaves, defs, a...); }, primals);
  std::apply([&](const auto&... a) { detail::flatten_args(tleaves, tdefs, a...); }, tangents);
  detail::check_jvp_args(leaves, defs, tleaves, tdefs);
  TreeDef out_def;
  auto [outs, touts] =
      detail::jvp_flat(leaves, tleaves, defs, detail::flat_fn<F, Args...>(f, defs), &out_def);
  detail::check_aux_output(out_def);
  const size_t n = size_t(out_def.children[0].num_leaves());
  auto part = [](const std::vector<Array>& v, size_t b, size_t e) {
    return std::vector<Array>(v.begin() + long(b), v.begin() + long(e));
  };
  return std::make_tuple(tree::unflatten<Out>(out_def.children[0], part(outs, 0, n)),
                         tree::unflatten<Out>(out_def.children[0], part(touts, 0, n)),
                         tree::unflatten<Aux>(out_def.children[1], part(outs, n, outs.size())));
}

// vjp of f returning (out, aux): returns (out, vjp_fn, aux).
template <class F, class... Args>
auto vjp(const F& f, HasAux, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  using Out = std::decay_t<std::tuple_element_t<0, R>>;
  using Aux = std::decay_t<std::tuple_element_t<1, R>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  detail::flatten_args(leaves, defs, args...);
  TreeDef out_def;
  detail::FlatVjp v =
      detail::vjp_flat(leaves, defs, detail::flat_fn<F, Args...>(f, defs), &out_def);
  detail::check_aux_output(out_def);
  const TreeDef def0 = out_def.children[0];
  const size_t n = size_t(def0.num_leaves());
  Out out = tree::unflatten<Out>(def0, {v.outs.begin(), v.outs.begin() + long(n)});
  Aux aux = tree::unflatten<Aux>(out_def.children[1], {v.outs.begin() + long(n), v.outs.end()});
  auto pullback = [v, defs, def0](const Out& ct) {
    auto [ct_leaves, ct_def] = tree::flatten(ct);
    std::vector<Array> head(v.outs.begin(), v.outs.begin() + long(ct_leaves.size()));
    detail::FlatVjp main{head, v.state};
    std::vector<Array> all = detail::vjp_apply(main, ct_leaves, &ct_def, &def0);
    return [&]<size_t... I>(std::index_sequence<I...>) {
      return std::make_tuple(
          tree::unflatten<std::decay_t<Args>>(defs[I], detail::arg_leaves(all, defs, I))...);
    }
    (std::index_sequence_for<Args...>{});
  };
  return std::make_tuple(std::move(out), std::move(pullback), std::move(aux));
}

// Returns (f(primals...), f_jvp) where f_jvp(tangents...) evaluates f's linearization at
// primals (JAX's jax.linearize).
template <class F, class... Args>
auto linearize(const F& f, const Args&... primals) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  detail::flatten_args(leaves, defs, primals...);
  TreeDef out_def;
  detail::FlatVjp v =
      detail::vjp_flat(leaves, defs, detail::flat_fn<F, Args...>(f, defs), &out_def);
  R out = tree::unflatten<R>(out_def, v.outs);
  auto f_jvp = [v, defs, out_def](const std::decay_t<Args>&... tangents) {
    std::vector<Array> tleaves;
    std::vector<TreeDef> tdefs;
    detail::flatten_args(tleaves, tdefs, tangents...);
    if (tdefs != defs) {
      throw ValueError("linearize's jvp function: the tangents' tree structure " +
                       TreeDef{TreeDef::Kind::tuple, "", {}, tdefs}.to_string() +
                       " does not match the primals' " +
                       TreeDef{TreeDef::Kind::tuple, "", {}, defs}.to_string());
    }
    return tree::unflatten<R>(out_def, detail::linear_apply(v, tleaves));
  };
  return std::make_pair(std::move(out), std::move(f_jvp));
}

namespace detail {

// The Jacobian's pytree: f's output with each leaf the tree of the argument (one argnum) or
// the tuple of the arguments (several). With kAux, f returns (out, aux) and the result is
// (Jacobian of out, aux).
template <bool kRev, bool kAux, size_t... I, class F, class... Args>
auto jacobian_impl(const F& f, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  using ArgsTuple = std::tuple<std::decay_t<Args>...>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  flatten_args(leaves, defs, args...);
  TreeDef out_def;
  const std::vector<bool> wrt = arg_mask(defs, {I...});
  std::vector<Array> aux_leaves;
  std::vector<Array> blocks = (kRev ? jacrev_flat : jacfwd_flat)(
      leaves, defs, flat_fn<F, Args...>(f, defs), &out_def, wrt, kAux ? &aux_leaves : nullptr);
  auto jacobian = [&]<class Out>(const TreeDef& def) {
    if constexpr (sizeof...(I) == 1) {
      constexpr size_t k = (I, ...);
      using In = std::tuple_element_t<k, ArgsTuple>;
      using J = typename ReplaceLeaf<Out, In>::type;
      return tree::unflatten<J>(nest_tree(def, defs[k]), blocks);
    } else {
      using In = std::tuple<std::tuple_element_t<I, ArgsTuple>...>;
      using J = typename ReplaceLeaf<Out, In>::type;
      return tree::unflatten<J>(nest_tree(def, TreeDef{TreeDef::Kind::tuple, "", {}, {defs[I]...}}),
                                blocks);
    }
  };
  if constexpr (kAux) {
    using Out = std::decay_t<std::tuple_element_t<0, R>>;
    using Aux = std::decay_t<std::tuple_element_t<1, R>>;
    return std::make_pair(jacobian.template operator()<Out>(out_def.children[0]),
                          tree::unflatten<Aux>(out_def.children[1], aux_leaves));
  } else {
    return jacobian.template operator()<R>(out_def);
  }
}

}  // namespace detail

// Returns a function computing the Jacobian of f with respect to argument 0 (or those in
// `argnums`) by forward mode: vmap of jvp over the input basis. Each block has shape
// out.shape + in.shape. With has_aux, f returns (out, aux) and the function returns
// (Jacobian of out, aux).
template <class F>
auto jacfwd(F f) {
  return [f](const auto&... args) { return detail::jacobian_impl<false, false, 0>(f, args...); };
}
template <class F, size_t... I>
auto jacfwd(F f, Argnums<I...>) {
  return [f](const auto&... args) { return detail::jacobian_impl<false, false, I...>(f, args...); };
}
template <class F>
auto jacfwd(F f, HasAux) {
  return [f](const auto&... args) { return detail::jacobian_impl<false, true, 0>(f, args...); };
}
template <class F, size_t... I>
auto jacfwd(F f, Argnums<I...>, HasAux) {
  return [f](const auto&... args) { return detail::jacobian_impl<false, true, I...>(f, args...); };
}
// ... by reverse mode: vmap of vjp over the output basis.
template <class F>
auto jacrev(F f) {
  return [f](const auto&... args) { return detail::jacobian_impl<true, false, 0>(f, args...); };
}
template <class F, size_t... I>
auto jacrev(F f, Argnums<I...>) {
  return [f](const auto&... args) { return detail::jacobian_impl<true, false, I...>(f, args...); };
}
template <class F>
auto jacrev(F f, HasAux) {
  return [f](const auto&... args) { return detail::jacobian_impl<true, true, 0>(f, args...); };
}
template <class F, size_t... I>
auto jacrev(F f, Argnums<I...>, HasAux) {
  return [f](const auto&... args) { return detail::jacobian_impl<true, true, I...>(f, args...); };
}
// Returns a function computing the Hessian of scalar-valued f: jacfwd(jacrev(f)); with
// has_aux, (Hessian, aux).
template <class F>
auto hessian(F f) {
  return jacfwd(jacrev(std::move(f)));
}
template <class F, size_t... I>
auto hessian(F f, Argnums<I...> a) {
  return jacfwd(jacrev(std::move(f), a), a);
}
template <class F>
auto hessian(F f, HasAux) {
  return jacfwd(jacrev(std::move(f), has_aux), has_aux);
}
template <class F, size_t... I>
auto hessian(F f, Argnums<I...> a, HasAux) {
  return jacfwd(jacrev(std::move(f), a, has_aux), a, has_aux);
}

}  // namespace parax
