// grad, vjp and jvp over flat leaves: trace the function into a program, then run
// core::jvp_program or core::linearize + core::transpose on it. Both bind primitives, so
// under jit the forward and backward passes are staged into the jitted program and
// partitioned like any other code.
#include "parax/grad.h"

#include "core/array_value.h"
#include "core/autodiff.h"

namespace parax::detail {

struct LinearState : core::Linearized {};

namespace {

void check_grad_output(const core::Aval& a);
void check_grad_output_tree(const TreeDef& out_def, bool aux);

// A shape in JAX's str_short form: "[2,3]".
std::string dims_of(const core::Aval& a) {
  const std::string s = a.str();
  return s.substr(s.find('['));
}

core::ClosedProgram trace_flat(const std::vector<Array>& leaves, const FlatFn& fn,
                               TreeDef* out_def) {
  std::vector<core::Aval> avals;
  for (const Array& x : leaves) avals.push_back(core::aval_of(x));
  return core::trace_to_program(avals,
                                [&](const std::vector<Array>& args) { return fn(args, out_def); });
}

}  // namespace

FlatVjp vjp_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                 const FlatFn& fn, TreeDef* out_def, GradOutput check,
                 const std::vector<bool>& wrt) {
  core::ClosedProgram closed = trace_flat(leaves, fn, out_def);
  if (check != GradOutput::any) {
    check_grad_output_tree(*out_def, check == GradOutput::scalar_with_aux);
    check_grad_output(closed.program->aval_of(closed.program->outvars[0]));
  }
  auto state = std::make_shared<LinearState>();
  static_cast<core::Linearized&>(*state) = core::linearize(closed, leaves, wrt);
  return FlatVjp{state->outs, state};
}

std::vector<Array> vjp_apply(const FlatVjp& v, const std::vector<Array>& cts, const TreeDef* ct_def,
                             const TreeDef* out_def) {
  if (ct_def && out_def && *ct_def != *out_def) {
    throw ValueError("unexpected tree structure of argument to vjp function: got " +
                     ct_def->to_string() + ", but expected to match " + out_def->to_string());
  }
  if (cts.size() != v.outs.size()) {
    throw ValueError("unexpected tree structure of argument to vjp function: got " +
                     std::to_string(cts.size()) + " leaves, but expected " +
                     std::to_string(v.outs.size()));
  }
  for (size_t i = 0; i < cts.size(); ++i) {
    if (!cts[i].valid()) continue;
    const core::Aval got = core::aval_of(cts[i]);
    const core::Aval out = core::aval_of(v.outs[i]);
    // JAX's to_tangent_aval: an integer or bool output has a float0 tangent, for which any
    // cotangent dtype of the right shape passes (its _temporary_dtype_exception).
    const bool dtype_ok = got.dtype == out.dtype || !is_floating(out.dtype);
    if (got.shape != out.shape || !dtype_ok) {
      const std::string expected = is_floating(out.dtype) ? out.str() : "float0" + dims_of(out);
      throw ValueError(
          "unexpected JAX type (e.g. shape/dtype) for argument to vjp function: "
          "got " +
          got.str() + ", but expected " + expected +
          " because the "
          "corresponding output of the function had JAX type " +
          out.str() + " (output leaf " + std::to_string(i) + " of " + std::to_string(cts.size()) +
          ")");
    }
  }
  return core::transpose(*v.state, cts);
}

void check_jvp_args(const std::vector<Array>& primals, const std::vector<TreeDef>& defs,
                    const std::vector<Array>& tangents, const std::vector<TreeDef>& tdefs) {
  if (defs != tdefs) {
    TreeDef p{TreeDef::Kind::tuple, "", {}, defs};
    TreeDef t{TreeDef::Kind::tuple, "", {}, tdefs};
    throw TypeError(
        "primal and tangent arguments to jax.jvp must have the same tree "
        "structure; primals have tree structure " +
        p.to_string() + " whereas tangents have tree structure " + t.to_string() + ".");
  }
  for (size_t i = 0; i < primals.size(); ++i) {
    const DType pd = primals[i].dtype();
    const DType td = tangents[i].dtype();
    // JAX wants float0 for an integer or bool primal; parax has no float0 and takes the
    // primal's own dtype in its place (the tangent is then ignored, as a float0 one is).
    if (pd != td) {
      const std::string expected =
          is_floating(pd) ? std::string(dtype_name(pd))
                          : std::string(dtype_name(pd)) + " (parax's stand-in for float0)";
      throw TypeError(
          "primal and tangent arguments to jax.jvp do not match; dtypes must be "
          "equal, or in case of int/bool primal dtype the tangent dtype must be "
          "float0.Got primal dtype " +
          std::string(dtype_name(pd)) + " and so expected tangent dtype " + expected +
          ", but got tangent dtype " + std::string(dtype_name(td)) + " instead.");
    }
    if (primals[i].shape() != tangents[i].shape()) {
      throw ValueError("jvp called with different primal and tangent shapes;Got primal shape " +
                       shape_str(primals[i].shape()) + " and tangent shape as " +
                       shape_str(tangents[i].shape()));
    }
  }
}

void check_grad_inputs(const std::vector<Array>& leaves) {
  for (const Array& x : leaves) {
    const DType t = x.dtype();
    if (!is_floating(t)) {
      throw TypeError(
          "grad requires real- or complex-valued inputs (input dtype that is a "
          "sub-dtype of np.inexact), but got " +
          std::string(dtype_name(t)) +
          ". If you want to use Boolean- or integer-valued inputs, use vjp or set "
          "allow_int to True.");
    }
  }
}

std::pair<std::vector<Array>, std::vector<Array>> jvp_flat(const std::vector<Array>& leaves,
                                                           const std::vector<Array>& tangents,
                                                           const std::vector<TreeDef>& defs,
                                                           const FlatFn& fn, TreeDef* out_def) {
  core::ClosedProgram closed = trace_flat(leaves, fn, out_def);
  std::vector<Array> inputs(closed.consts);
  inputs.insert(inputs.end(), leaves.begin(), leaves.end());
  std::vector<Array> tans(closed.consts.size());
  tans.insert(tans.end(), tangents.begin(), tangents.end());
  // An integer or bool primal's tangent stands for JAX's float0: a symbolic zero.
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!is_floating(leaves[i].dtype())) tans[closed.consts.size() + i] = Array();
  }
  auto [outs, touts] = core::jvp_program(*closed.program, inputs, tans);
  for (size_t o = 0; o < touts.size(); ++o) {
    if (!touts[o].valid()) touts[o] = core::zeros(core::aval_of(outs[o]));
  }
  return {outs, touts};
}

namespace {
// JAX prints the output's value. Without data, a tree with no arrays prints as that value
// does (PyTreeDef(((), [])) is "((), [])"); other trees print their structure.
std::string output_str(const TreeDef& def) {
  const std::string s = def.to_string();
  const std::string head = "PyTreeDef(";
  if (def.num_leaves() > 0 || s.rfind(head, 0) != 0) return s;
  return s.substr(head.size(), s.size() - head.size() - 1);
}

void check_grad_output_tree(const TreeDef& out_def, bool aux) {
  if (aux) {
    if (out_def.kind != TreeDef::Kind::tuple || out_def.children.size() != 2) {
      throw TypeError(
          "expected function with aux output to return a two-element tuple, but "
          "got " +
          out_def.to_string());
    }
    if (out_def.children[0].num_leaves() != 1) {
      throw TypeError("Gradient only defined for scalar-output functions. Output was " +
                      output_str(out_def.children[0]) + ".");
    }
    return;
  }
  if (out_def.num_leaves() != 1) {
    throw TypeError("Gradient only defined for scalar-output functions. Output was " +
                    output_str(out_def) + ".");
  }
}

void check_grad_output(const core::Aval& a) {
  if (!a.shape.empty()) {
    throw TypeError("Gradient only defined for scalar-output functions. Output had shape: " +
                    shape_str(a.shape) + ".");
  }
  if (!is_floating(a.dtype)) {
    throw TypeError(
        "grad requires real-valued outputs (output dtype that is a sub-dtype of "
        "np.floating), but got " +
        std::string(dtype_name(a.dtype)) + ".");
  }
}

}  // namespace

Array grad_seed(const Array& out) {
  const core::Aval& a = core::aval_of(out);
  check_grad_output(a);
  core::Aval one = a;
  one.weak_type = false;
  return core::ones(one);
}

void check_grad_has_output(size_t leaves, const TreeDef& out_def) {
  if (leaves > 0) return;
  throw TypeError("Gradient only defined for scalar-output functions. Output was " +
                  output_str(out_def) + ".");
}

Array stop_gradient(const Array& x) { return core::bind1(core::Prim::stop_gradient, {x}); }

}  // namespace parax::detail
