// parax::optax: each transformation is a pair of functions over the parameters' flat leaves,
// written as optax writes them (same operation order, so values agree to rounding).
#include "parax/optax.h"

#include <cmath>
#include <limits>

#include "parax/errors.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::optax {

namespace jnp = parax::numpy;

namespace {

Array zero_count() { return jnp::zeros({}, DType::int32); }

// numerics.safe_increment: count + 1, saturating at int32's maximum.
Array safe_increment(const Array& count) {
  const int32_t max = std::numeric_limits<int32_t>::max();
  return jnp::where(jnp::less(count, max), count + int32_t(1), int32_t(max));
}

std::vector<Array> zeros_like_all(const std::vector<Array>& params) {
  std::vector<Array> out;
  for (const Array& p : params) out.push_back(jnp::zeros_like(p));
  return out;
}

const std::vector<Array>& slot(const OptState& s, const char* name, const char* api) {
  auto it = s.slots.find(name);
  if (it == s.slots.end()) {
    throw ValueError(std::string("[optax::") + api + "] the state has no '" + name +
                     "': pass the state this transformation's init returned");
  }
  return it->second;
}

void check_sizes(const std::vector<Array>& updates, const std::vector<Array>& state,
                 const char* api) {
  if (updates.size() != state.size()) {
    throw ValueError(std::string("[optax::") + api + "] updates have " +
                     std::to_string(updates.size()) + " leaves but the state was made for " +
                     std::to_string(state.size()) + " parameters");
  }
}

// tree.bias_correction: t / (1 - decay**count), in t's dtype.
Array bias_correction(const Array& t, double decay, const Array& count) {
  Array c = jnp::power(Array(jnp::asarray(float(decay))), count.astype(DType::float32));
  Array correction = 1.0f - c;
  return t / correction.astype(t.dtype());
}

}  // namespace

void GradientTransformation::check_params(const std::vector<Array>& grads,
                                          const std::vector<Array>& params) {
  if (grads.size() != params.size()) {
    throw ValueError("[optax::update] grads have " + std::to_string(grads.size()) +
                     " leaves but params have " + std::to_string(params.size()));
  }
}

GradientTransformation identity() {
  return GradientTransformation([](const std::vector<Array>&) { return OptState{}; },
                                [](const std::vector<Array>& u, const OptState& s,
                                   const std::vector<Array>*) { return std::make_pair(u, s); });
}

GradientTransformation chain(std::vector<GradientTransformation> transforms) {
  auto init = [transforms](const std::vector<Array>& params) {
    OptState s;
    for (const auto& t : transforms) s.inner.push_back(t.init_fn()(params));
    return s;
  };
  auto update = [transforms](const std::vector<Array>& updates, const OptState& state,
                             const std::vector<Array>* params) {
    if (state.inner.size() != transforms.size()) {
      throw ValueError("[optax::chain] the state holds " + std::to_string(state.inner.size()) +
                       " transformations' states; this chain has " +
                       std::to_string(transforms.size()));
    }
    std::vector<Array> u = updates;
    OptState out;
    for (size_t i = 0; i < transforms.size(); ++i) {
      auto [next, s] = transforms[i].update_fn()(u, state.inner[i], params);
      u = std::move(next);
      out.inner.push_back(std::move(s));
    }
    return std::make_pair(u, out);
  };
  return GradientTransformation(init, update);
}

GradientTransformation scale(double step_size) {
  return GradientTransformation(
      [](const std::vector<Array>&) { return OptState{}; },
      [step_size](const std::vector<Array>& updates, const OptState& s, const std::vector<Array>*) {
        std::vector<Array> out;
        for (const Array& g : updates) out.push_back(step_size * g);
        return std::make_pair(out, s);
      });
}

GradientTransformation scale_by_schedule(Schedule schedule) {
  return GradientTransformation(
      [](const std::vector<Array>&) {
        OptState s;
        s.slots["count"] = {zero_count()};
        return s;
      },
      [schedule](const std::vector<Array>& updates, const OptState& state,
                 const std::vector<Array>*) {
        const Array& count = slot(state, "count", "scale_by_schedule").at(0);
        Array step = schedule(count);
        std::vector<Array> out;
        for (const Array& g : updates) out.push_back(step.astype(g.dtype()) * g);
        OptState s;
        s.slots["count"] = {safe_increment(count)};
        return std::make_pair(out, s);
      });
}

GradientTransformation scale_by_learning_rate(ScalarOrSchedule lr, bool flip_sign) {
  const double m = flip_sign ? -1.0 : 1.0;
  if (lr.is_schedule()) {
    Schedule s = lr.schedule();
    return scale_by_schedule([s, m](const Array& count) { return m * s(count); });
  }
  return scale(m * lr.value());
}

GradientTransformation trace(double decay, bool nesterov) {
  return GradientTransformation(
      [](const std::vector<Array>& params) {
        OptState s;
        s.slots["trace"] = zeros_like_all(params);
        return s;
      },
      [decay, nesterov](const std::vector<Array>& updates, const OptState& state,
                        const std::vector<Array>*) {
        const std::vector<Array>& tr = slot(state, "trace", "trace");
        check_sizes(updates, tr, "trace");
        std::vector<Array> new_trace, out;
        for (size_t i = 0; i < updates.size(); ++i) {
          new_trace.push_back((updates[i] + decay * tr[i]).astype(tr[i].dtype()));
        }
        if (nesterov) {
          for (size_t i = 0; i < updates.size(); ++i) {
            out.push_back(updates[i] + decay * new_trace[i]);
          }
        } else {
          out = new_trace;
        }
        OptState s;
        s.slots["trace"] = new_trace;
        return std::make_pair(out, s);
      });
}

GradientTransformation scale_by_adam(double b1, double b2, double eps, double eps_root,
                                     bool nesterov) {
  return GradientTransformation(
      [](const std::vector<Array>& params) {
        OptState s;
        s.slots["count"] = {zero_count()};
        s.slots["mu"] = zeros_like_all(params);
        s.slots["nu"] = zeros_like_all(params);
        return s;
      },
      [=](const std::vector<Array>& updates, const OptState& state, const std::vector<Array>*) {
        const std::vector<Array>& mu = slot(state, "mu", "scale_by_adam");
        const std::vector<Array>& nu = slot(state, "nu", "scale_by_adam");
        const Array& count = slot(state, "count", "scale_by_adam").at(0);
        check_sizes(updates, mu, "scale_by_adam");
        Array count_inc = safe_increment(count);
        std::vector<Array> new_mu, new_nu, out;
        for (size_t i = 0; i < updates.size(); ++i) {
          const Array& g = updates[i];
          new_mu.push_back((1 - b1) * g + b1 * mu[i]);
          new_nu.push_back((1 - b2) * (g * g) + b2 * nu[i]);
          Array mu_hat;
          if (nesterov) {
            Array a = bias_correction(new_mu[i], b1, safe_increment(count_inc));
            Array b = bias_correction(g, b1, count_inc);
            mu_hat = b1 * a + (1 - b1) * b;
          } else {
            mu_hat = bias_correction(new_mu[i], b1, count_inc);
          }
          Array nu_hat = bias_correction(new_nu[i], b2, count_inc);
          out.push_back(mu_hat / (jnp::sqrt(nu_hat + eps_root) + eps));
          new_nu[i] = new_nu[i].astype(nu[i].dtype());
        }
        OptState s;
        s.slots["count"] = {count_inc};
        s.slots["mu"] = new_mu;
        s.slots["nu"] = new_nu;
        return std::make_pair(out, s);
      });
}

GradientTransformation add_decayed_weights(double weight_decay) {
  return GradientTransformation(
      [](const std::vector<Array>&) { return OptState{}; },
      [weight_decay](const std::vector<Array>& updates, const OptState& s,
                     const std::vector<Array>* params) {
        if (!params) {
          throw ValueError(
              "[optax::add_decayed_weights] You are using a transformation that requires the "
              "current value of parameters, but you are not passing `params` when calling "
              "`update`.");
        }
        if (weight_decay == 0.0) return std::make_pair(updates, s);
        std::vector<Array> out;
        for (size_t i = 0; i < updates.size(); ++i) {
          out.push_back(updates[i] + weight_decay * (*params)[i]);
        }
        return std::make_pair(out, s);
      });
}

Array global_norm(const std::vector<Array>& leaves) {
  Array total;
  for (const Array& l : leaves) {
    Array sq = jnp::sum(l * l);
    total = total.valid() ? total + sq : sq;
  }
  if (!total.valid()) return jnp::zeros({}, DType::float32);
  return jnp::sqrt(total);
}

GradientTransformation clip_by_global_norm(double max_norm) {
  return GradientTransformation(
      [](const std::vector<Array>&) { return OptState{}; },
      [max_norm](const std::vector<Array>& updates, const OptState& s, const std::vector<Array>*) {
        Array g_norm = global_norm(updates);
        Array trigger = jnp::less(g_norm, max_norm);
        std::vector<Array> out;
        for (const Array& t : updates) {
          Array clipped = (t / g_norm.astype(t.dtype())) * max_norm;
          out.push_back(
              lax::select(jnp::broadcast_to(trigger, t.shape()), t, clipped.astype(t.dtype())));
        }
        return std::make_pair(out, s);
      });
}

GradientTransformation sgd(ScalarOrSchedule lr, std::optional<double> momentum, bool nesterov) {
  return chain(momentum ? trace(*momentum, nesterov) : identity(), scale_by_learning_rate(lr));
}

GradientTransformation adam(ScalarOrSchedule lr, double b1, double b2, double eps, double eps_root,
                            bool nesterov) {
  return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov), scale_by_learning_rate(lr));
}

GradientTransformation adamw(ScalarOrSchedule lr, double b1, double b2, double eps, double eps_root,
                             double weight_decay, bool nesterov) {
  return chain(scale_by_adam(b1, b2, eps, eps_root, nesterov), add_decayed_weights(weight_decay),
               scale_by_learning_rate(lr));
}

Schedule constant_schedule(double value) {
  return [value](const Array&) { return jnp::asarray(float(value)); };
}

Schedule polynomial_schedule(double init_value, double end_value, double power,
                             int64_t transition_steps, int64_t transition_begin) {
  if (transition_steps <= 0) return constant_schedule(init_value);
  if (transition_begin < 0) transition_begin = 0;
  return [=](const Array& count) {
    Array c = jnp::clip(count - int32_t(transition_begin), int32_t(0), int32_t(transition_steps));
    Array frac = 1.0 - c.astype(DType::float32) / float(transition_steps);
    Array p = power == 1.0 ? frac : jnp::power(frac, float(power));
    return (init_value - end_value) * p + end_value;
  };
}

Schedule linear_schedule(double init_value, double end_value, int64_t transition_steps,
                         int64_t transition_begin) {
  return polynomial_schedule(init_value, end_value, 1.0, transition_steps, transition_begin);
}

Schedule cosine_decay_schedule(double init_value, int64_t decay_steps, double alpha,
                               double exponent) {
  if (decay_steps <= 0) {
    throw ValueError("The cosine_decay_schedule requires positive decay_steps, got decay_steps=" +
                     std::to_string(decay_steps) + ".");
  }
  return [=](const Array& count) {
    Array c = jnp::minimum(count.astype(DType::float32), float(decay_steps));
    Array cosine = 0.5 * (1.0 + jnp::cos(M_PI * c / double(decay_steps)));
    Array decayed = (1 - alpha) * (exponent == 1.0 ? cosine : jnp::power(cosine, exponent)) + alpha;
    return init_value * decayed;
  };
}

namespace detail {
std::vector<Array> add_cast(const std::vector<Array>& params, const std::vector<Array>& updates) {
  if (params.size() != updates.size()) {
    throw ValueError("[optax::apply_updates] params have " + std::to_string(params.size()) +
                     " leaves but updates have " + std::to_string(updates.size()));
  }
  std::vector<Array> out;
  for (size_t i = 0; i < params.size(); ++i) {
    out.push_back((params[i] + updates[i]).astype(params[i].dtype()));
  }
  return out;
}
}  // namespace detail

}  // namespace parax::optax

namespace parax::nn::optim {

void Optimizer::step(const StateDict& grads) {
  StateDict params = module_->named_parameters();
  StateDict g;
  for (const auto& [name, p] : params) {
    if (!grads.contains(name)) {
      throw ValueError("[nn::optim::step] no gradient for parameter '" + name + "'");
    }
    g.insert_or_assign(name, grads.at(name));
  }
  auto [updates, state] = tx_.update(g, state_, params);
  state_ = std::move(state);
  module_->load_state_dict(optax::apply_updates(params, updates), /*strict=*/false);
}

namespace detail {

// torch's dampening scales the gradient entering the buffer after the first step; optax's
// trace has none, so dampening is supported only at 0.
optax::GradientTransformation torch_sgd(double lr, double momentum, double dampening,
                                        double weight_decay, bool nesterov) {
  if (dampening != 0) {
    throw NotImplementedError("[nn::optim::SGD] dampening != 0 is not supported");
  }
  if (nesterov && momentum <= 0) {
    throw ValueError("[nn::optim::SGD] Nesterov momentum requires a momentum and zero dampening");
  }
  std::vector<optax::GradientTransformation> parts;
  if (weight_decay != 0) parts.push_back(optax::add_decayed_weights(weight_decay));
  if (momentum != 0) parts.push_back(optax::trace(momentum, nesterov));
  parts.push_back(optax::scale_by_learning_rate(lr));
  return optax::chain(parts);
}

optax::GradientTransformation torch_adam(double lr, double b1, double b2, double eps,
                                         double weight_decay, bool decoupled) {
  if (decoupled) return optax::adamw(lr, b1, b2, eps, 0.0, weight_decay);
  std::vector<optax::GradientTransformation> parts;
  if (weight_decay != 0) parts.push_back(optax::add_decayed_weights(weight_decay));
  parts.push_back(optax::scale_by_adam(b1, b2, eps));
  parts.push_back(optax::scale_by_learning_rate(lr));
  return optax::chain(parts);
}

}  // namespace detail
}  // namespace parax::nn::optim
