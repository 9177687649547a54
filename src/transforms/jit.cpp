// jit as an interpreter: tracing a callable into a program (cached per signature), then
// binding `pjit` on it, so a jitted call inside another trace is staged as one equation
// and an eager call compiles and runs it (through core's Backend: runtime/eager.cpp).
// Lowered::compile and Compiled are the compiler's, in api/compiled.cpp.
#include "parax/jit.h"

#include <algorithm>
#include <atomic>
#include <mutex>
#include <ostream>
#include <sstream>
#include <unordered_map>

#include "base/config_internal.h"
#include "base/lru_cache.h"
#include "base/trace_events.h"
#include "core/array_value.h"
#include "core/backend.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "core/rules.h"
#include "core/trace.h"
#include "parax/config.h"
#include "parax/vmap.h"
#include "sharding/sharding_impl.h"
#include "transforms/jit_cache.h"
#include "transforms/lowered.h"
#include "transforms/map_util.h"

namespace parax {

std::string CostAnalysis::str() const {
  std::ostringstream os;
  os << "flops=" << flops << " collective_bytes=" << collective_bytes;
  for (const auto& [kind, n] : collectives) os << " " << kind << "=" << n;
  return os.str();
}

std::ostream& operator<<(std::ostream& os, const Jaxpr& j) { return os << j.to_string(); }

std::string Lowered::as_text() const { return core::to_string(*impl_->closed.program); }

namespace detail {
namespace {

// `api` ("in_shardings", "out_shardings") tells the device check this constraint is the
// jit's own, which JAX reports as the jit's (pjit's) rather than as a sharding_constraint.
Array constrain(const Array& x, const Sharding& s, const char* api) {
  return core::bind1(
      core::Prim::sharding_constraint, {x},
      {{"sharding", std::make_shared<const Sharding>(s)}, {"_api", std::string(api)}});
}

// JAX's pjit_check_aval_sharding wording: `what` is "pjit arguments" or "pjit outputs",
// `path` the value's key path (args[0]['w'], [1]; empty for a lone output).
void check_rank(const Sharding& s, const core::Aval& aval, const std::string& what,
                const std::string& path) {
  try {
    s.impl().check_rank(int64_t(aval.shape.size()));
  } catch (const ValueError& e) {
    throw ValueError("One of " + what + (path.empty() ? "" : " with pytree key path " + path) +
                     " is incompatible with its sharding annotation " + s.to_string() + ": " +
                     e.what());
  }
}

// Per input leaf: whether it belongs to a positional argument of donate_argnums.
// Raises JAX's ValueError for an argnum the call does not have.
std::vector<bool> donated_leaves(const std::vector<int>& argnums, const std::vector<TreeDef>& defs,
                                 size_t leaves) {
  std::vector<bool> donated(leaves, false);
  if (argnums.empty()) return donated;
  for (int a : argnums) {
    if (a >= 0 && size_t(a) < defs.size()) continue;
    std::string list;
    for (int b : argnums) list += (list.empty() ? "" : ", ") + std::to_string(b);
    throw ValueError("Jitted function has donate_argnums=(" + list +
                     (argnums.size() == 1 ? ",)" : ")") + ", but only accepts " +
                     std::to_string(defs.size()) + " positional arguments.");
  }
  size_t next = 0;
  for (size_t k = 0; k < defs.size(); ++k) {
    const size_t n = size_t(defs[k].num_leaves());
    const bool given = std::find(argnums.begin(), argnums.end(), int(k)) != argnums.end();
    for (size_t i = next; i < next + n && i < leaves; ++i) donated[i] = given;
    next += n;
  }
  return donated;
}

// What the runtime would refuse to execute, with XLA's texts (JAX shows them): a deleted
// argument, and a buffer donated by one argument that another one also passes.
void check_executable_args(const std::vector<Array>& leaves, const std::vector<bool>& donated) {
  const bool donating = std::find(donated.begin(), donated.end(), true) != donated.end();
  std::unordered_map<const void*, size_t> first_use;
  for (size_t k = 0; k < leaves.size(); ++k) {
    const ArrayImpl& x = impl_of(leaves[k]);
    if (x.deleted) {
      throw ValueError("INVALID_ARGUMENT: Invalid buffer passed to Execute() as argument " +
                       std::to_string(k) +
                       " to replica 0: INVALID_ARGUMENT: Buffer has been deleted or donated.");
    }
    if (!donating) continue;
    for (const BufferRef& b : x.buffers) {
      const auto [it, fresh] = first_use.emplace(b.get(), k);
      if (fresh || it->second == k) continue;
      const size_t f = it->second;
      const std::string where = " (flattened argument " + std::to_string(k) +
                                ", replica 0, partition 0, first use: " + std::to_string(f) +
                                "). Toy example for this bug: ";
      if (donated[f]) {
        throw RuntimeError(
            "INVALID_ARGUMENT: Attempt to use a buffer that was previously donated in the same "
            "call to Execute()" +
            where + "`f(donate(a), a)`.");
      }
      if (donated[k]) {
        throw RuntimeError(
            "INVALID_ARGUMENT: Attempt to donate a buffer which is also used by the same call "
            "to Execute()" +
            where + "`f(a, donate(a))`.");
      }
    }
  }
}

}  // namespace

struct Traced {
  core::ClosedProgram closed;
  std::shared_ptr<const core::Program> lifted;
  TreeDef out_def;
  std::vector<std::optional<Sharding>> leaf_in_shardings;  // resolved, one per input leaf
};

namespace {

// Totals over every jit object's trace cache, for debug::cache_info("jit_trace").
struct TraceTotals {
  std::atomic<int64_t> hits{0}, misses{0}, evictions{0}, size{0};
};
TraceTotals& totals() {
  static TraceTotals* t = new TraceTotals;
  return *t;
}

}  // namespace

detail::CacheCounters jit_trace_counters() {
  TraceTotals& t = totals();
  return {t.hits.load(), t.misses.load(), t.evictions.load(), t.size.load(),
          int_setting(IntSettingId::kJitCacheSize)};
}

// Each jit object owns its traces (least recently used evicted beyond parax_jit_cache_size);
// their programs own their plans (runtime/eager.cpp), so all go when it dies.
// Resolves bare PartitionSpecs of in_shardings or out_shardings on the context mesh, with
// JAX's error outside one.
std::vector<std::optional<Sharding>> resolve_all(const std::vector<std::optional<Sharding>>& in,
                                                 const char* which, std::string* key) {
  std::vector<std::optional<Sharding>> out;
  for (const auto& s : in) {
    if (!s || !is_bare_spec(*s)) {
      out.push_back(s);
      continue;
    }
    std::optional<Sharding> r = try_resolve_spec(*s);
    if (!r) {
      const bool in_s = std::string(which) == "in_shardings";
      throw RuntimeError(
          std::string("jax.jit only supports `Sharding`s being passed to ") + which +
          ". Looks like you are passing either `PartitionSpec` or `None` which is not allowed "
          "in jax.jit.\n" +
          (in_s ? "Note that in_shardings argument is optional. JAX will infer the shardings "
                  "from the input jax.Array's and will default to replicating the input if the "
                  "sharding cannot be inferred."
                : "Note that out_shardings is optional. If not specified, jax.jit will use "
                  "GSPMD's sharding propagation to figure out what the sharding of the "
                  "output(s) should be.") +
          " (parax reads a bare PartitionSpec inside a parax::sharding::use_mesh scope.)");
    }
    // The trace depends on the context mesh: key it by the mesh's layout.
    *key += "|" + r->to_string() + "@";
    for (const Device& d : r->device_assignment()) *key += std::to_string(d.id()) + ",";
    out.push_back(std::move(r));
  }
  return out;
}

struct JitCore::Impl {
  JitOptions options;
  std::mutex mu;
  LruCache<std::string, std::shared_ptr<const Traced>> cache{0};

  std::shared_ptr<const Traced> trace(const std::vector<Array>& leaves,
                                      const std::vector<TreeDef>& defs, const FlatFn& fn);
  // Inserts under mu, keeping the totals.
  void remember(const std::string& key, std::shared_ptr<const Traced> traced) {
    const int64_t size = cache.size(), evicted = cache.counters().evictions;
    cache.set_capacity(int_setting(IntSettingId::kJitCacheSize));
    cache.put(key, std::move(traced));
    totals().evictions += cache.counters().evictions - evicted;
    totals().size += cache.size() - size;
  }
};

JitCore::JitCore(JitOptions options) : impl_(std::make_unique<Impl>()) {
  impl_->options = std::move(options);
}

JitCore::~JitCore() {
  totals().size -= impl_->cache.size();
  impl_.reset();
  // The executables of this jit's programs go with them (none exist before a backend).
  if (core::Backend* backend = core::installed_backend()) backend->release_dead_programs();
}

int64_t JitCore::cache_size() const {
  std::lock_guard<std::mutex> lock(impl_->mu);
  return impl_->cache.size();
}

std::shared_ptr<const Traced> JitCore::Impl::trace(const std::vector<Array>& leaves,
                                                   const std::vector<TreeDef>& defs,
                                                   const FlatFn& fn) {
  std::string key = std::to_string(config::epoch()) + "|";
  std::vector<core::Aval> avals;
  for (const Array& x : leaves) {
    avals.push_back(core::aval_of(x));
    key += avals.back().short_str() + (avals.back().weak_type ? "w," : ",");
  }
  for (const TreeDef& d : defs) key += d.to_string();
  const std::vector<std::optional<Sharding>> in_shardings =
      resolve_all(options.in_shardings, "in_shardings", &key);
  const std::vector<std::optional<Sharding>> out_shardings =
      resolve_all(options.out_shardings, "out_shardings", &key);
  // A trace made inside vmap, pmap or shard_map may name their axes: it is only valid
  // where the same names are bound.
  for (const core::AxisFrame& f : core::bound_axes()) {
    key += "|" + f.name + ":" + std::to_string(f.size) + (f.manual ? "m" : "v");
  }
  {
    std::lock_guard<std::mutex> lock(mu);
    if (auto* hit = cache.find(key)) {
      ++totals().hits;
      return *hit;
    }
    ++totals().misses;
  }
  if (!in_shardings.empty() && in_shardings.size() != defs.size()) {
    throw ValueError(
        "pjit in_shardings specification must be a tree prefix of the positional "
        "arguments tuple passed to the `pjit`-decorated function. In particular, "
        "pjit in_shardings must either be a None, a PartitionSpec, or a tuple of "
        "length equal to the number of positional arguments. But pjit in_shardings "
        "is the wrong length: got a tuple or list of length " +
        std::to_string(in_shardings.size()) +
        " for an args tuple of "
        "length " +
        std::to_string(defs.size()) + ".");
  }
  auto traced = std::make_shared<Traced>();
  for (size_t i = 0; i < defs.size(); ++i) {
    const auto& s = i < in_shardings.size() ? in_shardings[i] : std::nullopt;
    traced->leaf_in_shardings.insert(traced->leaf_in_shardings.end(), size_t(defs[i].num_leaves()),
                                     s);
  }
  const base::trace::Span span("trace", "trace", options.name);
  traced->closed = core::trace_to_program(avals, [&](std::vector<Array> args) {
    // in_shardings and out_shardings are constraints at the program's boundary. Unlike
    // JAX, an argument whose dimension the sharding does not divide is accepted: parax pads
    // it to even shards inside the program (a deliberate extension, README's decisions),
    // where JAX raises "One of pjit arguments ... should be divisible by ...". A sharding of
    // too high a rank is JAX's error.
    const std::vector<std::string> names = leaf_names(defs);
    size_t next = 0;
    for (size_t i = 0; i < defs.size(); ++i) {
      const size_t n = size_t(defs[i].num_leaves());
      if (i < in_shardings.size() && in_shardings[i]) {
        for (size_t k = next; k < next + n; ++k) {
          check_rank(*in_shardings[i], avals[k], "pjit arguments", names[k]);
          args[k] = constrain(args[k], *in_shardings[i], "in_shardings");
        }
      }
      next += n;
    }
    std::vector<Array> outs = fn(args, &traced->out_def);
    const auto& os = out_shardings;
    if (!os.empty() && os.size() != 1 && os.size() != outs.size()) {
      // out_shardings is flat (one per output leaf, or one for all): JAX's prefix error, with
      // the output's leaves as the full pytree's length.
      const TreeDef& d = traced->out_def;
      const std::string type = d.kind == TreeDef::Kind::list ? "list" : "tuple";
      throw ValueError("pytree structure error: different lengths of " + type +
                       " at key path\n"
                       "    pjit out_shardings\nAt that key path, the prefix pytree pjit "
                       "out_shardings has a subtree of type " +
                       type + " of length " + std::to_string(os.size()) +
                       ", but the full pytree has a subtree of the "
                       "same type but of length " +
                       std::to_string(outs.size()) + ".");
    }
    // JAX names an output by its key path in the result ([1]; none for a lone array).
    const std::vector<std::string> out_paths = leaf_key_paths(traced->out_def);
    for (size_t o = 0; o < outs.size() && !os.empty(); ++o) {
      const auto& s = os.size() == 1 ? os[0] : os[o];
      if (!s) continue;
      // Arrays hold even shards, so an output sharding must divide (JAX's error).
      const core::Aval& aval = core::aval_of(outs[o]);
      check_rank(*s, aval, "pjit outputs", out_paths[o]);
      const auto layout = s->impl().layout(int64_t(aval.shape.size()));
      const std::string path = out_paths[o].empty() ? "" : " with pytree key path " + out_paths[o];
      for (size_t d = 0; d < aval.shape.size(); ++d) {
        if (aval.shape[d] % layout.tiles[d] == 0) continue;
        throw ValueError(
            "One of pjit outputs" + path + " was given the sharding of " + s->to_string() +
            ", which implies that the global size of its dimension " + std::to_string(d) +
            " should be divisible by " + std::to_string(layout.tiles[d]) + ", but it is equal to " +
            std::to_string(aval.shape[d]) + " (full shape: " + shape_str(aval.shape) + ")");
      }
      outs[o] = constrain(outs[o], *s, "out_shardings");
    }
    return outs;
  });
  traced->lifted = core::lift_consts(traced->closed);
  std::lock_guard<std::mutex> lock(mu);
  remember(key, traced);
  return traced;
}

std::vector<Array> JitCore::call(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                                 const FlatFn& fn, TreeDef* out_def) {
  auto traced = impl_->trace(leaves, defs, fn);
  *out_def = traced->out_def;
  // A committed argument was placed deliberately: jit does not move it to another layout
  // (uncommitted ones move), as JAX's pjit checks.
  for (size_t i = 0; i < leaves.size(); ++i) {
    const auto& want = traced->leaf_in_shardings[i];
    const ArrayImpl& x = impl_of(leaves[i]);
    if (!want || x.tracer || x.abstract || !x.committed || !x.sharding) continue;
    const int64_t rank = int64_t(x.aval.shape.size());
    if (x.sharding->is_equivalent_to(*want, rank)) continue;
    throw ValueError(
        "Sharding passed to pjit does not match the sharding on the respective "
        "arg. Got pjit sharding: " +
        want->to_string() + ",\narg sharding: " + x.sharding->to_string() +
        " for arg shape: " + x.aval.str());
  }
  std::vector<Array> inputs = traced->closed.consts;
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  core::Params params{{"jaxpr", traced->lifted}, {"name", impl_->options.name}};
  // Donation applies to a call that runs now: inside another transformation (jit, grad,
  // vmap) the call is that one's to stage or transform, and its inputs are not the
  // caller's to give.
  const bool runs = core::current_trace() == nullptr &&
                    std::none_of(leaves.begin(), leaves.end(), [](const Array& x) {
                      const ArrayImpl& impl = impl_of(x);
                      return impl.tracer != nullptr || impl.abstract;
                    });
  if (runs) {
    const std::vector<bool> donated =
        donated_leaves(impl_->options.donate_argnums, defs, leaves.size());
    check_executable_args(leaves, donated);
    std::vector<int64_t> given;
    for (size_t k = 0; k < donated.size(); ++k) {
      if (donated[k]) given.push_back(int64_t(traced->closed.consts.size() + k));
    }
    if (!given.empty()) params.set("_donate", std::move(given));
  }
  return core::bind(core::Prim::pjit, std::move(inputs), std::move(params));
}

Lowered JitCore::lower(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                       const FlatFn& fn) {
  auto traced = impl_->trace(leaves, defs, fn);
  auto impl = std::make_shared<Lowered::Impl>();
  impl->closed = traced->closed;
  impl->lifted = traced->lifted;
  impl->args = leaves;
  impl->donated = donated_leaves(impl_->options.donate_argnums, defs, leaves.size());
  impl->name = impl_->options.name;
  return Lowered(std::move(impl));
}

std::vector<Array> JitCore::eval_shape(const std::vector<Array>& leaves,
                                       const std::vector<TreeDef>& defs, const FlatFn& fn,
                                       TreeDef* out_def) {
  auto traced = impl_->trace(leaves, defs, fn);
  *out_def = traced->out_def;
  std::vector<Array> outs;
  const core::Program& p = *traced->closed.program;
  for (const core::Atom& a : p.outvars) {
    const core::Aval& aval = p.aval_of(a);
    outs.push_back(make_abstract(core::Aval{aval.shape, aval.dtype, false}));
  }
  return outs;
}

Jaxpr JitCore::make_jaxpr(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                          const FlatFn& fn) {
  return Jaxpr(core::to_string(*impl_->trace(leaves, defs, fn)->closed.program));
}

}  // namespace detail
}  // namespace parax
