#include "core/rules.h"

#include <algorithm>

#include "base/check.h"
#include "base/sizes.h"

namespace parax::core {

std::string_view reduce_op_name(ReduceOp op) {
  switch (op) {
    case ReduceOp::none:
      return "none";
    case ReduceOp::sum:
      return "sum";
    case ReduceOp::max:
      return "max";
    case ReduceOp::min:
      return "min";
    case ReduceOp::prod:
      return "prod";
    case ReduceOp::and_:
      return "and";
    case ReduceOp::or_:
      return "or";
  }
  PARAX_UNREACHABLE();
}

namespace {

std::string factor_name(int f) {
  if (f == ShardingRule::kNone) return "_";
  std::string s(1, char('i' + f % 18));
  if (f >= 18) s += std::to_string(f / 18);
  return s;
}

std::string dims_str(const std::vector<std::vector<int>>& arrays) {
  std::string s = "(";
  for (size_t a = 0; a < arrays.size(); ++a) {
    s += a ? ", [" : "[";
    for (size_t d = 0; d < arrays[a].size(); ++d) s += (d ? ", " : "") + factor_name(arrays[a][d]);
    s += "]";
  }
  return s + ")";
}

}  // namespace

bool ShardingRule::in_results(int f) const {
  for (const auto& r : results) {
    if (std::find(r.begin(), r.end(), f) != r.end()) return true;
  }
  return false;
}

std::string ShardingRule::str() const {
  std::string s = dims_str(operands) + " -> " + dims_str(results);
  if (reduction != ReduceOp::none) s += " {" + std::string(reduce_op_name(reduction)) + "}";
  return s;
}

int64_t DeviceContext::linear_index(std::span<const int64_t> axes) const {
  int64_t index = 0;
  for (int64_t a : axes) index = index * axis_sizes[size_t(a)] + coords[size_t(a)];
  return index;
}

std::string_view program_role_name(ProgramRole role) {
  switch (role) {
    case ProgramRole::call:
      return "call";
    case ProgramRole::manual:
      return "manual";
    case ProgramRole::branch:
      return "branch";
    case ProgramRole::body:
      return "body";
    case ProgramRole::predicate:
      return "predicate";
    case ProgramRole::tiles:
      return "tiles";
    case ProgramRole::rule:
      return "rule";
  }
  PARAX_UNREACHABLE();
}

const SubProgram* ProgramRoles::find(ProgramRole role) const {
  for (const SubProgram& s : programs) {
    if (s.role == role) return &s;
  }
  return nullptr;
}

ProgramRoles program_roles(const Eqn& e) {
  const ProgramRolesFn fn = rules(e.prim).program_roles;
  return fn == nullptr ? ProgramRoles{} : fn(e.params, e.inputs.size());
}

std::shared_ptr<const Program> program_of(const Eqn& e, ProgramRole role) {
  const ProgramRoles roles = program_roles(e);
  const SubProgram* s = roles.find(role);
  return s == nullptr ? nullptr : s->program;
}

std::vector<Aval> abstract_eval(Prim p, std::span<const Aval> in, const Params& params) {
  const PrimRules& r = rules(p);
  PARAX_CHECK(r.abstract_eval != nullptr, "no shape rule for " << prim_name(p));
  std::vector<Aval> out = r.abstract_eval(in, params);
  // Every array a program can make passes here, so kernels, strides and buffer sizes may
  // multiply dimensions freely: none of their products overflows.
  for (const Aval& a : out) base::check_array_shape(prim_name(p), a.shape, a.dtype);
  return out;
}

ShardingRule sharding_rule(Prim p, std::span<const Aval> in, std::span<const Aval> out,
                           const Params& params) {
  const PrimRules& r = rules(p);
  if (r.sharding_rule != nullptr) return r.sharding_rule(in, out, params);
  ShardingRule rule;
  for (const Aval& a : in) rule.operands.emplace_back(a.shape.size(), ShardingRule::kNone);
  for (const Aval& a : out) rule.results.emplace_back(a.shape.size(), ShardingRule::kNone);
  return rule;
}

}  // namespace parax::core
