// parax::jit and parax::make_jaxpr: trace a C++ callable over pytrees of Arrays into a
// program, compile it for the shardings of its arguments (propagating shardings and
// partitioning it over their devices), and run it; compiled programs are cached.
#pragma once

#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <tuple>
#include <type_traits>
#include <vector>

#include "parax/array.h"
#include "parax/sharding.h"
#include "parax/tree.h"

namespace parax {

class Explanation;  // parax/explain.h

namespace compiler {
struct Plan;
}
namespace core {
struct Program;
}

// What a compiled program costs per device.
struct CostAnalysis {
  double flops = 0;
  double collective_bytes = 0;             // bytes each device receives via collectives
  std::map<std::string, int> collectives;  // count per kind, e.g. {"all-gather": 1}
  std::string str() const;
};

struct JitOptions {
  // One per positional argument (applying to every leaf of it); nullopt leaves the choice
  // to the compiler.
  std::vector<std::optional<Sharding>> in_shardings = {};
  // One per output leaf, or a single one for all of them.
  std::vector<std::optional<Sharding>> out_shardings = {};
  // Names the function in programs and errors.
  std::string name = "f";
  // Positional arguments whose buffers the call may reuse for its outputs (JAX's
  // donate_argnums; C++ has no argument names): each leaf of such an argument is deleted by
  // the call when an output has its type and sharding (else it stays, with JAX's warning
  // that it was not usable). A donated buffer passed again by another argument raises.
  std::vector<int> donate_argnums = {};
};

// An array's type without data (jax.ShapeDtypeStruct): pass it where jit(f).lower(...) or
// eval_shape takes an argument, to lower and compile ahead of time for arguments of that
// shape, dtype and (if given, committed) sharding. Using its data raises ValueError.
class ShapeDtypeStruct : public Array {
 public:
  ShapeDtypeStruct(Shape shape, DType dtype, std::optional<Sharding> sharding = std::nullopt);
};

// A traced program with its constants, printed as JAX prints a ClosedJaxpr.
class Jaxpr {
 public:
  std::string to_string() const { return text_; }
  explicit Jaxpr(std::string text) : text_(std::move(text)) {}

 private:
  std::string text_;
};
std::ostream& operator<<(std::ostream& os, const Jaxpr& j);

// A compiled program for one signature (the compiler's plan: what each device runs).
class Compiled {
 public:
  // Returns the partitioned per-device program, each collective named (all-gather,
  // all-reduce, reduce-scatter, all-to-all, collective-permute).
  std::string as_text() const;
  CostAnalysis cost_analysis() const;
  // Returns every collective with the user's line that needed it, why, and its bytes and
  // estimated time (parax/explain.h).
  Explanation explain() const;
  std::vector<Sharding> input_shardings() const;
  std::vector<Sharding> output_shardings() const;
  explicit Compiled(std::shared_ptr<const compiler::Plan> plan) : plan_(std::move(plan)) {}

 private:
  std::shared_ptr<const compiler::Plan> plan_;
};

// A traced program ready to compile for concrete argument shardings.
class Lowered {
 public:
  // Returns the traced (global) program.
  std::string as_text() const;
  Compiled compile() const;
  struct Impl;
  explicit Lowered(std::shared_ptr<const Impl> impl) : impl_(std::move(impl)) {}

 private:
  std::shared_ptr<const Impl> impl_;
};

namespace detail {

class JitCore {
 public:
  explicit JitCore(JitOptions options);
  ~JitCore();
  std::vector<Array> call(const std::vector<Array>& leaves, const std::vector<TreeDef>& arg_defs,
                          const FlatFn& fn, TreeDef* out_def);
  Lowered lower(const std::vector<Array>& leaves, const std::vector<TreeDef>& arg_defs,
                const FlatFn& fn);
  Jaxpr make_jaxpr(const std::vector<Array>& leaves, const std::vector<TreeDef>& arg_defs,
                   const FlatFn& fn);
  int64_t cache_size() const;
  // Returns the outputs' types as data-less arrays (eval_shape).
  std::vector<Array> eval_shape(const std::vector<Array>& leaves,
                                const std::vector<TreeDef>& arg_defs, const FlatFn& fn,
                                TreeDef* out_def);

 private:
  struct Impl;
  std::unique_ptr<Impl> impl_;
};

// lower() and eval_shape() take ShapeDtypeStructs where arrays go: they are Arrays.
template <class T>
const T& as_arg(const T& x) {
  return x;
}
inline const Array& as_arg(const ShapeDtypeStruct& x) { return x; }

}  // namespace detail

// A jitted callable: call it like the original function.
template <class F>
class Jitted {
 public:
  Jitted(F f, JitOptions options)
      : f_(std::move(f)), core_(std::make_shared<detail::JitCore>(std::move(options))) {}

  template <class... Args>
  auto operator()(const Args&... args) const {
    return detail::call_flattened(
        f_,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          return core_->call(leaves, defs, fn, out_def);
        },
        args...);
  }

  // Traces for these arguments (arrays, or ShapeDtypeStructs) without running.
  template <class... Args>
  Lowered lower(const Args&... args) const {
    return lower_args(detail::as_arg(args)...);
  }

  // Returns how many argument signatures this jit holds a trace for (JAX's _cache_size);
  // at most config "parax_jit_cache_size". The traces, their programs and executables are
  // freed with the last copy of this object.
  int64_t cache_size() const { return core_->cache_size(); }

 private:
  template <class... Args>
  Lowered lower_args(const Args&... args) const {
    std::vector<Array> leaves;
    std::vector<TreeDef> defs;
    detail::flatten_args(leaves, defs, args...);
    return core_->lower(leaves, defs, detail::flat_fn<F, Args...>(f_, defs));
  }

  F f_;
  std::shared_ptr<detail::JitCore> core_;
};

// Returns f compiled: traced once per argument signature (shapes, dtypes, weak types,
// tree structure), compiled once per argument shardings and commitment.
template <class F>
Jitted<std::decay_t<F>> jit(F&& f, JitOptions options = {}) {
  return Jitted<std::decay_t<F>>(std::forward<F>(f), std::move(options));
}

// Returns f's result with every leaf a data-less array (a ShapeDtypeStruct: shape and dtype),
// tracing f on the types of `args` (arrays or ShapeDtypeStructs) without computing.
template <class F, class... Args>
auto eval_shape(const F& f, const Args&... args) {
  return [&](const auto&... xs) {
    detail::JitCore core(JitOptions{.name = "eval_shape"});
    return detail::call_flattened(
        f,
        [&](const auto& leaves, const auto& defs, const auto& fn, TreeDef* out_def) {
          return core.eval_shape(leaves, defs, fn, out_def);
        },
        xs...);
  }(detail::as_arg(args)...);
}

// make_jaxpr(f)(args...) returns the program f traces to.
template <class F>
auto make_jaxpr(F&& f) {
  return [f = std::forward<F>(f)](const auto&... args) {
    std::vector<Array> leaves;
    std::vector<TreeDef> defs;
    detail::flatten_args(leaves, defs, args...);
    detail::JitCore core(JitOptions{});
    return core.make_jaxpr(
        leaves, defs, detail::flat_fn<std::decay_t<F>, std::decay_t<decltype(args)>...>(f, defs));
  };
}

}  // namespace parax
