// custom_jvp and custom_vjp: functions whose derivatives the user gives (JAX's
// jax.custom_jvp, jax.custom_vjp). The function and its rules are traced into one
// equation, so jit, grad, vmap and shard_map all use the rule:
//
//   auto f = px::custom_jvp([](const Array& x) { return jnp::sin(x); },
//                           [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
//                             auto [x] = p;
//                             auto [g] = t;
//                             return std::pair{jnp::sin(x), 2 * jnp::cos(x) * g};
//                           });
//   auto h = px::custom_vjp(fn, fwd, bwd);  // fwd(args...) -> std::pair{out, residuals}
//                                           // bwd(residuals, g) -> cotangent(s)
#pragma once

#include <functional>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/jit.h"

namespace parax {

// Raised when a custom_jvp / custom_vjp function is called before its rule is defined
// (Python's AttributeError, as JAX raises it).
class AttributeError : public Error {
 public:
  using Error::Error;
};

// Names the function and its rules in programs and errors (C++ lambdas have none). An
// empty rule name is the function's with `_jvp`, `_fwd` or `_bwd` appended.
struct CustomOptions {
  std::string name = "f";
  std::string jvp_name = {};
  std::string fwd_name = {};
  std::string bwd_name = {};
};

namespace detail {

// A rule's two outputs, flattened: (primal out, tangent out) or (out, residuals).
struct FlatPair {
  std::vector<Array> first, second;
  TreeDef first_def, second_def;
};
using FlatJvpRule =
    std::function<FlatPair(const std::vector<Array>& primals, const std::vector<Array>& tangents)>;
using FlatFwd = std::function<FlatPair(const std::vector<Array>& args)>;
// bwd over flat leaves: (residuals, their structure, cotangents of the outputs, the
// outputs' structure) -> the argument cotangents' leaves and structure.
using FlatBwd = std::function<std::pair<std::vector<Array>, TreeDef>(
    const std::vector<Array>& res, const TreeDef& res_def, const std::vector<Array>& cts,
    const TreeDef& out_def)>;

// Traces f and the rule(s) and binds custom_jvp_call / custom_vjp_call; returns the
// output leaves. `id` identifies the rules: a rule that calls its own function (as most
// do, for the primal output) is traced again for that call, to a bounded depth (the
// order of derivatives it then supports; deeper ones differentiate f itself).
std::vector<Array> custom_jvp_flat(const std::vector<Array>& leaves,
                                   const std::vector<TreeDef>& defs, const FlatFn& f,
                                   const FlatJvpRule& rule, TreeDef* out_def,
                                   const CustomOptions& options, const void* id);
std::vector<Array> custom_vjp_flat(const std::vector<Array>& leaves,
                                   const std::vector<TreeDef>& defs, const FlatFn& f,
                                   const FlatFwd& fwd, const FlatBwd& bwd, TreeDef* out_def,
                                   const CustomOptions& options, const void* id);
[[noreturn]] void throw_no_rule(const char* kind, const CustomOptions& options);

// Rebuilds the tuple of arguments `Tuple` from its leaves.
template <class Tuple>
Tuple unflatten_args(const std::vector<TreeDef>& defs, const std::vector<Array>& leaves) {
  size_t next = 0;
  size_t i = 0;
  auto take = [&](auto tag) {
    using T = typename decltype(tag)::type;
    const TreeDef& def = defs[i++];
    std::vector<Array> part(leaves.begin() + long(next),
                            leaves.begin() + long(next + size_t(def.num_leaves())));
    next += size_t(def.num_leaves());
    return tree::unflatten<T>(def, part);
  };
  return [&]<class... T>(std::type_identity<std::tuple<T...>>) {
    return Tuple{take(std::type_identity<T>{})...};
  }(std::type_identity<Tuple>{});
}

template <class P>
FlatPair flatten_pair(const P& pair) {
  auto [a, ad] = tree::flatten(std::get<0>(pair));
  auto [b, bd] = tree::flatten(std::get<1>(pair));
  return FlatPair{std::move(a), std::move(b), std::move(ad), std::move(bd)};
}

template <class Tuple, class J>
FlatJvpRule make_jvp_rule(const J& rule, const std::vector<TreeDef>& defs) {
  return [&rule, &defs](const std::vector<Array>& p, const std::vector<Array>& t) {
    const Tuple primals = unflatten_args<Tuple>(defs, p);
    const Tuple tangents = unflatten_args<Tuple>(defs, t);
    return flatten_pair(rule(primals, tangents));
  };
}

template <class Tuple, class Fwd>
FlatFwd make_fwd(const Fwd& fwd, const std::vector<TreeDef>& defs) {
  return [&fwd, &defs](const std::vector<Array>& leaves) {
    return flatten_pair(std::apply(fwd, unflatten_args<Tuple>(defs, leaves)));
  };
}

// The residuals' type of fwd applied to the arguments `Tuple`.
template <class Fwd, class Tuple>
using ResidualsOf = std::decay_t<std::tuple_element_t<
    1,
    std::decay_t<decltype(std::apply(std::declval<const Fwd&>(), std::declval<const Tuple&>()))>>>;
// f's result type for the arguments `Tuple`.
template <class F, class Tuple>
using ResultOf =
    std::decay_t<decltype(std::apply(std::declval<const F&>(), std::declval<const Tuple&>()))>;

template <class Out, class Res, class Bwd>
FlatBwd make_bwd(const Bwd& bwd) {
  return [&bwd](const std::vector<Array>& res, const TreeDef& res_def,
                const std::vector<Array>& cts, const TreeDef& out_def) {
    auto [leaves, def] =
        tree::flatten(bwd(tree::unflatten<Res>(res_def, res), tree::unflatten<Out>(out_def, cts)));
    return std::make_pair(std::move(leaves), std::move(def));
  };
}

// The decayed parameter types of a callable with one non-template call operator (a
// non-generic lambda) or of a function pointer, as a tuple.
template <class F>
struct CallArgs : CallArgs<decltype(&F::operator())> {};
template <class R, class C, class... A>
struct CallArgs<R (C::*)(A...) const> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class R, class C, class... A>
struct CallArgs<R (C::*)(A...)> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class R, class... A>
struct CallArgs<R (*)(A...)> {
  using type = std::tuple<std::decay_t<A>...>;
};
template <class F>
concept HasCallArgs = requires {
  typename CallArgs<F>::type;
};

}  // namespace detail

// A function with a custom jvp rule: rule(primals, tangents), each a std::tuple of the
// arguments, returns std::pair{primal out, tangent out} (pytrees like f's output). The rule
// is traced when f is called (a rule calling f is traced again for that call, 4 deep: the
// order of derivatives it gives; a 5th differentiates f itself). A rule output JAX rejects
// raises JAX's error when the rule is used, as JAX's does.
template <class F, class J>
class CustomJvpFn {
 public:
  CustomJvpFn(F f, J rule, CustomOptions options)
      : f_(std::move(f)), rule_(std::move(rule)), options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          using Tuple = std::tuple<std::decay_t<Args>...>;
          return detail::custom_jvp_flat(leaves, defs, fn,
                                         detail::make_jvp_rule<Tuple>(rule_, defs), out_def,
                                         options_, &rule_);
        },
        args...);
  }

 private:
  F f_;
  J rule_;
  CustomOptions options_;
};

// A function with a custom vjp: fwd(args...) returns std::pair{out, residuals} (residuals
// any pytree) and bwd(residuals, g) the cotangent of the argument (of several: a
// std::tuple, one per argument; an invalid Array, Array(), stands for JAX's None, a zero).
template <class F, class Fwd, class Bwd>
class CustomVjpFn {
 public:
  CustomVjpFn(F f, Fwd fwd, Bwd bwd, CustomOptions options)
      : f_(std::move(f)),
        fwd_(std::move(fwd)),
        bwd_(std::move(bwd)),
        options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          using Tuple = std::tuple<std::decay_t<Args>...>;
          using Out = detail::ResultOf<F, Tuple>;
          using Res = detail::ResidualsOf<Fwd, Tuple>;
          return detail::custom_vjp_flat(leaves, defs, fn, detail::make_fwd<Tuple>(fwd_, defs),
                                         detail::make_bwd<Out, Res>(bwd_), out_def, options_,
                                         &fwd_);
        },
        args...);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
  CustomOptions options_;
};

// JAX's decorator form: `auto f = custom_jvp(fn); f.defjvp(rule);`. The rule is shared by
// copies of f, so a rule that calls f takes it by reference (`[&f]`: the rule runs only
// while f is being called) unless f lives as long as the program: a copy of f captured in
// its own rule is a reference cycle, and a local f would never be freed. Requires: fn has one call
// signature (not a generic lambda), from which the rule's argument tuples are taken.
template <class F>
class CustomJvp {
 public:
  using ArgsTuple = typename detail::CallArgs<F>::type;

  CustomJvp(F f, CustomOptions options)
      : f_(std::move(f)), options_(std::move(options)), rule_(std::make_shared<Rule>()) {}

  template <class J>
  CustomJvp& defjvp(J rule) {
    *rule_ = [rule = std::move(rule)](const std::vector<TreeDef>& defs, const std::vector<Array>& p,
                                      const std::vector<Array>& t) {
      return detail::make_jvp_rule<ArgsTuple>(rule, defs)(p, t);
    };
    return *this;
  }

  template <class... Args>
  auto operator()(const Args&... args) const {
    if (!*rule_) detail::throw_no_rule("JVP", options_);
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          const Rule& rule = *rule_;
          detail::FlatJvpRule flat = [&](const std::vector<Array>& p, const std::vector<Array>& t) {
            return rule(defs, p, t);
          };
          return detail::custom_jvp_flat(leaves, defs, fn, flat, out_def, options_, rule_.get());
        },
        args...);
  }

 private:
  using Rule = std::function<detail::FlatPair(
      const std::vector<TreeDef>&, const std::vector<Array>&, const std::vector<Array>&)>;
  F f_;
  CustomOptions options_;
  std::shared_ptr<Rule> rule_;
};

// JAX's decorator form: `auto f = custom_vjp(fn); f.defvjp(fwd, bwd);` (fwd or bwd that
// call f take it by reference, as above). Requires: fn has
// one call signature (not a generic lambda).
template <class F>
class CustomVjp {
 public:
  using ArgsTuple = typename detail::CallArgs<F>::type;

  CustomVjp(F f, CustomOptions options)
      : f_(std::move(f)), options_(std::move(options)), rules_(std::make_shared<Rules>()) {}

  template <class Fwd, class Bwd>
  CustomVjp& defvjp(Fwd fwd, Bwd bwd) {
    auto held = std::make_shared<std::pair<Fwd, Bwd>>(std::move(fwd), std::move(bwd));
    rules_->fwd = [held](const std::vector<TreeDef>& defs, const std::vector<Array>& leaves) {
      return detail::make_fwd<ArgsTuple>(held->first, defs)(leaves);
    };
    rules_->bwd =
        detail::make_bwd<detail::ResultOf<F, ArgsTuple>, detail::ResidualsOf<Fwd, ArgsTuple>>(
            held->second);
    rules_->held = held;
    return *this;
  }

  template <class... Args>
  auto operator()(const Args&... args) const {
    if (!rules_->fwd) detail::throw_no_rule("VJP", options_);
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          const Rules& r = *rules_;
          detail::FlatFwd fwd = [&](const std::vector<Array>& x) { return r.fwd(defs, x); };
          return detail::custom_vjp_flat(leaves, defs, fn, fwd, r.bwd, out_def, options_, &r);
        },
        args...);
  }

 private:
  struct Rules {
    std::function<detail::FlatPair(const std::vector<TreeDef>&, const std::vector<Array>&)> fwd;
    detail::FlatBwd bwd;
    std::shared_ptr<void> held;  // the user's fwd and bwd, which `bwd` refers to
  };
  F f_;
  CustomOptions options_;
  std::shared_ptr<Rules> rules_;
};

// Returns f with the jvp rule `rule` (see CustomJvpFn).
template <class F, class J>
CustomJvpFn<std::decay_t<F>, std::decay_t<J>> custom_jvp(F&& f, J&& rule,
                                                         CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<J>(rule), std::move(options)};
}
// Returns f awaiting its rule: `.defjvp(rule)`.
template <class F>
requires detail::HasCallArgs<std::decay_t<F>> CustomJvp<std::decay_t<F>> custom_jvp(
    F&& f, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}

// Returns f with the vjp given by fwd and bwd (see CustomVjpFn).
template <class F, class Fwd, class Bwd>
CustomVjpFn<std::decay_t<F>, std::decay_t<Fwd>, std::decay_t<Bwd>> custom_vjp(
    F&& f, Fwd&& fwd, Bwd&& bwd, CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<Fwd>(fwd), std::forward<Bwd>(bwd), std::move(options)};
}
// Returns f awaiting its rules: `.defvjp(fwd, bwd)`.
template <class F>
requires detail::HasCallArgs<std::decay_t<F>> CustomVjp<std::decay_t<F>> custom_vjp(
    F&& f, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}

}  // namespace parax
