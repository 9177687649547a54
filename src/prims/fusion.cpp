// fusion: a chain of elementwise equations (param `jaxpr`) run tile by tile, so its
// intermediates live in cache-sized scratch instead of whole arrays in memory. Every
// non-scalar value of the chain has one element count; rank-0 inputs and literals
// broadcast, and a primitive with a tile kernel (broadcast_in_dim) reads smaller inputs in
// place. Each equation runs its own primitive's kernel on the tile (kernels/fusion.cpp). A
// final reduction over trailing axes reduces each tile as it is made.
#include "prims/kernels/fusion.h"

#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace fusion_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& p = *params.get<std::shared_ptr<const core::Program>>("jaxpr");
  std::vector<Aval> inputs;
  for (int v : p.invars) inputs.push_back(p.avals[size_t(v)]);
  check_body_inputs("fusion", in, inputs);
  std::vector<Aval> out;
  for (const core::Atom& a : p.outvars) out.push_back(p.aval_of(a));
  return out;
}

// A flop per element of the result for every equation of the chain.
core::Cost cost(std::span<const Aval>, std::span<const Aval> out, const Params& params,
                std::span<const int64_t>) {
  const auto& body = *params.get<std::shared_ptr<const core::Program>>("jaxpr");
  return {.flops = double(out[0].size()) * double(body.eqns.size())};
}

core::ProgramRoles roles(const Params& params, size_t num_operands) {
  return {.programs = {{params.get<std::shared_ptr<const core::Program>>("jaxpr"),
                        core::ProgramRole::tiles, 0, num_operands}}};
}

}  // namespace fusion_impl
}  // namespace

extern const PrimRules fusion_rules = {.abstract_eval = fusion_impl::shape_rule,
                                       .kernel = kernels::fusion,
                                       .cost = fusion_impl::cost,
                                       .program_roles = fusion_impl::roles};

}  // namespace parax::prims
