// Control flow inside traced code, as jax.lax has it: cond, switch_, while_loop, fori_loop,
// scan and map over pytree operands and carries, and checkpoint (remat), which trades
// compute for memory in the backward pass. Each traces its functions once into
// sub-programs of one primitive, so a loop costs one trace whatever its trip count, and
// grad, vmap, jit, shard_map and pmap transform it like any other primitive.
#pragma once

#include <cstdint>
#include <functional>
#include <optional>
#include <tuple>
#include <type_traits>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/tree.h"

namespace parax {

// What checkpoint saves for the backward pass (jax.checkpoint_policies); the rest is
// recomputed from the saved values.
enum class CheckpointPolicy {
  none,                              // JAX's policy=None: only the inputs are saved
  nothing_saveable,                  // the same, named
  everything_saveable,               // save everything: no recomputation
  dots_saveable,                     // save the results of dot_general
  dots_with_no_batch_dims_saveable,  // ... of dot_general without batch dimensions
};
namespace checkpoint_policies {
inline constexpr CheckpointPolicy nothing_saveable = CheckpointPolicy::nothing_saveable;
inline constexpr CheckpointPolicy everything_saveable = CheckpointPolicy::everything_saveable;
inline constexpr CheckpointPolicy dots_saveable = CheckpointPolicy::dots_saveable;
inline constexpr CheckpointPolicy checkpoint_dots = CheckpointPolicy::dots_saveable;
inline constexpr CheckpointPolicy dots_with_no_batch_dims_saveable =
    CheckpointPolicy::dots_with_no_batch_dims_saveable;
inline constexpr CheckpointPolicy checkpoint_dots_with_no_batch_dims =
    CheckpointPolicy::dots_with_no_batch_dims_saveable;
}  // namespace checkpoint_policies

namespace detail {

// The functions below trace `FlatFn`s (leaves in, leaves out: tree.h) into sub-programs and
// bind one control-flow primitive; the templates only flatten and rebuild pytrees.
std::vector<Array> cond_leaves(const Array& index, const std::vector<FlatFn>& branches,
                               bool is_switch, const std::vector<Array>& operands,
                               TreeDef* out_def);
Array cond_index(const ArrayLike& pred);
Array switch_index(const ArrayLike& index, size_t num_branches);
std::vector<Array> while_leaves(const FlatFn& cond, const FlatFn& body,
                                const std::vector<Array>& init, const TreeDef& init_def);
struct ScanArgs {
  std::optional<int64_t> length;
  bool reverse = false;
  int64_t unroll = 1;
};
// f takes the carry's leaves then one slice of each xs leaf, and returns the new carry's
// leaves then the y leaves; *out_def is f's result (a pair of carry and y).
std::vector<Array> scan_leaves(const FlatFn& f, const std::vector<Array>& init,
                               const TreeDef& init_def, const std::vector<Array>& xs,
                               const ScanArgs& args, TreeDef* out_def);
// body takes (i, carry leaves); static bounds loop with scan (reverse-differentiable),
// traced ones with while.
std::vector<Array> fori_leaves(const Array& lower, const Array& upper, const FlatFn& body,
                               const std::vector<Array>& init, const TreeDef& init_def);
std::vector<Array> checkpoint_leaves(const FlatFn& f, const std::vector<Array>& args,
                                     CheckpointPolicy policy, bool prevent_cse, TreeDef* out_def);

template <class T>
std::vector<Array> leaves_of(const T& tree, TreeDef* def) {
  auto [leaves, d] = tree::flatten(tree);
  *def = std::move(d);
  return leaves;
}

}  // namespace detail

namespace lax {

// Returns true_fn(operands...) if pred else false_fn(operands...); both are traced, and
// must return the same pytree of the same types. pred is a scalar bool or number.
template <class TrueFn, class FalseFn, class... Operands>
auto cond(const ArrayLike& pred, const TrueFn& true_fn, const FalseFn& false_fn,
          const Operands&... operands) {
  using R = std::decay_t<std::invoke_result_t<const TrueFn&, const Operands&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  detail::flatten_args(leaves, defs, operands...);
  TreeDef out_def;
  // Index 0 is false_fn, as JAX orders cond's branches.
  const std::vector<detail::FlatFn> branches = {
      detail::flat_fn<FalseFn, Operands...>(false_fn, defs),
      detail::flat_fn<TrueFn, Operands...>(true_fn, defs)};
  std::vector<Array> outs =
      detail::cond_leaves(detail::cond_index(pred), branches, false, leaves, &out_def);
  return tree::unflatten<R>(out_def, outs);
}

// Returns branches[index](operands...), index clamped into range (jax.lax.switch).
template <class Fn, class... Operands>
auto switch_(const ArrayLike& index, const std::vector<Fn>& branches, const Operands&... operands) {
  using R = std::decay_t<std::invoke_result_t<const Fn&, const Operands&...>>;
  std::vector<Array> leaves;
  std::vector<TreeDef> defs;
  detail::flatten_args(leaves, defs, operands...);
  std::vector<detail::FlatFn> flat;
  for (const Fn& b : branches) flat.push_back(detail::flat_fn<Fn, Operands...>(b, defs));
  TreeDef out_def;
  std::vector<Array> outs = detail::cond_leaves(detail::switch_index(index, branches.size()), flat,
                                                true, leaves, &out_def);
  return tree::unflatten<R>(out_def, outs);
}

// Returns the carry after running `body_fn` on it while `cond_fn` gives true.
template <class CondFn, class BodyFn, class Carry>
Carry while_loop(const CondFn& cond_fn, const BodyFn& body_fn, const Carry& init) {
  TreeDef def;
  std::vector<Array> leaves = detail::leaves_of(init, &def);
  const std::vector<TreeDef> defs = {def};
  std::vector<Array> outs =
      detail::while_leaves(detail::flat_fn<CondFn, Carry>(cond_fn, defs),
                           detail::flat_fn<BodyFn, Carry>(body_fn, defs), leaves, def);
  return tree::unflatten<Carry>(def, outs);
}

// Returns body(upper - 1, ... body(lower + 1, body(lower, init))); body(i, carry) gets i as
// an int32 array. Static bounds run as a scan (reverse-differentiable); bounds that are
// traced arrays run as a while loop, as in JAX.
template <class BodyFn, class Carry>
Carry fori_loop(const ArrayLike& lower, const ArrayLike& upper, const BodyFn& body,
                const Carry& init) {
  TreeDef def;
  std::vector<Array> leaves = detail::leaves_of(init, &def);
  const std::vector<TreeDef> defs = {TreeDef{}, def};
  std::vector<Array> outs = detail::fori_leaves(
      lower, upper, detail::flat_fn<BodyFn, Array, Carry>(body, defs), leaves, def);
  return tree::unflatten<Carry>(def, outs);
}

// Scans f(carry, x) -> (carry, y) over the leading axis of xs (a pytree; its slices have
// xs's type), returning the final carry and the ys stacked along a new leading axis.
// xs may have no leaves when `length` is given.
template <class F, class Carry, class Xs>
auto scan(const F& f, const Carry& init, const Xs& xs, std::optional<int64_t> length = std::nullopt,
          bool reverse = false, int64_t unroll = 1) {
  using R = std::decay_t<std::invoke_result_t<const F&, const Carry&, const Xs&>>;
  using CarryOut = std::decay_t<std::tuple_element_t<0, R>>;
  using Ys = std::decay_t<std::tuple_element_t<1, R>>;
  TreeDef init_def, xs_def;
  std::vector<Array> init_leaves = detail::leaves_of(init, &init_def);
  std::vector<Array> xs_leaves = detail::leaves_of(xs, &xs_def);
  const std::vector<TreeDef> defs = {init_def, xs_def};
  TreeDef out_def;
  std::vector<Array> outs =
      detail::scan_leaves(detail::flat_fn<F, Carry, Xs>(f, defs), init_leaves, init_def, xs_leaves,
                          detail::ScanArgs{length, reverse, unroll}, &out_def);
  return tree::unflatten<std::pair<CarryOut, Ys>>(out_def, outs);
}

// Returns f applied to each slice of xs along its leading axis, stacked (jax.lax.map).
template <class F, class Xs>
auto map(const F& f, const Xs& xs) {
  auto step = [&f](const std::vector<Array>&, const Xs& x) {
    return std::pair{std::vector<Array>{}, f(x)};
  };
  return scan(step, std::vector<Array>{}, xs).second;
}

}  // namespace lax

// Returns f wrapped so that differentiating it saves only what `policy` allows and
// recomputes the rest in the backward pass (jax.checkpoint). Without differentiation it
// computes what f does.
template <class F>
auto checkpoint(F f, CheckpointPolicy policy = CheckpointPolicy::none, bool prevent_cse = true) {
  return [f = std::move(f), policy, prevent_cse](const auto&... args) {
    return detail::call_flattened(
        f,
        [&](const auto& leaves, const auto&, const auto& fn, TreeDef* out_def) {
          return detail::checkpoint_leaves(fn, leaves, policy, prevent_cse, out_def);
        },
        args...);
  };
}

// jax.remat: checkpoint's other name.
template <class F>
auto remat(F f, CheckpointPolicy policy = CheckpointPolicy::none, bool prevent_cse = true) {
  return checkpoint(std::move(f), policy, prevent_cse);
}

}  // namespace parax
