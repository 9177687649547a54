#include "compiler/fuse.h"

#include <algorithm>
#include <map>
#include <memory>

#include "core/rules.h"

namespace parax::compiler {
namespace {

using core::Atom;
using core::Eqn;
using core::Prim;
using core::Program;

// The array shape an elementwise equation runs over, or nullopt if it cannot join a
// fusion (not elementwise, or a result of rank 0).
std::optional<Shape> fusible_shape(const Program& p, const Eqn& e) {
  // A primitive with a tile kernel (a broadcast) joins too: the fusion reads its (small)
  // operand in place, tile by tile.
  const bool tiled = core::rules(e.prim).tile_kernel != nullptr && !e.inputs[0].is_literal();
  if (!tiled && !core::has_trait(e.prim, core::kElementwise)) return std::nullopt;
  if (e.outputs.size() != 1 || e.inputs.size() > core::kMaxFusedOperands) return std::nullopt;
  const Shape& shape = p.avals[size_t(e.outputs[0])].shape;
  if (shape.empty()) return std::nullopt;
  if (tiled) return shape;
  for (const Atom& a : e.inputs) {
    const Shape& s = p.aval_of(a).shape;
    if (!s.empty() && s != shape) return std::nullopt;
  }
  return shape;
}

// True when the partial results of reduction `e` combine with its own op (its sharding
// rule's reduction), as the fusion kernel's partials of long rows must; argmax's, indices,
// do not.
bool partials_combine(const Program& p, const Eqn& e) {
  const core::Aval in[] = {p.aval_of(e.inputs[0])};
  const core::Aval out[] = {p.avals[size_t(e.outputs[0])]};
  return core::sharding_rule(e.prim, in, out, e.params).reduction != core::ReduceOp::none;
}

// True when equation `r` reduces the result of the run [begin, r) over trailing axes (or
// all of them), and nothing after it needs the full array: the fusion kernel then reduces
// each tile as it is made.
bool reduction_joins(const Program& p, size_t begin, size_t r, const std::vector<int>& last_use) {
  const Eqn& e = p.eqns[r];
  if (!core::has_trait(e.prim, core::kReduction) || e.inputs[0].is_literal() ||
      e.outputs.size() != 1 || !partials_combine(p, e)) {
    return false;
  }
  const int v = e.inputs[0].var;
  bool made_in_run = false;
  for (size_t k = begin; k < r; ++k) made_in_run = made_in_run || p.eqns[k].outputs[0] == v;
  if (!made_in_run || last_use[size_t(v)] != int(r)) return false;
  const auto& axes = e.params.get<std::vector<int64_t>>("axes");
  const int64_t rank = int64_t(p.avals[size_t(v)].shape.size());
  std::vector<int64_t> sorted = axes;
  std::sort(sorted.begin(), sorted.end());
  for (size_t k = 0; k < sorted.size(); ++k) {
    if (sorted[k] != rank - int64_t(sorted.size()) + int64_t(k)) return false;
  }
  return !sorted.empty();
}

// Builds the fusion equation for eqns [begin, end) of `p`.
Eqn make_fusion(const Program& p, size_t begin, size_t end, const std::vector<int>& last_use) {
  Program body;
  std::map<int, int> local;  // variable of p -> variable of body
  std::vector<Atom> inputs;
  auto use = [&](const Atom& a) -> Atom {
    if (a.is_literal()) return a;
    auto it = local.find(a.var);
    if (it != local.end()) return Atom::of(it->second);
    const int v = body.new_var(p.avals[size_t(a.var)]);
    body.invars.push_back(v);
    inputs.push_back(a);
    local.emplace(a.var, v);
    return Atom::of(v);
  };
  for (size_t e = begin; e < end; ++e) {
    Eqn copy{p.eqns[e].prim, {}, {}, p.eqns[e].params};
    for (const Atom& a : p.eqns[e].inputs) copy.inputs.push_back(use(a));
    for (int v : p.eqns[e].outputs) {
      const int nv = body.new_var(p.avals[size_t(v)]);
      local.emplace(v, nv);
      copy.outputs.push_back(nv);
    }
    body.eqns.push_back(std::move(copy));
  }
  // Results that outlive the run leave the fusion.
  Eqn fused{Prim::fusion, std::move(inputs), {}, {}};
  for (size_t e = begin; e < end; ++e) {
    for (int v : p.eqns[e].outputs) {
      if (last_use[size_t(v)] < int(end)) continue;
      body.outvars.push_back(Atom::of(local.at(v)));
      fused.outputs.push_back(v);
    }
  }
  fused.params.set("jaxpr", std::make_shared<const Program>(std::move(body)));
  return fused;
}

}  // namespace

Program fold_scalar_broadcasts(const Program& p) {
  // Variables that are a rank-0 value broadcast (a filled array), by the scalar they fill.
  std::map<int, Atom> filled;
  Program out = p;
  for (Eqn& e : out.eqns) {
    if (core::has_trait(e.prim, core::kElementwise)) {
      const Shape& shape = out.avals[size_t(e.outputs[0])].shape;
      for (size_t i = 0; i < e.inputs.size(); ++i) {
        const Atom& a = e.inputs[i];
        auto it = a.is_literal() ? filled.end() : filled.find(a.var);
        if (it == filled.end()) continue;
        // Another operand must still have the result's shape (the kernels broadcast
        // rank-0 operands against it).
        bool shaped = false;
        for (size_t k = 0; k < e.inputs.size(); ++k) {
          shaped = shaped || (k != i && out.aval_of(e.inputs[k]).shape == shape);
        }
        if (shaped) e.inputs[i] = it->second;
      }
    }
    if (core::has_trait(e.prim, core::kBroadcast) && out.aval_of(e.inputs[0]).shape.empty() &&
        out.aval_of(e.inputs[0]).dtype == out.avals[size_t(e.outputs[0])].dtype) {
      filled.emplace(e.outputs[0], e.inputs[0]);
    }
  }
  return out;
}

Program eliminate_dead_code(const Program& p) {
  std::vector<bool> live(p.avals.size(), false);
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) live[size_t(a.var)] = true;
  }
  std::vector<bool> keep(p.eqns.size(), false);
  for (size_t e = p.eqns.size(); e-- > 0;) {
    for (int v : p.eqns[e].outputs) keep[e] = keep[e] || live[size_t(v)];
    if (!keep[e]) continue;
    for (const Atom& a : p.eqns[e].inputs) {
      if (!a.is_literal()) live[size_t(a.var)] = true;
    }
  }
  Program out = p;
  out.eqns.clear();
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    if (keep[e]) out.eqns.push_back(p.eqns[e]);
  }
  return out;
}

const Program* fused_program(const Eqn& e) {
  // The tiles program lives in e's params, so the pointer outlives this call.
  return core::program_of(e, core::ProgramRole::tiles).get();
}

Program fuse_elementwise(const Program& p) {
  // The last equation reading each variable; program outputs read it "at the end".
  std::vector<int> last_use(p.avals.size(), -1);
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const Atom& a : p.eqns[e].inputs) {
      if (!a.is_literal()) last_use[size_t(a.var)] = int(e);
    }
  }
  for (const Atom& a : p.outvars) {
    if (!a.is_literal()) last_use[size_t(a.var)] = int(p.eqns.size());
  }
  Program out = p;
  out.eqns.clear();
  size_t e = 0;
  while (e < p.eqns.size()) {
    const auto shape = fusible_shape(p, p.eqns[e]);
    size_t end = e + 1;
    while (shape && end < p.eqns.size() && fusible_shape(p, p.eqns[end]) == shape) ++end;
    if (shape && end < p.eqns.size() && reduction_joins(p, e, end, last_use)) ++end;
    if (end - e >= 2) {
      out.eqns.push_back(make_fusion(p, e, end, last_use));
    } else {
      out.eqns.push_back(p.eqns[e]);
    }
    e = end;
  }
  return out;
}

}  // namespace parax::compiler
