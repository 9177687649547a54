#include "compiler/cost.h"

#include "core/rules.h"

namespace parax::compiler {
namespace {

// The default a null cost rule stands for (core/rules.h).
core::Cost cost_by_traits(core::Prim p, const core::Aval& in, const core::Aval& out) {
  core::Cost c;
  if (core::has_trait(p, core::kCollective)) {
    c.collective_bytes = double(out.nbytes());
  } else if (core::has_trait(p, core::kElementwise)) {
    c.flops = double(out.size());
  } else if (core::has_trait(p, core::kReduction)) {
    c.flops = double(in.size());
  }
  return c;
}

}  // namespace

core::Cost eqn_cost(const core::Program& local, const core::Eqn& e, const MeshInfo& mesh) {
  std::vector<core::Aval> in, out;
  for (const core::Atom& a : e.inputs) in.push_back(local.aval_of(a));
  for (int v : e.outputs) out.push_back(local.avals[size_t(v)]);
  const auto rule = core::rules(e.prim).cost;
  return rule ? rule(in, out, e.params, mesh.axis_sizes)
              : cost_by_traits(e.prim, in.empty() ? out[0] : in[0], out[0]);
}

CostAnalysis analyze(const core::Program& local, const MeshInfo& mesh) {
  CostAnalysis c;
  for (const core::Eqn& e : local.eqns) {
    if (core::has_trait(e.prim, core::kControlFlow)) {
      // The programs run trip_count times (a while's trip count is unknown: counted once,
      // as XLA's cost analysis counts it); of branches, the costliest.
      const core::ProgramRoles roles = core::program_roles(e);
      const double times = double(roles.trip_count.value_or(1));
      CostAnalysis all, most;
      for (const core::SubProgram& sub : roles.programs) {
        CostAnalysis s = analyze(*sub.program, mesh);
        if (sub.role != core::ProgramRole::branch) {
          all.flops += s.flops;
          all.collective_bytes += s.collective_bytes;
          for (const auto& [k, n] : s.collectives) all.collectives[k] += n;
        } else if (s.flops + s.collective_bytes > most.flops + most.collective_bytes) {
          most = s;
        }
      }
      c.flops += times * (all.flops + most.flops);
      c.collective_bytes += times * (all.collective_bytes + most.collective_bytes);
      for (const auto& [k, n] : all.collectives) c.collectives[k] += n;
      for (const auto& [k, n] : most.collectives) c.collectives[k] += n;
      continue;
    }
    const core::Cost cost = eqn_cost(local, e, mesh);
    if (core::has_trait(e.prim, core::kCollective)) {
      c.collectives[std::string(core::prim_name(e.prim))]++;
      c.collective_bytes += cost.collective_bytes;
    } else {
      c.flops += cost.flops;
    }
  }
  return c;
}

}  // namespace parax::compiler
