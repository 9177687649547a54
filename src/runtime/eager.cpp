// Eager execution is jit of one primitive: an equation on concrete arrays becomes a
// one-equation program, compiled once per operand types, shardings and commitment, and
// cached. A pjit equation runs its program the same way.
//
// Both caches are bounded (least recently used evicted), so a long run over many distinct
// shapes keeps a fixed number of executables. The eager cache holds its one-equation
// programs (and through their params any sub-program, so a cached key's pointers stay
// valid). A pjit program's executables are kept with the program, not for it: its entry
// watches the program through a weak pointer and goes when the program dies (a jit object
// and the traces it owns), so a dead jit's executables do not outlive it.
#include "runtime/eager.h"

#include <atomic>
#include <cstring>
#include <mutex>
#include <unordered_map>

#include "base/check.h"
#include "base/config_internal.h"
#include "base/trace_events.h"
#include "compiler/compile.h"
#include "core/array_value.h"
#include "core/rules.h"
#include "core/source_site.h"
#include "runtime/buffer.h"
#include "runtime/loaded_plan.h"
#include "runtime/transfer.h"
#include "sharding/topology.h"

namespace parax::runtime {
namespace {

using core::Atom;
using core::Aval;
using core::Eqn;
using core::Params;
using core::Prim;
using core::Program;
using ExeRef = std::shared_ptr<const LoadedPlan>;
using detail::IntSettingId;
using detail::LruCache;

struct Entry {
  std::shared_ptr<const Program> program;
  ExeRef exe;
};

// One traced program's executables, one per argument signature.
struct ProgramEntry {
  std::weak_ptr<const Program> program;
  LruCache<std::string, ExeRef> exes{0};
};

struct Caches {
  std::mutex mu;
  LruCache<std::string, Entry> eager{0};
  std::unordered_map<const Program*, ProgramEntry> programs;
  // Totals over `programs`, including entries already dropped.
  int64_t program_hits = 0, program_misses = 0, program_evictions = 0;

  // Drops the executables of programs nobody holds any more. Requires: mu held.
  void release_dead() {
    for (auto it = programs.begin(); it != programs.end();) {
      if (it->second.program.expired()) {
        program_evictions += it->second.exes.size();
        it = programs.erase(it);
      } else {
        ++it;
      }
    }
  }
};

Caches& caches() {
  static Caches* c = new Caches;  // never destroyed: arrays may be freed after statics
  return *c;
}

std::string sharding_key(const Sharding& s) {
  std::string key = s.to_string() + "@";
  for (const Device& d : s.device_assignment()) key += std::to_string(d.id()) + ",";
  return key;
}

// `skip` names a param left out (a pjit's program, whose cache the key is for).
std::string params_key(const Params& params, std::string_view skip = {}) {
  std::string key;
  for (const auto& [name, value] : params.items()) {
    if (name == skip) continue;
    key += name + "=";
    if (auto* s = std::get_if<std::shared_ptr<const Sharding>>(&value)) {
      key += *s ? sharding_key(**s) : "None";
    } else if (auto* p = std::get_if<std::shared_ptr<const Program>>(&value)) {
      // The cache entry holds its program, and so these: the address stays theirs.
      key += std::to_string(reinterpret_cast<uintptr_t>(p->get()));
    } else if (auto* list = std::get_if<core::ProgramList>(&value)) {
      for (const auto& sub : *list)
        key += std::to_string(reinterpret_cast<uintptr_t>(sub.get())) + ",";
    } else {
      key += core::param_str(value);
    }
    key += ";";
  }
  return key;
}

// The names JAX gives the operands of lax functions in device errors.
std::vector<std::string> operand_names(Prim p, size_t n) {
  if (n == 1) return {"x"};
  if (n == 2 && core::has_trait(p, core::kBinary)) return {"x", "y"};
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back("args[" + std::to_string(i) + "]");
  return names;
}

// The plan observers (debug::CommLog); g_observed says whether there are any, so a run
// without them costs one relaxed load.
std::atomic<bool> g_observed{false};
std::mutex g_observers_mu;
std::vector<PlanObserver*>& observers() {
  static auto* v = new std::vector<PlanObserver*>;
  return *v;
}

void tell_observers(const compiler::Plan& plan, bool eager) {
  std::lock_guard<std::mutex> lock(g_observers_mu);
  for (PlanObserver* o : observers()) o->ran(plan, core::current_site(), eager);
}

std::vector<Array> eval_eqn(Prim p, std::span<const Array> in, const Params& params) {
  if (const core::EagerFn eager = core::rules(p).eager) return eager(in, params);
  Caches& c = caches();
  std::shared_ptr<const Program> called;  // a pjit's program: its executables live with it
  std::string key;
  if (core::has_trait(p, core::kCall)) {
    called = params.get<std::shared_ptr<const Program>>("jaxpr");
    key = params_key(params, "jaxpr");
  } else {
    key = std::string(core::prim_name(p)) + "[" + params_key(params) + "]";
  }
  // A plan compiled under another reshard policy was checked by that one.
  if (const auto policy = detail::implicit_reshard_policy();
      policy != detail::ReshardPolicy::kAllow) {
    key += "|policy" + std::to_string(int(policy));
  }
  std::vector<compiler::ArgInfo> args;
  for (const Array& x : in) {
    const detail::ArrayImpl& impl = detail::concrete_of(x, core::prim_name(p).data());
    args.push_back({impl.aval, impl.sharding, impl.committed});
    key += "|" + impl.aval.short_str() + (impl.aval.weak_type ? "w" : "") +
           (impl.committed ? "c" : "u") + sharding_key(*impl.sharding);
  }
  if (called && params.has("_donate")) {  // in the key already, as a param
    for (int64_t i : params.get<std::vector<int64_t>>("_donate")) {
      PARAX_CHECK(i >= 0 && size_t(i) < args.size(),
                  "pjit donates input " << i << " of " << args.size());
      args[size_t(i)].donated = true;
    }
  }
  ExeRef exe;
  {
    std::lock_guard<std::mutex> lock(c.mu);
    if (called) {
      auto it = c.programs.find(called.get());
      // A dead program's address may be reused by a new one: its entry is stale.
      if (it != c.programs.end() && it->second.program.lock() == called) {
        it->second.exes.set_capacity(detail::int_setting(IntSettingId::kJitCacheSize));
        if (ExeRef* e = it->second.exes.find(key)) exe = *e;
      }
      if (exe) {
        ++c.program_hits;
      } else {
        ++c.program_misses;
      }
    } else {
      c.eager.set_capacity(detail::int_setting(IntSettingId::kEagerCacheSize));
      if (Entry* e = c.eager.find(key)) exe = e->exe;
    }
  }
  if (!exe) {
    std::shared_ptr<const Program> program;
    compiler::CompileOptions opts;
    if (called) {
      program = called;
      opts.name = params.has("name") ? params.get<std::string>("name") : "jit";
    } else {
      Program one;
      std::vector<Aval> avals;
      Eqn eqn{p, {}, {}, params, core::current_site()};
      for (const auto& a : args) {
        int v = one.new_var(a.aval);
        one.invars.push_back(v);
        eqn.inputs.push_back(Atom::of(v));
        avals.push_back(a.aval);
      }
      for (Aval& a : core::abstract_eval(p, avals, params)) {
        int v = one.new_var(std::move(a));
        eqn.outputs.push_back(v);
        one.outvars.push_back(Atom::of(v));
      }
      one.eqns.push_back(std::move(eqn));
      program = std::make_shared<const Program>(std::move(one));
      opts.name = std::string(core::prim_name(p));
      opts.arg_names = operand_names(p, in.size());
    }
    const base::trace::Span span("compile", "compile", opts.name);
    exe = std::make_shared<const LoadedPlan>(compiler::compile(program, args, opts));
    std::lock_guard<std::mutex> lock(c.mu);
    if (called) {
      c.release_dead();
      ProgramEntry& entry = c.programs[called.get()];
      if (entry.program.lock() != called) {  // new, or a dead program's at the same address
        c.program_evictions += entry.exes.size();
        entry = ProgramEntry{called, LruCache<std::string, ExeRef>(0)};
      }
      const int64_t before = entry.exes.counters().evictions;
      entry.exes.set_capacity(detail::int_setting(IntSettingId::kJitCacheSize));
      entry.exes.put(key, exe);
      c.program_evictions += entry.exes.counters().evictions - before;
    } else {
      c.eager.put(key, Entry{program, exe});
    }
  }
  std::vector<Array> out = exe->run(in);
  if (g_observed.load(std::memory_order_relaxed)) tell_observers(exe->plan(), !called);
  return out;
}

Array from_host(const void* data, const Aval& aval) {
  base::trace::Span span("transfer", "host to device");
  if (span.active()) {
    span.add_args("\"array\": " + base::trace::json_string(aval.short_str()) +
                  ", \"bytes\": " + std::to_string(aval.nbytes()));
  }
  Device d = detail::Topology::get().default_device();
  auto buf = Buffer::allocate(d, aval.nbytes());
  if (aval.nbytes()) std::memcpy(buf->data(), data, aval.nbytes());
  return detail::make_array(aval, SingleDeviceSharding(d), false, {std::move(buf)});
}

class RuntimeBackend final : public core::Backend {
 public:
  std::vector<Array> eval_eqn(Prim p, std::span<const Array> in, const Params& params) override {
    return runtime::eval_eqn(p, in, params);
  }
  Array from_host(const void* data, const Aval& aval) override {
    return runtime::from_host(data, aval);
  }
  void to_host(const Array& x, void* out) override {
    const detail::ArrayImpl& src = detail::concrete_of(x, "to_vector()/item()");
    gather_to_host(src.aval, *src.sharding, src.buffers, out);
  }
  Array relayout(const Array& x, const Sharding& target) override {
    const detail::ArrayImpl& src = detail::concrete_of(x, "device_put");
    auto buffers = runtime::relayout(src.aval, *src.sharding, src.buffers, target);
    return detail::make_array(src.aval, target, true, std::move(buffers));
  }
  void release_dead_programs() override {
    Caches& c = caches();
    std::lock_guard<std::mutex> lock(c.mu);
    c.release_dead();
  }
};

}  // namespace

std::shared_ptr<void> observe_plans(PlanObserver* observer) {
  {
    std::lock_guard<std::mutex> lock(g_observers_mu);
    observers().push_back(observer);
    g_observed = true;
  }
  return std::shared_ptr<void>(observer, [](PlanObserver* o) {
    std::lock_guard<std::mutex> lock(g_observers_mu);
    std::erase(observers(), o);
    g_observed = !observers().empty();
  });
}

core::Backend& eager_backend() {
  static RuntimeBackend* backend = [] {
    auto* b = new RuntimeBackend;  // never destroyed: arrays may be freed after statics
    core::install_backend(*b);
    return b;
  }();
  return *backend;
}

detail::CacheCounters eager_cache_counters() {
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mu);
  return c.eager.counters();
}

detail::CacheCounters program_cache_counters() {
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mu);
  c.release_dead();
  detail::CacheCounters out{c.program_hits, c.program_misses, c.program_evictions, 0,
                            detail::int_setting(detail::IntSettingId::kJitCacheSize)};
  for (const auto& [ptr, entry] : c.programs) out.size += entry.exes.size();
  return out;
}

void clear_compile_caches() {
  Caches& c = caches();
  std::lock_guard<std::mutex> lock(c.mu);
  c.eager.clear();
  c.programs.clear();
}

}  // namespace parax::runtime

// core::backend() falls back on this when nothing is installed yet (core/backend.h).
namespace parax::core {
Backend& default_backend() { return runtime::eager_backend(); }
}  // namespace parax::core
