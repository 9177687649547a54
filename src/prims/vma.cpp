// check_vma's interpreter over one program (vma.h).
#include "prims/vma.h"

#include <memory>

#include "core/rules.h"

namespace parax::prims {

std::vector<uint64_t> program_vma(const core::Program& p, std::span<const uint64_t> inputs,
                                  std::span<const std::string> axes) {
  std::vector<uint64_t> v(p.avals.size(), 0);
  std::vector<int> in_vars(p.constvars);
  in_vars.insert(in_vars.end(), p.invars.begin(), p.invars.end());
  for (size_t i = 0; i < in_vars.size(); ++i) v[size_t(in_vars[i])] = inputs[i];
  for (const core::Eqn& e : p.eqns) {
    std::vector<uint64_t> ins;
    uint64_t any = 0;
    for (const core::Atom& a : e.inputs) {
      ins.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
      any |= ins.back();
    }
    std::vector<uint64_t> outs(e.outputs.size(), any);
    if (core::has_trait(e.prim, core::kCall)) {
      outs = program_vma(*e.params.get<std::shared_ptr<const core::Program>>("jaxpr"), ins, axes);
    } else if (const auto vma = core::rules(e.prim).vma) {
      outs = vma(ins, e.params, axes);
    }
    for (size_t r = 0; r < e.outputs.size(); ++r) v[size_t(e.outputs[r])] = outs[r];
  }
  std::vector<uint64_t> result;
  for (const core::Atom& a : p.outvars) result.push_back(a.is_literal() ? 0 : v[size_t(a.var)]);
  return result;
}

}  // namespace parax::prims
