// parax::nn's modules, in LibTorch's vocabulary: Module (parameters and submodules under
// torch's dotted names), the layers and losses, the state dict, functional_call (a module's
// forward as a pure function of its state, for jit and grad) and sharding by name.
#pragma once

#include <cstddef>
#include <cstdint>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <type_traits>
#include <unordered_map>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/random.h"
#include "parax/sharding.h"
#include "parax/tree.h"

namespace parax::nn {

// An ordered map from parameter names to Arrays (torch's OrderedDict): `sd["0.weight"]`,
// range-for yields (name, Array) pairs in insertion order. A pytree (JAX's OrderedDict), so
// device_put, jit, grad and tree::map take it as it is.
class StateDict {
 public:
  using parax_pytree_dict = void;
  using value_type = std::pair<const std::string, Array>;
  using iterator = std::vector<value_type>::iterator;
  using const_iterator = std::vector<value_type>::const_iterator;

  StateDict() = default;
  StateDict(std::initializer_list<value_type> items);
  StateDict(const StateDict& other) : items_(other.items_), index_(other.index_) {}
  StateDict(StateDict&&) = default;
  StateDict& operator=(const StateDict& other);
  StateDict& operator=(StateDict&& other) noexcept;

  // Returns the entry `name`, inserting an empty Array at the end when absent.
  Array& operator[](const std::string& name);
  // Returns the entry `name`; throws KeyError-like ValueError naming it when absent.
  const Array& operator[](const std::string& name) const { return at(name); }
  Array& at(const std::string& name);
  const Array& at(const std::string& name) const;
  bool contains(const std::string& name) const { return index_.count(name) > 0; }
  // Sets `name` (appended when new, in place otherwise).
  void insert_or_assign(const std::string& name, Array value);
  std::vector<std::string> keys() const;
  std::vector<Array> values() const;
  size_t size() const { return items_.size(); }
  bool empty() const { return items_.empty(); }
  void clear();

  iterator begin() { return items_.begin(); }
  iterator end() { return items_.end(); }
  const_iterator begin() const { return items_.begin(); }
  const_iterator end() const { return items_.end(); }

 private:
  std::vector<value_type> items_;
  std::unordered_map<std::string, size_t> index_;
};

class Module;

// The names and storage slots of a module's parameters, its own first, then each
// submodule's under its prefix (torch's order).
using ParameterSlots = std::vector<std::pair<std::string, Array*>>;

// A neural network module (torch::nn::Module): owns parameters and submodules registered
// under names, in registration order. Subclasses register in their constructor and define
// `Array forward(const Array&)` (called by `m(x)`); functional_call also takes any other
// forward signature. Modules are shared through handles (std::shared_ptr or ModuleHolder).
class Module : public std::enable_shared_from_this<Module> {
 public:
  explicit Module(std::string name = "Module") : name_(std::move(name)) {}
  Module(const Module&) = delete;
  Module& operator=(const Module&) = delete;
  virtual ~Module() = default;

  // Returns the module's type name (as torch prints it, e.g. "Linear").
  const std::string& name() const { return name_; }

  // Applies the module to one input. A subclass overrides either form; the default of the
  // first calls the second, whose default throws NotImplementedError.
  virtual Array forward(const Array& x);
  virtual Array forward(Array x);
  Array operator()(const Array& x);

  // Adds a parameter and returns its slot (which functional_call and load_state_dict update).
  // Throws ValueError for an empty name, a name with '.', or a name already taken.
  Array& register_parameter(const std::string& name, Array value);
  // Adds a buffer (state that is not trained, e.g. running statistics): in state_dict but
  // not in parameters().
  Array& register_buffer(const std::string& name, Array value);
  // Adds a submodule and returns the handle it was given.
  template <class M>
  M register_module(const std::string& name, M module) {
    add_child(name, as_module_ptr(module));
    return module;
  }

  // Returns every parameter under its dotted name, in registration order (recursively).
  StateDict named_parameters(bool recurse = true) const;
  std::vector<Array> parameters(bool recurse = true) const;
  StateDict named_buffers(bool recurse = true) const;
  // Returns this module (name "") and every submodule under its dotted name.
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_modules();
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> named_children() const;
  std::vector<std::shared_ptr<Module>> children() const;
  // Returns parameters and buffers under their dotted names (torch's state_dict order).
  StateDict state_dict() const;
  // Copies `dict`'s arrays into the parameters of the same names, each kept on its current
  // sharding. Throws ValueError naming the parameter for a wrong shape or dtype, and (when
  // strict) listing missing and unexpected names.
  void load_state_dict(const StateDict& dict, bool strict = true);
  // Places every parameter and buffer as `sharding` (device_put), or on `device`.
  void to(const Sharding& sharding);
  void to(const Device& device);
  // Training mode (Dropout drops only while training).
  void train(bool on = true);
  void eval() { train(false); }
  bool is_training() const { return training_; }
  // The storage slots of the parameters and buffers, as state_dict names them.
  ParameterSlots named_slots();
  // Returns a printable summary, e.g. "Linear(in_features=2, out_features=3, bias=true)".
  virtual std::string extra_repr() const { return ""; }
  std::string repr(int indent = 0) const;

 private:
  template <class M>
  static std::shared_ptr<Module> as_module_ptr(const M& m) {
    if constexpr (requires { m.ptr(); }) {
      return m.ptr();
    } else {
      return std::shared_ptr<Module>(m);
    }
  }
  void add_child(const std::string& name, std::shared_ptr<Module> child);
  void collect(const std::string& prefix, bool params, bool buffers, bool recurse,
               ParameterSlots& out) const;
  void check_new_name(const std::string& name, const char* api) const;

  std::string name_;
  bool training_ = true;
  struct Slot {
    std::string name;
    std::unique_ptr<Array> value;
    bool buffer = false;
  };
  std::vector<Slot> slots_;
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> children_;
};

std::ostream& operator<<(std::ostream& os, const Module& m);

// A shared handle to a module implementation (LibTorch's ModuleHolder): `Linear l(2, 3);
// l(x); l->weight`. Copies share the module.
template <class Impl>
class ModuleHolder {
 public:
  using ContainedType = Impl;
  template <class... A>
  requires std::is_constructible_v<Impl, A...> &&
      (!(sizeof...(A) == 1 && (std::is_base_of_v<ModuleHolder, std::decay_t<A>> &&
                               ...))) explicit ModuleHolder(A&&... args)
      : impl_(std::make_shared<Impl>(std::forward<A>(args)...)) {}
  ModuleHolder(std::nullptr_t) {}  // NOLINT: an empty handle, assigned later
  ModuleHolder(std::shared_ptr<Impl> impl) : impl_(std::move(impl)) {}  // NOLINT

  Impl* operator->() const { return impl_.get(); }
  Impl& operator*() const { return *impl_; }
  const std::shared_ptr<Impl>& ptr() const { return impl_; }
  Impl* get() const { return impl_.get(); }
  bool is_empty() const { return impl_ == nullptr; }

  template <class... A>
  decltype(auto) operator()(A&&... args) const {
    return impl_->forward(std::forward<A>(args)...);
  }
  StateDict state_dict() const { return impl_->state_dict(); }
  StateDict named_parameters(bool recurse = true) const { return impl_->named_parameters(recurse); }
  std::vector<Array> parameters(bool recurse = true) const { return impl_->parameters(recurse); }
  void load_state_dict(const StateDict& d, bool strict = true) const {
    impl_->load_state_dict(d, strict);
  }
  void to(const Sharding& s) const { impl_->to(s); }
  void train(bool on = true) const { impl_->train(on); }
  void eval() const { impl_->eval(); }

 protected:
  std::shared_ptr<Impl> impl_;
};

template <class Impl>
std::ostream& operator<<(std::ostream& os, const ModuleHolder<Impl>& m) {
  return os << *m;
}

// Declares `Name` as the handle of `NameImpl` (LibTorch's TORCH_MODULE).
#define PARAX_MODULE(Name)                                     \
  class Name : public ::parax::nn::ModuleHolder<Name##Impl> {  \
   public:                                                     \
    using ::parax::nn::ModuleHolder<Name##Impl>::ModuleHolder; \
  }

// ---- randomness -----------------------------------------------------------------------

// Seeds the default generator that layers draw their initial weights (and Dropout its
// masks) from when no key is given.
void manual_seed(uint64_t seed);
// Returns a fresh key from the default generator (it advances).
random::Key next_key();

// ---- layers ---------------------------------------------------------------------------

// y = x Wᵀ + b with W [out, in], initialised as torch does: W ~ U(±1/√in) (kaiming-uniform
// with a = √5), b ~ U(±1/√in).
class LinearImpl : public Module {
 public:
  LinearImpl(int64_t in_features, int64_t out_features, bool bias = true);
  LinearImpl(int64_t in_features, int64_t out_features, const random::Key& key, bool bias = true);
  Array forward(const Array& x) override;
  std::string extra_repr() const override;
  int64_t in_features, out_features;
  Array& weight;
  Array& bias;  // invalid (Array{}) when constructed without bias

 private:
  Array no_bias_;
};
PARAX_MODULE(Linear);

class ReLUImpl : public Module {
 public:
  ReLUImpl() : Module("ReLU") {}
  Array forward(const Array& x) override;
};
PARAX_MODULE(ReLU);

class TanhImpl : public Module {
 public:
  TanhImpl() : Module("Tanh") {}
  Array forward(const Array& x) override;
};
PARAX_MODULE(Tanh);

// GELU with approximate "none" (x Φ(x), by erf) or "tanh".
class GELUImpl : public Module {
 public:
  explicit GELUImpl(std::string approximate = "none");
  Array forward(const Array& x) override;
  std::string extra_repr() const override;
  std::string approximate;
};
PARAX_MODULE(GELU);

// A lookup table [num_embeddings, embedding_dim] ~ N(0, 1); forward takes integer indices
// (a gather; out-of-range indices give NaN rows as jnp.take does, where torch raises).
class EmbeddingImpl : public Module {
 public:
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim);
  EmbeddingImpl(int64_t num_embeddings, int64_t embedding_dim, const random::Key& key);
  Array forward(const Array& indices) override;
  std::string extra_repr() const override;
  int64_t num_embeddings, embedding_dim;
  Array& weight;
};
PARAX_MODULE(Embedding);

// Normalises over the trailing `normalized_shape` dimensions (biased variance), then
// scales by weight (ones) and shifts by bias (zeros).
class LayerNormImpl : public Module {
 public:
  explicit LayerNormImpl(std::vector<int64_t> normalized_shape, double eps = 1e-5,
                         bool elementwise_affine = true);
  Array forward(const Array& x) override;
  std::string extra_repr() const override;
  std::vector<int64_t> normalized_shape;
  double eps;
  Array& weight;
  Array& bias;

 private:
  Array none_w_, none_b_;
};
PARAX_MODULE(LayerNorm);

// Zeroes elements with probability p while training and scales the rest by 1/(1-p). The
// mask comes from `key`, or from the default generator when none is given (under jit that
// key is a constant of the trace: pass keys explicitly to draw new masks per step).
class DropoutImpl : public Module {
 public:
  explicit DropoutImpl(double p = 0.5);
  Array forward(const Array& x) override;
  Array forward(const Array& x, const random::Key& key);
  std::string extra_repr() const override;
  double p;
};
PARAX_MODULE(Dropout);

// Applies its modules in order.
class SequentialImpl : public Module {
 public:
  SequentialImpl() : Module("Sequential") {}
  template <class... M>
  requires(sizeof...(M) > 0) explicit SequentialImpl(M... modules) : Module("Sequential") {
    (push_back(std::move(modules)), ...);
  }
  template <class M>
  void push_back(M module) {
    register_module(std::to_string(size()), std::move(module));
  }
  // Adds a module under its own name (LibTorch's push_back(name, module)).
  template <class M>
  void push_back(const std::string& name, M module) {
    register_module(name, std::move(module));
  }
  Array forward(const Array& x) override;
  size_t size() const { return children().size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return children().at(i); }
};
class Sequential : public ModuleHolder<SequentialImpl> {
 public:
  using ModuleHolder<SequentialImpl>::ModuleHolder;
  Sequential() : ModuleHolder<SequentialImpl>(std::make_shared<SequentialImpl>()) {}
  template <class M>
  void push_back(M module) const {
    impl_->push_back(std::move(module));
  }
  size_t size() const { return impl_->size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return (*impl_)[i]; }
};

// Holds submodules named "0", "1", ...; iterating yields std::shared_ptr<Module>.
class ModuleListImpl : public Module {
 public:
  ModuleListImpl() : Module("ModuleList") {}
  template <class... M>
  requires(sizeof...(M) > 0) explicit ModuleListImpl(M... modules) : Module("ModuleList") {
    (push_back(std::move(modules)), ...);
  }
  template <class M>
  void push_back(M module) {
    register_module(std::to_string(modules_.size()), module);
    if constexpr (requires { module.ptr(); }) {
      modules_.push_back(module.ptr());
    } else {
      modules_.push_back(std::shared_ptr<Module>(module));
    }
  }
  size_t size() const { return modules_.size(); }
  bool empty() const { return modules_.empty(); }
  std::shared_ptr<Module> operator[](size_t i) const { return modules_.at(i); }
  std::vector<std::shared_ptr<Module>>::const_iterator begin() const { return modules_.begin(); }
  std::vector<std::shared_ptr<Module>>::const_iterator end() const { return modules_.end(); }

 private:
  std::vector<std::shared_ptr<Module>> modules_;
};
class ModuleList : public ModuleHolder<ModuleListImpl> {
 public:
  using ModuleHolder<ModuleListImpl>::ModuleHolder;
  ModuleList() : ModuleHolder<ModuleListImpl>(std::make_shared<ModuleListImpl>()) {}
  template <class M>
  void push_back(M module) const {
    impl_->push_back(std::move(module));
  }
  size_t size() const { return impl_->size(); }
  std::shared_ptr<Module> operator[](size_t i) const { return (*impl_)[i]; }
  auto begin() const { return impl_->begin(); }
  auto end() const { return impl_->end(); }
};

// ---- losses ---------------------------------------------------------------------------

// Mean (or "sum", or "none") of the squared differences over all elements.
class MSELossImpl : public Module {
 public:
  explicit MSELossImpl(std::string reduction = "mean");
  Array forward(const Array& input, const Array& target);
  std::string reduction;
};
PARAX_MODULE(MSELoss);

// Cross entropy of logits [N, C] (or [C], or [N, C, d...]) against class indices
// ([N], integer) or class probabilities (same shape as the input), as torch computes it:
// targets equal to ignore_index count neither in the sum nor in the mean.
class CrossEntropyLossImpl : public Module {
 public:
  explicit CrossEntropyLossImpl(std::string reduction = "mean", int64_t ignore_index = -100,
                                double label_smoothing = 0.0);
  Array forward(const Array& input, const Array& target);
  std::string reduction;
  int64_t ignore_index;
  double label_smoothing;
};
PARAX_MODULE(CrossEntropyLoss);

// ---- functional_call ----------------------------------------------------------------------

namespace detail {
Module& module_ref(Module& m);
template <class Impl>
Module& module_ref(const ModuleHolder<Impl>& m) {
  return *m.ptr();
}
template <class M>
requires std::is_base_of_v<Module, M> Module& module_ref(const std::shared_ptr<M>& m) { return *m; }

// Puts `params`' arrays in the module's slots of the same names while alive, and the
// originals back when destroyed. Throws ValueError for a name the module does not have.
class ParameterSwap {
 public:
  ParameterSwap(Module& module, const StateDict& params, bool strict);
  ~ParameterSwap();
  ParameterSwap(const ParameterSwap&) = delete;
  ParameterSwap& operator=(const ParameterSwap&) = delete;

 private:
  std::vector<std::pair<Array*, Array>> saved_;
};
}  // namespace detail

// Calls `module`'s forward on `args` with its parameters and buffers replaced by `params`
// (torch.func.functional_call): the forward as a pure function of the state, so
// jit(value_and_grad(f))(params, batch) traces through it. Names missing from `params`
// keep the module's own arrays (constants of a trace); a name the module lacks raises
// ValueError. The module's own arrays are back when it returns (or throws).
template <class M, class... Args>
auto functional_call(M& module, const StateDict& params, Args&&... args) {
  detail::ParameterSwap swap(detail::module_ref(module), params, /*strict=*/false);
  if constexpr (requires { module.forward(std::forward<Args>(args)...); }) {
    return module.forward(std::forward<Args>(args)...);
  } else if constexpr (requires { module->forward(std::forward<Args>(args)...); }) {
    return module->forward(std::forward<Args>(args)...);
  } else {
    return module(std::forward<Args>(args)...);
  }
}

// ---- sharding by name ------------------------------------------------------------------------

// Returns `params` with each array placed as the rule for its name: a rule's key is an
// exact name or a regular expression matching the whole name (".*\\.bias"); an exact name
// wins over patterns. Throws ValueError naming the parameter when no rule matches it (unless
// `default_sharding` is given) or several patterns do, and naming a rule that matches nothing.
StateDict shard(const StateDict& params, const std::map<std::string, Sharding>& rules,
                const std::optional<Sharding>& default_sharding = std::nullopt);
// Returns the sharding each name gets under `rules` (shard's matching, without placing).
std::vector<std::pair<std::string, Sharding>> match_shardings(
    const std::vector<std::string>& names, const std::map<std::string, Sharding>& rules,
    const std::optional<Sharding>& default_sharding = std::nullopt);

}  // namespace parax::nn
