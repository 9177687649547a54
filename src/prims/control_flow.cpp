#include "prims/control_flow.h"

#include "parax/errors.h"

namespace parax::prims {

std::vector<core::Aval> program_inputs(const core::Program& p) {
  std::vector<core::Aval> out;
  for (int v : p.constvars) out.push_back(p.avals[size_t(v)]);
  for (int v : p.invars) out.push_back(p.avals[size_t(v)]);
  return out;
}

std::vector<core::Aval> program_outputs(const core::Program& p) {
  std::vector<core::Aval> out;
  for (const core::Atom& a : p.outvars) out.push_back(p.aval_of(a));
  return out;
}

ScanShape::ScanShape(const core::Params& params)
    : num_consts(params.get<int64_t>("num_consts")),
      num_carry(params.get<int64_t>("num_carry")),
      length(params.get<int64_t>("length")),
      reverse(params.get<bool>("reverse")),
      unroll(params.get<int64_t>("unroll")),
      body(params.get<ProgramRef>("jaxpr")) {}

WhileShape::WhileShape(const core::Params& params)
    : cond_nconsts(params.get<int64_t>("cond_nconsts")),
      body_nconsts(params.get<int64_t>("body_nconsts")),
      cond(params.get<ProgramRef>("cond_jaxpr")),
      body(params.get<ProgramRef>("body_jaxpr")) {}

core::Aval stacked(core::Aval t, int64_t n) {
  t.shape.insert(t.shape.begin(), n);
  return t;
}

core::Aval unstacked(core::Aval t) {
  t.shape.erase(t.shape.begin());
  return t;
}

}  // namespace parax::prims
