// while: runs `body_jaxpr` on the carry while `cond_jaxpr` gives true. Operands: the
// cond's constants, the body's constants, then the carry (JAX's while_p).
#include <algorithm>

#include "base/check.h"
#include "core/autodiff.h"
#include "prims/autodiff_util.h"
#include "prims/control_flow.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace while_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const WhileShape w(params);
  const size_t consts = size_t(w.cond_nconsts + w.body_nconsts);
  if (in.size() < consts) throw TypeError("while: fewer operands than constants");
  const std::span<const Aval> carry = in.subspan(consts);
  std::vector<Aval> cond_in(in.begin(), in.begin() + w.cond_nconsts);
  cond_in.insert(cond_in.end(), carry.begin(), carry.end());
  check_body_inputs("while cond", cond_in, program_inputs(*w.cond));
  const std::vector<Aval> pred = program_outputs(*w.cond);
  if (pred.size() != 1 || !pred[0].shape.empty() || pred[0].dtype != DType::bool_) {
    throw TypeError("while: cond_jaxpr must give one scalar bool, got " +
                    (pred.empty() ? std::string("nothing") : pred[0].str()));
  }
  std::vector<Aval> body_in(in.begin() + w.cond_nconsts, in.end());
  check_body_inputs("while body", body_in, program_inputs(*w.body));
  const std::vector<Aval> out = program_outputs(*w.body);
  check_body_inputs("while body output", out, std::vector<Aval>(carry.begin(), carry.end()));
  // The results are the body's (JAX's while_p): a weak initial carry the body makes
  // strong comes out strong.
  std::vector<Aval> result(carry.begin(), carry.end());
  for (size_t i = 0; i < result.size(); ++i) result[i].weak_type = out[i].weak_type;
  return result;
}

// A while loop's trip count is known only when it runs, so its steps cannot be replayed
// backward: reverse mode is JAX's error (forward mode works: see jvp).
std::vector<Array> transpose(std::span<const Array>, std::span<const Array>, std::span<const bool>,
                             const Params&) {
  throw ValueError(
      "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
      "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
      "start/stop.");
}

using core::ClosedProgram;
using core::Program;

std::string nconsts_key(const WhileShape& w) {
  return std::to_string(w.cond_nconsts) + "," + std::to_string(w.body_nconsts) + "|";
}

// jvp: a while over the carry and its tangents (JAX's _while_loop_jvp). The body takes
// its consts, their nonzero tangents, the carry and the carry's tangents; the cond
// ignores the tangents.
struct WhileJvp {
  ProgramRef cond, body;
  std::vector<Array> consts;   // the body trace's, before the body's consts
  std::vector<bool> carry_nz;  // by the fixed point
};

ClosedProgram trace_body_jvp(const Program& body, size_t nb, const std::vector<bool>& nz,
                             std::vector<bool>* mask) {
  const std::vector<Aval> in = program_inputs(body);
  std::vector<Aval> avals(in.begin(), in.begin() + long(nb));
  for (size_t i = 0; i < nb; ++i) {
    if (nz[i]) avals.push_back(tangent_aval(in[i]));
  }
  avals.insert(avals.end(), in.begin() + long(nb), in.end());
  for (size_t i = nb; i < in.size(); ++i) {
    if (nz[i]) avals.push_back(tangent_aval(in[i]));
  }
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins, ts(in.size());
    size_t k = 0;
    for (size_t i = 0; i < nb; ++i) ins.push_back(xs[k++]);
    for (size_t i = 0; i < nb; ++i) {
      if (nz[i]) ts[i] = xs[k++];
    }
    for (size_t i = nb; i < in.size(); ++i) ins.push_back(xs[k++]);
    for (size_t i = nb; i < in.size(); ++i) {
      if (nz[i]) ts[i] = xs[k++];
    }
    auto [outs, touts] = core::jvp_program(body, ins, ts);
    mask->clear();
    for (const Array& t : touts) mask->push_back(t.valid());
    for (size_t c = 0; c < touts.size(); ++c) {
      if (nz[nb + c]) outs.push_back(instantiate(touts[c], tangent_aval(in[nb + c])));
    }
    return outs;
  });
}

WhileJvp while_jvp(const WhileShape& w, std::vector<bool> nz) {
  const size_t nb = size_t(w.body_nconsts);
  for (;;) {
    std::vector<bool> mask;
    ClosedProgram closed = trace_body_jvp(*w.body, nb, nz, &mask);
    bool changed = false;
    for (size_t c = 0; c < mask.size(); ++c) {
      if (!mask[c] || nz[nb + c]) continue;
      nz[nb + c] = true;
      changed = true;
    }
    if (changed) continue;
    std::vector<Aval> tangents;
    const std::vector<Aval> in = program_inputs(*w.body);
    for (size_t i = nb; i < in.size(); ++i) {
      if (nz[i]) tangents.push_back(tangent_aval(in[i]));
    }
    const ProgramRef cond = with_unused_invars(*w.cond, w.cond->invars.size(), tangents);
    return WhileJvp{cond, core::lift_consts(closed), closed.consts,
                    std::vector<bool>(nz.begin() + long(nb), nz.end())};
  }
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(std::span<const Array> primals,
                                                      std::span<const Array> tangents,
                                                      const Params& params) {
  static auto& cache = *new DerivedCache<WhileJvp>;  // never destroyed: it holds arrays
  const WhileShape w(params);
  const size_t nc = size_t(w.cond_nconsts), nb = size_t(w.body_nconsts);
  std::vector<bool> nz;  // per body input: body consts, then carry
  for (size_t i = nc; i < primals.size(); ++i) {
    nz.push_back(tangents[i].valid() && has_tangent(core::aval_of(primals[i]).dtype));
  }
  const ProgramRef programs[2] = {w.cond, w.body};
  auto made = cache.get(programs, nconsts_key(w) + mask_key(nz) + axes_key(),
                        [&] { return while_jvp(w, nz); });
  std::vector<Array> args(primals.begin(), primals.begin() + long(nc));
  args.insert(args.end(), made->consts.begin(), made->consts.end());
  args.insert(args.end(), primals.begin() + long(nc), primals.begin() + long(nc + nb));
  for (size_t i = 0; i < nb; ++i) {
    if (nz[i]) args.push_back(tangents[nc + i]);
  }
  const size_t ncar = primals.size() - nc - nb;
  args.insert(args.end(), primals.begin() + long(nc + nb), primals.end());
  for (size_t c = 0; c < ncar; ++c) {
    const Array& p = primals[nc + nb + c];
    if (made->carry_nz[c])
      args.push_back(instantiate(tangents[nc + nb + c], tangent_aval(core::aval_of(p))));
  }
  Params p = params;
  p.set("cond_jaxpr", made->cond);
  p.set("body_jaxpr", made->body);
  p.set("body_nconsts", int64_t(made->consts.size() + nb +
                                size_t(std::count(nz.begin(), nz.begin() + long(nb), true))));
  return split_tangents(core::bind(core::Prim::while_, std::move(args), std::move(p)),
                        made->carry_nz);
}

// Partial evaluation (JAX's _while_partial_eval): when the cond needs only known values,
// a known while computes the known carry; the unknown while runs the whole loop again
// (its trip count is not stored), and its transpose is reverse mode's error.
struct WhileSplit {
  ProgramRef cond, body;  // the known while's
  std::vector<bool> out_unknown;
  std::vector<int> forwarded, order;
  int64_t cond_nconsts = 0, body_nconsts = 0;
  bool trivial = false;
};

WhileSplit split_while(const WhileShape& w, const std::vector<bool>& unknown) {
  const size_t nc = size_t(w.cond_nconsts), nb = size_t(w.body_nconsts);
  std::vector<bool> uk(unknown.begin() + long(nc), unknown.end());  // body inputs
  core::ProgramSplit body;
  for (;;) {
    const std::unique_ptr<bool[]> flags = bool_array(uk);
    body = core::partial_eval_program(*w.body, std::span<const bool>(flags.get(), uk.size()));
    bool changed = false;
    for (size_t c = 0; c < body.out_unknown.size(); ++c) {
      if (!body.out_unknown[c] || uk[nb + c]) continue;
      uk[nb + c] = true;
      changed = true;
    }
    if (!changed) break;
  }
  WhileSplit out;
  out.out_unknown.assign(uk.begin() + long(nb), uk.end());
  std::vector<bool> cond_uk(unknown.begin(), unknown.begin() + long(nc));
  cond_uk.insert(cond_uk.end(), uk.begin() + long(nb), uk.end());
  const std::unique_ptr<bool[]> flags = bool_array(cond_uk);
  core::ProgramSplit cond =
      core::partial_eval_program(*w.cond, std::span<const bool>(flags.get(), cond_uk.size()));
  const bool all_unknown =
      std::find(out.out_unknown.begin(), out.out_unknown.end(), false) == out.out_unknown.end();
  if (cond.out_unknown[0] || all_unknown) {
    out.trivial = true;
    return out;
  }
  out.cond = cond.known;
  for (size_t i = 0; i < nc; ++i) out.cond_nconsts += unknown[i] ? 0 : 1;
  for (size_t i = 0; i < nb; ++i) out.body_nconsts += uk[i] ? 0 : 1;
  // The known body without the residuals its split gives.
  std::vector<Aval> known_in;
  const std::vector<Aval> in = program_inputs(*w.body);
  for (size_t i = 0; i < in.size(); ++i) {
    if (!uk[i]) known_in.push_back(in[i]);
  }
  const size_t num_known =
      size_t(std::count(out.out_unknown.begin(), out.out_unknown.end(), false));
  ClosedProgram known = core::trace_to_program(known_in, [&](const std::vector<Array>& xs) {
    std::vector<Array> outs = eval_program(*body.known, xs);
    outs.resize(num_known);
    return outs;
  });
  PARAX_CHECK(known.consts.empty(), "while partial_eval: the known body captured constants");
  out.body = known.program;
  // The unknown while takes every operand: the known ones forwarded, put back in place.
  std::vector<int> known_ops, unknown_ops;
  for (size_t i = 0; i < unknown.size(); ++i)
    (unknown[i] ? unknown_ops : known_ops).push_back(int(i));
  out.forwarded = known_ops;
  std::vector<int> pos(unknown.size());
  for (size_t j = 0; j < known_ops.size(); ++j) pos[size_t(known_ops[j])] = int(j);
  for (size_t j = 0; j < unknown_ops.size(); ++j) {
    pos[size_t(unknown_ops[j])] = int(known_ops.size() + j);
  }
  out.order = pos;
  return out;
}

std::optional<core::PartialEval> partial_eval(std::span<const bool> unknown, const Params& params) {
  static auto& cache = *new DerivedCache<WhileSplit>;  // never destroyed, as pjit's
  const WhileShape w(params);
  const std::vector<bool> uk(unknown.begin(), unknown.end());
  const ProgramRef programs[2] = {w.cond, w.body};
  auto split = cache.get(programs, nconsts_key(w) + mask_key(uk) + axes_key(),
                         [&] { return split_while(w, uk); });
  if (split->trivial) return std::nullopt;
  core::PartialEval pe;
  pe.known = params;
  pe.unknown = params;
  pe.out_unknown = split->out_unknown;
  pe.forwarded = split->forwarded;
  pe.unknown_order = split->order;
  pe.unknown_returns_all = true;
  pe.known.set("cond_jaxpr", split->cond);
  pe.known.set("body_jaxpr", split->body);
  pe.known.set("cond_nconsts", split->cond_nconsts);
  pe.known.set("body_nconsts", split->body_nconsts);
  return pe;
}

// The cond's constants, the body's, then the carry; the trip count is known only when
// it runs.
core::ProgramRoles roles(const Params& params, size_t num_operands) {
  const WhileShape w(params);
  const size_t consts = size_t(w.cond_nconsts + w.body_nconsts);
  core::ProgramRoles r;
  r.programs = {{w.body, core::ProgramRole::body, size_t(w.cond_nconsts), size_t(w.body_nconsts)},
                {w.cond, core::ProgramRole::predicate, 0, size_t(w.cond_nconsts)}};
  r.carry_begin = consts;
  r.num_carry = num_operands > consts ? num_operands - consts : 0;
  r.trip_count = std::nullopt;
  return r;
}

}  // namespace while_impl
}  // namespace

extern const PrimRules while__rules = {.abstract_eval = while_impl::shape_rule,
                                       .transpose = while_impl::transpose,
                                       .batch = while_batch,
                                       .vma = while_vma,
                                       .joint_jvp = while_impl::jvp,
                                       .partial_eval = while_impl::partial_eval,
                                       .program_roles = while_impl::roles};

}  // namespace parax::prims
