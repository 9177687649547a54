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
//   // When the arguments are all Arrays the rule may take them as two vectors instead:
//   //   [](const std::vector<Array>& primals, const std::vector<Array>& tangents) {...}
//   auto h = px::custom_vjp(fn, fwd, bwd);  // fwd(args...) -> std::pair{out, residuals}
//                                           // bwd(residuals, g) -> cotangent(s)
//
// JAX's nondiff_argnums are a tag after the function (or its rules):
// `custom_jvp(app, app_jvp, nondiff_argnums<0>)`; those arguments may be any C++ value (a
// callable, an int), are passed as they are to f, and come first to the jvp rule
// (`rule(fn, primals, tangents)`) and to bwd (`bwd(fn, residuals, g)`), as in JAX.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <memory>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/grad.h"
#include "parax/jit.h"

namespace parax {

// Raised when a custom_jvp / custom_vjp function is called before its rule is defined
// (Python's AttributeError, as JAX raises it).
class AttributeError : public Error {
 public:
  using Error::Error;
};

// Raised when a traced array is passed to custom_vjp in a nondiff_argnums position (JAX's
// UnexpectedTracerError, a TypeError).
class UnexpectedTracerError : public TypeError {
 public:
  using TypeError::TypeError;
};

// Positions of the arguments that are not differentiated (JAX's nondiff_argnums):
// nondiff_argnums<0, 2>.
template <size_t... I>
struct NondiffArgnums {};
template <size_t... I>
inline constexpr NondiffArgnums<I...> nondiff_argnums{};

// Names the function and its rules in programs and errors (C++ lambdas have none). An
// empty rule name is the function's with `_jvp`, `_fwd` or `_bwd` appended.
struct CustomOptions {
  std::string name = "f";
  std::string jvp_name = {};
  std::string fwd_name = {};
  std::string bwd_name = {};
  // custom_jvp: the rule sees JAX's SymbolicZero for the tangent of an argument that is
  // not perturbed (see is_symbolic_zero) and may return one (symbolic_zero(primal_out)).
  bool symbolic_zeros = false;
};

// True for the tangent a symbolic_zeros rule receives for an unperturbed argument (JAX's
// SymbolicZero): it has the tangent's shape and dtype but no value (arithmetic on it
// raises); the rule may return it as a tangent output.
bool is_symbolic_zero(const Array& tangent);
// Returns the symbolic zero tangent of `primal` (JAX's zero_from_primal(x, symbolic_zeros=True)).
Array symbolic_zero(const Array& primal);

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

template <class P>
FlatPair flatten_pair(const P& pair) {
  auto [a, ad] = tree::flatten(std::get<0>(pair));
  auto [b, bd] = tree::flatten(std::get<1>(pair));
  return FlatPair{std::move(a), std::move(b), std::move(ad), std::move(bd)};
}

// The rule over flat leaves, holding copies of `rule` and `defs` (a symbolic_zeros rule is
// traced again when its call is differentiated).
// Calls a jvp rule on (statics..., primals, tangents): the two tuples of f's arguments,
// or, when the arguments are all Arrays and the rule takes them so, two
// std::vector<Array>.
template <class J, class Tuple, class... S>
auto call_jvp_rule(const J& rule, const Tuple& p, const Tuple& t, const S&... s) {
  if constexpr (std::is_invocable_v<const J&, const S&..., const Tuple&, const Tuple&>) {
    return rule(s..., p, t);
  } else {
    auto vec = [](const Tuple& x) {
      return std::apply([](const auto&... a) { return std::vector<Array>{a...}; }, x);
    };
    static_assert(std::is_invocable_v<const J&, const S&..., const std::vector<Array>&,
                                      const std::vector<Array>&>,
                  "a custom_jvp rule takes (primals, tangents): two std::tuples of the "
                  "function's arguments, or two std::vector<Array> when they are all Arrays");
    return rule(s..., vec(p), vec(t));
  }
}

template <class Tuple, class J>
FlatJvpRule make_jvp_rule(const J& rule, const std::vector<TreeDef>& defs) {
  return [rule, defs](const std::vector<Array>& p, const std::vector<Array>& t) {
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

// bwd over flat leaves, holding `bwd` (a std::cref where it outlives the call).
template <class Out, class Res, class Bwd>
FlatBwd make_bwd(Bwd bwd) {
  return [bwd = std::move(bwd)](const std::vector<Array>& res, const TreeDef& res_def,
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

// ---- nondiff_argnums: splitting the arguments into static and differentiated ones ----

template <class Nd>
struct Nondiff;
template <size_t... N>
struct Nondiff<NondiffArgnums<N...>> {
  static constexpr size_t count = sizeof...(N);
  template <size_t K>
  static constexpr bool fits = ((N < K) && ...);
  static constexpr bool is(size_t i) { return ((i == N) || ...); }
  // The rank of position i among the positions of its kind (static or differentiated).
  static constexpr size_t rank(size_t i) {
    size_t r = 0;
    for (size_t k = 0; k < i; ++k) r += is(k) == is(i) ? 1 : 0;
    return r;
  }
  // The positions of the kind `is_static` among K arguments, in order.
  template <size_t K, bool kStatic>
  static constexpr auto positions() {
    std::array<size_t, kStatic ? count : K - count> out{};
    size_t n = 0;
    for (size_t k = 0; k < K; ++k) {
      if (is(k) == kStatic) out[n++] = k;
    }
    return out;
  }
};

template <class T>
struct IsPytree : std::false_type {};
template <>
struct IsPytree<Array> : std::true_type {};
template <class T, class A>
struct IsPytree<std::vector<T, A>> : IsPytree<T> {};
template <class T, size_t N>
struct IsPytree<std::array<T, N>> : IsPytree<T> {};
template <class A, class B>
struct IsPytree<std::pair<A, B>> : std::bool_constant<IsPytree<A>::value && IsPytree<B>::value> {};
template <class... T>
struct IsPytree<std::tuple<T...>> : std::bool_constant<(IsPytree<T>::value && ...)> {};
template <class T, class C, class A>
struct IsPytree<std::map<std::string, T, C, A>> : IsPytree<T> {};

// True when x is a traced value (a tracer of any transform).
bool is_traced(const Array& x);
// Raises JAX's UnexpectedTracerError for a traced nondiff argument of custom_vjp.
[[noreturn]] void throw_traced_nondiff();

// custom_jvp's nondiff argument: its arrays are held constant (JAX stops their gradient).
template <class T>
T held_constant(const T& x) {
  if constexpr (IsPytree<T>::value) {
    return tree::map([](const Array& a) { return is_traced(a) ? detail::stop_gradient(a) : a; }, x);
  } else {
    return x;
  }
}

// custom_vjp's nondiff argument may hold no traced array (JAX's _check_for_tracers).
template <class T>
const T& untraced(const T& x) {
  if constexpr (IsPytree<T>::value) {
    for (const Array& a : tree::leaves(x)) {
      if (is_traced(a)) throw_traced_nondiff();
    }
  }
  return x;
}

// Calls fn(statics, dyn...) with the arguments split by Nd: `statics` a tuple of the
// nondiff arguments (after `hold`), `dyn` the others, in order.
template <class Nd, class Hold, class Fn, class... Args>
decltype(auto) split_args(const Hold& hold, const Fn& fn, const Args&... args) {
  constexpr size_t K = sizeof...(Args);
  static_assert(Nondiff<Nd>::template fits<K>,
                "nondiff_argnums: a position past the last argument");
  constexpr auto st = Nondiff<Nd>::template positions<K, true>();
  constexpr auto dy = Nondiff<Nd>::template positions<K, false>();
  auto all = std::forward_as_tuple(args...);
  return [&]<size_t... S, size_t... D>(std::index_sequence<S...>, std::index_sequence<D...>)
      ->decltype(auto) {
    auto statics = std::make_tuple(hold(std::get<st[S]>(all))...);
    return fn(statics, std::get<dy[D]>(all)...);
  }
  (std::make_index_sequence<st.size()>{}, std::make_index_sequence<dy.size()>{});
}

// Calls f with the static and differentiated arguments merged back in their positions.
template <class Nd, class F, class Statics, class... Dyn>
decltype(auto) merge_call(const F& f, const Statics& statics, const Dyn&... dyn) {
  constexpr size_t K = std::tuple_size_v<Statics> + sizeof...(Dyn);
  auto dyn_tuple = std::forward_as_tuple(dyn...);
  return [&]<size_t... I>(std::index_sequence<I...>)->decltype(auto) {
    auto pick = [&]<size_t J>(std::integral_constant<size_t, J>) -> const auto& {
      if constexpr (Nondiff<Nd>::is(J)) {
        return std::get<Nondiff<Nd>::rank(J)>(statics);
      } else {
        return std::get<Nondiff<Nd>::rank(J)>(dyn_tuple);
      }
    };
    return f(pick(std::integral_constant<size_t, I>{})...);
  }
  (std::make_index_sequence<K>{});
}

// The types of the differentiated (kStatic false) or static arguments of the tuple `Tuple`.
template <class Nd, class Tuple, bool kStatic>
struct SplitTuple {
  static constexpr auto pos = Nondiff<Nd>::template positions<std::tuple_size_v<Tuple>, kStatic>();
  using type = decltype([]<size_t... I>(std::index_sequence<I...>) {
    return std::tuple<std::tuple_element_t<pos[I], Tuple>...>{};
  }(std::make_index_sequence<pos.size()>{}));
};

// Calls f(args...) through run(statics, tag, leaves, defs, flat f, &out_def) on the leaves
// of the differentiated arguments (`tag` a std::type_identity of their tuple), the nondiff
// ones (after `hold`) merged back into f's call. The shape of every custom_* call.
template <class Nd, class F, class Hold, class Run, class... Args>
auto call_split(const F& f, const Hold& hold, const Run& run, const Args&... args) {
  return split_args<Nd>(
      hold,
      [&](const auto& statics, const auto&... dyn) {
        auto f_dyn = [&](const auto&... d) { return merge_call<Nd>(f, statics, d...); };
        using Tuple = std::tuple<std::decay_t<decltype(dyn)>...>;
        return call_flattened(
            f_dyn,
            [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
              return run(statics, std::type_identity<Tuple>{}, leaves, defs, fn, out_def);
            },
            dyn...);
      },
      args...);
}

}  // namespace detail

// A function with a custom jvp rule: rule(primals, tangents), each a std::tuple of the
// arguments, returns std::pair{primal out, tangent out} (pytrees like f's output). The rule
// is traced when f is called (a rule calling f is traced again for that call, 4 deep: the
// order of derivatives it gives; a 5th differentiates f itself). A rule output JAX rejects
// raises JAX's error when the rule is used, as JAX's does. With nondiff_argnums, the
// rule is rule(nondiff args..., primals, tangents), the tuples holding the other arguments.
// With symbolic_zeros, the rule (and the nondiff arguments) are kept with the programs that
// call f and traced again when they are differentiated, for the tangents that are zero
// then (JAX traces it then): it must not refer to what may be gone by then.
template <class F, class J, class Nd = NondiffArgnums<>>
class CustomJvpFn {
 public:
  CustomJvpFn(F f, J rule, CustomOptions options)
      : f_(std::move(f)),
        rule_(std::make_shared<const J>(std::move(rule))),
        options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto hold = [](const auto& x) { return detail::held_constant(x); };
    auto run = [&](const auto& statics, auto tag, const auto& leaves, const auto& defs,
                   const auto& fn, TreeDef* out_def) {
      using Tuple = typename decltype(tag)::type;
      auto rule = [rule = rule_, statics](const Tuple& p, const Tuple& t) {
        return std::apply(
            [&](const auto&... s) { return detail::call_jvp_rule(*rule, p, t, s...); }, statics);
      };
      return detail::custom_jvp_flat(leaves, defs, fn, detail::make_jvp_rule<Tuple>(rule, defs),
                                     out_def, options_, rule_.get());
    };
    return detail::call_split<Nd>(f_, hold, run, args...);
  }

 private:
  F f_;
  std::shared_ptr<const J> rule_;
  CustomOptions options_;
};

// A function with a custom vjp: fwd(args...) returns std::pair{out, residuals} (residuals
// any pytree) and bwd(residuals, g) the cotangent of the argument (of several: a
// std::tuple, one per argument; an invalid Array, Array(), stands for JAX's None, a zero).
// With nondiff_argnums, fwd takes all of f's arguments, bwd is bwd(nondiff args...,
// residuals, g) and returns the cotangents of the others; a nondiff argument holding a
// traced array raises UnexpectedTracerError, as JAX's does.
template <class F, class Fwd, class Bwd, class Nd = NondiffArgnums<>>
class CustomVjpFn {
 public:
  CustomVjpFn(F f, Fwd fwd, Bwd bwd, CustomOptions options)
      : f_(std::move(f)),
        fwd_(std::move(fwd)),
        bwd_(std::move(bwd)),
        options_(std::move(options)) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto hold = [](const auto& x) -> const auto& { return detail::untraced(x); };
    auto run = [&](const auto& statics, auto tag, const auto& leaves, const auto& defs,
                   const auto& fn, TreeDef* out_def) {
      using Tuple = typename decltype(tag)::type;
      auto f_dyn = [&](const auto&... d) { return detail::merge_call<Nd>(f_, statics, d...); };
      auto fwd_dyn = [&](const auto&... d) { return detail::merge_call<Nd>(fwd_, statics, d...); };
      using Out = detail::ResultOf<decltype(f_dyn), Tuple>;
      using Res = detail::ResidualsOf<decltype(fwd_dyn), Tuple>;
      auto bwd = [&](const Res& r, const Out& g) {
        return std::apply([&](const auto&... s) { return bwd_(s..., r, g); }, statics);
      };
      return detail::custom_vjp_flat(leaves, defs, fn, detail::make_fwd<Tuple>(fwd_dyn, defs),
                                     detail::make_bwd<Out, Res>(std::cref(bwd)), out_def, options_,
                                     &fwd_);
    };
    return detail::call_split<Nd>(f_, hold, run, args...);
  }

 private:
  F f_;
  Fwd fwd_;
  Bwd bwd_;
  CustomOptions options_;
};

namespace detail {

// The rules a decorated custom function's copies share. A rule usually calls its own
// function (JAX's idiom: `f.defjvp([f](p, t) { ... f(x) ... })`), so the rule, held by the
// shared state, holds a copy of f, which holds the state: a reference cycle that would
// never be freed. The copies of f made while the rule is being stored (`capture`) hold the
// state weakly; every other copy holds it strongly, so the state lives exactly as long as
// some copy of f outside its own rules, or a program calling it, does.
template <class State>
class SharedRules {
 public:
  SharedRules() : strong_(std::make_shared<State>()), raw_(strong_.get()) {}
  SharedRules(const SharedRules& other) { copy_from(other); }
  // A move keeps the strength (a rule moved into its std::function stays weak).
  SharedRules(SharedRules&& other) noexcept { move_from(other); }
  SharedRules& operator=(const SharedRules& other) {
    if (this != &other) copy_from(other);
    return *this;
  }
  SharedRules& operator=(SharedRules&& other) noexcept {
    if (this != &other) move_from(other);
    return *this;
  }

  // The state, held strongly for the caller; raises if only weak copies were left (a
  // rule's copy of f outliving every other, which `capture` prevents).
  std::shared_ptr<State> lock() const {
    std::shared_ptr<State> s = strong_ ? strong_ : weak_.lock();
    if (!s) throw Error("a custom_jvp/custom_vjp function was called after it was freed");
    return s;
  }
  State* operator->() const { return lock().get(); }

  // Copies `value` (a rule) so that the copies of this state's functions inside it hold the
  // state weakly.
  template <class T>
  T capture(const T& value) const {
    const void* outer = capturing_;
    capturing_ = raw_;
    struct Restore {
      const void* outer;
      ~Restore() { capturing_ = outer; }
    } restore{outer};
    return T(value);
  }

 private:
  void copy_from(const SharedRules& other) {
    raw_ = other.raw_;
    if (capturing_ == raw_) {
      weak_ = other.strong_ ? std::weak_ptr<State>(other.strong_) : other.weak_;
      strong_.reset();
    } else {
      strong_ = other.strong_ ? other.strong_ : other.weak_.lock();
      weak_.reset();
    }
  }

  void move_from(SharedRules& other) {
    if (capturing_ == other.raw_) {
      copy_from(other);
      return;
    }
    raw_ = other.raw_;
    strong_ = std::move(other.strong_);
    weak_ = std::move(other.weak_);
  }

  static inline thread_local const void* capturing_ = nullptr;
  std::shared_ptr<State> strong_;
  std::weak_ptr<State> weak_;
  const State* raw_ = nullptr;
};

}  // namespace detail

// JAX's decorator form: `auto f = custom_jvp(fn); f.defjvp(rule);`. The rule is shared by
// copies of f and may capture f by value (`[f]`, JAX's idiom of a rule calling its function;
// see SharedRules). Requires: fn has one call signature (not a generic lambda), from which
// the rule's argument tuples are taken.
template <class F, class Nd = NondiffArgnums<>>
class CustomJvp {
 public:
  using AllArgs = typename detail::CallArgs<F>::type;
  using ArgsTuple = typename detail::SplitTuple<Nd, AllArgs, false>::type;
  using Statics = typename detail::SplitTuple<Nd, AllArgs, true>::type;

  CustomJvp(F f, CustomOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  // Sets the rule; with `symbolic_zeros` it sees JAX's SymbolicZero tangents (as
  // CustomOptions::symbolic_zeros) and is kept with the programs calling f, to be traced
  // when they are differentiated: what it refers to by reference (f) must outlive them.
  template <class J>
  CustomJvp& defjvp(J rule, bool symbolic_zeros = false) {
    auto state = rule_.lock();
    state->symbolic_zeros = symbolic_zeros;
    state->fn = [rule = rule_.capture(rule)](
                    const Statics& statics, const std::vector<TreeDef>& defs,
                    const std::vector<Array>& p, const std::vector<Array>& t) {
      auto bound = [&](const ArgsTuple& pt, const ArgsTuple& tt) {
        return std::apply(
            [&](const auto&... s) { return detail::call_jvp_rule(rule, pt, tt, s...); }, statics);
      };
      return detail::make_jvp_rule<ArgsTuple>(bound, defs)(p, t);
    };
    return *this;
  }

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto state = rule_.lock();
    if (!state->fn) detail::throw_no_rule("JVP", options_);
    auto hold = [](const auto& x) { return detail::held_constant(x); };
    CustomOptions options = options_;
    options.symbolic_zeros = options.symbolic_zeros || state->symbolic_zeros;
    auto run = [&](const auto& statics, auto, const auto& leaves, const auto& defs, const auto& fn,
                   TreeDef* out_def) {
      detail::FlatJvpRule flat = [rule = state, held = Statics(statics), defs](
                                     const std::vector<Array>& p, const std::vector<Array>& t) {
        return rule->fn(held, defs, p, t);
      };
      return detail::custom_jvp_flat(leaves, defs, fn, flat, out_def, options, state.get());
    };
    return detail::call_split<Nd>(f_, hold, run, args...);
  }

 private:
  struct Rule {
    std::function<detail::FlatPair(const Statics&, const std::vector<TreeDef>&,
                                   const std::vector<Array>&, const std::vector<Array>&)>
        fn;
    bool symbolic_zeros = false;
  };
  F f_;
  CustomOptions options_;
  detail::SharedRules<Rule> rule_;
};

// JAX's decorator form: `auto f = custom_vjp(fn); f.defvjp(fwd, bwd);` (fwd and bwd may
// capture f by value, as above). Requires: fn has one call signature (not a generic lambda).
template <class F, class Nd = NondiffArgnums<>>
class CustomVjp {
 public:
  using AllArgs = typename detail::CallArgs<F>::type;
  using ArgsTuple = typename detail::SplitTuple<Nd, AllArgs, false>::type;
  using Statics = typename detail::SplitTuple<Nd, AllArgs, true>::type;

  CustomVjp(F f, CustomOptions options) : f_(std::move(f)), options_(std::move(options)) {}

  template <class Fwd, class Bwd>
  CustomVjp& defvjp(Fwd fwd, Bwd bwd) {
    auto held = std::make_shared<std::pair<Fwd, Bwd>>(rules_.capture(fwd), rules_.capture(bwd));
    using Res = detail::ResidualsOf<Fwd, AllArgs>;
    using Out = detail::ResultOf<F, AllArgs>;
    auto state = rules_.lock();
    state->fwd = [held](const Statics& statics, const std::vector<TreeDef>& defs,
                        const std::vector<Array>& leaves) {
      auto fwd_dyn = [&](const auto&... d) {
        return detail::merge_call<Nd>(held->first, statics, d...);
      };
      return detail::make_fwd<ArgsTuple>(fwd_dyn, defs)(leaves);
    };
    state->bwd = [held](const Statics& statics) -> detail::FlatBwd {
      auto bwd = [held, statics](const Res& r, const Out& g) {
        return std::apply([&](const auto&... s) { return held->second(s..., r, g); }, statics);
      };
      return detail::make_bwd<Out, Res>(std::move(bwd));
    };
    return *this;
  }

  template <class... Args>
  auto operator()(const Args&... args) const {
    auto state = rules_.lock();
    if (!state->fwd) detail::throw_no_rule("VJP", options_);
    auto hold = [](const auto& x) -> const auto& { return detail::untraced(x); };
    auto run = [&](const auto& statics, auto, const auto& leaves, const auto& defs, const auto& fn,
                   TreeDef* out_def) {
      const Rules& r = *state;
      const Statics held(statics);
      detail::FlatFwd fwd = [&](const std::vector<Array>& x) { return r.fwd(held, defs, x); };
      // bwd is kept with the program, and with it the state its copies of f refer to.
      detail::FlatBwd bwd = [state, inner = r.bwd(held)](const auto&... a) { return inner(a...); };
      return detail::custom_vjp_flat(leaves, defs, fn, fwd, bwd, out_def, options_, &r);
    };
    return detail::call_split<Nd>(f_, hold, run, args...);
  }

 private:
  struct Rules {
    std::function<detail::FlatPair(const Statics&, const std::vector<TreeDef>&,
                                   const std::vector<Array>&)>
        fwd;
    std::function<detail::FlatBwd(const Statics&)> bwd;
  };
  F f_;
  CustomOptions options_;
  detail::SharedRules<Rules> rules_;
};

namespace detail {
template <class T>
struct IsNondiffTag : std::false_type {};
template <size_t... I>
struct IsNondiffTag<NondiffArgnums<I...>> : std::true_type {};
template <class T>
concept NotTag =
    !IsNondiffTag<std::decay_t<T>>::value && !std::is_same_v<std::decay_t<T>, CustomOptions>;
}  // namespace detail

// Returns f with the jvp rule `rule` (see CustomJvpFn).
template <class F, detail::NotTag J>
CustomJvpFn<std::decay_t<F>, std::decay_t<J>> custom_jvp(F&& f, J&& rule,
                                                         CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<J>(rule), std::move(options)};
}
// Returns f with the jvp rule `rule`, not differentiated in the arguments `nondiff`.
template <class F, class J, size_t... I>
CustomJvpFn<std::decay_t<F>, std::decay_t<J>, NondiffArgnums<I...>> custom_jvp(
    F&& f, J&& rule, NondiffArgnums<I...>, CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<J>(rule), std::move(options)};
}
// Returns f awaiting its rule: `.defjvp(rule)`.
template <class F>
requires detail::HasCallArgs<std::decay_t<F>> CustomJvp<std::decay_t<F>> custom_jvp(
    F&& f, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}
template <class F, size_t... I>
requires detail::HasCallArgs<std::decay_t<F>> CustomJvp<std::decay_t<F>, NondiffArgnums<I...>>
custom_jvp(F&& f, NondiffArgnums<I...>, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}

// Returns f with the vjp given by fwd and bwd (see CustomVjpFn).
template <class F, detail::NotTag Fwd, class Bwd>
CustomVjpFn<std::decay_t<F>, std::decay_t<Fwd>, std::decay_t<Bwd>> custom_vjp(
    F&& f, Fwd&& fwd, Bwd&& bwd, CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<Fwd>(fwd), std::forward<Bwd>(bwd), std::move(options)};
}
template <class F, class Fwd, class Bwd, size_t... I>
CustomVjpFn<std::decay_t<F>, std::decay_t<Fwd>, std::decay_t<Bwd>, NondiffArgnums<I...>> custom_vjp(
    F&& f, Fwd&& fwd, Bwd&& bwd, NondiffArgnums<I...>, CustomOptions options = {}) {
  return {std::forward<F>(f), std::forward<Fwd>(fwd), std::forward<Bwd>(bwd), std::move(options)};
}
// Returns f awaiting its rules: `.defvjp(fwd, bwd)`.
template <class F>
requires detail::HasCallArgs<std::decay_t<F>> CustomVjp<std::decay_t<F>> custom_vjp(
    F&& f, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}
template <class F, size_t... I>
requires detail::HasCallArgs<std::decay_t<F>> CustomVjp<std::decay_t<F>, NondiffArgnums<I...>>
custom_vjp(F&& f, NondiffArgnums<I...>, CustomOptions options = {}) {
  return {std::forward<F>(f), std::move(options)};
}

}  // namespace parax
