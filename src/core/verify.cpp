#include "core/verify.h"

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

}  // namespace

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
