#include "prims/program_rules.h"

#include <algorithm>
#include <mutex>

#include "base/check.h"
#include "core/batching.h"
#include "core/trace.h"

namespace parax::prims {

std::string mask_key(const std::vector<bool>& mask) {
  std::string key;
  for (bool b : mask) key += b ? '1' : '0';
  return key;
}

std::string axes_key() {
  std::string key;
  for (const core::AxisFrame& f : core::bound_axes()) {
    key += "|" + f.name + ":" + std::to_string(f.size) + (f.manual ? "m" : "v");
  }
  return key;
}

core::Aval tangent_aval(core::Aval a) {
  a.weak_type = false;
  return a;
}

std::pair<std::vector<Array>, std::vector<Array>> split_tangents(std::vector<Array> outs,
                                                                 const std::vector<bool>& mask) {
  const size_t n = mask.size();
  std::vector<Array> tangents(n);
  for (size_t o = 0, k = n; o < n; ++o) {
    if (mask[o]) tangents[o] = outs[k++];
  }
  outs.resize(n);
  return {std::move(outs), std::move(tangents)};
}

std::unique_ptr<bool[]> bool_array(const std::vector<bool>& v) {
  std::unique_ptr<bool[]> out(new bool[v.size()]);
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  return out;
}

std::vector<Array> eval_program(const core::Program& p, std::span<const Array> inputs) {
  PARAX_CHECK(p.constvars.empty() && inputs.size() == p.invars.size(),
              "eval_program: one value per invar");
  std::vector<Array> value(p.avals.size());
  for (size_t i = 0; i < inputs.size(); ++i) value[size_t(p.invars[i])] = inputs[i];
  auto val = [&](const core::Atom& a) {
    return a.is_literal() ? core::literal_array(*a.literal) : value[size_t(a.var)];
  };
  for (const core::Eqn& e : p.eqns) {
    std::vector<Array> ins;
    for (const core::Atom& a : e.inputs) ins.push_back(val(a));
    std::vector<Array> outs = core::bind(e.prim, std::move(ins), e.params);
    for (size_t r = 0; r < outs.size(); ++r) value[size_t(e.outputs[r])] = outs[r];
  }
  std::vector<Array> outs;
  for (const core::Atom& a : p.outvars) outs.push_back(val(a));
  return outs;
}

std::vector<bool> depends_on(const core::Program& p, const std::vector<bool>& marked) {
  std::vector<bool> dep(p.avals.size(), false);
  std::vector<int> in(p.constvars);
  in.insert(in.end(), p.invars.begin(), p.invars.end());
  for (size_t i = 0; i < in.size(); ++i) dep[size_t(in[i])] = marked[i];
  auto reads = [&](const core::Atom& a) { return !a.is_literal() && dep[size_t(a.var)]; };
  for (const core::Eqn& e : p.eqns) {
    const bool any = std::any_of(e.inputs.begin(), e.inputs.end(), reads);
    for (int v : e.outputs) dep[size_t(v)] = any;
  }
  std::vector<bool> out;
  for (const core::Atom& a : p.outvars) out.push_back(reads(a));
  return out;
}

std::shared_ptr<const core::Program> with_unused_invars(const core::Program& p, size_t at,
                                                        std::span<const core::Aval> avals) {
  core::Program q = p;
  std::vector<int> extra;
  for (const core::Aval& a : avals) extra.push_back(q.new_var(a));
  q.invars.insert(q.invars.begin() + long(at), extra.begin(), extra.end());
  return std::make_shared<const core::Program>(std::move(q));
}

SharedConsts share_consts(const std::vector<core::ClosedProgram>& traced) {
  SharedConsts out;
  std::vector<std::vector<core::Aval>> groups;
  for (const core::ClosedProgram& c : traced) {
    out.consts.insert(out.consts.end(), c.consts.begin(), c.consts.end());
    std::vector<core::Aval> avals;
    for (int v : c.program->constvars) avals.push_back(c.program->avals[size_t(v)]);
    groups.push_back(std::move(avals));
  }
  for (size_t k = 0; k < traced.size(); ++k) {
    core::Program p = *traced[k].program;
    std::vector<int> invars;
    for (size_t g = 0; g < groups.size(); ++g) {
      if (g == k) {
        invars.insert(invars.end(), p.constvars.begin(), p.constvars.end());
        continue;
      }
      for (const core::Aval& a : groups[g]) invars.push_back(p.new_var(a));
    }
    invars.insert(invars.end(), p.invars.begin(), p.invars.end());
    p.invars = std::move(invars);
    p.constvars.clear();
    out.programs.push_back(std::make_shared<const core::Program>(std::move(p)));
  }
  return out;
}

namespace {

struct KeptRule {
  std::weak_ptr<const core::Program> key;
  std::shared_ptr<const ZeroPatternTracer> tracer;
};
// Never destroyed: what the rules hold (arrays they captured) must not outlive the runtime
// at exit.
std::mutex g_rules_mu;
auto& g_rules = *new std::map<const core::Program*, KeptRule>;

}  // namespace

void SymbolicZerosRules::add(const ProgramRef& key, ZeroPatternTracer tracer) {
  std::lock_guard<std::mutex> lock(g_rules_mu);
  std::erase_if(g_rules, [](const auto& kv) { return kv.second.key.expired(); });
  g_rules[key.get()] = KeptRule{key, std::make_shared<const ZeroPatternTracer>(std::move(tracer))};
}

std::shared_ptr<const ZeroPatternTracer> SymbolicZerosRules::find(const ProgramRef& key) {
  std::lock_guard<std::mutex> lock(g_rules_mu);
  auto it = g_rules.find(key.get());
  if (it == g_rules.end() || it->second.key.lock() != key) return nullptr;
  return it->second.tracer;
}

std::shared_ptr<const ZeroPatternRule> SymbolicZerosRules::trace(const ProgramRef& key,
                                                                 const ZeroPatternTracer& tracer,
                                                                 const std::vector<bool>& zero) {
  static auto& cache = *new DerivedCache<ZeroPatternRule>;  // as g_rules
  return cache.get(key, mask_key(zero) + axes_key(), [&] { return tracer(zero); });
}

}  // namespace parax::prims
