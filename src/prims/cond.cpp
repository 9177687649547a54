// cond: runs one of its branches (param `branches`, programs over the same operands)
// chosen by an int32 index, clamped into range as JAX's lax.switch clamps it. Operands:
// the index, then the branches' operands.
#include <algorithm>

#include "base/check.h"
#include "core/autodiff.h"
#include "prims/autodiff_util.h"
#include "prims/control_flow.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace cond_impl {

using core::ClosedProgram;
using core::Program;

const core::ProgramList& branches_of(const Params& params) {
  return params.get<core::ProgramList>("branches");
}

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const auto& branches = params.get<core::ProgramList>("branches");
  if (branches.empty()) throw ValueError("cond: no branches");
  if (in.empty() || !in[0].shape.empty() || in[0].dtype != DType::int32) {
    throw TypeError("cond: the index must be a scalar int32, got " +
                    (in.empty() ? std::string("nothing") : in[0].str()));
  }
  std::vector<Aval> out;
  for (size_t b = 0; b < branches.size(); ++b) {
    check_body_inputs("cond", in.subspan(1), program_inputs(*branches[b]));
    std::vector<Aval> outs = program_outputs(*branches[b]);
    if (b == 0) {
      out = outs;
      continue;
    }
    if (outs.size() != out.size()) {
      throw TypeError("cond: branch " + std::to_string(b) + " gives " +
                      std::to_string(outs.size()) + " results, branch 0 gives " +
                      std::to_string(out.size()));
    }
    for (size_t r = 0; r < outs.size(); ++r) {
      if (outs[r].shape != out[r].shape || outs[r].dtype != out[r].dtype) {
        throw TypeError("cond: branch " + std::to_string(b) + " gives " + outs[r].short_str() +
                        " as result " + std::to_string(r) + ", branch 0 gives " +
                        out[r].short_str());
      }
      out[r].weak_type = out[r].weak_type && outs[r].weak_type;
    }
  }
  return out;
}

// Programs traced one per branch, each with the constants its trace captured, joined as
// cond needs them: every branch takes every branch's constants (in branch order), then
// the common inputs (JAX's _join_cond_consts).
struct Branches {
  core::ProgramList programs;
  std::vector<Array> consts;
  std::vector<bool> out_mask;  // jvp: results with a tangent
};

Branches join(const std::vector<ClosedProgram>& closed) {
  Branches out;
  std::vector<std::vector<Aval>> const_avals(closed.size());
  for (size_t b = 0; b < closed.size(); ++b) {
    for (const Array& c : closed[b].consts) const_avals[b].push_back(core::aval_of(c));
    out.consts.insert(out.consts.end(), closed[b].consts.begin(), closed[b].consts.end());
  }
  for (size_t b = 0; b < closed.size(); ++b) {
    std::vector<Aval> before, after;
    for (size_t o = 0; o < closed.size(); ++o) {
      if (o == b) continue;
      auto& dst = o < b ? before : after;
      dst.insert(dst.end(), const_avals[o].begin(), const_avals[o].end());
    }
    ProgramRef p = core::lift_consts(closed[b]);
    p = with_unused_invars(*p, 0, before);
    p = with_unused_invars(*p, before.size() + const_avals[b].size(), after);
    out.programs.push_back(std::move(p));
  }
  return out;
}

std::vector<Array> bind_cond(const Array& index, const Branches& b, std::vector<Array> args) {
  args.insert(args.begin(), b.consts.begin(), b.consts.end());
  args.insert(args.begin(), index);
  return core::bind(core::Prim::cond, std::move(args), Params{{"branches", b.programs}});
}

// jvp: the operands, then their nonzero tangents, in; the results, then the tangents of
// `out_nz` (zeros where this branch gives none), out. With `out_nz` null, returns which
// results get a tangent from this branch instead.
ClosedProgram trace_branch_jvp(const Program& branch, const std::vector<bool>& nz,
                               const std::vector<bool>* out_nz, std::vector<bool>* mask) {
  std::vector<Aval> avals = program_inputs(branch);
  const size_t n = avals.size();
  for (size_t i = 0; i < n; ++i) {
    if (nz[i]) avals.push_back(tangent_aval(avals[i]));
  }
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins(xs.begin(), xs.begin() + long(n)), ts(n);
    size_t k = n;
    for (size_t i = 0; i < n; ++i) {
      if (nz[i]) ts[i] = xs[k++];
    }
    auto [outs, touts] = core::jvp_program(branch, ins, ts);
    const size_t num_out = outs.size();
    for (size_t o = 0; o < num_out; ++o) {
      if (mask != nullptr) mask->push_back(touts[o].valid());
      if (out_nz != nullptr && (*out_nz)[o]) {
        outs.push_back(instantiate(touts[o], tangent_aval(core::aval_of(outs[o]))));
      }
    }
    return outs;
  });
}

// The tangents are nonzero where any branch gives one (JAX's _cond_jvp).
Branches jvp_branches(const core::ProgramList& branches, const std::vector<bool>& nz) {
  std::vector<bool> out_nz(branches[0]->outvars.size(), false);
  for (const ProgramRef& b : branches) {
    std::vector<bool> mask;
    trace_branch_jvp(*b, nz, nullptr, &mask);
    for (size_t o = 0; o < mask.size(); ++o) out_nz[o] = out_nz[o] || mask[o];
  }
  std::vector<ClosedProgram> closed;
  for (const ProgramRef& b : branches) closed.push_back(trace_branch_jvp(*b, nz, &out_nz, nullptr));
  Branches out = join(closed);
  out.out_mask = std::move(out_nz);
  return out;
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(std::span<const Array> primals,
                                                      std::span<const Array> tangents,
                                                      const Params& params) {
  static auto& cache = *new DerivedCache<Branches>;  // never destroyed: it holds arrays
  const core::ProgramList& branches = branches_of(params);
  std::vector<bool> nz;
  for (size_t i = 1; i < primals.size(); ++i) {
    nz.push_back(tangents[i].valid() && has_tangent(core::aval_of(primals[i]).dtype));
  }
  auto made =
      cache.get(branches, mask_key(nz) + axes_key(), [&] { return jvp_branches(branches, nz); });
  std::vector<Array> args(primals.begin() + 1, primals.end());
  for (size_t i = 0; i < nz.size(); ++i) {
    if (nz[i]) args.push_back(tangents[i + 1]);
  }
  return split_tangents(bind_cond(primals[0], *made, std::move(args)), made->out_mask);
}

// Partial evaluation (JAX's _cond_partial_eval): a known cond of every branch's known
// part, and an unknown cond of the unknown parts. A result is unknown where any branch
// makes it so; each branch's residuals have a slot of their own in the known cond's
// results, which the other branches fill with zeros.
struct CondSplit {
  core::ProgramList known, unknown;
  std::vector<bool> out_unknown;
  std::vector<int> forwarded;  // operand indices (the index first)
  bool trivial = true;         // no known equations and every result unknown
};

// Per branch: its split, the results it knows that another branch does not (passed
// through its residuals), and the types of all its residuals.
struct BranchSplit {
  core::ProgramSplit split;
  std::vector<size_t> promoted;
  std::vector<Aval> res_avals;
  size_t num_split_res = 0;
};

ProgramRef closed_program(const ClosedProgram& c) {
  PARAX_CHECK(c.consts.empty(), "cond partial_eval: a split branch captured constants");
  return c.program;
}

// The known branch: the known operands in; the known results, then every branch's
// residual slot (its own filled, the others zeros), out.
ProgramRef known_branch(const std::vector<BranchSplit>& all, size_t b,
                        const std::vector<bool>& out_uk, const std::vector<Aval>& known_in) {
  return closed_program(core::trace_to_program(known_in, [&](const std::vector<Array>& xs) {
    const BranchSplit& s = all[b];
    std::vector<Array> kouts = eval_program(*s.split.known, xs);
    std::vector<Array> outs, promoted;
    size_t k = 0;
    for (size_t o = 0; o < out_uk.size(); ++o) {
      if (s.split.out_unknown[o]) continue;
      (out_uk[o] ? promoted : outs).push_back(kouts[k++]);
    }
    for (size_t c = 0; c < all.size(); ++c) {
      if (c == b) {
        outs.insert(outs.end(), kouts.begin() + long(k), kouts.end());
        outs.insert(outs.end(), promoted.begin(), promoted.end());
        continue;
      }
      for (const Aval& a : all[c].res_avals) outs.push_back(zeros_like_aval(a));
    }
    return outs;
  }));
}

// The unknown branch: the forwarded operands, every residual slot, then the unknown
// operands in; the unknown results out.
ProgramRef unknown_branch(const std::vector<BranchSplit>& all, size_t b,
                          const std::vector<bool>& out_uk, const std::vector<int>& fwd,
                          const std::vector<Aval>& in) {
  return closed_program(core::trace_to_program(in, [&](const std::vector<Array>& xs) {
    const BranchSplit& s = all[b];
    size_t slot = fwd.size();
    for (size_t c = 0; c < b; ++c) slot += all[c].res_avals.size();
    size_t num_res = 0;
    for (const BranchSplit& c : all) num_res += c.res_avals.size();
    std::vector<Array> ins;
    for (int f : s.split.forwarded) {
      ins.push_back(xs[size_t(std::find(fwd.begin(), fwd.end(), f) - fwd.begin())]);
    }
    ins.insert(ins.end(), xs.begin() + long(slot), xs.begin() + long(slot + s.num_split_res));
    ins.insert(ins.end(), xs.begin() + long(fwd.size() + num_res), xs.end());
    std::vector<Array> uouts = eval_program(*s.split.unknown, ins);
    std::vector<Array> outs;
    size_t u = 0, p = slot + s.num_split_res;
    for (size_t o = 0; o < out_uk.size(); ++o) {
      if (!out_uk[o]) continue;
      outs.push_back(s.split.out_unknown[o] ? uouts[u++] : xs[p++]);
    }
    return outs;
  }));
}

CondSplit split_branches(const core::ProgramList& branches, const std::vector<bool>& unknown) {
  CondSplit out;
  const std::unique_ptr<bool[]> uk = bool_array(unknown);
  std::vector<BranchSplit> all;
  out.out_unknown.assign(branches[0]->outvars.size(), false);
  std::vector<int> fwd;
  for (const ProgramRef& b : branches) {
    BranchSplit s;
    s.split = core::partial_eval_program(*b, std::span<const bool>(uk.get(), unknown.size()));
    for (size_t o = 0; o < out.out_unknown.size(); ++o) {
      out.out_unknown[o] = out.out_unknown[o] || s.split.out_unknown[o];
    }
    fwd.insert(fwd.end(), s.split.forwarded.begin(), s.split.forwarded.end());
    out.trivial = out.trivial && s.split.known->eqns.empty();
    all.push_back(std::move(s));
  }
  std::sort(fwd.begin(), fwd.end());
  fwd.erase(std::unique(fwd.begin(), fwd.end()), fwd.end());
  for (bool u : out.out_unknown) out.trivial = out.trivial && u;
  for (BranchSplit& s : all) {
    const std::vector<Aval> kouts = program_outputs(*s.split.known);
    size_t known = 0;
    for (size_t o = 0; o < out.out_unknown.size(); ++o) {
      if (s.split.out_unknown[o]) continue;
      if (out.out_unknown[o]) s.promoted.push_back(known);
      ++known;
    }
    s.res_avals.assign(kouts.begin() + long(known), kouts.end());
    s.num_split_res = s.res_avals.size();
    for (size_t k : s.promoted) s.res_avals.push_back(kouts[k]);
  }
  const std::vector<Aval> in = program_inputs(*branches[0]);
  std::vector<Aval> known_in, unknown_in;
  for (int f : fwd) unknown_in.push_back(in[size_t(f)]);
  for (const BranchSplit& s : all) {
    unknown_in.insert(unknown_in.end(), s.res_avals.begin(), s.res_avals.end());
  }
  for (size_t i = 0; i < in.size(); ++i) (unknown[i] ? unknown_in : known_in).push_back(in[i]);
  for (size_t b = 0; b < all.size(); ++b) {
    out.known.push_back(known_branch(all, b, out.out_unknown, known_in));
    out.unknown.push_back(unknown_branch(all, b, out.out_unknown, fwd, unknown_in));
  }
  out.forwarded.push_back(0);
  for (int f : fwd) out.forwarded.push_back(f + 1);
  return out;
}

std::optional<core::PartialEval> partial_eval(std::span<const bool> unknown, const Params& params) {
  if (unknown[0]) return std::nullopt;  // an unknown index: every branch's part unknown
  static auto& cache = *new DerivedCache<CondSplit>;  // never destroyed, as pjit's
  const core::ProgramList& branches = branches_of(params);
  const std::vector<bool> uk(unknown.begin() + 1, unknown.end());
  auto split =
      cache.get(branches, mask_key(uk) + axes_key(), [&] { return split_branches(branches, uk); });
  if (split->trivial) return std::nullopt;
  core::PartialEval pe;
  pe.known = params;
  pe.unknown = params;
  pe.out_unknown = split->out_unknown;
  pe.forwarded = split->forwarded;
  pe.known.set("branches", split->known);
  pe.unknown.set("branches", split->unknown);
  return pe;
}

// transpose: the operands that are not linear and the nonzero cotangents in; the
// cotangents of the linear operands out (JAX's _cond_transpose; the index is not linear).
ClosedProgram trace_branch_transpose(const Program& branch, const std::vector<bool>& linear,
                                     const std::vector<bool>& ct_nz) {
  const std::vector<Aval> in = program_inputs(branch);
  std::vector<Aval> avals, linear_avals;
  for (size_t i = 0; i < in.size(); ++i) (linear[i] ? linear_avals : avals).push_back(in[i]);
  const size_t num_values = avals.size();
  const std::vector<Aval> out = program_outputs(branch);
  for (size_t o = 0; o < out.size(); ++o) {
    if (ct_nz[o]) avals.push_back(tangent_aval(out[o]));
  }
  const std::unique_ptr<bool[]> is_linear = bool_array(linear);
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> cts(out.size());
    size_t k = num_values;
    for (size_t o = 0; o < cts.size(); ++o) {
      if (ct_nz[o]) cts[o] = xs[k++];
    }
    std::vector<Array> values(xs.begin(), xs.begin() + long(num_values));
    std::vector<Array> res = core::transpose_program(
        branch, std::span<const bool>(is_linear.get(), linear.size()), values, cts);
    for (size_t j = 0; j < res.size(); ++j) res[j] = instantiate(res[j], linear_avals[j]);
    return res;
  });
}

std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params& params) {
  PARAX_CHECK(!linear[0], "cond transpose: the index is not linear");
  static auto& cache = *new DerivedCache<Branches>;  // never destroyed: it holds arrays
  const core::ProgramList& branches = branches_of(params);
  const std::vector<bool> lin(linear.begin() + 1, linear.end());
  std::vector<bool> ct_nz;
  for (const Array& c : cts) ct_nz.push_back(c.valid());
  auto made = cache.get(branches, mask_key(lin) + "|" + mask_key(ct_nz) + axes_key(), [&] {
    std::vector<ClosedProgram> closed;
    for (const ProgramRef& b : branches) {
      closed.push_back(trace_branch_transpose(*b, lin, ct_nz));
    }
    return join(closed);
  });
  std::vector<Array> args;
  for (size_t i = 1; i < operands.size(); ++i) {
    if (!linear[i]) args.push_back(operands[i]);
  }
  for (const Array& c : cts) {
    if (c.valid()) args.push_back(c);
  }
  std::vector<Array> cts_in = bind_cond(operands[0], *made, std::move(args));
  std::vector<Array> result(operands.size());
  size_t k = 0;
  for (size_t i = 1; i < operands.size(); ++i) {
    if (linear[i]) result[i] = cts_in[k++];
  }
  return result;
}

// Operand 0 picks the branch; every branch takes all the others.
core::ProgramRoles roles(const Params& params, size_t num_operands) {
  core::ProgramRoles r;
  r.index = 0;
  const size_t args = num_operands > 0 ? num_operands - 1 : 0;
  for (const ProgramRef& b : branches_of(params)) {
    r.programs.push_back({b, core::ProgramRole::branch, 1, args});
  }
  return r;
}

}  // namespace cond_impl
}  // namespace

extern const PrimRules cond_rules = {.abstract_eval = cond_impl::shape_rule,
                                     .transpose = cond_impl::transpose,
                                     .batch = cond_batch,
                                     .vma = cond_vma,
                                     .joint_jvp = cond_impl::jvp,
                                     .partial_eval = cond_impl::partial_eval,
                                     .program_roles = cond_impl::roles};

}  // namespace parax::prims
