// parax::optax: optax's pure gradient transformations (sgd, adam, adamw, chain,
// clip_by_global_norm, scale_by_schedule and schedules). init and update are functions of
// pytrees, so a whole training step jits into one program; moments are made like the
// parameters (zeros_like), so they follow each parameter's sharding.
#pragma once

#include <functional>
#include <map>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/module.h"
#include "parax/tree.h"

namespace parax::optax {

// One transformation's state: named slots of arrays ("count" holds one int32 scalar;
// "mu", "nu", "trace" one array per parameter leaf, in leaf order), and the states of the
// transformations it chains. A pytree, so it passes through jit and device_put.
struct OptState {
  std::map<std::string, std::vector<Array>> slots;
  std::vector<OptState> inner;
};
PARAX_REGISTER_PYTREE(OptState, slots, inner)

// A learning rate (or other scalar) as a function of the step count (int32 scalar).
using Schedule = std::function<Array(const Array& count)>;

// A number or a schedule, where optax takes either.
class ScalarOrSchedule {
 public:
  ScalarOrSchedule(double value) : value_(value) {}          // NOLINT
  ScalarOrSchedule(Schedule s) : schedule_(std::move(s)) {}  // NOLINT
  bool is_schedule() const { return bool(schedule_); }
  double value() const { return value_; }
  const Schedule& schedule() const { return schedule_; }

 private:
  double value_ = 0;
  Schedule schedule_;
};

// A pair of pure functions (optax.GradientTransformation). init(params) returns the state;
// update(grads, state[, params]) returns (updates, new state), updates shaped like grads.
class GradientTransformation {
 public:
  using InitFn = std::function<OptState(const std::vector<Array>& params)>;
  using UpdateFn = std::function<std::pair<std::vector<Array>, OptState>(
      const std::vector<Array>& updates, const OptState& state, const std::vector<Array>* params)>;

  GradientTransformation(InitFn init, UpdateFn update)
      : init_(std::move(init)), update_(std::move(update)) {}

  template <class T>
  OptState init(const T& params) const {
    return init_(tree::leaves(params));
  }
  template <class T>
  std::pair<T, OptState> update(const T& grads, const OptState& state) const {
    auto [leaves, def] = tree::flatten(grads);
    auto [out, new_state] = update_(leaves, state, nullptr);
    return {tree::unflatten<T>(def, out), std::move(new_state)};
  }
  template <class T>
  std::pair<T, OptState> update(const T& grads, const OptState& state, const T& params) const {
    auto [leaves, def] = tree::flatten(grads);
    std::vector<Array> p = tree::leaves(params);
    check_params(leaves, p);
    auto [out, new_state] = update_(leaves, state, &p);
    return {tree::unflatten<T>(def, out), std::move(new_state)};
  }

  const InitFn& init_fn() const { return init_; }
  const UpdateFn& update_fn() const { return update_; }

 private:
  static void check_params(const std::vector<Array>& grads, const std::vector<Array>& params);
  InitFn init_;
  UpdateFn update_;
};

// Returns params + updates, each cast back to its parameter's dtype.
template <class T>
T apply_updates(const T& params, const T& updates);

// ---- transformations --------------------------------------------------------------------

// Applies the transformations in order; the state is the tuple of their states.
GradientTransformation chain(std::vector<GradientTransformation> transforms);
template <class... G>
GradientTransformation chain(G... transforms) {
  return chain(std::vector<GradientTransformation>{std::move(transforms)...});
}
// Leaves updates unchanged.
GradientTransformation identity();
// Multiplies updates by `step_size`.
GradientTransformation scale(double step_size);
// Multiplies updates by schedule(count), then counts the step.
GradientTransformation scale_by_schedule(Schedule schedule);
// Multiplies updates by -learning_rate (or -schedule(count)).
GradientTransformation scale_by_learning_rate(ScalarOrSchedule learning_rate,
                                              bool flip_sign = true);
// trace = g + decay * trace; updates = trace (or g + decay * trace with nesterov).
GradientTransformation trace(double decay, bool nesterov = false);
// Adam's moment estimates, bias-corrected: m̂ / (√(v̂ + eps_root) + eps).
GradientTransformation scale_by_adam(double b1 = 0.9, double b2 = 0.999, double eps = 1e-8,
                                     double eps_root = 0.0, bool nesterov = false);
// updates + weight_decay * params. Requires: update is given params.
GradientTransformation add_decayed_weights(double weight_decay = 0.0);
// Scales all updates by max_norm / global_norm when their global L2 norm exceeds max_norm.
GradientTransformation clip_by_global_norm(double max_norm);

// ---- optimizers ---------------------------------------------------------------------------

// Stochastic gradient descent, with heavy-ball (or Nesterov) momentum when `momentum` is set.
GradientTransformation sgd(ScalarOrSchedule learning_rate,
                           std::optional<double> momentum = std::nullopt, bool nesterov = false);
GradientTransformation adam(ScalarOrSchedule learning_rate, double b1 = 0.9, double b2 = 0.999,
                            double eps = 1e-8, double eps_root = 0.0, bool nesterov = false);
// Adam with decoupled weight decay (chain(scale_by_adam, add_decayed_weights, lr)).
GradientTransformation adamw(ScalarOrSchedule learning_rate, double b1 = 0.9, double b2 = 0.999,
                             double eps = 1e-8, double eps_root = 0.0, double weight_decay = 1e-4,
                             bool nesterov = false);

// ---- schedules -----------------------------------------------------------------------------

Schedule constant_schedule(double value);
// init_value to end_value linearly over transition_steps, starting at transition_begin.
Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps,
                         int64_t transition_begin = 0);
Schedule polynomial_schedule(double init_value, double end_value, double power,
                             int64_t transition_steps, int64_t transition_begin = 0);
// init_value * ((1 - alpha) * (½(1 + cos(π min(count, decay_steps) / decay_steps)))^exponent
// + alpha). Requires: decay_steps > 0 (else ValueError).
Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha = 0.0,
                               double exponent = 1.0);

// Returns the global L2 norm of all leaves (optax.global_norm).
Array global_norm(const std::vector<Array>& leaves);

namespace detail {
std::vector<Array> add_cast(const std::vector<Array>& params, const std::vector<Array>& updates);
}

template <class T>
T apply_updates(const T& params, const T& updates) {
  auto [p, def] = tree::flatten(params);
  std::vector<Array> u = tree::leaves(updates);
  return tree::unflatten<T>(def, detail::add_cast(p, u));
}

}  // namespace parax::optax

namespace parax::nn::optim {

// A torch-style stateful optimizer over a module's parameters: step(grads) runs an optax
// transformation on (grads, its state, the module's parameters) and writes the new
// parameters into the module. grads is a dict with (at least) the parameters' names.
class Optimizer {
 public:
  template <class M>
  Optimizer(M& module, optax::GradientTransformation tx)
      : module_(&detail::module_ref(module)),
        tx_(std::move(tx)),
        state_(tx_.init(module_->named_parameters())) {}
  void step(const StateDict& grads);
  // Gradients are values here, not accumulated in the parameters: nothing to clear.
  void zero_grad() {}
  const optax::OptState& state() const { return state_; }

 private:
  Module* module_;
  optax::GradientTransformation tx_;
  optax::OptState state_;
};

namespace detail {
optax::GradientTransformation torch_sgd(double lr, double momentum, double dampening,
                                        double weight_decay, bool nesterov);
optax::GradientTransformation torch_adam(double lr, double b1, double b2, double eps,
                                         double weight_decay, bool decoupled);
}  // namespace detail

// torch.optim.SGD: p -= lr * (momentum buffer of g + weight_decay * p).
class SGD : public Optimizer {
 public:
  template <class M>
  SGD(M& module, double lr, double momentum = 0, double dampening = 0, double weight_decay = 0,
      bool nesterov = false)
      : Optimizer(module, detail::torch_sgd(lr, momentum, dampening, weight_decay, nesterov)) {}
};

// torch.optim.Adam (weight_decay as an L2 term added to the gradient).
class Adam : public Optimizer {
 public:
  template <class M>
  Adam(M& module, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
       double weight_decay = 0)
      : Optimizer(module, detail::torch_adam(lr, beta1, beta2, eps, weight_decay, false)) {}
};

// torch.optim.AdamW (decoupled weight decay, default 1e-2).
class AdamW : public Optimizer {
 public:
  template <class M>
  AdamW(M& module, double lr = 1e-3, double beta1 = 0.9, double beta2 = 0.999, double eps = 1e-8,
        double weight_decay = 1e-2)
      : Optimizer(module, detail::torch_adam(lr, beta1, beta2, eps, weight_decay, true)) {}
};

}  // namespace parax::nn::optim
