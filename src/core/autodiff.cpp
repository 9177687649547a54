#include "core/autodiff.h"

#include "core/array_value.h"
#include "core/backend.h"
#include "base/check.h"
#include "core/rules.h"

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

// Marks the variables that depend on the program's inputs (the tangents).
std::vector<bool> linear_vars(const Program& p) {
  std::vector<bool> linear(p.avals.size(), false);
  for (int v : p.invars) linear[size_t(v)] = true;
  for (const Eqn& e : p.eqns) {
    bool any = false;
    for (const Atom& a : e.inputs) any = any || (!a.is_literal() && linear[size_t(a.var)]);
    for (int v : e.outputs) linear[size_t(v)] = any;
  }
  return linear;
}

bool is_linear_eqn(const Eqn& e, const std::vector<bool>& linear) {
  for (const Atom& a : e.inputs) {
    if (!a.is_literal() && linear[size_t(a.var)]) return true;
  }
  return false;
}

Array value_of(const Atom& a, const std::vector<Array>& values) {
  return a.is_literal() ? literal_array(*a.literal) : values[size_t(a.var)];
}

Array add_any(const Array& a, const Array& b) {
  if (!a.valid()) return b;
  if (!b.valid()) return a;
  return bind1(Prim::add, {a, b});
}

}  // namespace

namespace {
Array filled(const Aval& aval, double value) {
  Array z = literal_array(Literal{Aval{{}, aval.dtype, false}, value});
  if (aval.shape.empty()) return z;
  return bind1(Prim::broadcast_in_dim, {z},
               {{"shape", aval.shape}, {"broadcast_dimensions", std::vector<int64_t>{}}});
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
  auto val = [&](const Atom& a) { return a.is_literal() ? literal_array(*a.literal) : value[size_t(a.var)]; };
  auto tan = [&](const Atom& a) { return a.is_literal() ? Array() : tangent[size_t(a.var)]; };
  for (const Eqn& e : p.eqns) {
    std::vector<Array> ins, tins;
    bool any = false;
    for (const Atom& a : e.inputs) {
      ins.push_back(val(a));
      tins.push_back(tan(a));
      any = any || tins.back().valid();
    }
    std::vector<Array> outs, touts;
    if (e.prim == Prim::pjit) {  // differentiate the called program in place
      const auto& body = *e.params.get<std::shared_ptr<const Program>>("jaxpr");
      std::tie(outs, touts) = jvp_program(body, ins, tins);
    } else {
      outs = bind(e.prim, ins, e.params);
      if (any) {
        const JvpFn rule = rules(e.prim).jvp;
        if (rule == nullptr) {
          throw NotImplementedError("Differentiation rule for '" + std::string(prim_name(e.prim)) +
                                    "' not implemented");
        }
        touts = rule(ins, tins, outs, e.params);
      }
      touts.resize(outs.size());
    }
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

Linearized linearize(const ClosedProgram& closed, std::span<const Array> inputs) {
  const Program& p = *closed.program;
  std::vector<Array> all(closed.consts);
  all.insert(all.end(), inputs.begin(), inputs.end());
  // Trace the jvp with abstract tangents of the differentiable inputs: the equations that
  // touch them form the linear part; the rest compute primal values.
  ProgramTrace trace;
  std::vector<Array> tangents(all.size());
  std::vector<Aval> in_avals;
  for (size_t i = closed.consts.size(); i < all.size(); ++i) {
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
  Linearized lin{{}, traced.program, traced.consts, in_avals, {}};
  // Evaluate the primal part now, here (eagerly, or staged into an enclosing trace).
  const Program& l = *lin.linear;
  const std::vector<bool> linear = linear_vars(l);
  lin.known.resize(l.avals.size());
  for (size_t i = 0; i < l.constvars.size(); ++i) lin.known[size_t(l.constvars[i])] = lin.consts[i];
  for (const Eqn& e : l.eqns) {
    if (is_linear_eqn(e, linear)) continue;
    std::vector<Array> ins;
    for (const Atom& a : e.inputs) ins.push_back(value_of(a, lin.known));
    std::vector<Array> vals = bind(e.prim, ins, e.params);
    for (size_t r = 0; r < vals.size(); ++r) lin.known[size_t(e.outputs[r])] = vals[r];
  }
  for (size_t o = 0; o < l.outvars.size() / 2; ++o) lin.outs.push_back(value_of(l.outvars[o], lin.known));
  return lin;
}

std::vector<Array> transpose(const Linearized& lin_in, std::span<const Array> cts) {
  const Program& p = *lin_in.linear;
  const size_t n_out = p.outvars.size() / 2;
  const std::vector<bool> linear = linear_vars(p);
  const std::vector<Array>& value = lin_in.known;
  auto val = [&](const Atom& a) { return value_of(a, value); };
  // Backward: cotangents flow from the tangent outputs through the linear equations.
  std::vector<Array> ct(p.avals.size());
  for (size_t o = 0; o < n_out && o < cts.size(); ++o) {
    const Atom& a = p.outvars[n_out + o];
    if (!a.is_literal() && linear[size_t(a.var)]) ct[size_t(a.var)] = add_any(ct[size_t(a.var)], cts[o]);
  }
  for (size_t e = p.eqns.size(); e-- > 0;) {
    const Eqn& eqn = p.eqns[e];
    if (!is_linear_eqn(eqn, linear)) continue;
    std::vector<Array> cts_out;
    bool any = false;
    for (int v : eqn.outputs) {
      cts_out.push_back(ct[size_t(v)]);
      any = any || cts_out.back().valid();
    }
    if (!any) continue;
    std::vector<Array> operands;
    // std::vector<bool> has no contiguous storage for a span.
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
  std::vector<Array> result;
  for (size_t i = 0; i < p.invars.size(); ++i) {
    const Array& c = ct[size_t(p.invars[i])];
    result.push_back(c.valid() ? c : zeros(lin_in.in_avals[i]));
  }
  return result;
}

}  // namespace parax::core
