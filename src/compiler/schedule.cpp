#include "compiler/schedule.h"

#include <algorithm>
#include <map>
#include <numeric>

namespace parax::compiler {
namespace {

using core::Atom;
using core::Eqn;
using core::Program;

// Results this small move along with the work that waits on them.
constexpr int64_t kSmallBytes = 4096;
// Work moves only to let go of at least this much sooner: below it, keeping the traced
// order (and the fusions it makes) is worth more.
constexpr int64_t kWorthBytes = 256 * 1024;

// Elementwise work, which follows its operands anywhere; collectives and control flow
// stay where they are.
bool follows(const Eqn& e) {
  return core::has_trait(e.prim, core::kElementwise) && e.outputs.size() == 1;
}

bool small(const Program& p, const Eqn& e) {
  if (core::has_trait(e.prim, core::kCollective) || core::has_trait(e.prim, core::kControlFlow)) {
    return false;
  }
  int64_t n = 0;
  for (int v : e.outputs) n += p.avals[size_t(v)].nbytes();
  return n <= kSmallBytes;
}

class Scheduler {
 public:
  Scheduler(const Program& p, const std::vector<bool>& donated)
      : p_(p),
        producer_(p.avals.size(), -1),
        readers_(p.avals.size()),
        freeable_(p.avals.size(), false),
        order_(p.eqns.size()),
        at_(p.eqns.size()) {
    for (size_t e = 0; e < p.eqns.size(); ++e) {
      for (int v : p.eqns[e].outputs) {
        producer_[size_t(v)] = int(e);
        freeable_[size_t(v)] = true;
      }
      for (const Atom& a : p.eqns[e].inputs) {
        if (a.is_literal()) continue;
        std::vector<int>& r = readers_[size_t(a.var)];
        if (r.empty() || r.back() != int(e)) r.push_back(int(e));
      }
    }
    std::vector<int> inputs = p.constvars;
    inputs.insert(inputs.end(), p.invars.begin(), p.invars.end());
    for (size_t i = 0; i < inputs.size() && i < donated.size(); ++i) {
      if (donated[i]) freeable_[size_t(inputs[i])] = true;
    }
    for (const Atom& a : p.outvars) {
      if (a.is_literal()) continue;
      freeable_[size_t(a.var)] = false;
      result_[a.var] = true;
    }
    std::iota(order_.begin(), order_.end(), 0);
    std::iota(at_.begin(), at_.end(), 0);
  }

  Program run() {
    for (size_t s = 0; s < p_.eqns.size(); ++s) {
      for (int v : p_.eqns[s].outputs) {
        if (p_.avals[size_t(v)].nbytes() >= kWorthBytes) try_cone(int(s), v);
      }
    }
    Program out = p_;
    for (size_t k = 0; k < order_.size(); ++k) out.eqns[k] = p_.eqns[size_t(order_[k])];
    return out;
  }

 private:
  // Tries to run, right after `source` (which made the large value v), the elementwise
  // work that reads v, and what that work reads in turn, where it can run there.
  void try_cone(int source, int v) {
    std::vector<bool> in(p_.eqns.size(), false);
    std::vector<int> cone;
    std::vector<int> todo = readers_[size_t(v)];
    while (!todo.empty()) {
      std::sort(todo.begin(), todo.end(), [&](int a, int b) { return at_[size_t(a)] < at_[size_t(b)]; });
      const int r = todo.front();
      todo.erase(todo.begin());
      if (in[size_t(r)] || at_[size_t(r)] <= at_[size_t(source)] || !follows(p_.eqns[size_t(r)])) {
        continue;
      }
      std::vector<int> pulled;
      if (!pull(r, source, in, pulled)) continue;
      for (int e : pulled) {
        in[size_t(e)] = true;
        cone.push_back(e);
        // On along the large values it makes; a small one (a scalar many updates read)
        // would lead to work that does not wait on v.
        for (int out : p_.eqns[size_t(e)].outputs) {
          if (p_.avals[size_t(out)].nbytes() <= kSmallBytes) continue;
          todo.insert(todo.end(), readers_[size_t(out)].begin(), readers_[size_t(out)].end());
        }
      }
    }
    if (cone.empty()) return;
    // Its results read after it (or returned) are made; what only it and work before the
    // source read goes.
    int64_t made = 0, freed = 0;
    std::vector<int> seen;
    for (int e : cone) {
      for (int out : p_.eqns[size_t(e)].outputs) {
        const bool kept = result_.count(out) > 0 ||
                          std::any_of(readers_[size_t(out)].begin(), readers_[size_t(out)].end(),
                                      [&](int r) { return !in[size_t(r)]; });
        if (kept) made += p_.avals[size_t(out)].nbytes();
      }
      for (const Atom& a : p_.eqns[size_t(e)].inputs) {
        if (a.is_literal() || !freeable_[size_t(a.var)]) continue;
        if (std::find(seen.begin(), seen.end(), a.var) != seen.end()) continue;
        seen.push_back(a.var);
        const int from = producer_[size_t(a.var)];
        if (from >= 0 && in[size_t(from)]) continue;  // made and dropped inside
        const bool last = std::all_of(
            readers_[size_t(a.var)].begin(), readers_[size_t(a.var)].end(),
            [&](int r) { return in[size_t(r)] || at_[size_t(r)] <= at_[size_t(source)]; });
        if (last) freed += p_.avals[size_t(a.var)].nbytes();
      }
    }
    if (freed < kWorthBytes || made > freed) return;
    move_after(source, cone);
  }

  // Adds to `pulled` what equation r needs to run right after `source`: r itself, after
  // the producers of its operands that run later than the source and can come along
  // (elementwise work or small results whose own operands can). False if one cannot.
  bool pull(int r, int source, const std::vector<bool>& in, std::vector<int>& pulled) {
    if (std::find(pulled.begin(), pulled.end(), r) != pulled.end()) return true;
    for (const Atom& a : p_.eqns[size_t(r)].inputs) {
      if (a.is_literal()) continue;
      const int from = producer_[size_t(a.var)];
      if (from < 0 || in[size_t(from)] || at_[size_t(from)] <= at_[size_t(source)]) continue;
      const Eqn& f = p_.eqns[size_t(from)];
      if (!follows(f) && !small(p_, f)) return false;
      if (!pull(from, source, in, pulled)) return false;
    }
    pulled.push_back(r);
    return true;
  }

  // Puts `moved` (in their current order) right after equation `source`.
  void move_after(int source, std::vector<int> moved) {
    std::sort(moved.begin(), moved.end(), [&](int a, int b) { return at_[size_t(a)] < at_[size_t(b)]; });
    std::vector<bool> is_moved(order_.size(), false);
    for (int m : moved) is_moved[size_t(m)] = true;
    std::vector<int> out;
    out.reserve(order_.size());
    for (int e : order_) {
      if (is_moved[size_t(e)]) continue;
      out.push_back(e);
      if (e == source) out.insert(out.end(), moved.begin(), moved.end());
    }
    order_ = std::move(out);
    for (size_t k = 0; k < order_.size(); ++k) at_[size_t(order_[k])] = int(k);
  }

  const Program& p_;
  std::vector<int> producer_;               // per variable: its equation, -1 for an input
  std::vector<std::vector<int>> readers_;   // per variable: the equations reading it
  std::vector<bool> freeable_;              // per variable: let go of after its last read
  std::map<int, bool> result_;              // variables the program returns
  std::vector<int> order_;                  // equation ids in the order they run
  std::vector<int> at_;                     // per equation id: its place in order_
};

}  // namespace

Program schedule_for_memory(const Program& p, const std::vector<bool>& donated) {
  if (p.eqns.size() < 3) return p;
  return Scheduler(p, donated).run();
}

}  // namespace parax::compiler
