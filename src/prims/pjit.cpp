// pjit: a call of a jitted program (param `jaxpr`, inputs = its constants then its
// arguments). The compiler inlines it; eagerly it runs as one cached executable.
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& p = *params.get<std::shared_ptr<const core::Program>>("jaxpr");
  PARAX_CHECK(in.size() == p.constvars.size() + p.invars.size(), "pjit arity");
  std::vector<Aval> out;
  for (const core::Atom& a : p.outvars) out.push_back(p.aval_of(a));
  return out;
}

}  // namespace

extern const PrimRules pjit_rules = {.abstract_eval = shape_rule};

}  // namespace parax::prims
