// lax's control flow: each function traces its callables into sub-programs (their
// captured values become leading operands, as JAX hoists a closed jaxpr's consts), checks
// what JAX's Python wrappers check, with JAX's messages, and binds one primitive.
#include "parax/control_flow.h"

#include <sstream>

#include "api/frontend.h"
#include "core/program_trace.h"
#include "parax/lax.h"

namespace parax::detail {
namespace {

using core::Aval;
using core::Params;
using core::Prim;
using core::Program;
using ProgramRef = std::shared_ptr<const Program>;

std::vector<Aval> avals_of(const std::vector<Array>& xs) {
  std::vector<Aval> out;
  for (const Array& x : xs) out.push_back(core::aval_of(x));
  return out;
}

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

// Why two types differ, in JAX's words, or empty when only weak types differ.
std::string mismatch(const Aval& a, const Aval& b) {
  if (a.shape != b.shape) return "the shapes do not match";
  if (a.dtype != b.dtype) return "the dtypes do not match";
  return {};
}

// JAX's _check_carry_type: the carry a loop body returns must have the input's types.
void check_carry(const char* what, const std::string& root, const TreeDef& in_def,
                 const std::vector<Aval>& in, const TreeDef& out_def,
                 const std::vector<Aval>& out) {
  if (!(in_def == out_def)) {
    throw TypeError(std::string(what) +
                    " function carry input and carry output must have the same pytree "
                    "structure, but they differ:\n\nThe input carry " +
                    root + " is a " + in_def.to_string() +
                    " but the corresponding component of the carry output "
                    "is a " +
                    out_def.to_string() +
                    ", so their Python types differ.\n\nRevise the function so that the carry "
                    "output has the same pytree structure as the carry input.");
  }
  std::vector<std::string> paths;
  leaf_paths(in_def, root, paths);
  std::vector<std::string> diffs;
  for (size_t i = 0; i < in.size(); ++i) {
    const std::string why = mismatch(in[i], out[i]);
    if (why.empty()) continue;
    const std::string name = in.size() == 1 && in_def.kind == TreeDef::Kind::leaf
                                 ? "carry " + paths[i]
                                 : "carry component " + paths[i];
    diffs.push_back("input " + name + " has type " + type_name(in[i]) +
                    " but the corresponding output carry component has type " + type_name(out[i]) +
                    ", so " + why);
  }
  if (diffs.empty()) return;
  std::string msg = std::string(what) +
                    " function carry input and carry output must have equal types, but they "
                    "differ:\n\n";
  if (diffs.size() == 1) {
    msg += "The " + diffs[0] + ".\n\n";
  } else {
    for (const std::string& d : diffs) msg += "  * the " + d + ";\n";
    msg += "\n";
  }
  throw TypeError(msg +
                  "Revise the function so that all output types match the corresponding "
                  "input types.");
}

// A carry that enters weakly typed and leaves strongly typed (1.0 grown by an f32 array)
// is traced again as strong, as JAX's _promote_weak_typed_inputs does.
bool strengthen(std::vector<Aval>& carry, std::span<const Aval> out) {
  bool changed = false;
  for (size_t i = 0; i < carry.size() && i < out.size(); ++i) {
    if (carry[i].weak_type && !out[i].weak_type && carry[i].dtype == out[i].dtype &&
        carry[i].shape == out[i].shape) {
      carry[i].weak_type = false;
      changed = true;
    }
  }
  return changed;
}

// Returns `p` taking `before` unused inputs ahead of its own and `after` behind them.
ProgramRef with_unused_inputs(const ProgramRef& p, const std::vector<Aval>& before,
                              const std::vector<Aval>& after) {
  if (before.empty() && after.empty()) return p;
  Program q = *p;
  std::vector<int> head, tail;
  for (const Aval& a : before) head.push_back(q.new_var(a));
  for (const Aval& a : after) tail.push_back(q.new_var(a));
  q.invars.insert(q.invars.begin(), head.begin(), head.end());
  q.invars.insert(q.invars.end(), tail.begin(), tail.end());
  return std::make_shared<const Program>(std::move(q));
}

std::string pytree_kind(const TreeDef& d) {
  switch (d.kind) {
    case TreeDef::Kind::leaf:
      return "a pytree leaf";
    case TreeDef::Kind::list:
      return "a <class 'list'>";
    case TreeDef::Kind::tuple:
      return "a <class 'tuple'>";
    case TreeDef::Kind::dict:
      return "a <class 'dict'>";
    case TreeDef::Kind::custom:
      return "a " + d.type_name;
  }
  return "a pytree";
}

// JAX's _check_tree_and_avals for cond and switch branches.
void check_branches(bool is_switch, const std::vector<Traced>& branches) {
  auto name = [&](size_t b) {
    if (!is_switch) return std::string(b == 1 ? "true_fun" : "false_fun");
    return b == 0 ? std::string("branch 0") : "branch" + std::to_string(b);
  };
  // cond reports true_fun (index 1) first, switch branch 0 first.
  const size_t first = is_switch ? 0 : 1;
  for (size_t b = 0; b < branches.size(); ++b) {
    if (b == first) continue;
    const Traced& x = branches[first];
    const Traced& y = branches[b];
    const std::string which = is_switch ? "switch" : "cond";
    if (!(x.out_def == y.out_def)) {
      throw TypeError(which +
                      " branch outputs must have the same pytree structure, but they "
                      "differ:\n\n" +
                      name(first) + " output is " + pytree_kind(x.out_def) + " but " + name(b) +
                      " output is " + pytree_kind(y.out_def) +
                      ", so their Python types differ.\n\nRevise " + name(first) + " and/or " +
                      name(b) + " so that they have the same pytree structure.");
    }
    for (size_t r = 0; r < x.outs.size(); ++r) {
      const std::string why = mismatch(x.outs[r], y.outs[r]);
      if (why.empty()) continue;
      throw TypeError(which + " branches must have equal output types but they differ.\n\n" +
                      "The output of " + name(first) + " has type " + type_name(x.outs[r]) +
                      " but the corresponding output of " + name(b) + " has type " +
                      type_name(y.outs[r]) + ", so " + why + ".\n\nRevise " + name(first) +
                      " and/or " + name(b) + " so that all output types match.");
    }
  }
}

std::string shape_tuple(const Shape& s) {
  std::string out = "(";
  for (size_t i = 0; i < s.size(); ++i) out += (i ? ", " : "") + std::to_string(s[i]);
  return out + (s.size() == 1 ? ",)" : ")");
}

std::string value_str(const Array& x) {
  if (core::tracer_of(x) != nullptr) return "Traced<" + core::aval_of(x).short_str() + ">";
  std::ostringstream os;
  os << x;
  return os.str();
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

}  // namespace

Array cond_index(const ArrayLike& pred_like) {
  const Array& pred = pred_like.array();
  if (pred.ndim() != 0) {
    throw TypeError("Pred must be a scalar, got " + value_str(pred) + " of shape " +
                    shape_tuple(pred.shape()) + ".");
  }
  Array p = pred;
  if (p.dtype() != DType::bool_) {
    if (!is_integer(p.dtype()) && !is_floating(p.dtype())) {
      throw TypeError("Pred type must be either boolean or number, got " +
                      std::string(dtype_name(p.dtype())) + ".");
    }
    p = lax::ne(p, frontend::constant_like(p, 0));
  }
  return lax::convert_element_type(p, DType::int32);
}

Array switch_index(const ArrayLike& index_like, size_t num_branches) {
  const Array& index = index_like.array();
  if (num_branches == 0) throw ValueError("Empty branch sequence");
  if (index.ndim() != 0) {
    throw TypeError("Branch index must be scalar, got " + value_str(index) + " of shape " +
                    shape_tuple(index.shape()) + ".");
  }
  if (!is_integer(index.dtype()) || index.dtype() == DType::bool_) {
    throw TypeError("Index type must be an integer, got " + value_str(index) + " as " +
                    std::string(dtype_name(index.dtype())));
  }
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
  // Every branch takes every branch's captured values (JAX's common consts).
  std::vector<Array> args{index};
  std::vector<std::vector<Aval>> const_avals;
  for (const Traced& t : traced) {
    args.insert(args.end(), t.consts.begin(), t.consts.end());
    const_avals.push_back(avals_of(t.consts));
  }
  args.insert(args.end(), operands.begin(), operands.end());
  core::ProgramList programs;
  for (size_t b = 0; b < traced.size(); ++b) {
    std::vector<Aval> before, after;
    for (size_t o = 0; o < traced.size(); ++o) {
      if (o == b) continue;
      auto& dst = o < b ? before : after;
      dst.insert(dst.end(), const_avals[o].begin(), const_avals[o].end());
    }
    // The branch's own consts lead its inputs; others' go around them in branch order.
    Program q = *with_unused_inputs(traced[b].program, {}, {});
    std::vector<int> own(q.invars.begin(), q.invars.begin() + long(traced[b].consts.size()));
    std::vector<int> rest(q.invars.begin() + long(traced[b].consts.size()), q.invars.end());
    std::vector<int> invars;
    for (const Aval& a : before) invars.push_back(q.new_var(a));
    invars.insert(invars.end(), own.begin(), own.end());
    for (const Aval& a : after) invars.push_back(q.new_var(a));
    invars.insert(invars.end(), rest.begin(), rest.end());
    q.invars = std::move(invars);
    programs.push_back(std::make_shared<const Program>(std::move(q)));
  }
  *out_def = traced[0].out_def;
  return core::bind(Prim::cond, std::move(args), Params{{"branches", programs}});
}

namespace {

std::vector<Array> while_impl(const FlatFn& cond, const FlatFn& body,
                              const std::vector<Array>& init, const TreeDef& init_def,
                              const std::string& root) {
  std::vector<Aval> carry = avals_of(init);
  Traced c, b;
  for (int attempt = 0;; ++attempt) {
    c = trace(cond, carry);
    if (c.outs.size() != 1 || !c.outs[0].shape.empty() || c.outs[0].dtype != DType::bool_) {
      std::string got;
      for (size_t i = 0; i < c.outs.size(); ++i) {
        got += (i ? ", " : "") + std::string("ShapedArray(") + c.outs[i].str() +
               (c.outs[i].weak_type ? ", weak_type=True)" : ")");
      }
      throw TypeError("cond_fun must return a boolean scalar, but got output type(s) [" + got +
                      "].");
    }
    b = trace(body, carry);
    check_carry("while_loop body", root, init_def, carry, b.out_def, b.outs);
    if (attempt > 0 || !strengthen(carry, b.outs)) break;
  }
  std::vector<Array> args = c.consts;
  args.insert(args.end(), b.consts.begin(), b.consts.end());
  args.insert(args.end(), init.begin(), init.end());
  Params params{{"cond_jaxpr", c.program},
                {"cond_nconsts", int64_t(c.consts.size())},
                {"body_jaxpr", b.program},
                {"body_nconsts", int64_t(b.consts.size())}};
  return core::bind(Prim::while_, std::move(args), std::move(params));
}

std::vector<Array> scan_impl(const FlatFn& f, const std::vector<Array>& init,
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
  if (args.unroll < 1)
    throw ValueError("scan: unroll must be at least 1, got " + std::to_string(args.unroll));
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
    if (t.out_def.children.size() != 2) {
      throw TypeError("scan body output must be a pair (carry, y), got " + t.out_def.to_string());
    }
    const TreeDef& carry_def = t.out_def.children[0];
    std::vector<Aval> carry_out(t.outs.begin(), t.outs.begin() + carry_def.num_leaves());
    check_carry("scan body", root, init_def, carry, carry_def, carry_out);
    if (attempt > 0 || !strengthen(carry, carry_out)) break;
  }
  std::vector<Array> operands = t.consts;
  operands.insert(operands.end(), init.begin(), init.end());
  operands.insert(operands.end(), xs.begin(), xs.end());
  Params params{{"jaxpr", t.program},
                {"length", length},
                {"num_carry", int64_t(init.size())},
                {"num_consts", int64_t(t.consts.size())},
                {"reverse", args.reverse},
                {"unroll", args.unroll}};
  *out_def = t.out_def;
  return core::bind(Prim::scan, std::move(operands), std::move(params));
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
  Array lo = frontend::convert(lower, DType::int32);
  Array hi = frontend::convert(upper, DType::int32);
  const bool concrete = core::tracer_of(lo) == nullptr && core::tracer_of(hi) == nullptr;
  if (concrete) {
    // Static bounds: a scan over (i, carry) with no xs, reverse-differentiable.
    const int64_t first = lo.item<int32_t>();
    const int64_t last = hi.item<int32_t>();
    const FlatFn step = [&](const std::vector<Array>& leaves, TreeDef* def) {
      Array next = lax::add(leaves[0], scalar_i32(1));
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
    std::vector<Array> carry{scalar_i32(first)};
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
    Array next = lax::add(leaves[0], scalar_i32(1));
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
