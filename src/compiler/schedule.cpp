#include "compiler/schedule.h"

#include <algorithm>
#include <map>
#include <numeric>
#include <set>

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
// A value whose consumers grow past this many equations (a long chain, the rest of the
// program) keeps its order: an update is a few dozen, and the search stays linear.
constexpr size_t kMaxCone = 64;

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
        at_(p.eqns.size()),
        mark_(p.eqns.size(), -1) {
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

  // Returns the order to run the equations in (ids), or an empty list for the traced one.
  std::vector<int> run() {
    for (size_t s = 0; s < p_.eqns.size(); ++s) {
      for (int v : p_.eqns[s].outputs) {
        if (p_.avals[size_t(v)].nbytes() >= kWorthBytes) try_cone(int(s), v);
      }
    }
    if (!moved_) return {};
    return order_;
  }

 private:
  // Tries to run, right after `source` (which made the large value v), the elementwise
  // work that reads v, and what that work reads in turn, where it can run there.
  void try_cone(int source, int v) {
    // A lone consumer that already runs next: nothing to move.
    const std::vector<int>& first = readers_[size_t(v)];
    if (first.empty() || (first.size() == 1 && at_[size_t(first[0])] == at_[size_t(source)] + 1)) {
      return;
    }
    ++epoch_;
    auto in = [&](int e) { return mark_[size_t(e)] == epoch_; };
    std::vector<int> cone;
    std::set<std::pair<int, int>> todo;  // (place, equation), earliest first
    auto add_readers = [&](int value) {
      for (int r : readers_[size_t(value)]) todo.emplace(at_[size_t(r)], r);
    };
    add_readers(v);
    while (!todo.empty()) {
      const int r = todo.begin()->second;
      todo.erase(todo.begin());
      if (in(r) || at_[size_t(r)] <= at_[size_t(source)] || !follows(p_.eqns[size_t(r)])) {
        continue;
      }
      std::vector<int> pulled;
      if (!pull(r, source, pulled)) continue;
      for (int e : pulled) {
        mark_[size_t(e)] = epoch_;
        cone.push_back(e);
        // On along the large values it makes; a small one (a scalar many updates read)
        // would lead to work that does not wait on v.
        for (int out : p_.eqns[size_t(e)].outputs) {
          if (p_.avals[size_t(out)].nbytes() > kSmallBytes) add_readers(out);
        }
      }
      if (cone.size() > kMaxCone) return;
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
                                      [&](int r) { return !in(r); });
        if (kept) made += p_.avals[size_t(out)].nbytes();
      }
      for (const Atom& a : p_.eqns[size_t(e)].inputs) {
        if (a.is_literal() || !freeable_[size_t(a.var)]) continue;
        if (std::find(seen.begin(), seen.end(), a.var) != seen.end()) continue;
        seen.push_back(a.var);
        const int from = producer_[size_t(a.var)];
        if (from >= 0 && in(from)) continue;  // made and dropped inside
        const bool last =
            std::all_of(readers_[size_t(a.var)].begin(), readers_[size_t(a.var)].end(),
                        [&](int r) { return in(r) || at_[size_t(r)] <= at_[size_t(source)]; });
        if (last) freed += p_.avals[size_t(a.var)].nbytes();
      }
    }
    if (freed < kWorthBytes || made > freed) return;
    move_after(source, cone);
  }

  // Adds to `pulled` what equation r needs to run right after `source`: r itself, after
  // the producers of its operands that run later than the source and can come along
  // (elementwise work or small results whose own operands can). False if one cannot.
  bool pull(int r, int source, std::vector<int>& pulled) {
    if (std::find(pulled.begin(), pulled.end(), r) != pulled.end()) return true;
    if (pulled.size() > kMaxCone) return false;
    for (const Atom& a : p_.eqns[size_t(r)].inputs) {
      if (a.is_literal()) continue;
      const int from = producer_[size_t(a.var)];
      if (from < 0 || mark_[size_t(from)] == epoch_ || at_[size_t(from)] <= at_[size_t(source)]) {
        continue;
      }
      const Eqn& f = p_.eqns[size_t(from)];
      if (!follows(f) && !small(p_, f)) return false;
      if (!pull(from, source, pulled)) return false;
    }
    pulled.push_back(r);
    return true;
  }

  // Puts `moved` (in their current order) right after equation `source`.
  void move_after(int source, std::vector<int> moved) {
    std::sort(moved.begin(), moved.end(),
              [&](int a, int b) { return at_[size_t(a)] < at_[size_t(b)]; });
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
    moved_ = true;
  }

  const Program& p_;
  std::vector<int> producer_;              // per variable: its equation, -1 for an input
  std::vector<std::vector<int>> readers_;  // per variable: the equations reading it
  std::vector<bool> freeable_;             // per variable: let go of after its last read
  std::map<int, bool> result_;             // variables the program returns
  std::vector<int> order_;                 // equation ids in the order they run
  std::vector<int> at_;                    // per equation id: its place in order_
  std::vector<int> mark_;                  // per equation id: the search that took it
  int epoch_ = 0;
  bool moved_ = false;
};

// Whether some value worth moving work for is read by elementwise work that does not run
// right after it: the scheduler has nothing to do otherwise.
bool worth_a_look(const Program& p) {
  std::vector<int> made_at(p.avals.size(), -1);
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const Eqn& eqn = p.eqns[e];
    for (const Atom& a : eqn.inputs) {
      if (a.is_literal() || made_at[size_t(a.var)] < 0) continue;
      if (made_at[size_t(a.var)] + 1 < int(e) && follows(eqn) &&
          p.avals[size_t(a.var)].nbytes() >= kWorthBytes) {
        return true;
      }
    }
    for (int v : eqn.outputs) made_at[size_t(v)] = int(e);
  }
  return false;
}

}  // namespace

void schedule_for_memory(Program& p, const std::vector<bool>& donated) {
  if (p.eqns.size() < 3 || !worth_a_look(p)) return;
  const std::vector<int> order = Scheduler(p, donated).run();
  if (order.empty()) return;
  std::vector<Eqn> eqns;
  eqns.reserve(order.size());
  for (int e : order) eqns.push_back(std::move(p.eqns[size_t(e)]));
  p.eqns = std::move(eqns);
}

}  // namespace parax::compiler
