// custom_jvp and custom_vjp: trace the function and its rules (the rules on the types the
// function's call gives them: tangents of the arguments, fwd's residuals, cotangents of
// the results), check the rules' outputs as JAX does, and bind one custom_jvp_call or
// custom_vjp_call. A rule output JAX would reject when it runs the rule is kept as an
// error in the equation, raised then (so calling f without differentiating it works).
#include "parax/custom_derivatives.h"

#include <map>
#include <optional>

#include "core/array_value.h"
#include "core/autodiff.h"
#include "core/program_trace.h"
#include "core/trace.h"
#include "parax/lax.h"
#include "prims/program_rules.h"

namespace parax::detail {
namespace {

using core::Aval;
using core::avals_of;
using core::ClosedProgram;
using core::Params;
using core::Prim;
using core::Program;
using ProgramRef = std::shared_ptr<const Program>;

Aval strip_weak(Aval a) {
  a.weak_type = false;
  return a;
}

bool typematch(const Aval& a, const Aval& b) { return a.shape == b.shape && a.dtype == b.dtype; }

// The tree `def` with its leaves written as `leaves` says, as JAX prints a pytree of
// strings with the quotes removed: `(float32[], float32[])`, `{b: float32[3]}`.
std::string tree_text(const TreeDef& def, const std::vector<std::string>& leaves, size_t& next) {
  if (def.kind == TreeDef::Kind::leaf) return leaves.at(next++);
  std::string inner;
  for (size_t i = 0; i < def.children.size(); ++i) {
    inner += i ? ", " : "";
    if (def.kind == TreeDef::Kind::dict) inner += def.keys[i] + ": ";
    inner += tree_text(def.children[i], leaves, next);
  }
  switch (def.kind) {
    case TreeDef::Kind::list:
      return "[" + inner + "]";
    case TreeDef::Kind::dict:
      return "{" + inner + "}";
    case TreeDef::Kind::tuple:
      return "(" + inner + (def.children.size() == 1 ? ",)" : ")");
    default:
      return def.type_name + "(" + inner + ")";
  }
}

std::string typed_tree(const TreeDef& def, const std::vector<Aval>& avals) {
  std::vector<std::string> leaves;
  for (const Aval& a : avals) leaves.push_back(a.str());
  size_t next = 0;
  return tree_text(def, leaves, next);
}

// JAX's keystr of each leaf of `def`: `[0]`, `[1]['w']`.
void key_paths(const TreeDef& def, const std::string& at, std::vector<std::string>& out) {
  if (def.kind == TreeDef::Kind::leaf) {
    out.push_back(at);
    return;
  }
  for (size_t i = 0; i < def.children.size(); ++i) {
    const std::string key =
        def.kind == TreeDef::Kind::dict ? "['" + def.keys[i] + "']" : "[" + std::to_string(i) + "]";
    key_paths(def.children[i], at + key, out);
  }
}

std::string name_or(const std::string& name, const CustomOptions& o, const char* suffix) {
  return name.empty() ? o.name + suffix : name;
}

// JAX's checks on a jvp rule's output (_flatten_jvp); returns the error, or empty.
std::string check_jvp_output(const FlatPair& r, const TreeDef& out_def,
                             const std::vector<Aval>& out_avals, const CustomOptions& o) {
  const std::string rule = name_or(o.jvp_name, o, "_jvp");
  const std::string head = "Custom JVP rule " + rule + " for function " + o.name + " must ";
  if (r.first_def != r.second_def) {
    return head +
           "produce primal and tangent outputs with equal container (pytree) structures, but "
           "got " +
           r.first_def.to_string() + " and " + r.second_def.to_string() + " respectively.";
  }
  const std::vector<Aval> primal = avals_of(r.first);
  const std::string pair_head =
      head +
      "produce a pair (list or tuple of length two) where the first element represents the "
      "primal output (equal in value to the output of the custom_jvp-decorated function " +
      o.name + ", ";
  const std::string got = "    " + typed_tree(r.first_def, primal) + "\n";
  const std::string want = "    " + typed_tree(out_def, out_avals);
  if (r.first_def != out_def) {
    return pair_head +
           "and in particular of the same container/pytree structure), but instead the JVP "
           "rule output's first element had container/pytree structure:\n" +
           got + "while the custom_jvp-decorated function " + o.name +
           " had output container/pytree structure:\n" + want + ".";
  }
  for (size_t i = 0; i < primal.size(); ++i) {
    if (typematch(primal[i], out_avals[i])) continue;
    return pair_head +
           "and in particular with leaves of the same shape/dtype), but instead the JVP rule "
           "output's first element had shapes/dtypes of:\n" +
           got + "while the custom_jvp-decorated function " + o.name +
           " had output shapes/dtypes of:\n" + want;
  }
  // parax has no float0: an integer result's tangent is not checked (it is zero).
  std::vector<std::string> bad;
  std::string single;
  for (size_t i = 0; i < primal.size(); ++i) {
    const Aval p = strip_weak(primal[i]);
    const Aval t = strip_weak(core::aval_of(r.second[i]));
    if (!is_floating(p.dtype) || typematch(p, t)) continue;
    single = "Expected " + p.str() + " (tangent type of " + p.str() + ") but got " + t.str() + ".";
    bad.push_back("  primal " + p.str() + " with tangent " + t.str() + ", expecting tangent " +
                  p.str());
  }
  if (bad.empty()) return {};
  const std::string msg =
      "Custom JVP rule must produce primal and tangent outputs with corresponding shapes and "
      "dtypes";
  if (primal.size() == 1) return msg + ". " + single;
  std::string lines;
  for (size_t i = 0; i < bad.size(); ++i) lines += (i ? "\n" : "") + bad[i];
  return msg + ", but got:\n" + lines;
}

// A traced program's captured constants become leading operands: each program of the
// call takes the constants of all of them, in order, then its own inputs.

std::vector<Array> concat(std::vector<Array> a, const std::vector<Array>& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

Array zeros_of(const Aval& a) {
  Array z = core::literal_array(core::Literal{Aval{{}, a.dtype, false}, 0.0});
  if (a.shape.empty()) return z;
  return lax::broadcast_in_dim(z, a.shape, {});
}

// How deep the rules of one custom function are being traced on this thread: a rule that
// calls its function traces the rule again for that call. Past kMaxRuleDepth (the order
// of derivatives supported through the rule), the call is differentiated as f itself.
constexpr int kMaxRuleDepth = 4;
thread_local std::map<const void*, int> g_rule_depth;

class RuleDepth {
 public:
  explicit RuleDepth(const void* id) : id_(id) { ++g_rule_depth[id]; }
  ~RuleDepth() {
    if (--g_rule_depth[id_] == 0) g_rule_depth.erase(id_);
  }
  RuleDepth(const RuleDepth&) = delete;
  RuleDepth& operator=(const RuleDepth&) = delete;
  static bool exhausted(const void* id) {
    auto it = g_rule_depth.find(id);
    return it != g_rule_depth.end() && it->second >= kMaxRuleDepth;
  }

 private:
  const void* id_;
};

std::vector<Array> inputs_of(const ClosedProgram& c, const std::vector<Array>& args) {
  return concat(c.consts, args);
}

}  // namespace

bool is_traced(const Array& x) { return core::tracer_of(x) != nullptr; }

void throw_traced_nondiff() {
  throw UnexpectedTracerError(
      "Found a JAX Tracer object passed as an argument to a custom_vjp function in a position "
      "indicated by nondiff_argnums as non-differentiable. Tracers cannot be passed as "
      "non-differentiable arguments to custom_vjp functions; instead, nondiff_argnums should "
      "only be used for arguments that can't be or contain JAX tracers, e.g. function-valued "
      "arguments. In particular, array-valued arguments should typically not be indicated as "
      "nondiff_argnums.\nSee https://docs.jax.dev/en/latest/errors.html"
      "#jax.errors.UnexpectedTracerError");
}

void throw_no_rule(const char* kind, const CustomOptions& options) {
  const std::string how = std::string(kind) == "JVP" ? "defjvp" : "defvjp";
  throw AttributeError("No " + std::string(kind) + " defined for custom_" +
                       (std::string(kind) == "JVP" ? "jvp" : "vjp") + " function " + options.name +
                       " using " + how + ".");
}

namespace {

// The rule's tangent outputs with its symbolic zeros (JAX's SymbolicZero) made zeros.
std::vector<Array> instantiate_zeros(std::vector<Array> ts) {
  for (Array& t : ts) {
    if (is_symbolic_zero(t)) t = zeros_of(strip_weak(core::aval_of(t)));
  }
  return ts;
}

// What a symbolic_zeros rule needs to be traced again: the rule, the arguments' types and
// what its outputs are checked against.
struct KeptJvpRule {
  FlatJvpRule rule;
  std::vector<Aval> avals;
  TreeDef out_def;
  std::vector<Aval> out_avals;
  CustomOptions options;
};

// Traces the rule with the argument tangents `zero` marks given as symbolic zeros
// (symbolic_zeros): the program takes the arguments and the other tangents. Its outputs
// are checked as JAX checks each trace of the rule.
prims::ZeroPatternRule trace_zero_pattern(const KeptJvpRule& k, const std::vector<bool>& zero) {
  const std::vector<Aval>& avals = k.avals;
  std::vector<Aval> in = avals;
  for (size_t i = 0; i < avals.size(); ++i) {
    if (!zero[i]) in.push_back(strip_weak(avals[i]));
  }
  std::vector<bool> out_zero;
  core::ClosedProgram c = core::trace_to_program(in, [&](const std::vector<Array>& xs) {
    const std::vector<Array> p(xs.begin(), xs.begin() + long(avals.size()));
    std::vector<Array> t;
    size_t next = avals.size();
    for (size_t i = 0; i < avals.size(); ++i) {
      t.push_back(zero[i] ? symbolic_zero(p[i]) : xs[next++]);
    }
    FlatPair r = k.rule(p, t);
    const std::string error = check_jvp_output(r, k.out_def, k.out_avals, k.options);
    if (!error.empty()) throw TypeError(error);
    std::vector<Array> outs = r.first;
    for (const Array& to : r.second) {
      out_zero.push_back(is_symbolic_zero(to));
      if (!out_zero.back()) outs.push_back(to);
    }
    return outs;
  });
  return {core::lift_consts(c), c.consts, std::move(out_zero)};
}

}  // namespace

std::vector<Array> custom_jvp_flat(const std::vector<Array>& leaves,
                                   const std::vector<TreeDef>& defs, const FlatFn& f,
                                   const FlatJvpRule& rule, TreeDef* out_def,
                                   const CustomOptions& options, const void* id) {
  (void)defs;
  // Called eagerly, f runs as it is: JAX's eval trace calls the function, and the rule is
  // traced only under a transform.
  if (core::current_trace() == nullptr) return f(leaves, out_def);
  const std::vector<Aval> avals = avals_of(leaves);
  ClosedProgram fp =
      core::trace_to_program(avals, [&](const std::vector<Array>& xs) { return f(xs, out_def); });
  const std::vector<Aval> out_avals = [&] {
    std::vector<Aval> out;
    for (const core::Atom& a : fp.program->outvars) out.push_back(fp.program->aval_of(a));
    return out;
  }();
  std::vector<Aval> rule_avals = avals;
  for (const Aval& a : avals) rule_avals.push_back(strip_weak(a));
  const size_t n = avals.size();
  std::string error;
  const bool fallback = RuleDepth::exhausted(id);
  RuleDepth depth(id);
  ClosedProgram jp = core::trace_to_program(rule_avals, [&](const std::vector<Array>& xs) {
    const std::vector<Array> p(xs.begin(), xs.begin() + long(n));
    const std::vector<Array> t(xs.begin() + long(n), xs.end());
    // A rule that raises NotImplementedError raises it when the derivative is needed, as
    // JAX's does (it traces rules only then); meanwhile f's own derivative stands in.
    std::optional<FlatPair> r;
    if (!fallback) {
      try {
        r = rule(p, t);
      } catch (const NotImplementedError& e) {
        error = std::string("NotImplementedError: ") + e.what();
      }
    }
    if (!r) {  // f's own derivative
      std::vector<Array> ts(fp.consts.size());
      ts.insert(ts.end(), t.begin(), t.end());
      auto [outs, touts] = core::jvp_program(*fp.program, inputs_of(fp, p), ts);
      for (size_t o = 0; o < touts.size(); ++o) {
        if (!touts[o].valid()) touts[o] = zeros_of(strip_weak(core::aval_of(outs[o])));
      }
      return concat(outs, touts);
    }
    error = check_jvp_output(*r, *out_def, out_avals, options);
    return concat(r->first, instantiate_zeros(r->second));
  });
  prims::SharedConsts a = prims::share_consts({fp, jp});
  const bool symbolic = options.symbolic_zeros && !fallback;
  Params params{{"jaxpr", a.programs[0]},
                {"jvp", name_or(options.jvp_name, options, "_jvp")},
                {"jvp_jaxpr_fun", a.programs[1]},
                {"name", options.name},
                {"num_consts", int64_t(a.consts.size())},
                {"symbolic_zeros", symbolic}};
  if (!error.empty()) {
    params.set("jvp_error",
               error.starts_with("NotImplementedError: ") ? error : "TypeError: " + error);
  }
  // With symbolic_zeros, the jvp of this call traces the rule again for the tangents it
  // is given: the rule is kept with the call's program.
  if (symbolic) {
    auto kept =
        std::make_shared<const KeptJvpRule>(KeptJvpRule{rule, avals, *out_def, out_avals, options});
    prims::SymbolicZerosRules::add(a.programs[1], [kept](const std::vector<bool>& zero) {
      return trace_zero_pattern(*kept, zero);
    });
  }
  return core::bind(Prim::custom_jvp_call, concat(a.consts, leaves), std::move(params));
}

namespace {

// JAX's checks on fwd's output (_flatten_fwd); returns the error, or empty.
std::string check_fwd_output(const FlatPair& r, const TreeDef& out_def,
                             const std::vector<Aval>& out_avals, const CustomOptions& o) {
  const std::string fwd = name_or(o.fwd_name, o, "_fwd");
  const std::vector<Aval> primal = avals_of(r.first);
  const std::string got = "    " + typed_tree(r.first_def, primal) + "\n";
  const std::string want = "    " + typed_tree(out_def, out_avals);
  const std::string head = "Custom VJP fwd rule " + fwd + " for function " + o.name +
                           " must produce a pair (list or tuple of length two) where the first "
                           "element represents the primal output (equal to the output of the "
                           "custom_vjp-decorated function " +
                           o.name +
                           ") and the second element represents residuals (i.e. values stored "
                           "from the forward pass for use on the backward pass), but instead "
                           "the fwd rule output's first element had ";
  if (r.first_def != out_def) {
    return head + "container/pytree structure:\n" + got +
           "while the custom_vjp-decorated function " + o.name +
           " had output container/pytree structure:\n" + want + ".";
  }
  for (size_t i = 0; i < primal.size(); ++i) {
    if (typematch(primal[i], out_avals[i])) continue;
    return head + "shapes/dtypes of:\n" + got + "while the custom_vjp-decorated function " +
           o.name + " had output shapes/dtypes of:\n" + want;
  }
  return {};
}

// The cotangents bwd returned, as one leaf per argument leaf (zeros where it returned an
// invalid Array, JAX's None), after JAX's checks (_flatten_bwd); sets `error` instead of
// raising.
std::vector<Array> bwd_cotangents(const std::pair<std::vector<Array>, TreeDef>& got,
                                  const std::vector<TreeDef>& defs,
                                  const std::vector<Aval>& arg_avals, const CustomOptions& o,
                                  std::string& error) {
  const TreeDef args{TreeDef::Kind::tuple, "", {}, defs};
  const TreeDef& def = got.second;
  const bool as_tuple =
      (def.kind == TreeDef::Kind::tuple || def.kind == TreeDef::Kind::list) && def.children == defs;
  const bool bare = defs.size() == 1 && def == defs[0];  // one argument: its cotangent alone
  std::vector<Array> out;
  for (const Aval& a : arg_avals) out.push_back(zeros_of(strip_weak(a)));
  if (!as_tuple && !bare) {
    error =
        "TypeError: Custom VJP bwd rule must produce an output with the same container (pytree) "
        "structure as the args tuple of the primal function, and in particular must produce a "
        "tuple of length equal to the number of arguments to the primal function, but got bwd "
        "output structure " +
        def.to_string() + " for primal input structure " + args.to_string() + ".";
    return out;
  }
  std::vector<std::string> paths;
  key_paths(args, "", paths);
  for (size_t i = 0; i < arg_avals.size(); ++i) {
    const Array& ct = got.first[i];
    if (!ct.valid() || !is_floating(arg_avals[i].dtype)) continue;
    const Aval want = strip_weak(arg_avals[i]);
    const Aval have = strip_weak(core::aval_of(ct));
    if (!typematch(want, have)) {
      std::vector<std::string> why;
      if (want.dtype != have.dtype) why.push_back("the dtypes do not match");
      if (want.shape != have.shape) why.push_back("the shapes do not match");
      if (!error.empty()) continue;  // JAX names the first
      error =
          "ValueError: Custom VJP bwd rule must produce an output with the same type as the args "
          "tuple of the primal "
          "function, but at output" +
          paths[i] + " the bwd rule produced an output of type " + have.str() +
          " corresponding to an input of type " + want.str() + ", so " + why[0] +
          (why.size() > 1 ? ", and " + why[1] : "");
      continue;
    }
    out[i] = ct;
  }
  return out;
}

}  // namespace

std::vector<Array> custom_vjp_flat(const std::vector<Array>& leaves,
                                   const std::vector<TreeDef>& defs, const FlatFn& f,
                                   const FlatFwd& fwd, const FlatBwd& bwd, TreeDef* out_def,
                                   const CustomOptions& options, const void* id) {
  if (core::current_trace() == nullptr) return f(leaves, out_def);  // as custom_jvp_flat
  const std::vector<Aval> avals = avals_of(leaves);
  ClosedProgram fp =
      core::trace_to_program(avals, [&](const std::vector<Array>& xs) { return f(xs, out_def); });
  std::vector<Aval> out_avals;
  for (const core::Atom& a : fp.program->outvars) out_avals.push_back(fp.program->aval_of(a));
  std::string fwd_error, bwd_error;
  TreeDef res_def;
  size_t num_res = 0;
  const bool fallback = RuleDepth::exhausted(id);
  RuleDepth depth(id);
  ClosedProgram wp = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    // Past the depth, f's own vjp: the residuals are the arguments.
    FlatPair r = fallback ? FlatPair{f(xs, out_def), xs, *out_def, {}} : fwd(xs);
    fwd_error = check_fwd_output(r, *out_def, out_avals, options);
    if (!fwd_error.empty()) fwd_error = "TypeError: " + fwd_error;
    res_def = r.second_def;
    num_res = r.second.size();
    // The results must be f's for the call's types to hold: where fwd's differ, f's
    // stand in (the error is raised before they are used).
    if (!fwd_error.empty()) r.first = f(xs, out_def);
    return concat(r.first, r.second);
  });
  const Program& w = *wp.program;
  std::vector<Aval> bwd_avals;
  for (size_t k = out_avals.size(); k < w.outvars.size(); ++k)
    bwd_avals.push_back(w.aval_of(w.outvars[k]));
  for (const Aval& a : out_avals) bwd_avals.push_back(strip_weak(a));
  ClosedProgram bp = core::trace_to_program(bwd_avals, [&](const std::vector<Array>& xs) {
    const std::vector<Array> res(xs.begin(), xs.begin() + long(num_res));
    const std::vector<Array> cts(xs.begin() + long(num_res), xs.end());
    if (!fwd_error.empty()) {  // raised before bwd could run: its program is a stand-in
      std::vector<Array> zeros;
      for (const Aval& a : avals) zeros.push_back(zeros_of(strip_weak(a)));
      return zeros;
    }
    if (fallback) {
      core::Linearized lin = core::linearize(fp, res);
      std::vector<Array> in_cts = core::transpose(lin, cts);
      for (size_t i = 0; i < in_cts.size(); ++i) {
        if (!in_cts[i].valid()) in_cts[i] = zeros_of(strip_weak(avals[i]));
      }
      return in_cts;
    }
    const auto got = bwd(res, res_def, cts, *out_def);
    return bwd_cotangents(got, defs, avals, options, bwd_error);
  });
  prims::SharedConsts a = prims::share_consts({fp, wp, bp});
  Params params{{"bwd", name_or(options.bwd_name, options, "_bwd")},
                {"bwd_jaxpr_fun", a.programs[2]},
                {"jaxpr", a.programs[0]},
                {"fwd", name_or(options.fwd_name, options, "_fwd")},
                {"fwd_jaxpr_thunk", a.programs[1]},
                {"name", options.name},
                {"num_consts", int64_t(a.consts.size())},
                {"symbolic_zeros", false}};
  if (!fwd_error.empty()) params.set("fwd_error", fwd_error);
  if (!bwd_error.empty()) params.set("bwd_error", bwd_error);
  return core::bind(Prim::custom_vjp_call, concat(a.consts, leaves), std::move(params));
}

}  // namespace parax::detail

namespace parax {

bool is_symbolic_zero(const Array& tangent) {
  return tangent.valid() && tangent.impl()->abstract && !tangent.impl()->tracer;
}

Array symbolic_zero(const Array& primal) {
  core::Aval a = core::aval_of(primal);
  a.weak_type = false;
  return detail::make_abstract(a);
}

}  // namespace parax
