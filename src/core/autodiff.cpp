#include "core/autodiff.h"

#include <optional>

#include "base/check.h"
#include "core/array_value.h"
#include "core/backend.h"
#include "core/rules.h"
#include "core/source_site.h"
#include "parax/lax.h"

namespace parax::core {

Array literal_array(const Literal& l) {
  unsigned char bytes[8];
  write_literal(l, bytes);
  return backend().from_host(bytes, l.aval);
}

namespace {

bool differentiable(const Aval& a) { return is_floating(a.dtype); }

// A linear operand being transposed: its type without data (JAX's UndefinedPrimal).
Array placeholder(const Aval& aval) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = aval;
  return Array(std::move(impl));
}

bool is_linear_eqn(const Eqn& e, const std::vector<bool>& linear) {
  for (const Atom& a : e.inputs) {
    if (!a.is_literal() && linear[size_t(a.var)]) return true;
  }
  return false;
}

// Marks, from the marked inputs in `marked`, every variable that depends on one.
void mark_dependents(const Program& p, std::vector<bool>& marked) {
  marked.resize(p.avals.size(), false);
  for (const Eqn& e : p.eqns) {
    const bool any = is_linear_eqn(e, marked);
    for (int v : e.outputs) marked[size_t(v)] = any;
  }
}

// Marks the variables that depend on the program's invars (the tangents).
std::vector<bool> linear_vars(const Program& p) {
  std::vector<bool> linear(p.avals.size(), false);
  for (int v : p.invars) linear[size_t(v)] = true;
  mark_dependents(p, linear);
  return linear;
}

// The program's inputs: constvars then invars.
std::vector<int> input_vars(const Program& p) {
  std::vector<int> in(p.constvars);
  in.insert(in.end(), p.invars.begin(), p.invars.end());
  return in;
}

// std::vector<bool> has no contiguous storage for a span.
std::unique_ptr<bool[]> bool_array(const std::vector<bool>& v) {
  std::unique_ptr<bool[]> out(new bool[v.size()]);
  for (size_t i = 0; i < v.size(); ++i) out[i] = v[i];
  return out;
}

Array value_of(const Atom& a, const std::vector<Array>& values) {
  return a.is_literal() ? literal_array(*a.literal) : values[size_t(a.var)];
}

Array add_any(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return lax::add(a, b);
}

}  // namespace

namespace {
Array filled(const Aval& aval, double value) {
  Array z = literal_array(Literal{Aval{{}, aval.dtype, false}, value});
  if (aval.shape.empty()) return z;
  return lax::broadcast_in_dim(z, aval.shape, {});
}
}  // namespace

Array zeros(const Aval& aval) { return filled(aval, 0.0); }
Array ones(const Aval& aval) { return filled(aval, 1.0); }

std::pair<std::vector<Array>, std::vector<Array>> jvp_program(const Program& p,
                                                              std::span<const Array> inputs,
                                                              std::span<const Array> tangents) {
  std::vector<Array> value(p.avals.size()), tangent(p.avals.size());
  std::vector<int> in_vars(p.constvars);
  in_vars.insert(in_vars.end(), p.invars.begin(), p.invars.end());
  PARAX_CHECK(inputs.size() == in_vars.size() && tangents.size() == in_vars.size(),
              "jvp_program: one value and one tangent per input");
  for (size_t i = 0; i < in_vars.size(); ++i) {
    value[size_t(in_vars[i])] = inputs[i];
    if (differentiable(p.avals[size_t(in_vars[i])])) tangent[size_t(in_vars[i])] = tangents[i];
  }
  auto val = [&](const Atom& a) {
    return a.is_literal() ? literal_array(*a.literal) : value[size_t(a.var)];
  };
  auto tan = [&](const Atom& a) { return a.is_literal() ? Array() : tangent[size_t(a.var)]; };
  for (const Eqn& e : p.eqns) {
    const SiteScope at(e.site);
    std::vector<Array> ins, tins;
    bool any = false;
    for (const Atom& a : e.inputs) {
      ins.push_back(val(a));
      tins.push_back(tan(a));
      any = any || tins.back().valid();
    }
    std::vector<Array> outs, touts;
    const PrimRules& r = rules(e.prim);
    if (any && r.joint_jvp != nullptr) {
      std::tie(outs, touts) = r.joint_jvp(ins, tins, e.params);
    } else {
      outs = bind(e.prim, ins, e.params);
      if (any) {
        if (r.jvp == nullptr) {
          throw NotImplementedError("Differentiation rule for '" + std::string(prim_name(e.prim)) +
                                    "' not implemented");
        }
        touts = r.jvp(ins, tins, outs, e.params);
      }
    }
    touts.resize(outs.size());
    for (size_t r = 0; r < e.outputs.size(); ++r) {
      value[size_t(e.outputs[r])] = outs[r];
      if (differentiable(p.avals[size_t(e.outputs[r])])) tangent[size_t(e.outputs[r])] = touts[r];
    }
  }
  std::vector<Array> outs, touts;
  for (const Atom& a : p.outvars) {
    outs.push_back(val(a));
    touts.push_back(tan(a));
  }
  return {outs, touts};
}

namespace {

// Appends to `out` the equations of the known program of `split` in place of its call:
// its invars are e's known operands, its outvars e's known results then the residuals.
// Returns the residuals.
std::vector<Atom> inline_known(Program& out, const Eqn& e, const PartialEval& split,
                               const std::vector<bool>& unk) {
  const Program& k = *split.known.get<std::shared_ptr<const Program>>("jaxpr");
  std::vector<std::optional<Atom>> map(k.avals.size());
  size_t i = 0;
  for (size_t j = 0; j < e.inputs.size(); ++j) {
    if (!unk[j]) map[size_t(k.invars[i++])] = e.inputs[j];
  }
  // A known result keeps its variable, which later equations read: the equation making it
  // writes it, or a copy does when the program returns an input, a literal or a repeat.
  std::vector<std::pair<Atom, int>> copies;
  size_t o = 0;
  for (size_t r = 0; r < e.outputs.size(); ++r) {
    if (split.out_unknown[r]) continue;
    const Atom& a = k.outvars[o++];
    if (!a.is_literal() && !map[size_t(a.var)]) {
      map[size_t(a.var)] = Atom::of(e.outputs[r]);
    } else {
      copies.emplace_back(a, e.outputs[r]);
    }
  }
  auto atom = [&](const Atom& a) { return a.is_literal() ? a : *map[size_t(a.var)]; };
  for (const Eqn& ke : k.eqns) {
    Eqn c{ke.prim, {}, {}, ke.params, ke.site};
    for (const Atom& a : ke.inputs) c.inputs.push_back(atom(a));
    for (int v : ke.outputs) {
      if (!map[size_t(v)]) map[size_t(v)] = Atom::of(out.new_var(k.avals[size_t(v)]));
      c.outputs.push_back(map[size_t(v)]->var);
    }
    out.eqns.push_back(std::move(c));
  }
  for (const auto& [from, to] : copies) out.eqns.push_back(Eqn{Prim::copy, {atom(from)}, {to}, {}});
  std::vector<Atom> residuals;
  for (; o < k.outvars.size(); ++o) residuals.push_back(atom(k.outvars[o]));
  return residuals;
}

// Appends to `out` the split of `e` whose known part runs inline (`split.inline_known`):
// the known program's equations, then the unknown application reading their residuals.
void emit_inlined_split(Program& out, const Eqn& e, const PartialEval& split,
                        const std::vector<bool>& unk, std::vector<bool>& unknown) {
  Eqn rest{e.prim, {}, {}, split.unknown, e.site};
  for (int f : split.forwarded) rest.inputs.push_back(e.inputs[size_t(f)]);
  for (size_t o = 0; o < e.outputs.size(); ++o) {
    if (split.out_unknown[o]) rest.outputs.push_back(e.outputs[o]);
  }
  const std::vector<Atom> residuals = inline_known(out, e, split, unk);
  rest.inputs.insert(rest.inputs.end(), residuals.begin(), residuals.end());
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (unk[i]) rest.inputs.push_back(e.inputs[i]);
  }
  unknown.resize(out.avals.size(), false);
  for (size_t o = 0; o < e.outputs.size(); ++o) {
    unknown[size_t(e.outputs[o])] = split.out_unknown[o];
  }
  if (!rest.outputs.empty()) out.eqns.push_back(std::move(rest));
}

// Appends to `out` the two applications `split` makes of `e`, whose operands are unknown
// where `unk` says; marks the new variables in `unknown`.
void emit_split(Program& out, const Eqn& e, const PartialEval& split, const std::vector<bool>& unk,
                std::vector<bool>& unknown) {
  if (split.inline_known) return emit_inlined_split(out, e, split, unk, unknown);
  Eqn known{e.prim, {}, {}, split.known, e.site};
  Eqn rest{e.prim, {}, {}, split.unknown, e.site};
  std::vector<Aval> known_in;
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (unk[i]) continue;
    known.inputs.push_back(e.inputs[i]);
    known_in.push_back(out.aval_of(e.inputs[i]));
  }
  if (split.known_order) {
    std::vector<Atom> picked;
    known_in.clear();
    for (int j : *split.known_order) {
      picked.push_back(known.inputs[size_t(j)]);
      known_in.push_back(out.aval_of(picked.back()));
    }
    known.inputs = std::move(picked);
  }
  for (int f : split.forwarded) rest.inputs.push_back(e.inputs[size_t(f)]);
  std::vector<Aval> results = abstract_eval(e.prim, known_in, split.known);
  size_t r = 0;
  for (size_t o = 0; o < e.outputs.size(); ++o) {
    if (split.out_unknown[o]) {
      rest.outputs.push_back(e.outputs[o]);
    } else {
      known.outputs.push_back(e.outputs[o]);
      if (split.unknown_returns_all)
        rest.outputs.push_back(out.new_var(out.aval_of(Atom::of(e.outputs[o]))));
      ++r;
    }
  }
  PARAX_CHECK(r <= results.size(), "partial_eval of " << prim_name(e.prim) << ": too few results");
  for (; r < results.size(); ++r) {  // the residuals
    const int v = out.new_var(results[r]);
    known.outputs.push_back(v);
    rest.inputs.push_back(Atom::of(v));
  }
  for (size_t i = 0; i < e.inputs.size(); ++i) {
    if (unk[i]) rest.inputs.push_back(e.inputs[i]);
  }
  if (!split.unknown_order.empty()) {
    std::vector<Atom> ordered;
    for (int j : split.unknown_order) ordered.push_back(rest.inputs[size_t(j)]);
    rest.inputs = std::move(ordered);
  }
  unknown.resize(out.avals.size(), false);
  for (size_t o = 0; o < e.outputs.size(); ++o) {
    unknown[size_t(e.outputs[o])] = split.out_unknown[o];
  }
  out.eqns.push_back(std::move(known));
  if (!rest.outputs.empty()) out.eqns.push_back(std::move(rest));
}

// Returns `p` with each equation that mixes known and unknown operands split in two by its
// primitive's partial_eval rule. `unknown` marks p's unknown inputs; on return it marks
// every unknown variable of the result.
Program split_mixed(const Program& p, std::vector<bool>& unknown) {
  Program out = p;
  out.eqns.clear();
  unknown.resize(p.avals.size(), false);
  for (const Eqn& e : p.eqns) {
    std::vector<bool> unk;
    bool any = false, all = true;
    for (const Atom& a : e.inputs) {
      unk.push_back(!a.is_literal() && unknown[size_t(a.var)]);
      any = any || unk.back();
      all = all && unk.back();
    }
    std::optional<PartialEval> split;
    if (const PartialEvalFn rule = rules(e.prim).partial_eval; any && !all && rule) {
      split = rule(std::span<const bool>(bool_array(unk).get(), unk.size()), e.params);
    }
    if (split) {
      emit_split(out, e, *split, unk, unknown);
      continue;
    }
    for (int v : e.outputs) unknown[size_t(v)] = any;
    out.eqns.push_back(e);
  }
  return out;
}

// Copies some equations of a program into a new one, renumbering their variables.
class Extract {
 public:
  explicit Extract(const Program& from) : from_(from), map_(from.avals.size(), -1) {}
  int var(int v) {
    if (map_[size_t(v)] < 0) map_[size_t(v)] = to_.new_var(from_.avals[size_t(v)]);
    return map_[size_t(v)];
  }
  Atom atom(const Atom& a) { return a.is_literal() ? a : Atom::of(var(a.var)); }
  void add(const Eqn& e) {
    Eqn c{e.prim, {}, {}, e.params};
    for (const Atom& a : e.inputs) c.inputs.push_back(atom(a));
    for (int v : e.outputs) c.outputs.push_back(var(v));
    to_.eqns.push_back(std::move(c));
  }
  Program& program() { return to_; }

 private:
  const Program& from_;
  std::vector<int> map_;
  Program to_;
};

// Returns which equations of `p` the unknown part runs: the unknown ones an output needs
// (a jvp computes tangents nobody reads, e.g. of a result whose primal alone is used), and
// the known ones whose results those read but `saveable` forbids saving, recomputed. Sets
// `read` to the known variables the staged equations read and do not recompute: forwarded
// inputs, or residuals.
std::vector<bool> staged_eqns(const Program& p, const std::vector<bool>& unknown,
                              const Saveable& saveable, std::vector<bool>& read) {
  std::vector<bool> needed(p.avals.size(), false), staged(p.eqns.size(), false);
  std::vector<bool> recomputed(p.avals.size(), false);
  for (const Atom& a : p.outvars) {
    if (!a.is_literal() && unknown[size_t(a.var)]) needed[size_t(a.var)] = true;
  }
  for (size_t i = p.eqns.size(); i-- > 0;) {
    const Eqn& e = p.eqns[i];
    const bool unknown_eqn = is_linear_eqn(e, unknown);
    if (!unknown_eqn && (!saveable || saveable(e))) continue;
    for (int v : e.outputs) staged[i] = staged[i] || needed[size_t(v)];
    if (!staged[i]) continue;
    for (int v : e.outputs) recomputed[size_t(v)] = !unknown_eqn;
    for (const Atom& a : e.inputs) {
      if (!a.is_literal()) needed[size_t(a.var)] = true;
    }
  }
  read.assign(p.avals.size(), false);
  for (size_t v = 0; v < p.avals.size(); ++v) {
    read[v] = needed[v] && !unknown[v] && !recomputed[v];
  }
  return staged;
}

// Returns which known equations of `p` compute its known outputs or the values `read`
// marks (the residuals): JAX's dce_jaxpr of the known part. A jvp's known part computes
// coefficients of tangents nobody reads, and a policy that saves less leaves more of them.
std::vector<bool> live_known(const Program& p, const std::vector<bool>& unknown,
                             const std::vector<bool>& read) {
  std::vector<bool> needed(read), live(p.eqns.size(), false);
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) needed[size_t(a.var)] = true;
  }
  for (size_t i = p.eqns.size(); i-- > 0;) {
    const Eqn& e = p.eqns[i];
    if (is_linear_eqn(e, unknown)) continue;
    for (int v : e.outputs) live[i] = live[i] || needed[size_t(v)];
    if (!live[i]) continue;
    for (const Atom& a : e.inputs) {
      if (!a.is_literal()) needed[size_t(a.var)] = true;
    }
  }
  return live;
}

}  // namespace

ProgramSplit partial_eval_program(const Program& p, std::span<const bool> unknown_in,
                                  const Saveable& saveable) {
  const std::vector<int> inputs = input_vars(p);
  PARAX_CHECK(unknown_in.size() == inputs.size(), "partial_eval_program: one flag per input");
  std::vector<bool> unknown(p.avals.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) unknown[size_t(inputs[i])] = unknown_in[i];
  const Program flat = split_mixed(p, unknown);
  std::vector<bool> read;
  const std::vector<bool> staged = staged_eqns(flat, unknown, saveable, read);
  // Under a policy (checkpoint) the known part keeps only what it returns; without one,
  // it stays whole, as before policies existed.
  const std::vector<bool> keep =
      saveable ? live_known(flat, unknown, read) : std::vector<bool>(flat.eqns.size(), true);
  ProgramSplit out;
  Extract known(flat), rest(flat);
  std::vector<bool> is_input(flat.avals.size(), false);
  for (size_t i = 0; i < inputs.size(); ++i) {
    const int v = inputs[i];
    is_input[size_t(v)] = true;
    if (!unknown_in[i]) known.program().invars.push_back(known.var(v));
    if (!unknown_in[i] && read[size_t(v)]) {
      out.forwarded.push_back(int(i));
      rest.program().invars.push_back(rest.var(v));
    }
  }
  for (size_t i = 0; i < flat.eqns.size(); ++i) {
    const Eqn& e = flat.eqns[i];
    if (!is_linear_eqn(e, unknown) && keep[i]) known.add(e);
    if (staged[i]) rest.add(e);
  }
  for (const Atom& a : flat.outvars) {
    const bool unk = !a.is_literal() && unknown[size_t(a.var)];
    out.out_unknown.push_back(unk);
    if (unk) continue;
    known.program().outvars.push_back(known.atom(a));
  }
  for (size_t v = 0; v < flat.avals.size(); ++v) {
    if (!read[v] || is_input[v]) continue;
    known.program().outvars.push_back(known.atom(Atom::of(int(v))));
    rest.program().invars.push_back(rest.var(int(v)));
  }
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (unknown_in[i]) rest.program().invars.push_back(rest.var(inputs[i]));
  }
  for (const Atom& a : flat.outvars) {
    if (!a.is_literal() && unknown[size_t(a.var)]) rest.program().outvars.push_back(rest.atom(a));
  }
  out.known = std::make_shared<const Program>(std::move(known.program()));
  out.unknown = std::make_shared<const Program>(std::move(rest.program()));
  return out;
}

Linearized linearize(const ClosedProgram& closed, std::span<const Array> inputs,
                     const std::vector<bool>& wrt_in) {
  const Program& p = *closed.program;
  std::vector<Array> all(closed.consts);
  all.insert(all.end(), inputs.begin(), inputs.end());
  std::vector<bool> wrt = wrt_in.empty() ? std::vector<bool>(inputs.size(), true) : wrt_in;
  // Trace the jvp with abstract tangents of the differentiable inputs: the equations that
  // touch them form the linear part; the rest compute primal values. Inputs held constant
  // get no tangent, so no cotangent is computed for them.
  ProgramTrace trace;
  std::vector<Array> tangents(all.size());
  std::vector<Aval> in_avals;
  for (size_t i = closed.consts.size(); i < all.size(); ++i) {
    if (!wrt[i - closed.consts.size()]) continue;
    const Aval& a = p.avals[size_t(p.invars[i - closed.consts.size()])];
    in_avals.push_back(a);
    Aval t = a;
    t.weak_type = false;
    tangents[i] = trace.new_arg(t);
  }
  std::vector<Array> outs, touts;
  {
    TraceScope scope(trace);
    std::tie(outs, touts) = jvp_program(p, all, tangents);
    for (size_t o = 0; o < touts.size(); ++o) {
      if (!touts[o].valid()) touts[o] = zeros(aval_of(outs[o]));
    }
  }
  std::vector<Array> results(outs);
  results.insert(results.end(), touts.begin(), touts.end());
  ClosedProgram traced = trace.finish(results);
  // A call (pjit) of primal values and tangents splits into a call computing the primal
  // results and residuals, evaluated below, and a linear call transposed later.
  std::vector<bool> unknown(traced.program->avals.size(), false);
  for (int v : traced.program->invars) unknown[size_t(v)] = true;
  auto split = std::make_shared<const Program>(split_mixed(*traced.program, unknown));
  Linearized lin{{}, split, traced.consts, in_avals, {}, std::move(wrt)};
  // Evaluate the primal part now, here (eagerly, or staged into an enclosing trace).
  const Program& l = *lin.linear;
  const std::vector<bool> linear = linear_vars(l);
  lin.known.resize(l.avals.size());
  for (size_t i = 0; i < l.constvars.size(); ++i) lin.known[size_t(l.constvars[i])] = lin.consts[i];
  for (const Eqn& e : l.eqns) {
    if (is_linear_eqn(e, linear)) continue;
    const SiteScope at(e.site);
    std::vector<Array> ins;
    for (const Atom& a : e.inputs) ins.push_back(value_of(a, lin.known));
    std::vector<Array> vals = bind(e.prim, ins, e.params);
    for (size_t r = 0; r < vals.size(); ++r) lin.known[size_t(e.outputs[r])] = vals[r];
  }
  for (size_t o = 0; o < l.outvars.size() / 2; ++o)
    lin.outs.push_back(value_of(l.outvars[o], lin.known));
  return lin;
}

namespace {

// Runs `p` backward: the cotangents of its outputs (`cts`, per outvar; invalid: zero)
// flow through the equations linear in the `linear` variables, whose operands that are
// not linear take their values from `value`. Returns the cotangent of every variable.
std::vector<Array> backward(const Program& p, const std::vector<bool>& linear,
                            const std::vector<Array>& value, std::span<const Array> cts) {
  auto val = [&](const Atom& a) { return value_of(a, value); };
  std::vector<Array> ct(p.avals.size());
  for (size_t o = 0; o < p.outvars.size() && o < cts.size(); ++o) {
    const Atom& a = p.outvars[o];
    if (a.is_literal() || !linear[size_t(a.var)]) continue;
    ct[size_t(a.var)] = add_any(ct[size_t(a.var)], cts[o]);
  }
  for (size_t e = p.eqns.size(); e-- > 0;) {
    const Eqn& eqn = p.eqns[e];
    if (!is_linear_eqn(eqn, linear)) continue;
    const SiteScope at(eqn.site);
    std::vector<Array> cts_out;
    bool any = false;
    for (int v : eqn.outputs) {
      cts_out.push_back(ct[size_t(v)]);
      any = any || cts_out.back().valid();
    }
    if (!any) continue;
    std::vector<Array> operands;
    std::unique_ptr<bool[]> is_linear(new bool[eqn.inputs.size()]);
    size_t k = 0;
    for (const Atom& a : eqn.inputs) {
      const bool lin = !a.is_literal() && linear[size_t(a.var)];
      is_linear[k++] = lin;
      operands.push_back(lin ? placeholder(p.aval_of(a)) : val(a));
    }
    const TransposeFn rule = rules(eqn.prim).transpose;
    if (rule == nullptr) {
      throw NotImplementedError("Transpose rule (for reverse-mode differentiation) for '" +
                                std::string(prim_name(eqn.prim)) + "' not implemented");
    }
    std::vector<Array> cts_in =
        rule(cts_out, operands, std::span<const bool>(is_linear.get(), k), eqn.params);
    for (size_t i = 0; i < eqn.inputs.size() && i < cts_in.size(); ++i) {
      if (!is_linear[i] || !cts_in[i].valid()) continue;
      const int v = eqn.inputs[i].var;
      ct[size_t(v)] = add_any(ct[size_t(v)], cts_in[i]);
    }
  }
  return ct;
}

}  // namespace

std::vector<Array> transpose(const Linearized& lin_in, std::span<const Array> cts) {
  const Program& p = *lin_in.linear;
  const size_t n_out = p.outvars.size() / 2;
  // The cotangents are the tangent outputs'; the primal outputs get none.
  std::vector<Array> out_cts(p.outvars.size());
  for (size_t o = 0; o < n_out && o < cts.size(); ++o) out_cts[n_out + o] = cts[o];
  const std::vector<Array> ct = backward(p, linear_vars(p), lin_in.known, out_cts);
  std::vector<Array> result;
  size_t t = 0;  // the next tangent input
  for (bool has_tangent : lin_in.wrt) {
    if (!has_tangent) {
      result.emplace_back();
      continue;
    }
    const Array& c = ct[size_t(p.invars[t])];
    result.push_back(c.valid() ? c : zeros(lin_in.in_avals[t]));
    ++t;
  }
  return result;
}

std::vector<Array> transpose_program(const Program& p, std::span<const bool> linear_in,
                                     std::span<const Array> values, std::span<const Array> cts) {
  const std::vector<int> inputs = input_vars(p);
  PARAX_CHECK(linear_in.size() == inputs.size(), "transpose_program: one flag per input");
  std::vector<bool> linear(p.avals.size(), false);
  std::vector<Array> value(p.avals.size());
  size_t k = 0;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (linear_in[i]) {
      linear[size_t(inputs[i])] = true;
    } else {
      value[size_t(inputs[i])] = values[k++];
    }
  }
  mark_dependents(p, linear);
  // The equations not linear in those inputs compute values the linear ones read.
  for (const Eqn& e : p.eqns) {
    if (is_linear_eqn(e, linear)) continue;
    const SiteScope at(e.site);
    std::vector<Array> ins;
    for (const Atom& a : e.inputs) ins.push_back(value_of(a, value));
    std::vector<Array> vals = bind(e.prim, ins, e.params);
    for (size_t r = 0; r < vals.size(); ++r) value[size_t(e.outputs[r])] = vals[r];
  }
  const std::vector<Array> ct = backward(p, linear, value, cts);
  std::vector<Array> result;
  for (size_t i = 0; i < inputs.size(); ++i) {
    if (linear_in[i]) result.push_back(ct[size_t(inputs[i])]);
  }
  return result;
}

}  // namespace parax::core
