// Eager execution is jit of one primitive: an equation on concrete arrays becomes a
// one-equation program, compiled once per operand types, shardings and commitment, and
// cached. A pjit equation runs its program the same way.
#include <mutex>
#include <unordered_map>

#include "api/array_impl.h"
#include "compiler/compile.h"
#include "core/rules.h"
#include "core/trace.h"

namespace parax::core {
namespace {

struct Entry {
  std::shared_ptr<const Program> program;
  std::shared_ptr<const compiler::Executable> exe;
};

std::string sharding_key(const Sharding& s) {
  std::string key = s.to_string() + "@";
  for (const Device& d : s.device_assignment()) key += std::to_string(d.id()) + ",";
  return key;
}

std::string params_key(const Params& params) {
  std::string key;
  for (const auto& [name, value] : params.items()) {
    key += name + "=";
    if (auto* s = std::get_if<std::shared_ptr<const Sharding>>(&value)) {
      key += *s ? sharding_key(**s) : "None";
    } else if (auto* p = std::get_if<std::shared_ptr<const Program>>(&value)) {
      key += std::to_string(reinterpret_cast<uintptr_t>(p->get()));
    } else {
      key += param_str(value);
    }
    key += ";";
  }
  return key;
}

// The names JAX gives the operands of lax functions in device errors.
std::vector<std::string> operand_names(Prim p, size_t n) {
  if (n == 1) return {"x"};
  if (n == 2 && has_trait(p, kBinary)) return {"x", "y"};
  std::vector<std::string> names;
  for (size_t i = 0; i < n; ++i) names.push_back("args[" + std::to_string(i) + "]");
  return names;
}

}  // namespace

std::vector<Array> eval_eqn(Prim p, std::span<const Array> in, const Params& params) {
  if (const EagerFn eager = rules(p).eager) return eager(in, params);
  static std::mutex mu;
  static std::unordered_map<std::string, Entry> cache;
  std::string key = std::string(prim_name(p)) + "[" + params_key(params) + "]";
  std::vector<compiler::ArgInfo> args;
  for (const Array& x : in) {
    const detail::ArrayImpl& impl = detail::concrete_of(x, prim_name(p).data());
    args.push_back({impl.aval, impl.sharding, impl.committed});
    key += "|" + impl.aval.short_str() + (impl.aval.weak_type ? "w" : "") +
           (impl.committed ? "c" : "u") + sharding_key(*impl.sharding);
  }
  std::shared_ptr<const compiler::Executable> exe;
  {
    std::lock_guard<std::mutex> lock(mu);
    auto it = cache.find(key);
    if (it != cache.end()) exe = it->second.exe;
  }
  if (!exe) {
    std::shared_ptr<const Program> program;
    compiler::CompileOptions opts;
    if (p == Prim::pjit) {
      program = params.get<std::shared_ptr<const Program>>("jaxpr");
      opts.name = params.has("name") ? params.get<std::string>("name") : "jit";
    } else {
      Program one;
      std::vector<Aval> avals;
      Eqn eqn{p, {}, {}, params};
      for (const auto& a : args) {
        int v = one.new_var(a.aval);
        one.invars.push_back(v);
        eqn.inputs.push_back(Atom::of(v));
        avals.push_back(a.aval);
      }
      for (Aval& a : abstract_eval(p, avals, params)) {
        int v = one.new_var(std::move(a));
        eqn.outputs.push_back(v);
        one.outvars.push_back(Atom::of(v));
      }
      one.eqns.push_back(std::move(eqn));
      program = std::make_shared<const Program>(std::move(one));
      opts.name = std::string(prim_name(p));
      opts.arg_names = operand_names(p, in.size());
    }
    exe = compiler::compile(program, args, opts);
    std::lock_guard<std::mutex> lock(mu);
    cache.emplace(key, Entry{program, exe});
  }
  return exe->run(in);
}

}  // namespace parax::core
