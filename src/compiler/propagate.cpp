#include "compiler/propagate.h"

#include <algorithm>
#include <cstdint>

#include "base/check.h"
#include "core/rules.h"
#include "parax/errors.h"

namespace parax::compiler {
namespace {

using core::Eqn;
using core::Prim;
using core::ShardingRule;

DimShard constraint_of(const Eqn& e, const core::Program& p, const MeshInfo& mesh,
                       const DimShard* operand) {
  const auto& sharding = e.params.get<std::shared_ptr<const Sharding>>("sharding");
  const core::Aval& aval = p.aval_of(e.inputs[0]);
  auto s = express_on(mesh, *sharding, aval.shape.size(), aval.shape);
  if (!s) {
    throw ShardingError("[with_sharding_constraint] sharding " + sharding->to_string() +
                        " for a value of type " + aval.str() + " is not on the devices of " +
                        "the computation's mesh " + mesh.mesh.to_string() +
                        "; expected a sharding over the same devices as the arguments");
  }
  // P.UNCONSTRAINED dimensions keep whatever the operand has, where no other dimension of
  // the constraint uses those axes.
  if (auto named = sharding->as_named(); named && operand != nullptr) {
    const auto& spec = named->spec();
    AxisList used = s->used_axes();
    for (size_t d = 0; d < spec.size() && d < s->dims.size(); ++d) {
      if (!spec[d].is_unconstrained() || d >= operand->dims.size()) continue;
      const AxisList& axes = operand->dims[d];
      if (std::any_of(axes.begin(), axes.end(), [&](int64_t a) {
            return std::find(used.begin(), used.end(), a) != used.end();
          })) {
        continue;
      }
      s->dims[d] = axes;
      used.insert(used.end(), axes.begin(), axes.end());
    }
  }
  return *s;
}

// Primitives that run on padded shards: elementwise ones ignore the padding, reductions
// mask it with their identity (partition.cpp), others say so in their rule (a contraction
// masks one operand). The rest need a dimension that does not divide gathered first.
bool runs_padded(core::Prim p, const ShardingRule& rule) {
  return rule.runs_padded || core::has_trait(p, core::kElementwise) ||
         core::has_trait(p, core::kReduction);
}

// Chooses mesh axes for each factor of `rule` from the operands' known layouts. As GSPMD
// does, operands of elementwise ops that are not broadcasts and are split into more shards
// speak first (else operands in order), and factors that reach the result before contracted ones (a
// partial result costs an all-reduce later); an axis is used by one factor only.
std::vector<AxisList> choose_factors(core::Prim prim, const ShardingRule& rule,
                                     const MeshInfo& mesh,
                                     const std::vector<const DimShard*>& operands,
                                     const std::vector<bool>& broadcast) {
  std::vector<size_t> order;
  for (size_t i = 0; i < operands.size(); ++i) {
    if (operands[i] != nullptr) order.push_back(i);
  }
  auto shards = [&](size_t i) { return mesh.size_of(operands[i]->used_axes()); };
  if (core::has_trait(prim, core::kElementwise)) {
    // A broadcast operand yields to the others, as in GSPMD.
    std::stable_sort(order.begin(), order.end(), [&](size_t x, size_t y) {
      if (broadcast[x] != broadcast[y]) return broadcast[y];
      return shards(x) > shards(y);
    });
  }
  std::vector<AxisList> fa(size_t(rule.num_factors()));
  std::vector<bool> used(mesh.axis_sizes.size(), false);
  for (const bool contracted : {false, true}) {
    for (size_t i : order) {
      const DimShard& s = *operands[i];
      for (size_t d = 0; d < rule.operands[i].size() && d < s.dims.size(); ++d) {
        const int f = rule.operands[i][d];
        const AxisList& axes = s.dims[d];
        if (f == ShardingRule::kNone || axes.empty() || !fa[size_t(f)].empty()) continue;
        if (rule.in_results(f) == contracted) continue;
        if (contracted && rule.reduction == core::ReduceOp::none) continue;
        const bool divides = rule.factor_sizes[size_t(f)] % mesh.size_of(axes) == 0;
        if (!divides && !runs_padded(prim, rule)) continue;
        if (std::any_of(axes.begin(), axes.end(), [&](int64_t a) { return used[size_t(a)]; })) {
          continue;
        }
        for (int64_t a : axes) used[size_t(a)] = true;
        fa[size_t(f)] = axes;
      }
    }
  }
  return fa;
}

// For rules that keep the operand's layout (cumsum, sort, concatenate): returns `s` with
// the operand's axes restored on the dimensions the primitive needed whole (each device
// keeps its slice, which costs no communication).
DimShard keep_operand_layout(const ShardingRule& rule, const core::Aval& out, DimShard s,
                             const std::vector<const DimShard*>& operands, const MeshInfo& mesh) {
  if (!rule.keeps_operand_layout) return s;
  // The operand split into the most shards (the first of equals) decides, as in GSPMD.
  const DimShard* op = nullptr;
  for (const DimShard* o : operands) {
    if (o != nullptr &&
        (op == nullptr || mesh.size_of(o->used_axes()) > mesh.size_of(op->used_axes()))) {
      op = o;
    }
  }
  if (op == nullptr) return s;
  AxisList used = s.used_axes();
  for (size_t d = 0; d < s.dims.size() && d < op->dims.size(); ++d) {
    const AxisList& axes = op->dims[d];
    if (!s.dims[d].empty() || axes.empty()) continue;
    const bool free = std::none_of(axes.begin(), axes.end(), [&](int64_t a) {
      return std::find(used.begin(), used.end(), a) != used.end();
    });
    if (!free || out.shape[d] % mesh.size_of(axes) != 0) continue;
    s.dims[d] = axes;
    used.insert(used.end(), axes.begin(), axes.end());
  }
  return s;
}

DimShard result_of(const ShardingRule& rule, const std::vector<AxisList>& fa, size_t r) {
  DimShard s = DimShard::replicated(rule.results[r].size());
  for (size_t d = 0; d < rule.results[r].size(); ++d) {
    const int f = rule.results[r][d];
    if (f != ShardingRule::kNone) s.dims[d] = fa[size_t(f)];
  }
  for (int f = 0; f < rule.num_factors(); ++f) {
    if (fa[size_t(f)].empty() || rule.in_results(f)) continue;
    s.unreduced.insert(s.unreduced.end(), fa[size_t(f)].begin(), fa[size_t(f)].end());
    s.op = rule.reduction;
  }
  return s;
}

bool is_boundary(Prim p) {
  return core::has_trait(p, core::kRegionEnter) || core::has_trait(p, core::kRegionExit);
}

// Returns the mesh axes a shard_map spec splits dimension d by.
AxisList spec_axes(const MeshInfo& mesh, const PartitionSpec& spec, size_t d) {
  if (d >= spec.size()) return {};
  return mesh.axes_named(spec[d].axes(), "shard_map spec " + spec.to_ir_string());
}

// For a region boundary: the layout its operand needs and its result's layout. Entering,
// each dimension is split by the spec's (manual) axes and then by whichever other axes the
// operand already used there, which stay with the per-device value; leaving, the spec's
// axes go in front of the per-device value's own.
std::pair<DimShard, DimShard> boundary_layouts(const Eqn& e, const core::Program& p,
                                               const MeshInfo& mesh, const DimShard* operand) {
  const PartitionSpec& spec = e.params.get<std::vector<PartitionSpec>>("spec")[0];
  const core::Aval& in = p.aval_of(e.inputs[0]);
  const core::Aval& out = p.avals[size_t(e.outputs[0])];
  const size_t rank = in.shape.size();
  const AxisList manual =
      mesh.axes_named(e.params.get<std::vector<std::string>>("axes"), "shard_map");
  DimShard need = DimShard::replicated(rank), result = DimShard::replicated(rank);
  if (core::has_trait(e.prim, core::kRegionEnter)) {
    AxisList used = manual;
    for (size_t d = 0; d < rank; ++d) {
      need.dims[d] = spec_axes(mesh, spec, d);
      used.insert(used.end(), need.dims[d].begin(), need.dims[d].end());
    }
    for (size_t d = 0; d < rank && operand != nullptr; ++d) {
      AxisList extra;
      for (int64_t a : operand->dims[d]) {
        if (std::find(used.begin(), used.end(), a) != used.end()) break;
        extra.push_back(a);
      }
      if (extra.empty() || out.shape[d] % mesh.size_of(extra) != 0) continue;
      used.insert(used.end(), extra.begin(), extra.end());
      need.dims[d].insert(need.dims[d].end(), extra.begin(), extra.end());
      result.dims[d] = extra;
    }
    return {need, result};
  }
  for (size_t d = 0; d < rank; ++d) {
    if (operand != nullptr && in.shape[d] % mesh.size_of(operand->dims[d]) == 0) {
      need.dims[d] = operand->dims[d];
    }
    result.dims[d] = spec_axes(mesh, spec, d);
    result.dims[d].insert(result.dims[d].end(), need.dims[d].begin(), need.dims[d].end());
  }
  return {need, result};
}

// A layout a sub-program's input or output may have: no pending partial results, and no
// dimension split into shards that do not divide it (such a value is padded only inside
// one program).
DimShard settled(const core::Aval& aval, DimShard s, const MeshInfo& mesh) {
  s.unreduced.clear();
  s.op = core::ReduceOp::none;
  for (size_t d = 0; d < s.dims.size() && d < aval.shape.size(); ++d) {
    if (aval.shape[d] % mesh.size_of(s.dims[d]) != 0) s.dims[d].clear();
  }
  return s;
}

std::vector<DimShard> input_layouts(const core::Program& p, const Propagation& prop,
                                    const MeshInfo& mesh) {
  std::vector<DimShard> out;
  for (int v : p.invars) out.push_back(settled(p.avals[size_t(v)], prop.vars[size_t(v)], mesh));
  return out;
}

std::vector<DimShard> output_layouts(const core::Program& p, const Propagation& prop,
                                     const MeshInfo& mesh) {
  std::vector<DimShard> out;
  for (const core::Atom& a : p.outvars) {
    const core::Aval& aval = p.aval_of(a);
    out.push_back(a.is_literal() ? DimShard::replicated(aval.shape.size())
                                 : settled(aval, prop.vars[size_t(a.var)], mesh));
  }
  return out;
}

using Seeds = std::vector<std::optional<DimShard>>;

// Branches (a cond's): every branch sees its operands as they arrive; the results take
// the first branch's layouts, and the other branches reshard to them. The index is a
// replicated scalar.
ControlFlowLayouts propagate_branches(const core::ProgramRoles& roles, const MeshInfo& mesh,
                                      const Seeds& operands) {
  std::vector<const core::SubProgram*> branches;
  for (const core::SubProgram& s : roles.programs) {
    PARAX_CHECK(
        s.role == core::ProgramRole::branch,
        "propagate: an index picks among branches, not a " << core::program_role_name(s.role));
    branches.push_back(&s);
  }
  PARAX_CHECK(!branches.empty(), "propagate: an index with no branches");
  const core::SubProgram& first_branch = *branches[0];
  const auto args = operands.begin() + long(first_branch.consts_begin);
  Seeds seeds(args, args + long(first_branch.num_consts));
  // Inputs no operand decides take what the first branch's code wants.
  const Propagation first = propagate(*first_branch.program, mesh, seeds);
  const std::vector<DimShard> in = input_layouts(*first_branch.program, first, mesh);
  ControlFlowLayouts cf;
  cf.operands.assign(operands.size(), DimShard::replicated(0));
  for (size_t i = 0; i < in.size(); ++i) {
    seeds[i] = in[i];
    cf.operands[first_branch.consts_begin + i] = in[i];
  }
  for (const core::SubProgram* b : branches) {
    cf.programs.push_back(propagate(*b->program, mesh, seeds));
  }
  cf.results = output_layouts(*first_branch.program, cf.programs[0], mesh);
  cf.program_outputs.assign(branches.size(), cf.results);
  return cf;
}

// A loop body's propagation with its carry (inputs [first, first + n), outputs [0, n))
// seeded: the carry layout is the fixed point of the body. Starting from the operands'
// layouts (or, where none is known, the body's own choice), the body's output layouts are
// tried as the carry's; they are kept if the body then hands them back unchanged (a
// constraint in the body, or a layout the body's code produces on every step), else the
// carry keeps the operands' layouts and the body reshards its results to them.
struct LoopFixedPoint {
  Propagation body;
  std::vector<DimShard> carry;
};
LoopFixedPoint loop_fixed_point(const core::Program& body, const MeshInfo& mesh, Seeds seeds,
                                size_t first, size_t n) {
  auto outs = [&](const Propagation& prop) {
    std::vector<DimShard> o = output_layouts(body, prop, mesh);
    o.resize(n);
    return o;
  };
  Propagation prop = propagate(body, mesh, seeds);
  std::vector<DimShard> produced = outs(prop);
  const std::vector<DimShard> in = input_layouts(body, prop, mesh);
  std::vector<DimShard> entry;
  for (size_t c = 0; c < n; ++c) {
    // An unknown carry starts as the body makes it.
    entry.push_back(seeds[first + c] ? in[first + c] : produced[c]);
  }
  if (entry != produced) {
    Seeds tried = seeds;
    for (size_t c = 0; c < n; ++c) tried[first + c] = produced[c];
    Propagation again = propagate(body, mesh, tried);
    if (outs(again) == produced) return {std::move(again), produced};
  }
  // The body's first propagation stands when it already took its carry as `entry`.
  bool took_entry = true;
  for (size_t c = 0; c < n; ++c) took_entry = took_entry && in[first + c] == entry[c];
  if (took_entry && entry == produced) return {std::move(prop), entry};
  for (size_t c = 0; c < n; ++c) seeds[first + c] = entry[c];
  return {propagate(body, mesh, seeds), entry};
}

// Returns `s` with a leading dimension that stays whole (a stacked xs or ys) or without it.
DimShard stacked(DimShard s) {
  s.dims.insert(s.dims.begin(), AxisList{});
  return s;
}

// A loop (a while's, a scan's): the body's carry takes the layout that is the body's fixed
// point; a step sees one slice of each xs, laid out as the xs without its scanned
// dimension, and each ys stacks the layouts of its slices. A predicate sees the carry as
// the body leaves it.
ControlFlowLayouts propagate_loop(const core::Eqn& e, const core::Program& p,
                                  const core::ProgramRoles& roles, const MeshInfo& mesh,
                                  const Seeds& operands) {
  const core::SubProgram* body = roles.find(core::ProgramRole::body);
  PARAX_CHECK(body != nullptr, "propagate: the compiler inlines " << core::prim_name(e.prim));
  auto range = [&](size_t begin, size_t n) {
    return Seeds(operands.begin() + long(begin), operands.begin() + long(begin + n));
  };
  Seeds seeds = range(body->consts_begin, body->num_consts);
  const Seeds carry = range(roles.carry_begin, roles.num_carry);
  seeds.insert(seeds.end(), carry.begin(), carry.end());
  for (size_t x = 0; x < roles.num_xs; ++x) {
    std::optional<DimShard> seed = operands[roles.xs_begin + x];
    if (seed) {
      seed->dims.erase(seed->dims.begin());
      const core::Aval& xs = p.aval_of(e.inputs[roles.xs_begin + x]);
      seed = settled(core::Aval{Shape(xs.shape.begin() + 1, xs.shape.end()), xs.dtype, false},
                     *seed, mesh);
    }
    seeds.push_back(std::move(seed));
  }
  LoopFixedPoint fp =
      loop_fixed_point(*body->program, mesh, seeds, body->num_consts, roles.num_carry);
  const std::vector<DimShard> body_in = input_layouts(*body->program, fp.body, mesh);
  const std::vector<DimShard> body_out = output_layouts(*body->program, fp.body, mesh);
  ControlFlowLayouts cf;
  cf.operands.resize(operands.size());
  for (size_t i = 0; i < body->num_consts; ++i) cf.operands[body->consts_begin + i] = body_in[i];
  for (size_t c = 0; c < roles.num_carry; ++c) {
    cf.operands[roles.carry_begin + c] = body_in[body->num_consts + c];
  }
  for (size_t x = 0; x < roles.num_xs; ++x) {
    cf.operands[roles.xs_begin + x] = stacked(body_in[body->num_consts + roles.num_carry + x]);
  }
  cf.results = fp.carry;
  std::vector<DimShard> body_results = fp.carry;
  for (size_t y = roles.num_carry; y < body_out.size(); ++y) {
    body_results.push_back(body_out[y]);
    cf.results.push_back(stacked(body_out[y]));
  }
  for (const core::SubProgram& s : roles.programs) {
    if (&s == body) {
      cf.programs.push_back(std::move(fp.body));
      cf.program_outputs.push_back(body_results);
      continue;
    }
    PARAX_CHECK(s.role == core::ProgramRole::predicate,
                "propagate: a loop holds a body and a predicate, not a "
                    << core::program_role_name(s.role));
    Seeds pred_seeds = range(s.consts_begin, s.num_consts);
    pred_seeds.insert(pred_seeds.end(), fp.carry.begin(), fp.carry.end());
    Propagation pred = propagate(*s.program, mesh, pred_seeds);
    const std::vector<DimShard> pred_in = input_layouts(*s.program, pred, mesh);
    for (size_t i = 0; i < s.num_consts; ++i) cf.operands[s.consts_begin + i] = pred_in[i];
    cf.programs.push_back(std::move(pred));
    cf.program_outputs.push_back({DimShard::replicated(0)});
  }
  return cf;
}

ControlFlowLayouts propagate_control_flow(const Eqn& e, const core::Program& p,
                                          const MeshInfo& mesh,
                                          const std::vector<const DimShard*>& operands) {
  Seeds seeds;
  for (size_t i = 0; i < operands.size(); ++i) {
    const core::Aval& aval = p.aval_of(e.inputs[i]);
    if (e.inputs[i].is_literal()) {
      seeds.push_back(DimShard::replicated(aval.shape.size()));
    } else if (operands[i] != nullptr) {
      seeds.push_back(settled(aval, *operands[i], mesh));
    } else {
      seeds.emplace_back();
    }
  }
  const core::ProgramRoles roles = core::program_roles(e);
  if (roles.index) return propagate_branches(roles, mesh, seeds);
  return propagate_loop(e, p, roles, mesh, seeds);
}

}  // namespace

DimShard required_operand(const core::Program& p, const Propagation& prop, size_t e, size_t i) {
  if (auto it = prop.boundary.find(e); it != prop.boundary.end()) return it->second;
  if (auto it = prop.control_flow.find(e); it != prop.control_flow.end()) {
    return it->second.operands[i];
  }
  const ShardingRule& rule = prop.rules[e];
  const auto& fa = prop.factor_axes[e];
  const auto& labels = rule.operands[i];
  DimShard s = DimShard::replicated(labels.size());
  for (size_t d = 0; d < labels.size(); ++d) {
    if (labels[d] != ShardingRule::kNone) s.dims[d] = fa[size_t(labels[d])];
  }
  return s;
}

Propagation propagate(const core::Program& p, const MeshInfo& mesh,
                      std::span<const std::optional<DimShard>> seeds) {
  Propagation prop;
  std::vector<std::optional<DimShard>> known(p.avals.size());
  std::vector<int> inputs(p.constvars);
  inputs.insert(inputs.end(), p.invars.begin(), p.invars.end());
  PARAX_CHECK(seeds.size() == inputs.size(), "one seed per program input");
  for (size_t i = 0; i < inputs.size(); ++i) known[size_t(inputs[i])] = seeds[i];

  std::vector<bool> broadcast_made(p.avals.size(), false);  // by a broadcast
  // Forward: each equation's factors come from its operands' layouts.
  for (const Eqn& e : p.eqns) {
    std::vector<core::Aval> in, out;
    std::vector<const DimShard*> operands;
    std::vector<bool> broadcast;
    for (const core::Atom& a : e.inputs) {
      in.push_back(p.aval_of(a));
      const bool has = !a.is_literal() && known[size_t(a.var)].has_value();
      operands.push_back(has ? &*known[size_t(a.var)] : nullptr);
      broadcast.push_back(!a.is_literal() && broadcast_made[size_t(a.var)]);
    }
    for (int v : e.outputs) out.push_back(p.avals[size_t(v)]);
    if (is_boundary(e.prim)) {
      auto [need, result] = boundary_layouts(e, p, mesh, operands[0]);
      prop.boundary.emplace(size_t(&e - p.eqns.data()), std::move(need));
      known[size_t(e.outputs[0])] = std::move(result);
      prop.computed.emplace_back(1);
      prop.rules.emplace_back();
      prop.factor_axes.emplace_back();
      continue;
    }
    if (core::has_trait(e.prim, core::kControlFlow)) {
      ControlFlowLayouts cf = propagate_control_flow(e, p, mesh, operands);
      for (size_t r = 0; r < e.outputs.size(); ++r) known[size_t(e.outputs[r])] = cf.results[r];
      prop.control_flow.emplace(size_t(&e - p.eqns.data()), std::move(cf));
      prop.computed.emplace_back(e.outputs.size());
      prop.rules.emplace_back();
      prop.factor_axes.emplace_back();
      continue;
    }
    ShardingRule rule = core::sharding_rule(e.prim, in, out, e.params);
    std::vector<AxisList> fa = choose_factors(e.prim, rule, mesh, operands, broadcast);
    for (int v : e.outputs) broadcast_made[size_t(v)] = core::has_trait(e.prim, core::kBroadcast);
    prop.computed.emplace_back(e.outputs.size());
    for (size_t r = 0; r < e.outputs.size(); ++r) {
      if (core::has_trait(e.prim, core::kLayout)) {
        known[size_t(e.outputs[r])] = constraint_of(e, p, mesh, operands[0]);
        continue;
      }
      DimShard s = result_of(rule, fa, r);
      if (DimShard kept = keep_operand_layout(rule, out[r], s, operands, mesh); !(kept == s)) {
        prop.computed.back()[r] = s;
        s = kept;
      }
      known[size_t(e.outputs[r])] = s;
    }
    prop.rules.push_back(std::move(rule));
    prop.factor_axes.push_back(std::move(fa));
  }
  // Backward, for dimensions no operand decides (a broadcast's new dimensions, iota's):
  // take the layout the first consumer needs, so each device makes only its part instead
  // of making everything and slicing. Later equations first, so needs flow up a chain.
  std::vector<std::pair<size_t, size_t>> first_use(p.avals.size(), {SIZE_MAX, 0});
  for (size_t e = p.eqns.size(); e-- > 0;) {
    for (size_t i = 0; i < p.eqns[e].inputs.size(); ++i) {
      const core::Atom& a = p.eqns[e].inputs[i];
      if (!a.is_literal()) first_use[size_t(a.var)] = {e, i};
    }
  }
  for (size_t e = p.eqns.size(); e-- > 0;) {
    const core::Eqn& eqn = p.eqns[e];
    if (core::has_trait(eqn.prim, core::kLayout) || is_boundary(eqn.prim) ||
        core::has_trait(eqn.prim, core::kControlFlow) ||
        prop.computed[e].size() != eqn.outputs.size())
      continue;
    const ShardingRule& rule = prop.rules[e];
    auto& fa = prop.factor_axes[e];
    bool changed = false;
    for (size_t r = 0; r < eqn.outputs.size(); ++r) {
      const auto [c, i] = first_use[size_t(eqn.outputs[r])];
      if (c == SIZE_MAX || core::has_trait(p.eqns[c].prim, core::kLayout) || prop.computed[e][r])
        continue;
      const DimShard need = required_operand(p, prop, c, i);
      AxisList used;
      for (const AxisList& axes : fa) used.insert(used.end(), axes.begin(), axes.end());
      for (size_t d = 0; d < rule.results[r].size() && d < need.dims.size(); ++d) {
        const int f = rule.results[r][d];
        const AxisList& axes = need.dims[d];
        if (f == ShardingRule::kNone || !fa[size_t(f)].empty() || axes.empty()) continue;
        bool in_operands = false;
        for (const auto& op : rule.operands) in_operands |= std::count(op.begin(), op.end(), f) > 0;
        const bool free = std::none_of(axes.begin(), axes.end(), [&](int64_t a) {
          return std::find(used.begin(), used.end(), a) != used.end();
        });
        if (in_operands || !free || rule.factor_sizes[size_t(f)] % mesh.size_of(axes) != 0)
          continue;
        fa[size_t(f)] = axes;
        used.insert(used.end(), axes.begin(), axes.end());
        changed = true;
      }
    }
    if (!changed) continue;
    for (size_t r = 0; r < eqn.outputs.size(); ++r)
      known[size_t(eqn.outputs[r])] = result_of(rule, fa, r);
  }
  // Backward: an input the compiler may place takes the layout its first consumer needs.
  prop.vars.resize(p.avals.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (size_t i = 0; i < p.eqns[e].inputs.size(); ++i) {
      const core::Atom& a = p.eqns[e].inputs[i];
      if (a.is_literal() || known[size_t(a.var)]) continue;
      known[size_t(a.var)] = core::has_trait(p.eqns[e].prim, core::kLayout)
                                 ? constraint_of(p.eqns[e], p, mesh, nullptr)
                                 : required_operand(p, prop, e, i);
    }
  }
  for (size_t v = 0; v < p.avals.size(); ++v) {
    prop.vars[v] = known[v] ? *known[v] : DimShard::replicated(p.avals[v].shape.size());
  }
  return prop;
}

}  // namespace parax::compiler
