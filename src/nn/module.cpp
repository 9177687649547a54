// parax::nn's modules: the registry behind torch's dotted names, the layers and losses as
// compositions of numpy/lax functions, functional_call's swap and sharding by name.
#include "parax/module.h"

#include <cmath>
#include <mutex>
#include <regex>
#include <sstream>

#include "parax/device_put.h"
#include "parax/errors.h"
#include "parax/grad.h"
#include "parax/indexing.h"
#include "parax/lax.h"
#include "parax/numpy.h"

namespace parax::nn {

namespace jnp = parax::numpy;

namespace {
std::string shape_str(const Shape& shape) {
  std::string s = "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? ", " : "") + std::to_string(shape[i]);
  return s + "]";
}
}  // namespace

// ---- StateDict ------------------------------------------------------------------------

StateDict::StateDict(std::initializer_list<value_type> items) {
  for (const auto& [name, value] : items) insert_or_assign(name, value);
}

StateDict& StateDict::operator=(const StateDict& other) {
  if (this != &other) {
    StateDict copy(other);
    *this = std::move(copy);
  }
  return *this;
}

StateDict& StateDict::operator=(StateDict&& other) noexcept {
  items_.swap(other.items_);
  index_.swap(other.index_);
  return *this;
}

Array& StateDict::operator[](const std::string& name) {
  auto it = index_.find(name);
  if (it != index_.end()) return items_[it->second].second;
  index_.emplace(name, items_.size());
  items_.emplace_back(name, Array());
  return items_.back().second;
}

Array& StateDict::at(const std::string& name) {
  auto it = index_.find(name);
  if (it == index_.end()) {
    throw ValueError("[StateDict] no entry named '" + name + "'; the names are " +
                     std::to_string(items_.size()) + " (see keys())");
  }
  return items_[it->second].second;
}

const Array& StateDict::at(const std::string& name) const {
  return const_cast<StateDict*>(this)->at(name);
}

void StateDict::insert_or_assign(const std::string& name, Array value) {
  (*this)[name] = std::move(value);
}

std::vector<std::string> StateDict::keys() const {
  std::vector<std::string> out;
  for (const auto& [name, value] : items_) out.push_back(name);
  return out;
}

std::vector<Array> StateDict::values() const {
  std::vector<Array> out;
  for (const auto& [name, value] : items_) out.push_back(value);
  return out;
}

void StateDict::clear() {
  items_.clear();
  index_.clear();
}

// ---- Module ---------------------------------------------------------------------------

Array Module::forward(const Array& x) {
  auto by_value = static_cast<Array (Module::*)(Array)>(&Module::forward);
  return (this->*by_value)(x);
}

Array Module::forward(Array) {
  throw NotImplementedError("[nn::Module] " + name_ +
                            " has no forward(const Array&): define it in the subclass, or "
                            "call the module's own forward with its arguments");
}

Array Module::operator()(const Array& x) {
  auto by_ref = static_cast<Array (Module::*)(const Array&)>(&Module::forward);
  return (this->*by_ref)(x);
}

void Module::check_new_name(const std::string& name, const char* api) const {
  if (name.empty() || name.find('.') != std::string::npos) {
    throw ValueError(std::string("[nn::Module::") + api + "] name '" + name +
                     "' must be non-empty and contain no '.'");
  }
  for (const Slot& s : slots_) {
    if (s.name == name) {
      throw ValueError(std::string("[nn::Module::") + api + "] attribute '" + name +
                       "' already exists in " + name_);
    }
  }
  for (const auto& [child, m] : children_) {
    if (child == name) {
      throw ValueError(std::string("[nn::Module::") + api + "] attribute '" + name +
                       "' already exists in " + name_ + " (a submodule)");
    }
  }
}

Array& Module::register_parameter(const std::string& name, Array value) {
  check_new_name(name, "register_parameter");
  slots_.push_back({name, std::make_unique<Array>(std::move(value)), false});
  return *slots_.back().value;
}

Array& Module::register_buffer(const std::string& name, Array value) {
  check_new_name(name, "register_buffer");
  slots_.push_back({name, std::make_unique<Array>(std::move(value)), true});
  return *slots_.back().value;
}

void Module::add_child(const std::string& name, std::shared_ptr<Module> child) {
  check_new_name(name, "register_module");
  if (!child) throw ValueError("[nn::Module::register_module] '" + name + "' is an empty handle");
  children_.emplace_back(name, std::move(child));
}

void Module::collect(const std::string& prefix, bool params, bool buffers, bool recurse,
                     ParameterSlots& out) const {
  for (const Slot& s : slots_) {
    if (!s.value->valid()) continue;  // torch skips parameters registered as None
    if (s.buffer ? buffers : params) out.emplace_back(prefix + s.name, s.value.get());
  }
  if (!recurse) return;
  for (const auto& [name, child] : children_) {
    child->collect(prefix + name + ".", params, buffers, recurse, out);
  }
}

namespace {
StateDict to_dict(const ParameterSlots& slots) {
  StateDict out;
  for (const auto& [name, slot] : slots) out.insert_or_assign(name, *slot);
  return out;
}
}  // namespace

StateDict Module::named_parameters(bool recurse) const {
  ParameterSlots slots;
  collect("", true, false, recurse, slots);
  return to_dict(slots);
}

std::vector<Array> Module::parameters(bool recurse) const {
  return named_parameters(recurse).values();
}

StateDict Module::named_buffers(bool recurse) const {
  ParameterSlots slots;
  collect("", false, true, recurse, slots);
  return to_dict(slots);
}

StateDict Module::state_dict() const {
  ParameterSlots slots;
  collect("", true, true, true, slots);
  return to_dict(slots);
}

ParameterSlots Module::named_slots() {
  ParameterSlots slots;
  collect("", true, true, true, slots);
  return slots;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_modules() {
  std::shared_ptr<Module> self = weak_from_this().lock();
  // A module on the stack (not owned by a shared_ptr) is listed through a non-owning handle.
  if (!self) self = std::shared_ptr<Module>(this, [](Module*) {});
  std::vector<std::pair<std::string, std::shared_ptr<Module>>> out{{"", self}};
  for (const auto& [name, child] : children_) {
    for (auto& [sub, m] : child->named_modules()) {
      out.emplace_back(sub.empty() ? name : name + "." + sub, m);
    }
  }
  return out;
}

std::vector<std::pair<std::string, std::shared_ptr<Module>>> Module::named_children() const {
  return children_;
}

std::vector<std::shared_ptr<Module>> Module::children() const {
  std::vector<std::shared_ptr<Module>> out;
  for (const auto& [name, child] : children_) out.push_back(child);
  return out;
}

namespace {
std::string join_quoted(const std::vector<std::string>& names) {
  std::string s;
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", \"" : "\"") + names[i] + "\"";
  return s;
}
}  // namespace

void Module::load_state_dict(const StateDict& dict, bool strict) {
  ParameterSlots slots = named_slots();
  std::vector<std::string> missing, unexpected, errors;
  std::map<std::string, Array*> by_name;
  for (const auto& [name, slot] : slots) by_name[name] = slot;
  for (const auto& [name, value] : dict) {
    if (!by_name.count(name)) unexpected.push_back(name);
  }
  std::vector<std::pair<Array*, Array>> loads;
  for (const auto& [name, slot] : slots) {
    if (!dict.contains(name)) {
      missing.push_back(name);
      continue;
    }
    const Array& value = dict.at(name);
    if (value.shape() != slot->shape()) {
      errors.push_back(
          "size mismatch for " + name + ": copying a param with shape " + shape_str(value.shape()) +
          " from checkpoint, the shape in current model is " + shape_str(slot->shape()) + ".");
    } else if (value.dtype() != slot->dtype()) {
      errors.push_back("dtype mismatch for " + name + ": copying a param of dtype " +
                       std::string(dtype_name(value.dtype())) +
                       " from checkpoint, the dtype in current model is " +
                       std::string(dtype_name(slot->dtype())) + ".");
    } else {
      // As torch's copy_: the parameter keeps its placement.
      loads.emplace_back(slot, slot->is_committed() ? device_put(value, slot->sharding()) : value);
    }
  }
  if (strict && !unexpected.empty()) {
    errors.insert(errors.begin(),
                  "Unexpected key(s) in state_dict: " + join_quoted(unexpected) + ".");
  }
  if (strict && !missing.empty()) {
    errors.insert(errors.begin(), "Missing key(s) in state_dict: " + join_quoted(missing) + ".");
  }
  if (!errors.empty()) {
    std::string msg =
        "[nn::Module::load_state_dict] Error(s) in loading state_dict for " + name_ + ":";
    for (const std::string& e : errors) msg += "\n\t" + e;
    throw ValueError(msg);
  }
  for (auto& [slot, value] : loads) *slot = std::move(value);
}

void Module::to(const Sharding& sharding) {
  for (auto& [name, slot] : named_slots()) *slot = device_put(*slot, sharding);
}

void Module::to(const Device& device) {
  for (auto& [name, slot] : named_slots()) *slot = device_put(*slot, device);
}

void Module::train(bool on) {
  training_ = on;
  for (auto& [name, child] : children_) child->train(on);
}

std::string Module::repr(int indent) const {
  std::string s = name_ + "(" + extra_repr();
  if (children_.empty()) return s + ")";
  std::string pad(size_t(indent + 2), ' ');
  s += "\n";
  for (const auto& [name, child] : children_) {
    s += pad + "(" + name + "): " + child->repr(indent + 2) + "\n";
  }
  return s + std::string(size_t(indent), ' ') + ")";
}

std::ostream& operator<<(std::ostream& os, const Module& m) { return os << m.repr(); }

// ---- randomness -------------------------------------------------------------------------

namespace {
struct DefaultGenerator {
  std::mutex mu;
  std::optional<random::Key> key;
  uint64_t seed = 0;
};
DefaultGenerator& generator() {
  static DefaultGenerator g;
  return g;
}
}  // namespace

void manual_seed(uint64_t seed) {
  DefaultGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  g.key = random::key(int64_t(seed));
}

random::Key next_key() {
  DefaultGenerator& g = generator();
  std::lock_guard<std::mutex> lock(g.mu);
  if (!g.key) g.key = random::key(0);
  random::Key keys = random::split(*g.key);
  g.key = keys[0];
  return keys[1];
}

// ---- layers -------------------------------------------------------------------------------

namespace {
Array uniform_pm(const random::Key& key, Shape shape, double bound) {
  return random::uniform(key, shape, DType::float32, -bound, bound);
}
}  // namespace

LinearImpl::LinearImpl(int64_t in, int64_t out, bool bias)
    : LinearImpl(in, out, next_key(), bias) {}

LinearImpl::LinearImpl(int64_t in, int64_t out, const random::Key& key, bool with_bias)
    : Module("Linear"),
      in_features(in),
      out_features(out),
      weight(register_parameter("weight", uniform_pm(random::split(key)[0], {out, in},
                                                     in > 0 ? 1.0 / std::sqrt(double(in)) : 0.0))),
      bias(with_bias
               ? register_parameter("bias", uniform_pm(random::split(key)[1], {out},
                                                       in > 0 ? 1.0 / std::sqrt(double(in)) : 0.0))
               : no_bias_) {}

Array LinearImpl::forward(const Array& x) {
  if (x.ndim() < 1 || x.shape().back() != in_features) {
    throw ValueError("[nn::Linear] input of shape " + shape_str(x.shape()) +
                     " does not end in in_features=" + std::to_string(in_features));
  }
  // x Wᵀ as one contraction of x's last axis with W's second: no transpose is materialised.
  lax::DotDimensionNumbers dims{{x.ndim() - 1}, {1}, {}, {}};
  Array y = lax::dot_general(x, weight, dims);
  return bias.valid() ? y + bias : y;
}

std::string LinearImpl::extra_repr() const {
  return "in_features=" + std::to_string(in_features) +
         ", out_features=" + std::to_string(out_features) +
         ", bias=" + (bias.valid() ? "true" : "false");
}

Array ReLUImpl::forward(const Array& x) { return jnp::maximum(x, 0.0f); }

Array TanhImpl::forward(const Array& x) { return jnp::tanh(x); }

GELUImpl::GELUImpl(std::string approx) : Module("GELU"), approximate(std::move(approx)) {
  if (approximate != "none" && approximate != "tanh") {
    throw ValueError("[nn::GELU] approximate must be \"none\" or \"tanh\", got \"" + approximate +
                     "\"");
  }
}

Array GELUImpl::forward(const Array& x) {
  if (approximate == "tanh") {
    const double k = std::sqrt(2.0 / M_PI);
    Array inner = k * (x + 0.044715 * (x * x * x));
    return 0.5 * x * (1.0 + jnp::tanh(inner));
  }
  return 0.5 * x * (1.0 + lax::erf(x * M_SQRT1_2));
}

std::string GELUImpl::extra_repr() const { return "approximate='" + approximate + "'"; }

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim) : EmbeddingImpl(num, dim, next_key()) {}

EmbeddingImpl::EmbeddingImpl(int64_t num, int64_t dim, const random::Key& key)
    : Module("Embedding"),
      num_embeddings(num),
      embedding_dim(dim),
      weight(register_parameter("weight", random::normal(key, {num, dim}, DType::float32))) {}

Array EmbeddingImpl::forward(const Array& indices) {
  if (is_floating(indices.dtype()) || indices.dtype() == DType::bool_) {
    throw TypeError("[nn::Embedding] indices must be integers, got " +
                    std::string(dtype_name(indices.dtype())));
  }
  // A gather of rows (its gradient a scatter-add), never a one-hot product.
  return jnp::take(weight, indices, 0);
}

std::string EmbeddingImpl::extra_repr() const {
  return std::to_string(num_embeddings) + ", " + std::to_string(embedding_dim);
}

LayerNormImpl::LayerNormImpl(std::vector<int64_t> shape, double eps_, bool affine)
    : Module("LayerNorm"),
      normalized_shape(std::move(shape)),
      eps(eps_),
      weight(affine ? register_parameter("weight", jnp::ones(normalized_shape, DType::float32))
                    : none_w_),
      bias(affine ? register_parameter("bias", jnp::zeros(normalized_shape, DType::float32))
                  : none_b_) {}

Array LayerNormImpl::forward(const Array& x) {
  const int64_t n = int64_t(normalized_shape.size());
  bool fits = x.ndim() >= n;
  for (int64_t i = 0; fits && i < n; ++i) {
    fits = x.shape()[size_t(x.ndim() - n + i)] == normalized_shape[size_t(i)];
  }
  if (!fits) {
    throw ValueError("[nn::LayerNorm] input of shape " + shape_str(x.shape()) +
                     " does not end in normalized_shape " + shape_str(normalized_shape));
  }
  std::vector<int64_t> axes;
  for (int64_t i = x.ndim() - n; i < x.ndim(); ++i) axes.push_back(i);
  Array mean = jnp::mean(x, axes, /*keepdims=*/true);
  Array centered = x - mean;
  Array var = jnp::mean(centered * centered, axes, /*keepdims=*/true);
  Array y = centered * lax::rsqrt(var + eps);
  if (weight.valid()) y = y * weight + bias;
  return y;
}

std::string LayerNormImpl::extra_repr() const {
  std::ostringstream os;
  os << "(";
  for (size_t i = 0; i < normalized_shape.size(); ++i) {
    os << (i ? ", " : "") << normalized_shape[i];
  }
  os << (normalized_shape.size() == 1 ? ",)" : ")") << ", eps=" << eps
     << ", elementwise_affine=" << (weight.valid() ? "true" : "false");
  return os.str();
}

DropoutImpl::DropoutImpl(double p_) : Module("Dropout"), p(p_) {
  if (p < 0 || p > 1) {
    throw ValueError("[nn::Dropout] dropout probability has to be between 0 and 1, but got " +
                     std::to_string(p));
  }
}

Array DropoutImpl::forward(const Array& x) {
  if (!is_training() || p == 0) return x;
  return forward(x, next_key());
}

Array DropoutImpl::forward(const Array& x, const random::Key& key) {
  if (!is_training() || p == 0) return x;
  if (p == 1) return jnp::zeros_like(x);
  Array keep = random::bernoulli(key, 1.0 - p, x.shape());
  return jnp::where(keep, x / (1.0 - p), 0.0f).astype(x.dtype());
}

std::string DropoutImpl::extra_repr() const {
  std::ostringstream os;
  os << "p=" << p << ", inplace=false";
  return os.str();
}

Array SequentialImpl::forward(const Array& x) {
  Array y = x;
  for (const auto& m : children()) y = (*m)(y);
  return y;
}

// ---- losses -----------------------------------------------------------------------------

namespace {
void check_reduction(const std::string& api, const std::string& reduction) {
  if (reduction != "mean" && reduction != "sum" && reduction != "none") {
    throw ValueError("[nn::" + api + "] " + reduction + " is not a valid value for reduction");
  }
}
}  // namespace

MSELossImpl::MSELossImpl(std::string r) : Module("MSELoss"), reduction(std::move(r)) {
  check_reduction("MSELoss", reduction);
}

Array MSELossImpl::forward(const Array& input, const Array& target) {
  if (input.shape() != target.shape()) {
    throw ValueError("[nn::MSELoss] input of shape " + shape_str(input.shape()) +
                     " and target of shape " + shape_str(target.shape()) +
                     " differ (parax does not broadcast them; torch warns and does)");
  }
  Array d = input - target;
  Array sq = d * d;
  if (reduction == "none") return sq;
  if (reduction == "sum") return jnp::sum(sq);
  return jnp::mean(sq);
}

CrossEntropyLossImpl::CrossEntropyLossImpl(std::string r, int64_t ignore, double smoothing)
    : Module("CrossEntropyLoss"),
      reduction(std::move(r)),
      ignore_index(ignore),
      label_smoothing(smoothing) {
  check_reduction("CrossEntropyLoss", reduction);
  if (smoothing < 0 || smoothing > 1) {
    throw ValueError("[nn::CrossEntropyLoss] label_smoothing must be between 0.0 and 1.0");
  }
}

Array CrossEntropyLossImpl::forward(const Array& input, const Array& target) {
  // Classes are axis 1 (axis 0 for an unbatched [C] input), as in torch.
  const int64_t class_axis = input.ndim() == 1 ? 0 : 1;
  if (input.ndim() < 1) throw ValueError("[nn::CrossEntropyLoss] input must have rank >= 1");
  const int64_t C = input.shape()[size_t(class_axis)];
  Array mx = stop_gradient(jnp::max(input, class_axis, /*keepdims=*/true));
  Array shifted = input - mx;
  Array logp = shifted - jnp::log(jnp::sum(jnp::exp(shifted), class_axis, /*keepdims=*/true));
  const double eps = label_smoothing;
  if (is_floating(target.dtype())) {
    if (target.shape() != input.shape()) {
      throw ValueError("[nn::CrossEntropyLoss] class-probability target of shape " +
                       shape_str(target.shape()) + " must match the input's " +
                       shape_str(input.shape()));
    }
    Array t = eps > 0 ? target * (1.0 - eps) + eps / double(C) : target;
    Array per = -jnp::sum(logp * t, class_axis);
    if (reduction == "none") return per;
    if (reduction == "sum") return jnp::sum(per);
    // torch divides by the number of samples (all non-class elements).
    return jnp::sum(per) / double(per.size() == 0 ? 1 : per.size());
  }
  Shape expect = input.shape();
  expect.erase(expect.begin() + class_axis);
  if (target.shape() != expect) {
    throw ValueError("[nn::CrossEntropyLoss] class-index target of shape " +
                     shape_str(target.shape()) + " does not fit the input's " +
                     shape_str(input.shape()) + " (expected " + shape_str(expect) + ")");
  }
  // The target's log-probability by comparison with the class index (an O(N C) select, the
  // cost of log_softmax itself), so no gather is needed.
  Array t = jnp::expand_dims(target.astype(DType::int32), class_axis);
  Shape iota_shape(size_t(input.ndim()), 1);
  iota_shape[size_t(class_axis)] = C;
  Array classes = lax::iota(DType::int32, C).reshape(iota_shape);
  Array hit = jnp::equal(t, classes);
  Array nll = -jnp::sum(jnp::where(hit, logp, 0.0f), class_axis);
  if (eps > 0) nll = (1.0 - eps) * nll - eps / double(C) * jnp::sum(logp, class_axis);
  Array valid = jnp::not_equal(target.astype(DType::int32), int32_t(ignore_index));
  Array per = jnp::where(valid, nll, 0.0f);
  if (reduction == "none") return per;
  if (reduction == "sum") return jnp::sum(per);
  return jnp::sum(per) / jnp::sum(valid.astype(input.dtype()));
}

// ---- functional_call ------------------------------------------------------------------------

namespace detail {

Module& module_ref(Module& m) { return m; }

ParameterSwap::ParameterSwap(Module& module, const StateDict& params, bool strict) {
  ParameterSlots slots = module.named_slots();
  std::map<std::string, Array*> by_name(slots.begin(), slots.end());
  for (const auto& [name, value] : params) {
    if (!by_name.count(name)) {
      throw ValueError("[nn::functional_call] " + module.name() + " has no parameter or buffer '" +
                       name + "'");
    }
  }
  for (const auto& [name, slot] : slots) {
    if (!params.contains(name)) {
      if (strict) {
        throw ValueError("[nn::functional_call] missing parameter '" + name + "' for " +
                         module.name());
      }
      continue;
    }
    saved_.emplace_back(slot, *slot);
    *slot = params.at(name);
  }
}

ParameterSwap::~ParameterSwap() {
  for (auto& [slot, value] : saved_) *slot = std::move(value);
}

}  // namespace detail

// ---- sharding by name -------------------------------------------------------------------------

std::vector<std::pair<std::string, Sharding>> match_shardings(
    const std::vector<std::string>& names, const std::map<std::string, Sharding>& rules,
    const std::optional<Sharding>& default_sharding) {
  std::vector<std::pair<std::string, std::regex>> patterns;
  for (const auto& [rule, s] : rules) {
    try {
      patterns.emplace_back(rule, std::regex(rule));
    } catch (const std::regex_error& e) {
      // An exact name with regex metacharacters is still usable as an exact name.
      patterns.emplace_back(rule, std::regex("(?!)"));
    }
  }
  std::map<std::string, int> used;
  std::vector<std::pair<std::string, Sharding>> out;
  for (const std::string& name : names) {
    auto exact = rules.find(name);
    if (exact != rules.end()) {
      used[name]++;
      out.emplace_back(name, exact->second);
      continue;
    }
    std::vector<std::string> hits;
    for (const auto& [rule, re] : patterns) {
      if (std::regex_match(name, re)) hits.push_back(rule);
    }
    if (hits.size() > 1) {
      std::string list;
      for (const auto& h : hits) list += (list.empty() ? "'" : ", '") + h + "'";
      throw ValueError("[nn::shard] parameter '" + name + "' matches " +
                       std::to_string(hits.size()) + " rules (" + list +
                       "); give it an exact rule or make the patterns disjoint");
    }
    if (hits.empty()) {
      if (!default_sharding) {
        throw ValueError("[nn::shard] no sharding rule matches parameter '" + name +
                         "'; add a rule for it or pass a default sharding");
      }
      out.emplace_back(name, *default_sharding);
      continue;
    }
    used[hits[0]]++;
    out.emplace_back(name, rules.at(hits[0]));
  }
  for (const auto& [rule, s] : rules) {
    if (!used.count(rule)) {
      throw ValueError("[nn::shard] sharding rule '" + rule +
                       "' matches no parameter (a misspelt name?)");
    }
  }
  return out;
}

StateDict shard(const StateDict& params, const std::map<std::string, Sharding>& rules,
                const std::optional<Sharding>& default_sharding) {
  auto placed = match_shardings(params.keys(), rules, default_sharding);
  StateDict out;
  for (const auto& [name, sharding] : placed) {
    out.insert_or_assign(name, device_put(params.at(name), sharding));
  }
  return out;
}

}  // namespace parax::nn
