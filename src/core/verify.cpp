#include "core/verify.h"

#include <algorithm>
#include <exception>
#include <vector>

#include "core/rules.h"
#include "parax/errors.h"

namespace parax::core {
namespace {

thread_local std::optional<std::span<const int64_t>> bound_mesh;

std::string type_str(const Aval& a, bool weak_types) {
  return a.short_str() + (weak_types && a.weak_type ? "{weak}" : "");
}

bool same_type(const Aval& a, const Aval& b, bool weak_types) {
  return a.shape == b.shape && a.dtype == b.dtype && (!weak_types || a.weak_type == b.weak_type);
}

// Checks one program, equation by equation: operands defined, results defined once,
// result types as the primitive's rule says, sub-programs well typed.
class Verifier {
 public:
  Verifier(const Program& p, const VerifyOptions& options)
      : p_(p), options_(options), defined_(p.avals.size(), false) {}

  std::optional<std::string> run() {
    for (int v : p_.constvars) {
      if (auto err = define(v)) return err;
    }
    for (int v : p_.invars) {
      if (auto err = define(v)) return err;
    }
    for (size_t e = 0; e < p_.eqns.size(); ++e) {
      if (auto err = check_eqn(e)) return err;
    }
    for (const Atom& a : p_.outvars) {
      if (auto err = use(a)) return *err + " (in the outputs)";
    }
    return std::nullopt;
  }

 private:
  std::optional<std::string> define(int v) {
    if (v < 0 || size_t(v) >= p_.avals.size()) {
      return "variable " + std::to_string(v) + " has no type";
    }
    if (defined_[size_t(v)]) return "variable " + var_name(v) + " is defined twice";
    defined_[size_t(v)] = true;
    return std::nullopt;
  }

  std::optional<std::string> use(const Atom& a) const {
    if (a.is_literal()) {
      if (!a.literal->aval.shape.empty()) return "a literal must be rank 0";
      return std::nullopt;
    }
    if (a.var < 0 || size_t(a.var) >= p_.avals.size() || !defined_[size_t(a.var)]) {
      return "variable " + (a.var >= 0 ? var_name(a.var) : std::string("?")) +
             " is used before it is defined";
    }
    return std::nullopt;
  }

  std::optional<std::string> check_eqn(size_t e) {
    const Eqn& eqn = p_.eqns[e];
    for (const Atom& a : eqn.inputs) {
      if (auto err = use(a)) return where(e) + ": " + *err;
    }
    for (int v : eqn.outputs) {
      if (auto err = define(v)) return where(e) + ": " + *err;
    }
    if (!options_.types) return std::nullopt;
    // Inside out: a mistake in a sub-program is named where it is, not by its caller's
    // result types.
    if (auto err = check_subprograms(eqn)) {
      return "equation " + std::to_string(e) + " (" + std::string(prim_name(eqn.prim)) +
             "), in its program: " + *err;
    }
    if (auto err = check_types(eqn)) return where(e) + ": " + *err;
    if (auto err = check_program_roles(p_, eqn, program_roles(eqn))) return where(e) + ": " + *err;
    return std::nullopt;
  }

  std::string where(size_t e) const {
    return "equation " + std::to_string(e) + " (" + eqn_str(p_, e) + ")";
  }

  std::optional<std::string> check_types(const Eqn& eqn) const {
    std::vector<Aval> in = operand_types(eqn);
    std::vector<Aval> expected;
    try {
      expected = abstract_eval(eqn.prim, in, eqn.params);
    } catch (const std::exception& ex) {
      return std::string(ex.what());
    }
    const std::string name(prim_name(eqn.prim));
    if (expected.size() != eqn.outputs.size()) {
      return name + " gives " + std::to_string(expected.size()) + " results, the program has " +
             std::to_string(eqn.outputs.size());
    }
    const bool weak = options_.weak_types;
    for (size_t r = 0; r < expected.size(); ++r) {
      const Aval& declared = p_.avals[size_t(eqn.outputs[r])];
      if (same_type(expected[r], declared, weak)) continue;
      std::string which = expected.size() > 1 ? " as result " + std::to_string(r) : "";
      return name + " gives " + type_str(expected[r], weak) + which + ", the program says " +
             type_str(declared, weak);
    }
    return std::nullopt;
  }

  // The operand types the primitive's rule sees. A rank-0 operand of an elementwise
  // equation broadcasts against the others (the compiler folds scalar broadcasts into
  // such operands, and kernels broadcast them), so it stands for an array of their shape.
  std::vector<Aval> operand_types(const Eqn& eqn) const {
    std::vector<Aval> in;
    for (const Atom& a : eqn.inputs) in.push_back(p_.aval_of(a));
    if (!has_trait(eqn.prim, kElementwise)) return in;
    const Shape* shape = nullptr;
    for (const Aval& a : in) {
      if (!a.shape.empty()) shape = &a.shape;
    }
    if (shape == nullptr) return in;
    const Shape full = *shape;
    for (Aval& a : in) {
      if (a.shape.empty()) a.shape = full;
    }
    return in;
  }

  // Sub-programs (a pjit's, a shard_map's, a fusion's) are checked whole, with this
  // program's options: a fusion of a per-device program is per-device too.
  std::optional<std::string> check_subprograms(const Eqn& eqn) const {
    for (const auto& sub : sub_programs(eqn)) {
      if (auto err = Verifier(*sub, options_).run()) return err;
    }
    return std::nullopt;
  }

  const Program& p_;
  const VerifyOptions& options_;
  std::vector<bool> defined_;
};

std::string types_str(std::span<const Aval> avals) {
  std::string s = "(";
  for (size_t i = 0; i < avals.size(); ++i) s += (i ? ", " : "") + avals[i].short_str();
  return s + ")";
}

bool same_types(std::span<const Aval> a, std::span<const Aval> b) {
  return std::equal(a.begin(), a.end(), b.begin(), b.end(),
                    [](const Aval& x, const Aval& y) { return same_type(x, y, false); });
}

// What a program of `role` takes and gives, from the operands and results: nullopt where
// its role says nothing of its types (a rule's, a manual program's blocks).
struct Expected {
  std::optional<std::vector<Aval>> in, out;
  std::string error;
};

Expected expected_types(const SubProgram& s, const ProgramRoles& roles, std::span<const Aval> in,
                        std::span<const Aval> out) {
  Expected x;
  if (s.role == ProgramRole::rule || s.role == ProgramRole::manual) return x;
  x.in.emplace(in.begin() + long(s.consts_begin), in.begin() + long(s.consts_begin + s.num_consts));
  const std::span<const Aval> carry = in.subspan(roles.carry_begin, roles.num_carry);
  switch (s.role) {
    case ProgramRole::predicate:
      x.in->insert(x.in->end(), carry.begin(), carry.end());
      x.out.emplace(1, Aval{Shape{}, DType::bool_, false});
      return x;
    case ProgramRole::body:
      x.in->insert(x.in->end(), carry.begin(), carry.end());
      for (const Aval& a : in.subspan(roles.xs_begin, roles.num_xs)) {
        if (a.shape.empty() || (roles.trip_count && a.shape[0] != *roles.trip_count)) {
          x.error = "xs operand " + a.short_str() + " has no leading dimension of the trip count";
          return x;
        }
        x.in->push_back(Aval{Shape(a.shape.begin() + 1, a.shape.end()), a.dtype, false});
      }
      x.out.emplace(carry.begin(), carry.end());
      for (const Aval& a : out.subspan(roles.num_carry)) {
        if (!roles.trip_count || a.shape.empty() || a.shape[0] != *roles.trip_count) {
          x.error = "result " + a.short_str() + " is no ys stacked along the trip count";
          return x;
        }
        x.out->push_back(Aval{Shape(a.shape.begin() + 1, a.shape.end()), a.dtype, false});
      }
      return x;
    default:
      x.out.emplace(out.begin(), out.end());
      return x;
  }
}

}  // namespace

std::optional<std::string> check_program_roles(const Program& p, const Eqn& e,
                                               const ProgramRoles& roles) {
  const std::string name = std::string(prim_name(e.prim)) + "'s program roles: ";
  const std::vector<std::shared_ptr<const Program>> held = sub_programs(e);
  if (held.size() != roles.programs.size()) {
    return name + "they name " + std::to_string(roles.programs.size()) +
           " programs; the equation holds " + std::to_string(held.size());
  }
  for (size_t i = 0; i < held.size(); ++i) {
    if (held[i] != roles.programs[i].program) {
      return name + "program " + std::to_string(i) + " is not the one held in that place";
    }
  }
  std::vector<Aval> in, out;
  for (const Atom& a : e.inputs) in.push_back(p.aval_of(a));
  for (int v : e.outputs) out.push_back(p.avals[size_t(v)]);
  // The index, the carry and the xs are disjoint; a program's consts are none of them.
  std::vector<bool> taken(in.size(), false);
  auto claim = [&](size_t begin, size_t count, const std::string& what,
                   bool mark) -> std::optional<std::string> {
    if (begin + count > in.size()) {
      return name + what + " [" + std::to_string(begin) + ", " + std::to_string(begin + count) +
             ") is beyond the " + std::to_string(in.size()) + " operands";
    }
    for (size_t i = begin; i < begin + count; ++i) {
      if (taken[i]) return name + what + " takes operand " + std::to_string(i) + " twice";
      if (mark) taken[i] = true;
    }
    return std::nullopt;
  };
  if (roles.index) {
    if (auto err = claim(*roles.index, 1, "the index", true)) return err;
    const Aval& index = in[*roles.index];
    if (!index.shape.empty() || index.dtype != DType::int32) {
      return name + "the index is " + index.short_str() + ", not an int32 scalar";
    }
  }
  if (auto err = claim(roles.carry_begin, roles.num_carry, "the carry", true)) return err;
  if (auto err = claim(roles.xs_begin, roles.num_xs, "the xs", true)) return err;
  if (roles.num_carry > out.size()) {
    return name + "a carry of " + std::to_string(roles.num_carry) + " for " +
           std::to_string(out.size()) + " results";
  }
  const std::span<const Aval> carry_in(in.data() + roles.carry_begin, roles.num_carry);
  if (!same_types(carry_in, std::span<const Aval>(out).first(roles.num_carry))) {
    return name + "the carry " + types_str(carry_in) + " does not come back as the results " +
           types_str(std::span<const Aval>(out).first(roles.num_carry));
  }
  for (size_t i = 0; i < roles.programs.size(); ++i) {
    const SubProgram& s = roles.programs[i];
    const std::string what =
        "the " + std::string(program_role_name(s.role)) + " (program " + std::to_string(i) + ")";
    if (auto err = claim(s.consts_begin, s.num_consts, what + "'s consts", false)) return err;
    Expected x = expected_types(s, roles, in, out);
    if (!x.error.empty()) return name + what + ": " + x.error;
    std::vector<Aval> got_in, got_out;
    for (int v : s.program->constvars) got_in.push_back(s.program->avals[size_t(v)]);
    for (int v : s.program->invars) got_in.push_back(s.program->avals[size_t(v)]);
    for (const Atom& a : s.program->outvars) got_out.push_back(s.program->aval_of(a));
    if (s.role == ProgramRole::manual &&
        (got_in.size() != s.num_consts || got_out.size() != out.size())) {
      return name + what + " takes " + std::to_string(got_in.size()) + " inputs and gives " +
             std::to_string(got_out.size()) + " results, for " + std::to_string(s.num_consts) +
             " operands and " + std::to_string(out.size()) + " results";
    }
    if (x.in && !same_types(*x.in, got_in)) {
      return name + what + " takes " + types_str(got_in) + "; its role gives it " +
             types_str(*x.in);
    }
    if (x.out && !same_types(*x.out, got_out)) {
      return name + what + " gives " + types_str(got_out) + "; its role needs " + types_str(*x.out);
    }
  }
  return std::nullopt;
}

std::optional<std::string> verify(const Program& p, const VerifyOptions& options) {
  std::optional<MeshAxesScope> mesh;
  if (!options.mesh_axis_sizes.empty()) mesh.emplace(options.mesh_axis_sizes);
  return Verifier(p, options).run();
}

std::optional<std::string> verify(const Program& p) { return verify(p, VerifyOptions{}); }

MeshAxesScope::MeshAxesScope(std::span<const int64_t> axis_sizes) : saved_(bound_mesh) {
  bound_mesh = axis_sizes;
}

MeshAxesScope::~MeshAxesScope() { bound_mesh = saved_; }

int64_t mesh_group_size(std::span<const int64_t> mesh_axes, std::string_view prim) {
  if (!bound_mesh) {
    throw TypeError(std::string(prim) +
                    ": the sizes of mesh axes are unknown: no mesh is bound (per-device programs "
                    "are checked with VerifyOptions::mesh_axis_sizes)");
  }
  int64_t n = 1;
  for (int64_t a : mesh_axes) {
    if (a < 0 || size_t(a) >= bound_mesh->size()) {
      throw TypeError(std::string(prim) + ": mesh axis " + std::to_string(a) +
                      " is not an axis of the program's mesh (it has " +
                      std::to_string(bound_mesh->size()) + ")");
    }
    n *= (*bound_mesh)[size_t(a)];
  }
  return n;
}

}  // namespace parax::core
