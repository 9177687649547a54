// scan: runs `jaxpr` `length` times on (consts, carry, x[i]) -> (carry, y[i]), stacking
// the ys along a new leading dimension (JAX's scan_p). Operands: consts, the initial
// carry, then the xs, each with a leading dimension of `length`.
#include <algorithm>

#include "base/check.h"
#include "core/autodiff.h"
#include "prims/autodiff_util.h"
#include "prims/control_flow.h"
#include "prims/prim_util.h"
#include "prims/program_rules.h"

namespace parax::prims {
namespace {
namespace scan_impl {

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  const ScanShape s(params);
  if (in.size() < size_t(s.num_consts + s.num_carry)) {
    throw TypeError("scan: fewer operands than consts and carry");
  }
  std::vector<Aval> body_in(in.begin(), in.begin() + s.num_consts + s.num_carry);
  for (size_t i = size_t(s.num_consts + s.num_carry); i < in.size(); ++i) {
    if (in[i].shape.empty() || in[i].shape[0] != s.length) {
      throw TypeError("scan: xs operand " + in[i].short_str() + " does not have a leading " +
                      "dimension of the scan's length " + std::to_string(s.length));
    }
    body_in.push_back(unstacked(in[i]));
  }
  check_body_inputs("scan", body_in, program_inputs(*s.body));
  const std::vector<Aval> outs = program_outputs(*s.body);
  if (outs.size() < size_t(s.num_carry)) throw TypeError("scan: the body gives too few results");
  const std::span<const Aval> carry_in = in.subspan(size_t(s.num_consts), size_t(s.num_carry));
  check_body_inputs("scan carry output",
                    std::span<const Aval>(outs).subspan(0, size_t(s.num_carry)), carry_in);
  // The carry results are the body's (JAX's scan_p), weak types included.
  std::vector<Aval> result(carry_in.begin(), carry_in.end());
  for (size_t i = 0; i < result.size(); ++i) result[i].weak_type = outs[i].weak_type;
  for (size_t r = size_t(s.num_carry); r < outs.size(); ++r) {
    result.push_back(stacked(outs[r], s.length));
  }
  return result;
}

using core::ClosedProgram;
using core::Program;

// A mask's or a list's three parts over a scan's operands (or its body's inputs).
struct Parts {
  size_t nc = 0, ncar = 0, n = 0;
  bool is_const(size_t i) const { return i < nc; }
  bool is_carry(size_t i) const { return i >= nc && i < nc + ncar; }
  bool is_x(size_t i) const { return i >= nc + ncar; }
};

Parts parts_of(const ScanShape& s, size_t operands) {
  return Parts{size_t(s.num_consts), size_t(s.num_carry), operands};
}

std::vector<Array> bind_scan(const Params& params, const ProgramRef& body, size_t num_consts,
                             size_t num_carry, std::vector<Array> args, bool flip = false) {
  Params p = params;
  p.set("jaxpr", body);
  p.set("num_consts", int64_t(num_consts));
  p.set("num_carry", int64_t(num_carry));
  if (flip) p.set("reverse", !params.get<bool>("reverse"));
  return core::bind(core::Prim::scan, std::move(args), std::move(p));
}

// The same body may split into consts and carry differently in another scan.
std::string shape_key(const ScanShape& s) {
  return std::to_string(s.num_consts) + "," + std::to_string(s.num_carry) + "|";
}

size_t count(const std::vector<bool>& mask, size_t begin, size_t end) {
  return size_t(std::count(mask.begin() + long(begin), mask.begin() + long(end), true));
}

// jvp (JAX's _scan_jvp): the body's inputs in groups, each followed by its nonzero
// tangents (consts, carry, xs); its results: the carry, the carry's tangents, the ys,
// then their nonzero tangents.
struct ScanJvp {
  ProgramRef body;
  std::vector<Array> consts;
  std::vector<bool> nz;     // per operand: has a tangent (a carry's, by the fixed point)
  std::vector<bool> ys_nz;  // per y
};

ClosedProgram trace_body_jvp(const Program& body, const Parts& parts, const std::vector<bool>& nz,
                             std::vector<bool>* mask) {
  const std::vector<Aval> in = program_inputs(body);
  const size_t n = in.size();
  std::vector<Aval> avals;
  std::vector<size_t> primal_slot(n), tangent_slot(n);
  const size_t bounds[4] = {0, parts.nc, parts.nc + parts.ncar, n};
  for (size_t g = 0; g < 3; ++g) {
    for (size_t i = bounds[g]; i < bounds[g + 1]; ++i) {
      primal_slot[i] = avals.size();
      avals.push_back(in[i]);
    }
    for (size_t i = bounds[g]; i < bounds[g + 1]; ++i) {
      if (!nz[i]) continue;
      tangent_slot[i] = avals.size();
      avals.push_back(tangent_aval(in[i]));
    }
  }
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> ins(n), ts(n);
    for (size_t i = 0; i < n; ++i) {
      ins[i] = xs[primal_slot[i]];
      if (nz[i]) ts[i] = xs[tangent_slot[i]];
    }
    auto [outs, touts] = core::jvp_program(body, ins, ts);
    mask->clear();
    for (const Array& t : touts) mask->push_back(t.valid());
    std::vector<Array> res(outs.begin(), outs.begin() + long(parts.ncar));
    for (size_t c = 0; c < parts.ncar; ++c) {
      if (nz[parts.nc + c]) res.push_back(instantiate(touts[c], tangent_aval(in[parts.nc + c])));
    }
    res.insert(res.end(), outs.begin() + long(parts.ncar), outs.end());
    for (size_t y = parts.ncar; y < touts.size(); ++y) {
      if (touts[y].valid()) res.push_back(touts[y]);
    }
    return res;
  });
}

// A carry has a tangent if its initial value does or the body gives it one: retrace
// until the body gives none to a carry without.
ScanJvp scan_jvp(const Program& body, const Parts& parts, std::vector<bool> nz) {
  for (;;) {
    std::vector<bool> mask;
    ClosedProgram closed = trace_body_jvp(body, parts, nz, &mask);
    bool changed = false;
    for (size_t c = 0; c < parts.ncar; ++c) {
      if (!mask[c] || nz[parts.nc + c]) continue;
      nz[parts.nc + c] = true;
      changed = true;
    }
    if (changed) continue;
    std::vector<bool> ys_nz(mask.begin() + long(parts.ncar), mask.end());
    return ScanJvp{core::lift_consts(closed), closed.consts, std::move(nz), std::move(ys_nz)};
  }
}

std::pair<std::vector<Array>, std::vector<Array>> jvp(std::span<const Array> primals,
                                                      std::span<const Array> tangents,
                                                      const Params& params) {
  static auto& cache = *new DerivedCache<ScanJvp>;  // never destroyed: it holds arrays
  const ScanShape s(params);
  const Parts parts = parts_of(s, primals.size());
  std::vector<bool> nz;
  for (size_t i = 0; i < primals.size(); ++i) {
    nz.push_back(tangents[i].valid() && has_tangent(core::aval_of(primals[i]).dtype));
  }
  auto made = cache.get(s.body, shape_key(s) + mask_key(nz) + axes_key(),
                        [&] { return scan_jvp(*s.body, parts, nz); });
  std::vector<Array> args = made->consts;
  const size_t bounds[4] = {0, parts.nc, parts.nc + parts.ncar, parts.n};
  for (size_t g = 0; g < 3; ++g) {
    args.insert(args.end(), primals.begin() + long(bounds[g]),
                primals.begin() + long(bounds[g + 1]));
    for (size_t i = bounds[g]; i < bounds[g + 1]; ++i) {
      if (made->nz[i]) {
        args.push_back(instantiate(tangents[i], tangent_aval(core::aval_of(primals[i]))));
      }
    }
  }
  const size_t num_ct = count(made->nz, parts.nc, parts.nc + parts.ncar);
  std::vector<Array> outs =
      bind_scan(params, made->body, made->consts.size() + parts.nc + count(made->nz, 0, parts.nc),
                parts.ncar + num_ct, std::move(args));
  const size_t ny = made->ys_nz.size();
  std::vector<Array> res(outs.begin(), outs.begin() + long(parts.ncar));
  std::vector<Array> touts(parts.ncar + ny);
  size_t k = parts.ncar;
  for (size_t c = 0; c < parts.ncar; ++c) {
    if (made->nz[parts.nc + c]) touts[c] = outs[k++];
  }
  res.insert(res.end(), outs.begin() + long(k), outs.begin() + long(k + ny));
  k += ny;
  for (size_t y = 0; y < ny; ++y) {
    if (made->ys_nz[y]) touts[parts.ncar + y] = outs[k++];
  }
  return {std::move(res), std::move(touts)};
}

// Partial evaluation (JAX's _scan_partial_eval): a carry is unknown if its initial value
// is or the body makes it so (a fixed point). The known scan computes the known carry and
// ys and stacks the residuals the unknown part needs as extra ys, one per iteration; the
// unknown scan takes them among its xs.
struct ScanSplit {
  ProgramRef known, unknown;
  std::vector<bool> out_unknown;
  std::vector<int> forwarded, order;
  std::optional<std::vector<int>> known_order;
  size_t known_consts = 0, known_carry = 0, unknown_consts = 0, unknown_carry = 0;
  bool trivial = false;
};

ProgramRef closed_program(const ClosedProgram& c) {
  PARAX_CHECK(c.consts.empty(), "scan partial_eval: a split body captured constants");
  return c.program;
}

struct BodySplit {
  core::ProgramSplit split;
  Parts parts;
  std::vector<bool> uk;           // per body input
  std::vector<size_t> promoted;   // unknown carries whose new value is known
  std::vector<size_t> fwd_carry;  // known carries the unknown part reads
  std::vector<int> fwd;           // known consts, then known xs, the unknown part reads
  size_t num_split_res = 0;
};

// The known body: the known inputs in; the known carry, the known ys, then the residuals
// (the split's, the promoted carries, the forwarded carries' values) out.
ProgramRef known_body(const BodySplit& b, const std::vector<Aval>& in) {
  return closed_program(core::trace_to_program(in, [&](const std::vector<Array>& xs) {
    std::vector<Array> kouts = eval_program(*b.split.known, xs);
    std::vector<Array> outs, promoted;
    size_t k = 0;
    for (size_t o = 0; o < b.split.out_unknown.size(); ++o) {
      if (b.split.out_unknown[o]) continue;
      const bool carry_uk = o < b.parts.ncar && b.uk[b.parts.nc + o];
      (carry_uk ? promoted : outs).push_back(kouts[k++]);
    }
    outs.insert(outs.end(), kouts.begin() + long(k), kouts.end());
    outs.insert(outs.end(), promoted.begin(), promoted.end());
    std::vector<size_t> known_in(b.uk.size());
    for (size_t i = 0, j = 0; i < b.uk.size(); ++i) {
      if (!b.uk[i]) known_in[i] = j++;
    }
    for (size_t f : b.fwd_carry) outs.push_back(xs[known_in[f]]);
    return outs;
  }));
}

// The unknown body: the forwarded consts, the unknown consts, the unknown carry, the
// residuals, the forwarded xs, then the unknown xs in; the unknown carry and ys out.
ProgramRef unknown_body(const BodySplit& b, const std::vector<Aval>& in, size_t nfc, size_t nuc,
                        size_t nui, size_t nres) {
  return closed_program(core::trace_to_program(in, [&](const std::vector<Array>& xs) {
    const size_t res0 = nfc + nuc + nui, fx0 = res0 + nres;
    std::vector<Array> ins;
    for (int f : b.split.forwarded) {
      const size_t i = size_t(f);
      if (b.parts.is_carry(i)) {
        const size_t j =
            size_t(std::find(b.fwd_carry.begin(), b.fwd_carry.end(), i) - b.fwd_carry.begin());
        ins.push_back(xs[res0 + b.num_split_res + b.promoted.size() + j]);
        continue;
      }
      const size_t j = size_t(std::find(b.fwd.begin(), b.fwd.end(), f) - b.fwd.begin());
      ins.push_back(xs[b.parts.is_const(i) ? j : fx0 + (j - nfc)]);
    }
    ins.insert(ins.end(), xs.begin() + long(res0), xs.begin() + long(res0 + b.num_split_res));
    ins.insert(ins.end(), xs.begin() + long(nfc), xs.begin() + long(res0));
    ins.insert(ins.end(), xs.begin() + long(fx0 + (b.fwd.size() - nfc)), xs.end());
    std::vector<Array> uouts = eval_program(*b.split.unknown, ins);
    std::vector<Array> outs;
    size_t u = 0, p = res0 + b.num_split_res;
    for (size_t o = 0; o < b.split.out_unknown.size(); ++o) {
      const bool carry_uk = o < b.parts.ncar && b.uk[b.parts.nc + o];
      if (b.split.out_unknown[o]) {
        outs.push_back(uouts[u++]);
      } else if (carry_uk) {
        outs.push_back(xs[p++]);
      }
    }
    return outs;
  }));
}

// Splits the body with the carry unknown where its initial value is or the body makes it
// so: a fixed point.
BodySplit split_body(const Program& body, const Parts& parts, std::vector<bool> uk) {
  BodySplit b;
  b.parts = parts;
  for (;;) {
    const std::unique_ptr<bool[]> flags = bool_array(uk);
    b.split = core::partial_eval_program(body, std::span<const bool>(flags.get(), uk.size()));
    bool changed = false;
    for (size_t c = 0; c < parts.ncar; ++c) {
      if (!b.split.out_unknown[c] || uk[parts.nc + c]) continue;
      uk[parts.nc + c] = true;
      changed = true;
    }
    if (!changed) break;
  }
  b.uk = std::move(uk);
  return b;
}

// Sets the operand orders of the split applications. The known scan drops the carries
// only the fixed point made unknown; the unknown scan takes them, forwarded, with its
// operands, which come as forwarded, residuals, unknown ones, reordered as consts
// (forwarded, unknown), carry, xs (residuals, forwarded, unknown).
void set_orders(ScanSplit& out, const BodySplit& b, const std::vector<bool>& uk0, size_t nfc,
                size_t nres) {
  const Parts& parts = b.parts;
  const std::vector<bool>& uk = b.uk;
  out.forwarded = b.fwd;
  std::vector<int> where(parts.n, -1);  // the unknown scan's operands before reordering
  for (size_t i = parts.nc; i < parts.nc + parts.ncar; ++i) {
    if (!uk[i] || uk0[i]) continue;
    where[i] = int(out.forwarded.size());
    out.forwarded.push_back(int(i));
  }
  const size_t nf = out.forwarded.size(), u0 = nf + nres;
  for (size_t i = 0, k = u0; i < parts.n; ++i) {
    if (uk0[i]) where[i] = int(k++);
  }
  out.known_order.emplace();
  for (size_t i = 0, k = 0; i < parts.n; ++i) {
    if (uk0[i]) continue;
    if (!uk[i]) out.known_order->push_back(int(k));
    ++k;
  }
  for (size_t j = 0; j < nfc; ++j) out.order.push_back(int(j));
  for (size_t i = 0; i < parts.nc + parts.ncar; ++i) {
    if (uk[i]) out.order.push_back(where[i]);
  }
  for (size_t j = nf; j < u0; ++j) out.order.push_back(int(j));
  for (size_t j = nfc; j < b.fwd.size(); ++j) out.order.push_back(int(j));
  for (size_t i = parts.nc + parts.ncar; i < parts.n; ++i) {
    if (uk[i]) out.order.push_back(where[i]);
  }
}

ScanSplit split_scan(const Program& body, const Parts& parts, const std::vector<bool>& uk0) {
  BodySplit b = split_body(body, parts, uk0);
  const std::vector<bool>& uk = b.uk;
  ScanSplit out;
  for (size_t o = 0; o < b.split.out_unknown.size(); ++o) {
    const bool carry = o < parts.ncar;
    out.out_unknown.push_back(carry ? uk[parts.nc + o] : b.split.out_unknown[o]);
    if (carry && uk[parts.nc + o] && !b.split.out_unknown[o]) b.promoted.push_back(o);
  }
  out.trivial =
      b.split.known->eqns.empty() &&
      std::find(out.out_unknown.begin(), out.out_unknown.end(), false) == out.out_unknown.end();
  for (int f : b.split.forwarded) {
    if (parts.is_carry(size_t(f))) b.fwd_carry.push_back(size_t(f));
  }
  for (int f : b.split.forwarded) {
    if (parts.is_const(size_t(f))) b.fwd.push_back(f);
  }
  const size_t nfc = b.fwd.size();
  for (int f : b.split.forwarded) {
    if (parts.is_x(size_t(f))) b.fwd.push_back(f);
  }
  const std::vector<Aval> in = program_inputs(body);
  const std::vector<Aval> kouts = program_outputs(*b.split.known);
  size_t num_known_outs = 0;
  for (bool u : b.split.out_unknown) num_known_outs += u ? 0 : 1;
  b.num_split_res = kouts.size() - num_known_outs;
  std::vector<Aval> res_avals(kouts.begin() + long(num_known_outs), kouts.end());
  std::vector<size_t> known_pos;
  for (size_t o = 0; o < b.split.out_unknown.size(); ++o) {
    if (!b.split.out_unknown[o]) known_pos.push_back(o);
  }
  for (size_t c : b.promoted) {
    const size_t k = size_t(std::find(known_pos.begin(), known_pos.end(), c) - known_pos.begin());
    res_avals.push_back(kouts[k]);
  }
  for (size_t f : b.fwd_carry) res_avals.push_back(in[f]);
  std::vector<Aval> known_in, uin;
  size_t nuc = 0, nui = 0;
  for (size_t i = 0; i < in.size(); ++i) {
    if (!uk[i]) {
      known_in.push_back(in[i]);
      out.known_consts += parts.is_const(i) ? 1 : 0;
      out.known_carry += parts.is_carry(i) ? 1 : 0;
    }
  }
  for (size_t j = 0; j < nfc; ++j) uin.push_back(in[size_t(b.fwd[j])]);
  for (size_t i = 0; i < in.size(); ++i) {
    if (uk[i] && !parts.is_x(i)) {
      uin.push_back(in[i]);
      (parts.is_const(i) ? nuc : nui) += 1;
    }
  }
  uin.insert(uin.end(), res_avals.begin(), res_avals.end());
  for (size_t j = nfc; j < b.fwd.size(); ++j) uin.push_back(in[size_t(b.fwd[j])]);
  for (size_t i = 0; i < in.size(); ++i) {
    if (uk[i] && parts.is_x(i)) uin.push_back(in[i]);
  }
  out.known = known_body(b, known_in);
  out.unknown = unknown_body(b, uin, nfc, nuc, nui, res_avals.size());
  out.unknown_consts = nfc + nuc;
  out.unknown_carry = nui;
  set_orders(out, b, uk0, nfc, res_avals.size());
  return out;
}

std::optional<core::PartialEval> partial_eval(std::span<const bool> unknown, const Params& params) {
  static auto& cache = *new DerivedCache<ScanSplit>;  // never destroyed, as pjit's
  const ScanShape s(params);
  const std::vector<bool> uk(unknown.begin(), unknown.end());
  auto split = cache.get(s.body, shape_key(s) + mask_key(uk) + axes_key(),
                         [&] { return split_scan(*s.body, parts_of(s, uk.size()), uk); });
  if (split->trivial) return std::nullopt;
  core::PartialEval pe;
  pe.known = params;
  pe.unknown = params;
  pe.out_unknown = split->out_unknown;
  pe.forwarded = split->forwarded;
  pe.unknown_order = split->order;
  pe.known_order = split->known_order;
  pe.known.set("jaxpr", split->known);
  pe.known.set("num_consts", int64_t(split->known_consts));
  pe.known.set("num_carry", int64_t(split->known_carry));
  pe.unknown.set("jaxpr", split->unknown);
  pe.unknown.set("num_consts", int64_t(split->unknown_consts));
  pe.unknown.set("num_carry", int64_t(split->unknown_carry));
  return pe;
}

// transpose (JAX's _scan_transpose): a scan the other way whose carry holds the
// cotangents of the linear consts (accumulated) and of the carry; its consts are the
// consts that are not linear, its xs the xs that are not and the ys' cotangents; its ys
// are the cotangents of the linear xs.
struct ScanTranspose {
  ProgramRef body;
  std::vector<Array> consts;
};

ScanTranspose trace_scan_transpose(const Program& body, const Parts& parts,
                                   const std::vector<bool>& linear,
                                   const std::vector<bool>& ys_nz) {
  const std::vector<Aval> in = program_inputs(body), out = program_outputs(body);
  std::vector<Aval> avals, lin_consts, lin_xs;
  for (size_t i = 0; i < parts.nc; ++i) {
    if (!linear[i]) avals.push_back(in[i]);
  }
  const size_t nires = avals.size();
  for (size_t i = 0; i < parts.nc; ++i) {
    if (linear[i]) lin_consts.push_back(tangent_aval(in[i]));
  }
  avals.insert(avals.end(), lin_consts.begin(), lin_consts.end());
  for (size_t c = 0; c < parts.ncar; ++c) avals.push_back(tangent_aval(in[parts.nc + c]));
  const size_t xs0 = avals.size();
  for (size_t i = parts.nc + parts.ncar; i < parts.n; ++i) {
    if (!linear[i]) avals.push_back(in[i]);
  }
  const size_t neres = avals.size() - xs0;
  for (size_t y = 0; y < ys_nz.size(); ++y) {
    if (ys_nz[y]) avals.push_back(tangent_aval(out[parts.ncar + y]));
  }
  const std::unique_ptr<bool[]> is_linear = bool_array(linear);
  ClosedProgram closed = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    std::vector<Array> values(xs.begin(), xs.begin() + long(nires));
    values.insert(values.end(), xs.begin() + long(xs0), xs.begin() + long(xs0 + neres));
    std::vector<Array> cts(xs.begin() + long(nires + lin_consts.size()), xs.begin() + long(xs0));
    size_t k = xs0 + neres;
    for (bool nz : ys_nz) cts.push_back(nz ? xs[k++] : Array());
    std::vector<Array> res = core::transpose_program(
        body, std::span<const bool>(is_linear.get(), linear.size()), values, cts);
    std::vector<Array> outs;
    size_t j = 0;
    for (size_t i = 0; i < parts.n; ++i) {
      if (!linear[i]) continue;
      const Aval t = tangent_aval(in[i]);
      if (parts.is_const(i)) {
        outs.push_back(instantiate(add_tangents(xs[nires + j], res[j]), t));
      } else {
        outs.push_back(instantiate(res[j], t));
      }
      ++j;
    }
    return outs;
  });
  return ScanTranspose{core::lift_consts(closed), closed.consts};
}

// Returns `linear` with each carry the body makes linear marked so: a carry the split made
// unknown though its initial value was known (a tangent's instantiated zeros) is linear in
// the body all the same; it is transposed as such (JAX's _scan_transpose does too) and its
// cotangent dropped. A carry that stays not linear would need its values per iteration.
std::vector<bool> linear_carry(const Program& body, const Parts& parts,
                               std::span<const bool> linear) {
  std::vector<bool> lin(linear.begin(), linear.end());
  for (bool changed = true; changed;) {
    changed = false;
    const std::vector<bool> dep = depends_on(body, lin);
    for (size_t c = 0; c < parts.ncar; ++c) {
      if (!dep[c] || lin[parts.nc + c]) continue;
      lin[parts.nc + c] = true;
      changed = true;
    }
  }
  for (size_t c = 0; c < parts.ncar; ++c) {
    if (!lin[parts.nc + c]) {
      throw NotImplementedError("scan transpose: carry " + std::to_string(c) +
                                " is not linear (its values per iteration are not stored)");
    }
  }
  return lin;
}

std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params& params) {
  static auto& cache = *new DerivedCache<ScanTranspose>;  // never destroyed: it holds arrays
  const ScanShape s(params);
  const Parts parts = parts_of(s, operands.size());
  const std::vector<bool> lin = linear_carry(*s.body, parts, linear);
  std::vector<bool> ys_nz;
  for (size_t y = parts.ncar; y < cts.size(); ++y) ys_nz.push_back(cts[y].valid());
  auto made = cache.get(s.body, shape_key(s) + mask_key(lin) + "|" + mask_key(ys_nz) + axes_key(),
                        [&] { return trace_scan_transpose(*s.body, parts, lin, ys_nz); });
  std::vector<Array> args = made->consts;
  for (size_t i = 0; i < parts.nc; ++i) {
    if (!lin[i]) args.push_back(operands[i]);
  }
  const size_t num_consts = args.size();
  for (size_t i = 0; i < parts.nc; ++i) {
    if (lin[i]) args.push_back(zeros_like_aval(tangent_aval(core::aval_of(operands[i]))));
  }
  for (size_t c = 0; c < parts.ncar; ++c) {
    args.push_back(instantiate(cts[c], tangent_aval(core::aval_of(operands[parts.nc + c]))));
  }
  const size_t num_carry = args.size() - num_consts;
  for (size_t i = parts.nc + parts.ncar; i < parts.n; ++i) {
    if (!lin[i]) args.push_back(operands[i]);
  }
  for (size_t y = parts.ncar; y < cts.size(); ++y) {
    if (cts[y].valid()) args.push_back(cts[y]);
  }
  std::vector<Array> outs =
      bind_scan(params, made->body, num_consts, num_carry, std::move(args), /*flip=*/true);
  std::vector<Array> result(operands.size());
  size_t k = 0;
  for (size_t i = 0; i < parts.n; ++i) {
    if (lin[i] && linear[i]) result[i] = outs[k];
    k += lin[i] ? 1 : 0;
  }
  return result;
}

// Consts, the carry, then the xs; the body runs `length` times.
core::ProgramRoles roles(const Params& params, size_t num_operands) {
  const ScanShape s(params);
  const size_t fixed = size_t(s.num_consts + s.num_carry);
  core::ProgramRoles r;
  r.programs = {{s.body, core::ProgramRole::body, 0, size_t(s.num_consts)}};
  r.carry_begin = size_t(s.num_consts);
  r.num_carry = size_t(s.num_carry);
  r.xs_begin = fixed;
  r.num_xs = num_operands > fixed ? num_operands - fixed : 0;
  r.trip_count = s.length;
  r.reverse = s.reverse;
  return r;
}

}  // namespace scan_impl
}  // namespace

extern const PrimRules scan_rules = {.abstract_eval = scan_impl::shape_rule,
                                     .transpose = scan_impl::transpose,
                                     .batch = scan_batch,
                                     .vma = scan_vma,
                                     .joint_jvp = scan_impl::jvp,
                                     .partial_eval = scan_impl::partial_eval,
                                     .program_roles = scan_impl::roles};

}  // namespace parax::prims
