#include "compiler/buffers.h"

#include <algorithm>
#include <sstream>

#include "base/check.h"
#include "compiler/fuse.h"

namespace parax::compiler {
namespace {

using core::Atom;
using core::Eqn;
using core::Program;

constexpr int kEnd = 1 << 30;  // the "equation" at which program results are read

// The last equation reading each variable (kEnd for program results, -1 for none).
std::vector<int> last_reads(const Program& p) {
  std::vector<int> last(p.avals.size(), -1);
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const Atom& a : p.eqns[e].inputs) {
      if (!a.is_literal()) last[size_t(a.var)] = int(e);
    }
  }
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) last[size_t(a.var)] = kEnd;
  }
  return last;
}

// Per program input (constvars, then invars): its variable.
std::vector<int> program_inputs(const Program& p) {
  std::vector<int> inputs = p.constvars;
  inputs.insert(inputs.end(), p.invars.begin(), p.invars.end());
  return inputs;
}

// Values the program shares with its caller: its inputs, which the caller still holds
// unless it donated them, and its results, which the caller receives. Nothing may write
// over them.
std::vector<bool> caller_values(const Program& p, const std::vector<bool>& donated) {
  std::vector<bool> shared(p.avals.size(), false);
  const std::vector<int> inputs = program_inputs(p);
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (i >= donated.size() || !donated[i]) shared[size_t(inputs[i])] = true;
  }
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) shared[size_t(a.var)] = true;
  }
  return shared;
}

// Whether result `r` of `e` may be written over operand `i`: an elementwise kernel reads
// element i before writing it. A fusion runs its chain tile by tile, each equation over
// the whole tile in turn, so a result may take the buffer of an operand that no later
// equation of the chain reads; a trailing reduction writes a smaller result.
bool may_overwrite_operand(const Eqn& e, size_t r, size_t i) {
  if (core::has_trait(e.prim, core::kElementwise)) return true;
  const Program* chain = fused_program(e);
  if (chain == nullptr || core::has_trait(chain->eqns.back().prim, core::kReduction)) return false;
  if (i >= chain->invars.size() || r >= chain->outvars.size()) return false;
  const Atom& out = chain->outvars[r];
  if (out.is_literal()) return false;
  const int operand = chain->invars[i];
  size_t made = chain->eqns.size();
  for (size_t k = 0; k < chain->eqns.size() && made == chain->eqns.size(); ++k) {
    const auto& outs = chain->eqns[k].outputs;
    if (std::find(outs.begin(), outs.end(), out.var) != outs.end()) made = k;
  }
  if (made == chain->eqns.size()) return false;  // a result that is an input
  for (size_t k = made + 1; k < chain->eqns.size(); ++k) {
    for (const Atom& a : chain->eqns[k].inputs) {
      if (!a.is_literal() && a.var == operand) return false;
    }
  }
  return true;
}

// Whether `e`'s results are made by a kernel of its own, which writes where the plan says;
// control flow's come from its programs and a collective's from the collective.
bool kernel_made(const Eqn& e) {
  return !core::has_trait(e.prim, core::kControlFlow) &&
         !core::has_trait(e.prim, core::kCollective);
}

// Per variable: the program result it is, when it is exactly one and not an input
// (a result that is an input, or twice a result, has no slot of its own); else -1.
std::vector<int> result_slots(const Program& p) {
  std::vector<int> slot(p.avals.size(), -1);
  for (size_t o = 0; o < p.outvars.size(); ++o) {
    const Atom& a = p.outvars[o];
    if (a.is_literal()) continue;
    int& s = slot[size_t(a.var)];
    s = s == -1 ? int(o) : -2;
  }
  for (int v : p.constvars) slot[size_t(v)] = -2;
  for (int v : p.invars) slot[size_t(v)] = -2;
  for (int& s : slot) s = std::max(s, -1);
  return slot;
}

}  // namespace

BufferPlan plan_buffers(const Program& p, std::vector<bool> donated) {
  const std::vector<int> last = last_reads(p);
  const std::vector<bool> shared = caller_values(p, donated);
  const std::vector<int> slot = result_slots(p);
  BufferPlan plan;
  plan.donated = std::move(donated);
  plan.steps.resize(p.eqns.size());
  for (size_t v = 0; v < last.size(); ++v) {
    if (last[v] >= 0 && last[v] != kEnd) plan.steps[size_t(last[v])].frees.push_back(int(v));
  }
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const Eqn& eqn = p.eqns[e];
    BufferStep& step = plan.steps[e];
    for (int v : eqn.outputs) {
      if (last[size_t(v)] < 0) step.frees.push_back(v);  // nothing reads it
    }
    std::sort(step.frees.begin(), step.frees.end());
    step.results.resize(eqn.outputs.size());
    if (core::has_trait(eqn.prim, core::kControlFlow)) {
      for (const auto& sub : core::sub_programs(eqn)) {
        step.subs.push_back(std::make_shared<const BufferPlan>(plan_buffers(*sub)));
      }
    }
    if (!kernel_made(eqn)) continue;
    std::vector<int> taken;  // operands already overwritten by an earlier result
    for (size_t r = 0; r < eqn.outputs.size(); ++r) {
      const core::Aval& out = p.avals[size_t(eqn.outputs[r])];
      step.results[r].result = slot[size_t(eqn.outputs[r])];
      for (size_t i = 0; i < eqn.inputs.size(); ++i) {
        const Atom& a = eqn.inputs[i];
        if (a.is_literal() || !may_overwrite_operand(eqn, r, i) || shared[size_t(a.var)] ||
            last[size_t(a.var)] != int(e) ||
            std::find(taken.begin(), taken.end(), a.var) != taken.end()) {
          continue;
        }
        const core::Aval& in = p.avals[size_t(a.var)];
        if (in.nbytes() != out.nbytes() || in.shape != out.shape) continue;
        step.results[r].reuse = int(i);
        taken.push_back(a.var);
        break;
      }
    }
  }
  return plan;
}

const std::shared_ptr<const BufferPlan>& sub_plan(const Program& p, const BufferPlan& plan,
                                                  size_t e, const Program& sub) {
  const auto subs = core::sub_programs(p.eqns[e]);
  for (size_t k = 0; k < subs.size(); ++k) {
    if (subs[k].get() == &sub) return plan.steps[e].subs[k];
  }
  PARAX_CHECK(false, "equation " << e << " runs no such program");
  PARAX_UNREACHABLE();
}

namespace {

// The names core::to_string gives a program's variables, and those of its control flow's
// programs: in order of definition from `next`, a result nothing reads as `_` in the
// outermost program only, control flow's programs named on from their equation's results.
struct Names {
  std::vector<std::string> vars;
  std::vector<std::vector<Names>> subs;  // per equation, in core::sub_programs' order
};

Names names_of(const Program& p, int& next, bool outermost) {
  std::vector<bool> read(p.avals.size(), false);
  for (const Eqn& e : p.eqns) {
    for (const Atom& a : e.inputs) {
      if (!a.is_literal()) read[size_t(a.var)] = true;
    }
  }
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) read[size_t(a.var)] = true;
  }
  Names names{std::vector<std::string>(p.avals.size(), "?"), {}};
  auto define = [&](int v) {
    if (names.vars[size_t(v)] == "?") names.vars[size_t(v)] = core::var_name(next++);
  };
  for (int v : p.constvars) define(v);
  for (int v : p.invars) define(v);
  names.subs.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (int v : p.eqns[e].outputs) {
      if (outermost && !read[size_t(v)]) {
        names.vars[size_t(v)] = "_";
      } else {
        define(v);
      }
    }
    if (!core::has_trait(p.eqns[e].prim, core::kControlFlow)) continue;
    for (const auto& sub : core::sub_programs(p.eqns[e])) {
      names.subs[e].push_back(names_of(*sub, next, false));
    }
  }
  return names;
}

Names names_of(const Program& p) {
  int next = 0;
  return names_of(p, next, true);
}

// `names`, when given, names variables in the message (only a failing plan needs them).
std::optional<std::string> verify(const Program& p, const BufferPlan& plan, const Names* names) {
  if (plan.steps.size() != p.eqns.size()) {
    return "the buffer plan has " + std::to_string(plan.steps.size()) + " steps for " +
           std::to_string(p.eqns.size()) + " equations";
  }
  const std::vector<int> last = last_reads(p);
  if (!plan.donated.empty() && plan.donated.size() != p.constvars.size() + p.invars.size()) {
    return "the buffer plan marks " + std::to_string(plan.donated.size()) +
           " inputs donated or not, of " + std::to_string(p.constvars.size() + p.invars.size());
  }
  const std::vector<bool> shared = caller_values(p, plan.donated);
  auto name = [&](int v) {
    return names && v >= 0 && size_t(v) < p.avals.size() ? names->vars[size_t(v)]
                                                         : "?" + std::to_string(v);
  };
  std::vector<bool> defined(p.avals.size(), false);
  for (int v : p.constvars) defined[size_t(v)] = true;
  for (int v : p.invars) defined[size_t(v)] = true;
  std::vector<int> freed_at(p.avals.size(), -1);
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const Eqn& eqn = p.eqns[e];
    const BufferStep& step = plan.steps[e];
    auto fail = [&](const std::string& what) {
      std::string made;
      for (int v : eqn.outputs) made += name(v) + " ";
      return "equation " + std::to_string(e) + " (" + made + "= " +
             std::string(core::prim_name(eqn.prim)) + "): " + what;
    };
    for (int v : eqn.outputs) defined[size_t(v)] = true;
    for (int v : step.frees) {
      if (v < 0 || size_t(v) >= p.avals.size() || !defined[size_t(v)]) {
        return fail("frees " + name(v) + ", which is not defined yet");
      }
      if (freed_at[size_t(v)] >= 0) {
        return fail("frees " + name(v) + " again (after equation " +
                    std::to_string(freed_at[size_t(v)]) + " already)");
      }
      if (last[size_t(v)] == kEnd) return fail("frees " + name(v) + ", a program result");
      if (last[size_t(v)] > int(e)) {
        return fail("frees " + name(v) + ", which equation " + std::to_string(last[size_t(v)]) +
                    " reads");
      }
      freed_at[size_t(v)] = int(e);
    }
    if (step.results.size() != eqn.outputs.size()) {
      return fail("the plan places " + std::to_string(step.results.size()) + " of its " +
                  std::to_string(eqn.outputs.size()) + " results");
    }
    std::vector<int> overwritten;
    for (size_t r = 0; r < eqn.outputs.size(); ++r) {
      const ResultBuffer& rb = step.results[r];
      const int out = eqn.outputs[r];
      if (rb.result >= 0) {
        const bool mine = size_t(rb.result) < p.outvars.size() &&
                          p.outvars[size_t(rb.result)] == Atom::of(out) &&
                          std::count(p.outvars.begin(), p.outvars.end(), Atom::of(out)) == 1;
        if (!mine || !kernel_made(eqn)) {
          return fail(name(out) + " goes to program result " + std::to_string(rb.result) +
                      ", which is not its alone");
        }
      }
      if (rb.reuse < 0) continue;
      if (size_t(rb.reuse) >= eqn.inputs.size() || eqn.inputs[size_t(rb.reuse)].is_literal()) {
        return fail(name(out) + " reuses operand " + std::to_string(rb.reuse) + ", not a variable");
      }
      const int in = eqn.inputs[size_t(rb.reuse)].var;
      auto what = [&] { return name(out) + " reuses " + name(in); };
      const core::Aval& a = p.avals[size_t(in)];
      const core::Aval& b = p.avals[size_t(out)];
      if (!kernel_made(eqn) || !may_overwrite_operand(eqn, r, size_t(rb.reuse))) {
        return fail(what() + ", but its kernel may not write over an operand");
      }
      if (shared[size_t(in)]) return fail(what() + ", a program result or undonated input");
      if (freed_at[size_t(in)] != int(e)) return fail(what() + ", which is read later");
      if (a.shape != b.shape || a.nbytes() != b.nbytes()) {
        return fail(what() + ": " + b.str() + " over " + a.str());
      }
      if (std::find(overwritten.begin(), overwritten.end(), in) != overwritten.end()) {
        return fail(what() + ", which another result reuses");
      }
      overwritten.push_back(in);
    }
    const auto subs = core::has_trait(eqn.prim, core::kControlFlow)
                          ? core::sub_programs(eqn)
                          : std::vector<std::shared_ptr<const Program>>();
    if (step.subs.size() != subs.size()) {
      return fail("the plan has " + std::to_string(step.subs.size()) + " programs for its " +
                  std::to_string(subs.size()));
    }
    for (size_t k = 0; k < subs.size(); ++k) {
      if (!step.subs[k]) return fail("no plan for its program " + std::to_string(k));
      if (auto err = verify(*subs[k], *step.subs[k], names ? &names->subs[e][k] : nullptr)) {
        return fail("in its program " + std::to_string(k) + ": " + *err);
      }
    }
  }
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (int v : p.eqns[e].outputs) {
      if (freed_at[size_t(v)] < 0 && last[size_t(v)] != kEnd) {
        return name(v) + " (made by equation " + std::to_string(e) + ") is never freed";
      }
    }
  }
  return std::nullopt;
}

// Prints the plan of `p`, its lines indented by `indent`.
void print(const Program& p, const BufferPlan& plan, const Names& names, size_t indent,
           std::ostringstream& out) {
  const std::string pad(indent, ' ');
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const Eqn& eqn = p.eqns[e];
    const BufferStep& step = plan.steps[e];
    out << "#" << pad << e << ":";
    const bool from_programs = core::has_trait(eqn.prim, core::kControlFlow);
    for (size_t r = 0; r < eqn.outputs.size(); ++r) {
      const ResultBuffer& rb = step.results[r];
      out << (r ? ", " : " ") << names.vars[size_t(eqn.outputs[r])];
      if (from_programs) continue;
      if (rb.result >= 0) out << " to result " << rb.result << " else";
      if (rb.reuse >= 0) {
        out << " reuses " << names.vars[size_t(eqn.inputs[size_t(rb.reuse)].var)];
      } else {
        out << " new";
      }
    }
    if (from_programs) out << " from its programs";
    for (size_t k = 0; k < step.frees.size(); ++k) {
      out << (k ? " " : "; frees ") << names.vars[size_t(step.frees[k])];
    }
    out << "\n";
    if (!from_programs) continue;
    // Labelled by the params holding them, in core::sub_programs' order.
    size_t k = 0;
    auto sub = [&](const std::string& label, const Program& body) {
      out << "#" << pad << "  " << label << ":\n";
      print(body, *step.subs[k], names.subs[e][k], indent + 4, out);
      ++k;
    };
    for (const auto& [param, value] : eqn.params.items()) {
      if (const auto* body = std::get_if<std::shared_ptr<const Program>>(&value); body && *body) {
        sub(param, **body);
      } else if (const auto* list = std::get_if<core::ProgramList>(&value)) {
        for (size_t i = 0; i < list->size(); ++i) {
          sub(param + "[" + std::to_string(i) + "]", *(*list)[i]);
        }
      }
    }
  }
}

}  // namespace

std::optional<std::string> verify_buffers(const Program& p, const BufferPlan& plan) {
  if (!verify(p, plan, nullptr)) return std::nullopt;
  const Names names = names_of(p);
  return verify(p, plan, &names);
}

std::string buffers_text(const Program& p, const BufferPlan& plan) {
  std::ostringstream out;
  out << "# buffers\n";
  const Names names = names_of(p);
  const std::vector<int> inputs = program_inputs(p);
  std::string donated;
  for (size_t i = 0; i < plan.donated.size() && i < inputs.size(); ++i) {
    if (plan.donated[i]) donated += " " + names.vars[size_t(inputs[i])];
  }
  if (!donated.empty()) out << "#   donated:" << donated << "\n";
  print(p, plan, names, 3, out);
  return out.str();
}

}  // namespace parax::compiler
