// grad, vjp and jvp over flat leaves: trace the function into a program, then run
// core::jvp_program or core::linearize + core::transpose on it. Both bind primitives, so
// under jit the forward and backward passes are staged into the jitted program and
// partitioned like any other code.
#include "parax/grad.h"

#include "core/array_value.h"
#include "core/autodiff.h"
#include "core/source_site.h"
#include "parax/lax.h"

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

namespace parax::detail {
namespace {

using core::Aval;
using core::Prim;

Array iota(const Shape& shape, int64_t dimension) {
  return lax::broadcasted_iota(DType::int32, shape, dimension);
}

// Rows [offset, offset + size) of the n x n identity, as an array [n, *shape] of `dtype`
// (JAX's _std_basis, one leaf's part).
Array basis_block(int64_t n, int64_t offset, const Shape& shape, DType dtype) {
  const int64_t size = shape_size(shape);
  const Shape flat{n, size};
  Array col = iota(flat, 1);
  if (offset != 0) {
    Array off = core::literal_array(core::Literal{Aval{{}, DType::int32, false}, double(offset)});
    col = lax::add(col, off);
  }
  const Array eye = lax::convert_element_type(lax::eq(iota(flat, 0), col), dtype);
  Shape full{n};
  full.insert(full.end(), shape.begin(), shape.end());
  return lax::reshape(eye, std::move(full));
}

Array slice_dim(const Array& x, int64_t dim, int64_t begin, int64_t end) {
  std::vector<int64_t> start(x.shape().size(), 0), limit(x.shape().begin(), x.shape().end());
  start[size_t(dim)] = begin;
  limit[size_t(dim)] = end;
  return lax::slice(x, std::move(start), std::move(limit));
}

Array reshape(const Array& x, const Shape& shape) { return lax::reshape(x, shape); }

Shape concat_shape(const Shape& a, const Shape& b) {
  Shape out = a;
  out.insert(out.end(), b.begin(), b.end());
  return out;
}

// Basis vectors for the leaves `pick` marks, stacked along a leading axis of their total size.
std::vector<Array> basis(const std::vector<Aval>& avals, const std::vector<bool>& pick,
                         std::vector<int64_t>& offsets, int64_t& total) {
  total = 0;
  offsets.assign(avals.size(), 0);
  for (size_t i = 0; i < avals.size(); ++i) {
    offsets[i] = total;
    if (pick[i]) total += avals[i].size();
  }
  std::vector<Array> out(avals.size());
  for (size_t i = 0; i < avals.size(); ++i) {
    if (pick[i]) out[i] = basis_block(total, offsets[i], avals[i].shape, avals[i].dtype);
  }
  return out;
}

}  // namespace

TreeDef nest_tree(const TreeDef& outer, const TreeDef& inner) {
  if (outer.kind == TreeDef::Kind::leaf) return inner;
  TreeDef out = outer;
  for (TreeDef& c : out.children) c = nest_tree(c, inner);
  return out;
}

void check_aux_output(const TreeDef& out_def) {
  if (out_def.kind != TreeDef::Kind::tuple || out_def.children.size() != 2) {
    throw TypeError("expected function with aux output to return a two-element tuple, but got " +
                    out_def.to_string());
  }
}

std::vector<Array> jacfwd_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                               const FlatFn& fn, TreeDef* out_def, const std::vector<bool>& wrt,
                               std::vector<Array>* aux) {
  std::vector<Aval> avals;
  for (const Array& x : leaves) avals.push_back(core::aval_of(x));
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!wrt[i] || is_floating(leaves[i].dtype())) continue;
    throw TypeError(
        "jacfwd requires real-valued inputs (input dtype that is a sub-dtype of np.floating), "
        "but got " +
        std::string(dtype_name(leaves[i].dtype())) +
        ". For holomorphic differentiation, pass holomorphic=True. For differentiation of "
        "non-holomorphic functions involving complex inputs or integer inputs, use jax.jvp "
        "directly.");
  }
  std::vector<int64_t> offsets;
  int64_t n = 0;
  const std::vector<Array> tangents = basis(avals, wrt, offsets, n);
  // vmap over the basis (the wrt leaves' tangents) of the jvp at the primals.
  std::vector<Array> args(leaves);
  std::vector<int> dims(leaves.size(), kNoAxis);
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!wrt[i]) continue;
    args.push_back(tangents[i]);
    dims.push_back(0);
  }
  const size_t num = leaves.size();
  size_t differentiated = 0;  // the leading output leaves (all of them without aux)
  FlatFn pushed = [&](const std::vector<Array>& xs, TreeDef* def) {
    std::vector<Array> p(xs.begin(), xs.begin() + long(num)), t(num);
    for (size_t i = 0, k = num; i < num; ++i) {
      if (wrt[i]) t[i] = xs[k++];
    }
    auto [outs, touts] = jvp_flat(p, t, defs, fn, def);
    differentiated = outs.size();
    if (!aux) return touts;
    // aux is the primal value: it does not depend on the basis, so vmap leaves it unmapped
    // (out_axes None), as JAX's jacfwd does.
    check_aux_output(*def);
    differentiated = size_t(def->children[0].num_leaves());
    touts.resize(differentiated);
    touts.insert(touts.end(), outs.begin() + long(differentiated), outs.end());
    return touts;
  };
  std::vector<std::string> names(args.size());
  VmapOptions options;
  if (aux) options.out_axes = MapAxes{0, None};
  std::vector<Array> touts = vmap_flat(args, dims, names, pushed, out_def, options);
  if (aux) {
    aux->assign(touts.begin() + long(differentiated), touts.end());
    touts.resize(differentiated);
  }
  std::vector<Array> blocks;
  for (const Array& t : touts) {
    // [n, *out] -> [*out, n], then each input's columns as out.shape + in.shape.
    const Shape out_shape(t.shape().begin() + 1, t.shape().end());
    std::vector<int64_t> perm;
    for (size_t d = 1; d <= out_shape.size(); ++d) perm.push_back(int64_t(d));
    perm.push_back(0);
    const Array moved = lax::transpose(t, std::move(perm));
    for (size_t j = 0; j < num; ++j) {
      if (!wrt[j]) continue;
      const Array cols =
          slice_dim(moved, int64_t(out_shape.size()), offsets[j], offsets[j] + avals[j].size());
      blocks.push_back(reshape(cols, concat_shape(out_shape, avals[j].shape)));
    }
  }
  return blocks;
}

std::vector<Array> jacrev_flat(const std::vector<Array>& leaves, const std::vector<TreeDef>& defs,
                               const FlatFn& fn, TreeDef* out_def, const std::vector<bool>& wrt,
                               std::vector<Array>* aux) {
  for (size_t i = 0; i < leaves.size(); ++i) {
    if (!wrt[i] || is_floating(leaves[i].dtype())) continue;
    throw TypeError(
        "jacrev requires real- or complex-valued inputs (input dtype that is a sub-dtype of "
        "np.inexact), but got " +
        std::string(dtype_name(leaves[i].dtype())) +
        ". If you want to use Boolean- or integer-valued inputs, use vjp or set allow_int to "
        "True.");
  }
  FlatVjp v = vjp_flat(leaves, defs, fn, out_def, GradOutput::any, wrt);
  size_t differentiated = v.outs.size();
  if (aux) {
    // Only out is pulled back: aux's outputs get no cotangent (transpose takes them as zero).
    check_aux_output(*out_def);
    differentiated = size_t(out_def->children[0].num_leaves());
    aux->assign(v.outs.begin() + long(differentiated), v.outs.end());
  }
  std::vector<Aval> out_avals;
  for (size_t i = 0; i < differentiated; ++i) {
    const Array& o = v.outs[i];
    out_avals.push_back(core::aval_of(o));
    if (!is_floating(o.dtype())) {
      throw TypeError(
          "jacrev requires real-valued outputs (output dtype that is a sub-dtype of "
          "np.floating), but got " +
          std::string(dtype_name(o.dtype())) +
          ". For differentiation of functions with integer outputs, use jax.vjp directly.");
    }
  }
  std::vector<int64_t> offsets;
  int64_t m = 0;
  const std::vector<Array> cts =
      basis(out_avals, std::vector<bool>(out_avals.size(), true), offsets, m);
  std::vector<int> dims(cts.size(), 0);
  FlatFn pulled = [&](const std::vector<Array>& xs, TreeDef* def) {
    *def = TreeDef{};
    std::vector<Array> all = core::transpose(*v.state, xs);
    std::vector<Array> out;
    for (size_t i = 0; i < all.size(); ++i) {
      if (wrt[i]) out.push_back(all[i]);
    }
    def->kind = TreeDef::Kind::list;
    def->children.assign(out.size(), TreeDef{});
    return out;
  };
  TreeDef in_def;
  std::vector<std::string> names(cts.size());
  std::vector<Array> in_cts = vmap_flat(cts, dims, names, pulled, &in_def, VmapOptions{});
  // in_cts[j]: [m, *in_j]; block (i, j) is rows of output i, as out_i.shape + in_j.shape.
  std::vector<Array> blocks;
  for (size_t i = 0; i < out_avals.size(); ++i) {
    size_t k = 0;
    for (size_t j = 0; j < leaves.size(); ++j) {
      if (!wrt[j]) continue;
      const Array& c = in_cts[k++];
      const Array rows = slice_dim(c, 0, offsets[i], offsets[i] + out_avals[i].size());
      const Shape in_shape(c.shape().begin() + 1, c.shape().end());
      blocks.push_back(reshape(rows, concat_shape(out_avals[i].shape, in_shape)));
    }
  }
  return blocks;
}

std::vector<Array> linear_apply(const FlatVjp& v, const std::vector<Array>& tangents) {
  const core::Linearized& lin = *v.state;
  const core::Program& p = *lin.linear;
  std::vector<Array> value = lin.known;
  value.resize(p.avals.size());
  std::vector<bool> linear(p.avals.size(), false);
  size_t t = 0;
  for (size_t i = 0; i < lin.wrt.size(); ++i) {
    if (!lin.wrt[i]) continue;
    const Array& x = tangents.at(i);
    const Aval& want = lin.in_avals[t];
    if (x.shape() != want.shape || (x.dtype() != want.dtype && is_floating(want.dtype))) {
      throw ValueError("linearize's jvp function: tangent " + std::to_string(i) + " has type " +
                       core::aval_of(x).str() + ", but the primal has type " + want.str());
    }
    value[size_t(p.invars[t])] = x;
    linear[size_t(p.invars[t])] = true;
    ++t;
  }
  auto val = [&](const core::Atom& a) {
    return a.is_literal() ? core::literal_array(*a.literal) : value[size_t(a.var)];
  };
  for (const core::Eqn& e : p.eqns) {
    const core::SiteScope at(e.site);
    bool any = false;
    for (const core::Atom& a : e.inputs) any = any || (!a.is_literal() && linear[size_t(a.var)]);
    if (!any) continue;  // a primal value: computed when f was linearized
    std::vector<Array> ins;
    for (const core::Atom& a : e.inputs) ins.push_back(val(a));
    std::vector<Array> outs = core::bind(e.prim, ins, e.params);
    for (size_t r = 0; r < outs.size(); ++r) {
      value[size_t(e.outputs[r])] = outs[r];
      linear[size_t(e.outputs[r])] = true;
    }
  }
  std::vector<Array> out;
  const size_t n = p.outvars.size() / 2;
  for (size_t o = 0; o < n; ++o) {
    const core::Atom& a = p.outvars[n + o];
    const bool lin_out = !a.is_literal() && linear[size_t(a.var)];
    out.push_back(lin_out ? val(a) : core::zeros(core::aval_of(v.outs[o])));
  }
  return out;
}

}  // namespace parax::detail
