// Pytrees: nested containers whose leaves are Arrays. std::vector, std::array, std::pair,
// std::tuple, std::map<std::string, T> and structs registered with PARAX_REGISTER_PYTREE
// are containers; Array is the leaf.
#pragma once

#include <array>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/errors.h"

namespace parax {

// The structure of a pytree without its leaves, printed as JAX prints a PyTreeDef.
struct TreeDef {
  enum class Kind { leaf, list, tuple, dict, custom };
  Kind kind = Kind::leaf;
  std::string type_name;          // custom nodes: the registered type's name; ordered dicts
  std::vector<std::string> keys;  // dict nodes: the keys, sorted
  std::vector<TreeDef> children;

  int num_leaves() const;
  // Returns JAX's form: `PyTreeDef([*, (*, *)])`.
  std::string to_string() const;
  bool operator==(const TreeDef&) const = default;
};

// One step from a pytree's root towards a leaf (JAX's DictKey, SequenceKey, GetAttrKey).
struct PathEntry {
  enum class Kind { dict, sequence, attr };
  Kind kind = Kind::dict;
  std::string key;    // a dict's key or a registered struct's field name
  int64_t index = 0;  // a sequence's index
  bool operator==(const PathEntry&) const = default;
};
using KeyPath = std::vector<PathEntry>;

// Returns JAX's keystr of a path: `['params']['w']`, `[0]`, `.weight`.
std::string keystr(const KeyPath& path);

namespace detail {

// Returns the field names PARAX_REGISTER_PYTREE listed, in order.
std::vector<std::string> split_field_names(const char* names);

template <class T>
struct is_std_vector : std::false_type {};
template <class T, class A>
struct is_std_vector<std::vector<T, A>> : std::true_type {};
template <class T>
struct is_std_array : std::false_type {};
template <class T, size_t N>
struct is_std_array<std::array<T, N>> : std::true_type {};
template <class T>
struct is_tuple_like : std::false_type {};
template <class A, class B>
struct is_tuple_like<std::pair<A, B>> : std::true_type {};
template <class... Ts>
struct is_tuple_like<std::tuple<Ts...>> : std::true_type {};
template <class T>
struct is_string_map : std::false_type {};
template <class T, class C, class A>
struct is_string_map<std::map<std::string, T, C, A>> : std::true_type {};

// Ordered string-keyed containers (nn::StateDict) are dicts too: they opt in with
// `using parax_pytree_dict = void;`, iterate as (key, value) pairs in their own order and have
// clear() and an inserting operator[]. Their keys keep that order (JAX's OrderedDict).
template <class T>
requires requires { typename T::parax_pytree_dict; }
struct is_string_map<T> : std::true_type {};

template <class T>
concept RegisteredStruct = requires(T& x) {
  parax_pytree_fields(x);
};

// Calls f(leaf) for every leaf in order; T may be const.
template <class T, class F>
void for_each_leaf(T& x, F&& f) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, Array>) {
    f(x);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    for (auto& child : x) for_each_leaf(child, f);
  } else if constexpr (is_string_map<U>::value) {
    for (auto& [key, child] : x) for_each_leaf(child, f);
  } else if constexpr (is_tuple_like<U>::value) {
    std::apply([&](auto&... child) { (for_each_leaf(child, f), ...); }, x);
  } else if constexpr (RegisteredStruct<U>) {
    std::apply([&](auto&... child) { (for_each_leaf(child, f), ...); }, parax_pytree_fields(x));
  } else {
    static_assert(sizeof(U) == 0,
                  "not a pytree: use Array, std::vector, std::array, std::pair, std::tuple, "
                  "std::map<std::string, T> or a struct registered with PARAX_REGISTER_PYTREE");
  }
}

// Calls f(path, leaf) for every leaf in order, `path` leading from x to the leaf.
template <class T, class F>
void for_each_leaf_with_path(const T& x, KeyPath& path, F&& f) {
  using U = std::remove_cv_t<T>;
  auto child = [&](PathEntry e, const auto& c) {
    path.push_back(std::move(e));
    for_each_leaf_with_path(c, path, f);
    path.pop_back();
  };
  if constexpr (std::is_same_v<U, Array>) {
    f(static_cast<const KeyPath&>(path), x);
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    for (size_t i = 0; i < x.size(); ++i) {
      child(PathEntry{PathEntry::Kind::sequence, {}, int64_t(i)}, x[i]);
    }
  } else if constexpr (is_string_map<U>::value) {
    for (const auto& [key, c] : x) child(PathEntry{PathEntry::Kind::dict, key, 0}, c);
  } else if constexpr (is_tuple_like<U>::value) {
    int64_t i = 0;
    std::apply(
        [&](const auto&... c) {
          (child(PathEntry{PathEntry::Kind::sequence, {}, i++}, c), ...);
        },
        x);
  } else if constexpr (RegisteredStruct<U>) {
    const std::vector<std::string> names =
        split_field_names(parax_pytree_field_names(static_cast<const U*>(nullptr)));
    size_t i = 0;
    std::apply(
        [&](const auto&... c) {
          (child(PathEntry{PathEntry::Kind::attr, names.at(i++), 0}, c), ...);
        },
        parax_pytree_fields(x));
  } else {
    static_assert(sizeof(U) == 0, "not a pytree");
  }
}

template <class T>
TreeDef tree_structure(const T& x) {
  using U = std::remove_cv_t<T>;
  TreeDef def;
  if constexpr (std::is_same_v<U, Array>) {
    def.kind = TreeDef::Kind::leaf;
  } else if constexpr (is_std_vector<U>::value || is_std_array<U>::value) {
    def.kind = TreeDef::Kind::list;
    for (const auto& child : x) def.children.push_back(tree_structure(child));
  } else if constexpr (is_string_map<U>::value) {
    def.kind = TreeDef::Kind::dict;
    if constexpr (requires { typename U::parax_pytree_dict; }) def.type_name = "OrderedDict";
    for (const auto& [key, child] : x) {
      def.keys.push_back(key);
      def.children.push_back(tree_structure(child));
    }
  } else if constexpr (is_tuple_like<U>::value) {
    def.kind = TreeDef::Kind::tuple;
    std::apply([&](const auto&... c) { (def.children.push_back(tree_structure(c)), ...); }, x);
  } else if constexpr (RegisteredStruct<U>) {
    def.kind = TreeDef::Kind::custom;
    def.type_name = parax_pytree_name(static_cast<const U*>(nullptr));
    std::apply([&](const auto&... c) { (def.children.push_back(tree_structure(c)), ...); },
               parax_pytree_fields(x));
  } else {
    static_assert(sizeof(U) == 0, "not a pytree");
  }
  return def;
}

[[noreturn]] void throw_tree_mismatch(const TreeDef& expected, const std::string& what);

// Rebuilds x's containers to match `def` and fills leaves from `leaves`, in order.
template <class T>
void fill_from(T& x, const TreeDef& def, const std::vector<Array>& leaves, size_t& next) {
  using U = std::remove_cv_t<T>;
  if constexpr (std::is_same_v<U, Array>) {
    if (def.kind != TreeDef::Kind::leaf) throw_tree_mismatch(def, "a leaf (Array)");
    x = leaves.at(next++);
  } else if constexpr (is_std_vector<U>::value) {
    if (def.kind != TreeDef::Kind::list) throw_tree_mismatch(def, "a list (std::vector)");
    x.resize(def.children.size());
    for (size_t i = 0; i < x.size(); ++i) fill_from(x[i], def.children[i], leaves, next);
  } else if constexpr (is_std_array<U>::value) {
    if (def.kind != TreeDef::Kind::list || def.children.size() != x.size()) {
      throw_tree_mismatch(def, "a list of " + std::to_string(x.size()) + " (std::array)");
    }
    for (size_t i = 0; i < x.size(); ++i) fill_from(x[i], def.children[i], leaves, next);
  } else if constexpr (is_string_map<U>::value) {
    if (def.kind != TreeDef::Kind::dict) throw_tree_mismatch(def, "a dict (std::map)");
    x.clear();
    for (size_t i = 0; i < def.keys.size(); ++i) {
      fill_from(x[def.keys[i]], def.children[i], leaves, next);
    }
  } else if constexpr (is_tuple_like<U>::value || RegisteredStruct<U>) {
    constexpr bool kTuple = is_tuple_like<U>::value;
    auto fields = [&]() -> decltype(auto) {
      if constexpr (kTuple)
        return (x);
      else
        return parax_pytree_fields(x);
    };
    auto&& tied = fields();
    constexpr size_t n = std::tuple_size_v<std::remove_cvref_t<decltype(tied)>>;
    auto kind = kTuple ? TreeDef::Kind::tuple : TreeDef::Kind::custom;
    if (def.kind != kind || def.children.size() != n) {
      throw_tree_mismatch(def, "a node with " + std::to_string(n) + " children");
    }
    size_t i = 0;
    std::apply([&](auto&... c) { (fill_from(c, def.children[i++], leaves, next), ...); }, tied);
  } else {
    static_assert(sizeof(U) == 0, "not a pytree");
  }
}

}  // namespace detail

namespace tree {

// Returns the leaves in order (depth first; map entries by sorted key).
template <class T>
std::vector<Array> leaves(const T& x) {
  std::vector<Array> out;
  detail::for_each_leaf(x, [&](const Array& a) { out.push_back(a); });
  return out;
}

template <class T>
TreeDef structure(const T& x) {
  return detail::tree_structure(x);
}

// Returns every leaf with the path leading to it, in leaves() order (JAX's
// tree_flatten_with_path's leaves).
template <class T>
std::vector<std::pair<KeyPath, Array>> leaves_with_path(const T& x) {
  std::vector<std::pair<KeyPath, Array>> out;
  KeyPath path;
  detail::for_each_leaf_with_path(
      x, path, [&](const KeyPath& p, const Array& a) { out.emplace_back(p, a); });
  return out;
}

// Returns the leaves and the structure.
template <class T>
std::pair<std::vector<Array>, TreeDef> flatten(const T& x) {
  return {leaves(x), structure(x)};
}

// Builds a T with structure `def` from `leaves`.
// Requires: def matches T and has leaves.size() leaves (else ValueError).
template <class T>
T unflatten(const TreeDef& def, const std::vector<Array>& leaves) {
  if (int(leaves.size()) != def.num_leaves()) {
    throw ValueError("Too " + std::string(int(leaves.size()) < def.num_leaves() ? "few" : "many") +
                     " leaves for PyTreeDef; expected " + std::to_string(def.num_leaves()) +
                     ", got " + std::to_string(leaves.size()) + ".");
  }
  T out{};
  size_t next = 0;
  detail::fill_from(out, def, leaves, next);
  return out;
}

// Returns a tree of the same type with every leaf replaced by f(leaf, leaves of rest...).
// Requires: every tree in `rest` has the structure of x.
template <class F, class T, class... Rest>
T map(F&& f, const T& x, const Rest&... rest) {
  std::array<std::vector<Array>, sizeof...(Rest)> others{leaves(rest)...};
  if constexpr (sizeof...(Rest) > 0) {
    TreeDef def = structure(x);
    std::array<TreeDef, sizeof...(Rest)> defs{structure(rest)...};
    for (const TreeDef& d : defs) {
      if (!(d == def)) {
        throw ValueError("tree::map: trees have different structures: " + def.to_string() +
                         " and " + d.to_string());
      }
    }
  }
  T out = x;
  size_t i = 0;
  detail::for_each_leaf(out, [&](Array& leaf) {
    leaf = std::apply([&](const auto&... o) { return f(leaf, o[i]...); }, others);
    ++i;
  });
  return out;
}

}  // namespace tree

namespace detail {

// A function over flat leaves, the form transforms trace: called with the arguments'
// leaves, it returns the outputs' leaves and sets *out_def to their structure.
using FlatFn = std::function<std::vector<Array>(const std::vector<Array>&, TreeDef*)>;

// Appends the leaves of each argument to `leaves` and its structure to `defs`.
template <class... Args>
void flatten_args(std::vector<Array>& leaves, std::vector<TreeDef>& defs, const Args&... args) {
  (
      [&] {
        auto [l, d] = tree::flatten(args);
        leaves.insert(leaves.end(), l.begin(), l.end());
        defs.push_back(std::move(d));
      }(),
      ...);
}

// Rebuilds the tuple of arguments `Tuple` from its leaves.
template <class Tuple>
Tuple unflatten_args(const std::vector<TreeDef>& defs, const std::vector<Array>& leaves) {
  size_t next = 0;
  size_t i = 0;
  [[maybe_unused]] auto take = [&](auto tag) {  // unused for a function of no arguments
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

// Rebuilds the arguments from traced leaves, calls f, and flattens its result.
template <class F, class... Args>
FlatFn flat_fn(const F& f, const std::vector<TreeDef>& defs) {
  return [&f, &defs](const std::vector<Array>& leaves, TreeDef* out_def) {
    auto rebuilt = unflatten_args<std::tuple<std::decay_t<Args>...>>(defs, leaves);
    auto result = std::apply(f, rebuilt);
    auto [out, def] = tree::flatten(result);
    *out_def = def;
    return out;
  };
}

// Calls f through a transform on flat leaves: flattens args, runs
// `run(leaves, defs, flat f, &out_def)` (which returns the output leaves) and rebuilds f's
// result type from them. The shape of jit, vmap, pmap, shard_map and checkpoint calls.
template <class F, class Run, class... Args>
auto call_flattened(const F& f, Run&& run, const Args&... args) {
  using R = std::decay_t<std::invoke_result_t<const F&, const std::decay_t<Args>&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  flatten_args(leaves, defs, args...);
  TreeDef out_def;
  std::vector<Array> outs = run(leaves, defs, flat_fn<F, Args...>(f, defs), &out_def);
  return tree::unflatten<R>(out_def, outs);
}

}  // namespace detail
}  // namespace parax

// Registers a struct as a pytree whose children are the listed fields, in order.
// Use at namespace scope, in the struct's namespace: PARAX_REGISTER_PYTREE(Layer, w, b).
#define PARAX_REGISTER_PYTREE(Type, ...)                              \
  inline auto parax_pytree_fields(Type& parax_x_) {                   \
    return std::tie(PARAX_PP_FIELDS_(parax_x_, __VA_ARGS__));         \
  }                                                                   \
  inline auto parax_pytree_fields(const Type& parax_x_) {             \
    return std::tie(PARAX_PP_FIELDS_(parax_x_, __VA_ARGS__));         \
  }                                                                   \
  inline const char* parax_pytree_name(const Type*) { return #Type; } \
  inline const char* parax_pytree_field_names(const Type*) { return #__VA_ARGS__; }

// Expands `obj, a, b, c` to `obj.a, obj.b, obj.c` (up to 16 fields).
#define PARAX_PP_FIELDS_(o, ...) \
  PARAX_PP_CAT_(PARAX_PP_F, PARAX_PP_NARGS_(__VA_ARGS__))(o, __VA_ARGS__)
#define PARAX_PP_CAT_(a, b) PARAX_PP_CAT2_(a, b)
#define PARAX_PP_CAT2_(a, b) a##b
#define PARAX_PP_NARGS_(...) \
  PARAX_PP_NARGS2_(__VA_ARGS__, 16, 15, 14, 13, 12, 11, 10, 9, 8, 7, 6, 5, 4, 3, 2, 1)
#define PARAX_PP_NARGS2_(a1, a2, a3, a4, a5, a6, a7, a8, a9, a10, a11, a12, a13, a14, a15, a16, n, \
                         ...)                                                                      \
  n
#define PARAX_PP_F1(o, a) o.a
#define PARAX_PP_F2(o, a, ...) o.a, PARAX_PP_F1(o, __VA_ARGS__)
#define PARAX_PP_F3(o, a, ...) o.a, PARAX_PP_F2(o, __VA_ARGS__)
#define PARAX_PP_F4(o, a, ...) o.a, PARAX_PP_F3(o, __VA_ARGS__)
#define PARAX_PP_F5(o, a, ...) o.a, PARAX_PP_F4(o, __VA_ARGS__)
#define PARAX_PP_F6(o, a, ...) o.a, PARAX_PP_F5(o, __VA_ARGS__)
#define PARAX_PP_F7(o, a, ...) o.a, PARAX_PP_F6(o, __VA_ARGS__)
#define PARAX_PP_F8(o, a, ...) o.a, PARAX_PP_F7(o, __VA_ARGS__)
#define PARAX_PP_F9(o, a, ...) o.a, PARAX_PP_F8(o, __VA_ARGS__)
#define PARAX_PP_F10(o, a, ...) o.a, PARAX_PP_F9(o, __VA_ARGS__)
#define PARAX_PP_F11(o, a, ...) o.a, PARAX_PP_F10(o, __VA_ARGS__)
#define PARAX_PP_F12(o, a, ...) o.a, PARAX_PP_F11(o, __VA_ARGS__)
#define PARAX_PP_F13(o, a, ...) o.a, PARAX_PP_F12(o, __VA_ARGS__)
#define PARAX_PP_F14(o, a, ...) o.a, PARAX_PP_F13(o, __VA_ARGS__)
#define PARAX_PP_F15(o, a, ...) o.a, PARAX_PP_F14(o, __VA_ARGS__)
#define PARAX_PP_F16(o, a, ...) o.a, PARAX_PP_F15(o, __VA_ARGS__)
