// lax's control flow: each function traces its callables into sub-programs (their
// captured values become leading operands, as JAX hoists a closed jaxpr's consts), checks
// what JAX's Python wrappers check, with JAX's messages, and binds one primitive.
#include "parax/control_flow.h"

#include <algorithm>
#include <cctype>
#include <sstream>

#include "base/promotion.h"
#include "core/program_trace.h"
#include "lax/promote.h"
#include "parax/lax.h"

namespace parax::detail {
namespace {

using core::Aval;
using core::avals_of;
using core::Params;
using core::Prim;
using core::Program;
using ProgramRef = std::shared_ptr<const Program>;

// A traced function: its program (captured values lifted into leading inputs), their
// values, and its result's tree.
struct Traced {
  ProgramRef program;
  std::vector<Array> consts;
  TreeDef out_def;
  std::vector<Aval> outs;
};

Traced trace(const FlatFn& fn, const std::vector<Aval>& in) {
  TreeDef def;
  core::ClosedProgram closed =
      core::trace_to_program(in, [&](const std::vector<Array>& xs) { return fn(xs, &def); });
  Traced t{core::lift_consts(closed), closed.consts, std::move(def), {}};
  for (const core::Atom& a : t.program->outvars) t.outs.push_back(t.program->aval_of(a));
  return t;
}

// JAX's keystr of each leaf under `root`: `c`, `c[1]`, `c['w']`.
void leaf_paths(const TreeDef& def, const std::string& at, std::vector<std::string>& out) {
  if (def.kind == TreeDef::Kind::leaf) {
    out.push_back(at);
    return;
  }
  for (size_t i = 0; i < def.children.size(); ++i) {
    const std::string key =
        def.kind == TreeDef::Kind::dict ? "['" + def.keys[i] + "']" : "[" + std::to_string(i) + "]";
    leaf_paths(def.children[i], at + key, out);
  }
}

std::string type_name(const Aval& a) { return a.str(); }

// Why two types differ, in JAX's words (core.aval_mismatch_extra), or empty when only
// weak types differ.
std::string mismatch(const Aval& a, const Aval& b) {
  std::vector<std::string> why;
  if (a.dtype != b.dtype) why.push_back("the dtypes do not match");
  if (a.shape != b.shape) why.push_back("the shapes do not match");
  if (why.size() == 2) return why[0] + ", and " + why[1];
  return why.empty() ? std::string() : why[0];
}

// JAX's keystr of one child of `def`: `[1]` or `['w']`.
std::string child_key(const TreeDef& def, size_t i) {
  return def.kind == TreeDef::Kind::dict ? "['" + def.keys[i] + "']"
                                         : "[" + std::to_string(i) + "]";
}

std::string python_type(const TreeDef& d) {
  switch (d.kind) {
    case TreeDef::Kind::leaf:
      return "pytree leaf";
    case TreeDef::Kind::list:
      return "<class 'list'>";
    case TreeDef::Kind::tuple:
      return "<class 'tuple'>";
    case TreeDef::Kind::dict:
      return "<class 'dict'>";
    case TreeDef::Kind::custom:
      return "<class '" + d.type_name + "'>";
  }
  return "pytree";
}

// One structural difference of two pytrees, as JAX's tree_util.equality_errors gives it.
struct TreeDiff {
  std::string path, thing1, thing2, why;
};

std::string children_str(const TreeDef& d) {
  const size_t n = d.children.size();
  return python_type(d) + " with " + std::to_string(n) + (n > 1 ? " children" : " child");
}

// A dict's pytree metadata as JAX prints it: the tuple of its keys.
std::string keys_str(const TreeDef& d) {
  std::string out = "(";
  for (size_t i = 0; i < d.keys.size(); ++i) out += (i ? ", '" : "'") + d.keys[i] + "'";
  return out + (d.keys.size() == 1 ? ",)" : ")");
}

void tree_diffs(const TreeDef& a, const TreeDef& b, const std::string& path,
                std::vector<TreeDiff>& out) {
  using K = TreeDef::Kind;
  if (a.kind == K::leaf && b.kind == K::leaf) return;
  if (a.kind != b.kind || a.type_name != b.type_name) {
    out.push_back({path, python_type(a), python_type(b), "their Python types differ"});
    return;
  }
  const size_t n = a.children.size(), m = b.children.size();
  if ((a.kind == K::list || a.kind == K::tuple) && n != m) {
    const std::string kind = a.kind == K::list ? "list" : "tuple";
    out.push_back({path, kind + " of length " + std::to_string(n),
                   kind + " of length " + std::to_string(m), "the lengths do not match"});
    return;
  }
  if (n != m) {
    std::vector<std::string> only;  // JAX's symmetric difference of the key sets
    for (const std::string& k : a.keys) {
      if (std::find(b.keys.begin(), b.keys.end(), k) == b.keys.end()) only.push_back(k);
    }
    for (const std::string& k : b.keys) {
      if (std::find(a.keys.begin(), a.keys.end(), k) == a.keys.end()) only.push_back(k);
    }
    std::sort(only.begin(), only.end());
    std::string why = "the numbers of children do not match";
    for (size_t i = 0; i < only.size(); ++i) {
      why += (i ? " '" : ", with the symmetric difference of key sets: {'") + only[i] + "'";
    }
    if (!only.empty()) why += "}";
    out.push_back({path, children_str(a), children_str(b), why});
    return;
  }
  if (a.keys != b.keys) {
    out.push_back({path, python_type(a) + " with pytree metadata " + keys_str(a),
                   python_type(b) + " with pytree metadata " + keys_str(b),
                   "the pytree node metadata does not match"});
    return;
  }
  for (size_t i = 0; i < n; ++i)
    tree_diffs(a.children[i], b.children[i], path + child_key(a, i), out);
}

std::string capitalized(std::string s) {
  if (!s.empty()) s[0] = char(std::toupper(static_cast<unsigned char>(s[0])));
  return s;
}

// JAX's list of differences: one sentence, or `  * ` items joined by newlines; `spaced`
// items (the structure and loop messages) end in ";\n", the others (cond's types) in ";".
std::string differences(const std::vector<std::string>& diffs, bool capitalize_one, bool spaced) {
  if (diffs.size() == 1) return (capitalize_one ? capitalized(diffs[0]) : diffs[0]) + ".\n";
  std::string out;
  for (size_t i = 0; i + 1 < diffs.size(); ++i) {
    out += (i ? "\n" : "") + ("  * " + diffs[i]) + (spaced ? ";\n" : ";");
  }
  return out + (spaced ? "" : "\n") + "  * " + diffs.back() + ".\n";
}

// JAX's _check_carry_type: the carry a loop body returns must have the input's types.
// `root` stands for the body's carry parameter, whose name C++ cannot know.
void check_carry(const char* what, const std::string& root, const TreeDef& in_def,
                 const std::vector<Aval>& in, const TreeDef& out_def,
                 const std::vector<Aval>& out) {
  auto component = [&](const std::string& path) {
    return path.empty() ? "the input carry " + root : "the input carry component " + root + path;
  };
  if (!(in_def == out_def)) {
    std::vector<TreeDiff> found;
    tree_diffs(in_def, out_def, "", found);
    std::vector<std::string> diffs;
    for (const TreeDiff& d : found) {
      diffs.push_back(component(d.path) + " is a " + d.thing1 +
                      " but the corresponding component of the carry output is a " + d.thing2 +
                      ", so " + d.why);
    }
    throw TypeError(std::string(what) +
                    " function carry input and carry output must have the same pytree "
                    "structure, but they differ:\n\n" +
                    differences(diffs, true, true) +
                    "\nRevise the function so that the carry output has the same pytree "
                    "structure as the carry input.");
  }
  std::vector<std::string> paths;
  leaf_paths(in_def, "", paths);
  std::vector<std::string> diffs;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string why = mismatch(in[i], out[i]);
    if (why.empty()) continue;
    diffs.push_back(component(paths[i]) + " has type " + type_name(in[i]) +
                    " but the corresponding output carry component has type " + type_name(out[i]) +
                    ", so " + why);
  }
  if (diffs.empty()) return;
  throw TypeError(std::string(what) +
                  " function carry input and carry output must have equal types, but they "
                  "differ:\n\n" +
                  differences(diffs, true, true) +
                  "\nRevise the function so that all output types match the corresponding "
                  "input types.");
}

// JAX's _promote_weak_typed_input: a weakly typed initial carry whose body result has
// another dtype (a literal 0 grown into a float) enters converted to the promoted dtype, and
// the body is traced again; one that differs only in weak type stays as it is, so the
// body's result types (weak or not) are the loop's.
bool promote_weak_carry(std::vector<Array>& init, std::vector<Aval>& carry,
                        std::span<const Aval> out) {
  bool changed = false;
  for (size_t i = 0; i < carry.size() && i < out.size(); ++i) {
    if (!carry[i].weak_type || (carry[i].dtype == out[i].dtype && carry[i].shape == out[i].shape))
      continue;
    const base::TypedDType both[] = {{carry[i].dtype, true}, {out[i].dtype, out[i].weak_type}};
    init[i] = frontend::convert(init[i], base::result_type(both).dtype);
    carry[i] = core::aval_of(init[i]);
    changed = true;
  }
  return changed;
}

// JAX's _check_branch_outputs for cond and switch branches.
void check_branch_pair(const std::string& api, const std::string& name1, const Traced& x,
                       const std::string& name2, const Traced& y) {
  auto at = [](const std::string& path) { return path.empty() ? "" : " at path " + path; };
  if (!(x.out_def == y.out_def)) {
    std::vector<TreeDiff> found;
    tree_diffs(x.out_def, y.out_def, "", found);
    std::vector<std::string> diffs;
    for (const TreeDiff& d : found) {
      diffs.push_back(name1 + " output" + at(d.path) + " is a " + d.thing1 + " but " + name2 +
                      " output" + at(d.path) + " is a " + d.thing2 + ", so " + d.why);
    }
    throw TypeError(api +
                    " branch outputs must have the same pytree structure, but they "
                    "differ:\n\n" +
                    differences(diffs, false, true) + "\nRevise " + name1 + " and/or " + name2 +
                    " so that they have the same pytree structure.");
  }
  std::vector<std::string> paths;
  leaf_paths(x.out_def, "", paths);
  std::vector<std::string> diffs;
  for (size_t r = 0; r < x.outs.size(); ++r) {
    const std::string why = mismatch(x.outs[r], y.outs[r]);
    if (why.empty()) continue;
    diffs.push_back("the output of " + name1 + at(paths[r]) + " has type " + type_name(x.outs[r]) +
                    " but the corresponding output of " + name2 + " has type " +
                    type_name(y.outs[r]) + ", so " + why);
  }
  if (diffs.empty()) return;
  throw TypeError(api + " branches must have equal output types but they differ.\n\n" +
                  differences(diffs, true, false) + "\nRevise " + name1 + " and/or " + name2 +
                  " so that all output types match.");
}

// cond compares true_fun (index 1) with false_fun; switch compares branch 0 with the rest.
void check_branches(bool is_switch, const std::vector<Traced>& branches) {
  if (!is_switch) {
    check_branch_pair("cond", "true_fun", branches[1], "false_fun", branches[0]);
    return;
  }
  for (size_t b = 1; b < branches.size(); ++b) {
    check_branch_pair("switch", "branch 0", branches[0], "branch" + std::to_string(b), branches[b]);
  }
}

// An aval as JAX's repr shows it: `ShapedArray(float32[], weak_type=True)`.
std::string shaped_array(const Aval& a) {
  return "ShapedArray(" + a.str() + (a.weak_type ? ", weak_type=True)" : ")");
}

// A pytree of avals as Python prints it: a bare one as its str, inner ones as their repr.
std::string avals_tree(const TreeDef& d, const std::vector<Aval>& avals, size_t& at, bool top) {
  if (d.kind == TreeDef::Kind::leaf) {
    const Aval& a = avals[at++];
    return top ? a.str() : shaped_array(a);
  }
  const bool list = d.kind == TreeDef::Kind::list;
  std::string out = d.kind == TreeDef::Kind::dict ? "{" : list ? "[" : "(";
  for (size_t i = 0; i < d.children.size(); ++i) {
    out += i ? ", " : "";
    if (d.kind == TreeDef::Kind::dict) out += "'" + d.keys[i] + "': ";
    out += avals_tree(d.children[i], avals, at, false);
  }
  if (d.kind == TreeDef::Kind::tuple && d.children.size() == 1) out += ",";
  return out + (d.kind == TreeDef::Kind::dict ? "}" : list ? "]" : ")");
}

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

// A value as JAX's messages show it: numpy's str, or the tracer's repr under jit.
std::string value_str(const Array& x) {
  if (core::tracer_of(x) != nullptr) return "JitTracer(" + core::aval_of(x).short_str() + ")";
  return x.str();
}

std::string policy_name(CheckpointPolicy p) {
  switch (p) {
    case CheckpointPolicy::none:
      return "None";
    case CheckpointPolicy::nothing_saveable:
      return "nothing_saveable";
    case CheckpointPolicy::everything_saveable:
      return "everything_saveable";
    case CheckpointPolicy::dots_saveable:
      return "DotsSaveable(only_if_no_batch_dims=False)";
    case CheckpointPolicy::dots_with_no_batch_dims_saveable:
      return "DotsSaveable(only_if_no_batch_dims=True)";
  }
  return "None";
}

Array scalar_i32(int64_t v) { return frontend::scalar_int(v, DType::int32); }

// True when two captured values are the same value (one tracer or one buffer), which
// JAX passes to the branches once.
bool same_value(const Array& a, const Array& b) {
  const auto* ta = core::tracer_of(a);
  if (ta != nullptr || core::tracer_of(b) != nullptr) return ta == core::tracer_of(b);
  return a.impl() == b.impl();
}

}  // namespace

// True for a C++ literal (`true`, `3`): JAX folds Python scalars' conversions at trace
// time, so they reach the primitive as literals.
bool is_host_literal(const Array& x) {
  return core::tracer_of(x) == nullptr && x.ndim() == 0 && !x.is_committed() &&
         (x.weak_type() || x.dtype() == DType::bool_);
}

Array cond_index(const ArrayLike& pred_like) {
  const Array& pred = pred_like.array();
  if (pred.ndim() != 0) {
    throw TypeError("Pred must be a scalar, got " + value_str(pred) + " of shape " +
                    shape_tuple(pred.shape()) + ".");
  }
  if (pred.dtype() != DType::bool_ && !is_integer(pred.dtype()) && !is_floating(pred.dtype())) {
    throw TypeError("Pred type must be either boolean or number, got " +
                    std::string(dtype_name(pred.dtype())) + ".");
  }
  if (is_host_literal(pred)) return scalar_i32(pred.item<double>() != 0 ? 1 : 0);
  Array p = pred;
  if (p.dtype() != DType::bool_) p = lax::ne(p, frontend::constant_like(p, 0));
  return lax::convert_element_type(p, DType::int32);
}

Array switch_index(const ArrayLike& index_like, size_t num_branches) {
  const Array& index = index_like.array();
  if (index.ndim() != 0) {
    throw TypeError("Branch index must be scalar, got " + value_str(index) + " of shape " +
                    shape_tuple(index.shape()) + ".");
  }
  if (!is_integer(index.dtype()) || index.dtype() == DType::bool_) {
    throw TypeError("Index type must be an integer, got " + value_str(index) + " as " +
                    std::string(dtype_name(index.dtype())));
  }
  if (num_branches == 0) throw ValueError("Empty branch sequence");
  if (num_branches == 1) return index;  // lax.switch calls the one branch: no clamp
  Array i = frontend::convert(index, DType::int32);
  return lax::clamp(scalar_i32(0), i, scalar_i32(int64_t(num_branches) - 1));
}

std::vector<Array> cond_leaves(const Array& index, const std::vector<FlatFn>& branches,
                               bool is_switch, const std::vector<Array>& operands,
                               TreeDef* out_def) {
  if (branches.size() == 1) return branches[0](operands, out_def);  // as lax.switch does
  const std::vector<Aval> in = avals_of(operands);
  std::vector<Traced> traced;
  for (const FlatFn& b : branches) traced.push_back(trace(b, in));
  check_branches(is_switch, traced);
  // Every branch takes every branch's captured values (JAX's common consts), each once:
  // cond lists true_fun's first, as JAX traces (true_fun, false_fun).
  std::vector<size_t> order(traced.size());
  for (size_t b = 0; b < order.size(); ++b) order[b] = is_switch ? b : order.size() - 1 - b;
  std::vector<Array> common;
  std::vector<std::vector<int>> slot(traced.size());  // branch const -> index in common
  for (size_t b : order) {
    for (const Array& c : traced[b].consts) {
      int at = -1;
      for (size_t k = 0; k < common.size() && at < 0; ++k) {
        const bool taken = std::find(slot[b].begin(), slot[b].end(), int(k)) != slot[b].end();
        if (!taken && same_value(common[k], c)) at = int(k);
      }
      if (at < 0) {
        at = int(common.size());
        common.push_back(c);
      }
      slot[b].push_back(at);
    }
  }
  std::vector<Array> args{index};
  args.insert(args.end(), common.begin(), common.end());
  args.insert(args.end(), operands.begin(), operands.end());
  core::ProgramList programs;
  for (size_t b = 0; b < traced.size(); ++b) {
    Program q = *traced[b].program;
    std::vector<int> invars(common.size(), -1);
    for (size_t k = 0; k < slot[b].size(); ++k) invars[size_t(slot[b][k])] = q.invars[k];
    for (size_t k = 0; k < common.size(); ++k) {
      if (invars[k] < 0) invars[k] = q.new_var(core::aval_of(common[k]));
    }
    invars.insert(invars.end(), q.invars.begin() + long(slot[b].size()), q.invars.end());
    q.invars = std::move(invars);
    programs.push_back(std::make_shared<const Program>(std::move(q)));
  }
  *out_def = traced[0].out_def;
  return core::bind(Prim::cond, std::move(args), Params{{"branches", programs}});
}

namespace {

// Returns which input of `p` its output `out` is, or -1.
int forwarded_input(const Program& p, size_t out) {
  const core::Atom& a = p.outvars[out];
  if (a.is_literal()) return -1;
  const auto it = std::find(p.invars.begin(), p.invars.end(), a.var);
  return it == p.invars.end() ? -1 : int(it - p.invars.begin());
}

// Binds scan on `body` (inputs: consts, carry, x slices; outputs: carry, ys) with JAX's
// forwarding (loops.py): a carry the body returns unchanged is read-only and becomes a
// const, and a y that is an x slice is not stacked again but is that xs operand.
std::vector<Array> bind_scan(Program body, const std::vector<Array>& consts,
                             const std::vector<Array>& init, const std::vector<Array>& xs,
                             int64_t length, const ScanArgs& args) {
  const size_t nc = consts.size(), nk = init.size(), ny = body.outvars.size() - nk;
  std::vector<bool> moved(nk);
  std::vector<int> x_of_y(ny, -1);
  for (size_t i = 0; i < nk; ++i) moved[i] = forwarded_input(body, i) == int(nc + i);
  for (size_t j = 0; j < ny; ++j) {
    const int in = forwarded_input(body, nk + j);
    if (in >= int(nc + nk)) x_of_y[j] = in - int(nc + nk);
  }
  std::vector<int> invars, kept_carry;
  std::vector<core::Atom> outvars;
  std::vector<Array> operands, carry_operands;
  for (size_t i = 0; i < nk; ++i) {
    if (!moved[i]) continue;
    invars.push_back(body.invars[nc + i]);
    operands.push_back(init[i]);
  }
  const int64_t num_consts = int64_t(operands.size() + nc);
  invars.insert(invars.end(), body.invars.begin(), body.invars.begin() + long(nc));
  operands.insert(operands.end(), consts.begin(), consts.end());
  for (size_t i = 0; i < nk; ++i) {
    if (moved[i]) continue;
    invars.push_back(body.invars[nc + i]);
    outvars.push_back(body.outvars[i]);
    operands.push_back(init[i]);
  }
  const int64_t num_carry = int64_t(outvars.size());
  invars.insert(invars.end(), body.invars.begin() + long(nc + nk), body.invars.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  for (size_t j = 0; j < ny; ++j) {
    if (x_of_y[j] < 0) outvars.push_back(body.outvars[nk + j]);
  }
  body.invars = std::move(invars);
  body.outvars = std::move(outvars);
  Params params{{"jaxpr", std::make_shared<const Program>(std::move(body))},
                {"length", length},
                {"num_carry", num_carry},
                {"num_consts", num_consts},
                {"reverse", args.reverse},
                {"unroll", args.unroll}};
  const std::vector<Array> outs = core::bind(Prim::scan, std::move(operands), std::move(params));
  std::vector<Array> result;
  size_t next = 0;
  for (size_t i = 0; i < nk; ++i) result.push_back(moved[i] ? init[i] : outs[next++]);
  for (size_t j = 0; j < ny; ++j)
    result.push_back(x_of_y[j] < 0 ? outs[next++] : xs[size_t(x_of_y[j])]);
  return result;
}

std::vector<Array> while_impl(const FlatFn& cond, const FlatFn& body,
                              const std::vector<Array>& init_in, const TreeDef& init_def,
                              const std::string& root) {
  std::vector<Array> init = init_in;
  std::vector<Aval> carry = avals_of(init);
  Traced c, b;
  for (int attempt = 0;; ++attempt) {
    c = trace(cond, carry);
    if (c.out_def.kind != TreeDef::Kind::leaf) {
      throw TypeError("cond_fun must return a boolean scalar, but got pytree " +
                      c.out_def.to_string() + ".");
    }
    if (c.outs.size() != 1 || !c.outs[0].shape.empty() || c.outs[0].dtype != DType::bool_) {
      std::string got;
      for (size_t i = 0; i < c.outs.size(); ++i) got += (i ? ", " : "") + shaped_array(c.outs[i]);
      throw TypeError("cond_fun must return a boolean scalar, but got output type(s) [" + got +
                      "].");
    }
    b = trace(body, carry);
    if (attempt > 0 || !promote_weak_carry(init, carry, b.outs)) break;
  }
  check_carry("while_loop body", root, init_def, carry, b.out_def, b.outs);
  std::vector<Array> args = c.consts;
  args.insert(args.end(), b.consts.begin(), b.consts.end());
  args.insert(args.end(), init.begin(), init.end());
  Params params{{"cond_jaxpr", c.program},
                {"cond_nconsts", int64_t(c.consts.size())},
                {"body_jaxpr", b.program},
                {"body_nconsts", int64_t(b.consts.size())}};
  return core::bind(Prim::while_, std::move(args), std::move(params));
}

std::vector<Array> scan_impl(const FlatFn& f, const std::vector<Array>& init_in,
                             const TreeDef& init_def, const std::vector<Array>& xs,
                             const ScanArgs& args, TreeDef* out_def, const std::string& root) {
  std::vector<int64_t> lengths;
  for (const Array& x : xs) {
    if (x.ndim() == 0) {
      throw ValueError(
          "scan got value with no leading axis to scan over: " + core::aval_of(x).str() + ".");
    }
    lengths.push_back(x.shape()[0]);
  }
  for (int64_t n : lengths) {
    if (n == lengths[0]) continue;
    std::string all;
    for (size_t i = 0; i < lengths.size(); ++i) all += (i ? ", " : "") + std::to_string(lengths[i]);
    throw ValueError("scan got values with different leading axis sizes: " + all + ".");
  }
  int64_t length = 0;
  if (args.length) {
    length = *args.length;
    if (!lengths.empty() && lengths[0] != length) {
      throw ValueError("scan got `length` argument of " + std::to_string(length) +
                       " which disagrees with leading axis sizes [" + std::to_string(lengths[0]) +
                       "].");
    }
  } else if (lengths.empty()) {
    throw ValueError("scan got no values to scan over and `length` not provided.");
  } else {
    length = lengths[0];
  }
  if (length < 0) throw ValueError("scan got a negative length " + std::to_string(length));
  if (args.unroll < 0) throw ValueError("`unroll` must be a `bool` or a non-negative `int`.");
  std::vector<Array> init = init_in;
  std::vector<Aval> carry = avals_of(init);
  std::vector<Aval> slices;
  for (const Array& x : xs) {
    Aval a = core::aval_of(x);
    a.shape.erase(a.shape.begin());
    slices.push_back(a);
  }
  Traced t;
  for (int attempt = 0;; ++attempt) {
    std::vector<Aval> in = carry;
    in.insert(in.end(), slices.begin(), slices.end());
    t = trace(f, in);
    if (t.out_def.children.size() != 2 || t.out_def.kind == TreeDef::Kind::dict) {
      size_t at = 0;
      throw TypeError("scan body output must be a pair, got " +
                      avals_tree(t.out_def, t.outs, at, true) + ".");
    }
    const TreeDef& carry_def = t.out_def.children[0];
    std::vector<Aval> carry_out(t.outs.begin(), t.outs.begin() + carry_def.num_leaves());
    if (carry_out.size() != carry.size()) {
      check_carry("scan body", root, init_def, carry, carry_def, carry_out);
    }
    if (attempt > 0 || !promote_weak_carry(init, carry, carry_out)) {
      check_carry("scan body", root, init_def, carry, carry_def, carry_out);
      break;
    }
  }
  *out_def = t.out_def;
  return bind_scan(*t.program, t.consts, init, xs, length, args);
}

}  // namespace

std::vector<Array> while_leaves(const FlatFn& cond, const FlatFn& body,
                                const std::vector<Array>& init, const TreeDef& init_def) {
  return while_impl(cond, body, init, init_def, "c");
}

std::vector<Array> scan_leaves(const FlatFn& f, const std::vector<Array>& init,
                               const TreeDef& init_def, const std::vector<Array>& xs,
                               const ScanArgs& args, TreeDef* out_def) {
  return scan_impl(f, init, init_def, xs, args, out_def, "c");
}

std::vector<Array> fori_leaves(const Array& lower, const Array& upper, const FlatFn& body,
                               const std::vector<Array>& init, const TreeDef& init_def) {
  for (const Array* b : {&lower, &upper}) {
    if (b->ndim() != 0 || !is_integer(b->dtype()) || b->dtype() == DType::bool_) {
      throw TypeError("fori_loop: lower and upper must be integer scalars, got " +
                      core::aval_of(lower).str() + " and " + core::aval_of(upper).str());
    }
  }
  // JAX keeps the bounds' dtype (and a literal's weak type, which the counter inherits);
  // a weak bound alone takes the other's signed dtype.
  Array lo = lower, hi = upper;
  if (lo.dtype() != hi.dtype()) {
    const bool both_signed = is_signed_integer(lo.dtype()) && is_signed_integer(hi.dtype());
    if (both_signed && lo.weak_type() && !hi.weak_type()) {
      lo = frontend::convert(lo, hi.dtype());
    } else if (both_signed && hi.weak_type() && !lo.weak_type()) {
      hi = frontend::convert(hi, lo.dtype());
    } else {
      throw TypeError("lower and upper arguments to fori_loop must have equal types, got " +
                      std::string(dtype_name(lower.dtype())) + " and " +
                      std::string(dtype_name(upper.dtype())));
    }
  }
  const bool concrete = core::tracer_of(lo) == nullptr && core::tracer_of(hi) == nullptr;
  if (concrete) {
    // Static bounds: a scan over (i, carry) with no xs, reverse-differentiable.
    const int64_t first = lo.item<int64_t>();
    const int64_t last = hi.item<int64_t>();
    const FlatFn step = [&](const std::vector<Array>& leaves, TreeDef* def) {
      Array next = lax::add(leaves[0], frontend::scalar_int(1, DType::int32, true));
      TreeDef carry_def;
      std::vector<Array> out = body(leaves, &carry_def);
      out.insert(out.begin(), next);
      *def = TreeDef{TreeDef::Kind::tuple,
                     {},
                     {},
                     {TreeDef{TreeDef::Kind::tuple, {}, {}, {TreeDef{}, carry_def}},
                      TreeDef{TreeDef::Kind::list, {}, {}, {}}}};
      return out;
    };
    // The counter starts as JAX's Python int: a weak int32.
    std::vector<Array> carry{frontend::scalar_int(first, DType::int32, true)};
    carry.insert(carry.end(), init.begin(), init.end());
    TreeDef out_def;
    std::vector<Array> outs =
        scan_impl(step, carry, TreeDef{TreeDef::Kind::tuple, {}, {}, {TreeDef{}, init_def}}, {},
                  ScanArgs{std::max<int64_t>(last - first, 0), false, 1}, &out_def, "loop_carry");
    return std::vector<Array>(outs.begin() + 1, outs.end());
  }
  const FlatFn cond = [](const std::vector<Array>& leaves, TreeDef* def) {
    *def = TreeDef{};
    return std::vector<Array>{lax::lt(leaves[0], leaves[1])};
  };
  const FlatFn step = [&](const std::vector<Array>& leaves, TreeDef* def) {
    Array next = lax::add(leaves[0], frontend::constant_like(leaves[0], 1));
    std::vector<Array> args{leaves[0]};
    args.insert(args.end(), leaves.begin() + 2, leaves.end());
    TreeDef carry_def;
    std::vector<Array> out = body(args, &carry_def);
    out.insert(out.begin(), {next, leaves[1]});
    *def = TreeDef{TreeDef::Kind::tuple, {}, {}, {TreeDef{}, TreeDef{}, carry_def}};
    return out;
  };
  std::vector<Array> carry{lo, hi};
  carry.insert(carry.end(), init.begin(), init.end());
  std::vector<Array> outs = while_impl(
      cond, step, carry, TreeDef{TreeDef::Kind::tuple, {}, {}, {TreeDef{}, TreeDef{}, init_def}},
      "loop_carry");
  return std::vector<Array>(outs.begin() + 2, outs.end());
}

std::vector<Array> checkpoint_leaves(const FlatFn& f, const std::vector<Array>& args,
                                     CheckpointPolicy policy, bool prevent_cse, TreeDef* out_def) {
  Traced t = trace(f, avals_of(args));
  std::vector<Array> operands = t.consts;
  operands.insert(operands.end(), args.begin(), args.end());
  Params params{{"jaxpr", t.program},
                {"policy", policy_name(policy)},
                {"prevent_cse", prevent_cse},
                {"differentiated", false}};
  *out_def = t.out_def;
  return core::bind(Prim::checkpoint, std::move(operands), std::move(params));
}

}  // namespace parax::detail
