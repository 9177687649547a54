// Batching (vmap) and check_vma rules of the control-flow primitives: cond, while, scan
// and remat2 (JAX's _cond_batching_rule, _while_loop_batching_rule, _scan_batching_rule,
// remat's batcher). Each batches its sub-programs by tracing core::vmap_program into new
// programs, with every batched input's batch dimension moved to the front, so a loop body
// sees the same layout on every iteration. Which carries are batched is a fixed point: a
// carry that enters unbatched is batched if the body makes it so.
#include <algorithm>

#include "core/program_trace.h"
#include "parax/lax.h"
#include "prims/autodiff_util.h"
#include "prims/batching_util.h"
#include "prims/control_flow.h"
#include "prims/vma.h"

namespace parax::prims {
namespace {

using core::Aval;
using core::avals_of;
using core::ClosedProgram;
using core::Params;
using core::Prim;
using core::Program;
using Mask = std::vector<bool>;

Mask batched_mask(std::span<const int> dims) {
  Mask m;
  for (int d : dims) m.push_back(d != kNotMapped);
  return m;
}

Mask operator|(const Mask& a, const Mask& b) {
  Mask out(a.size());
  for (size_t i = 0; i < a.size(); ++i) out[i] = a[i] || b[i];
  return out;
}

Mask concat(Mask a, const Mask& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

template <class T>
std::vector<T> slice_of(std::span<const T> v, size_t begin, size_t end) {
  return std::vector<T>(v.begin() + long(begin), v.begin() + long(end));
}

// Returns x batched at dimension `to` when `batched` (broadcast if it has no batch
// dimension yet), else x as it is.
Array to_layout(const Array& x, int dim, bool batched, int to, int64_t size) {
  if (!batched) return x;
  return core::move_batch_dim(x, dim, to, size);
}

// A sub-program batched by tracing: inputs marked in `in` carry a leading batch
// dimension; outputs that come out batched are moved to the front, and those marked in
// `force` are batched even when the program leaves them unbatched.
struct BatchedProgram {
  ClosedProgram closed;
  Mask out_batched;
};

std::vector<Aval> batched_avals(std::vector<Aval> avals, const Mask& batched, int64_t size) {
  for (size_t i = 0; i < avals.size(); ++i) {
    if (batched[i]) avals[i].shape.insert(avals[i].shape.begin(), size);
  }
  return avals;
}

// Runs `p` batched on `xs` (batched at the front where `in` says) in the current trace.
Batched run_batched(const Program& p, std::span<const Array> xs, const Mask& in, const Mask& force,
                    const core::BatchAxis& axis) {
  std::vector<int> dims;
  for (bool b : in) dims.push_back(b ? 0 : kNotMapped);
  Batched r = core::vmap_program(p, xs, dims, axis);
  for (size_t o = 0; o < r.outs.size(); ++o) {
    const bool batched = r.dims[o] != kNotMapped || (!force.empty() && force[o]);
    r.outs[o] = to_layout(r.outs[o], r.dims[o], batched, 0, axis.size);
    r.dims[o] = batched ? 0 : kNotMapped;
  }
  return r;
}

BatchedProgram batch_program(const Program& p, const Mask& in, const Mask& force,
                             const core::BatchAxis& axis) {
  Mask out;
  ClosedProgram closed = core::trace_to_program(batched_avals(program_inputs(p), in, axis.size),
                                                [&](const std::vector<Array>& xs) {
                                                  Batched r = run_batched(p, xs, in, force, axis);
                                                  out = batched_mask(r.dims);
                                                  return r.outs;
                                                });
  return BatchedProgram{std::move(closed), std::move(out)};
}

// Returns which outputs of `p` come out batched when the inputs in `in` are.
Mask batched_outputs(const Program& p, const Mask& in, const core::BatchAxis& axis) {
  return batch_program(p, in, {}, axis).out_batched;
}

// Returns `p` (its leading inputs: `own` lifted constants) taking `before` unused inputs
// ahead of those and `after` behind them.
ProgramRef with_unused_consts(const ProgramRef& p, size_t own, const std::vector<Aval>& before,
                              const std::vector<Aval>& after) {
  if (before.empty() && after.empty()) return p;
  Program q = *p;
  std::vector<int> invars;
  for (const Aval& a : before) invars.push_back(q.new_var(a));
  invars.insert(invars.end(), q.invars.begin(), q.invars.begin() + long(own));
  for (const Aval& a : after) invars.push_back(q.new_var(a));
  invars.insert(invars.end(), q.invars.begin() + long(own), q.invars.end());
  q.invars = std::move(invars);
  return std::make_shared<const Program>(std::move(q));
}

// Programs that all take every program's captured constants (in order), then their own
// inputs, as cond's branches must; the constants' values go to *consts.
core::ProgramList with_common_consts(const std::vector<ClosedProgram>& closed,
                                     std::vector<Array>* consts) {
  core::ProgramList out;
  for (size_t b = 0; b < closed.size(); ++b) {
    std::vector<Aval> before, after;
    for (size_t o = 0; o < closed.size(); ++o) {
      if (o == b) continue;
      std::vector<Aval> avals = avals_of(closed[o].consts);
      auto& dst = o < b ? before : after;
      dst.insert(dst.end(), avals.begin(), avals.end());
    }
    out.push_back(
        with_unused_consts(core::lift_consts(closed[b]), closed[b].consts.size(), before, after));
    consts->insert(consts->end(), closed[b].consts.begin(), closed[b].consts.end());
  }
  return out;
}

std::vector<int> dims_of(const Mask& batched, int at) {
  std::vector<int> dims;
  for (bool b : batched) dims.push_back(b ? at : kNotMapped);
  return dims;
}

// Returns `which` (batched [B]) broadcast to `shape` ([B, ...]), as select_n needs.
Array broadcast_which(const Array& which, const Shape& shape) {
  if (shape.size() <= 1) return which;
  return lax::broadcast_in_dim(which, shape, {0});
}

Array stop_gradient(const Array& x) { return core::bind1(Prim::stop_gradient, {x}); }

// cond with a batched index is a select among every branch's results (JAX converts it the
// same way). Each branch sees its operands through a select with their stop_gradient, so
// the branches not taken contribute no gradient (jax-ml/jax#1052).
Batched cond_as_select(std::span<const Array> in, std::span<const int> dims,
                       const core::ProgramList& branches, const BatchAxis& axis) {
  const Array index = core::batch_first(in[0], dims[0], axis.size);
  std::vector<Array> ops;
  for (size_t i = 1; i < in.size(); ++i)
    ops.push_back(core::batch_first(in[i], dims[i], axis.size));
  const Mask all(ops.size(), true);
  std::vector<std::vector<Array>> outs;  // per branch
  for (size_t b = 0; b < branches.size(); ++b) {
    const Array taken = lax::eq(index, constant(double(b), DType::int32));
    std::vector<Array> guarded;
    for (const Array& x : ops) {
      guarded.push_back(lax::select(broadcast_which(taken, x.shape()), x, stop_gradient(x)));
    }
    const Mask force(branches[b]->outvars.size(), true);
    outs.push_back(run_batched(*branches[b], guarded, all, force, axis).outs);
  }
  std::vector<Array> result;
  for (size_t r = 0; r < outs[0].size(); ++r) {
    std::vector<Array> cases;
    for (const auto& branch_outs : outs) cases.push_back(branch_outs[r]);
    result.push_back(lax::select_n(broadcast_which(index, cases[0].shape()), cases));
  }
  return core::batched_at_front(std::move(result));
}

}  // namespace

Batched cond_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis& axis) {
  const auto& branches = params.get<core::ProgramList>("branches");
  if (dims[0] != kNotMapped) return cond_as_select(in, dims, branches, axis);
  const Mask in_bat = batched_mask(dims.subspan(1));
  Mask out_bat(branches[0]->outvars.size(), false);
  for (const ProgramRef& b : branches) out_bat = out_bat | batched_outputs(*b, in_bat, axis);
  std::vector<ClosedProgram> closed;
  for (const ProgramRef& b : branches) {
    closed.push_back(batch_program(*b, in_bat, out_bat, axis).closed);
  }
  std::vector<Array> args{in[0]};
  core::ProgramList programs = with_common_consts(closed, &args);
  for (size_t i = 1; i < in.size(); ++i) {
    args.push_back(to_layout(in[i], dims[i], in_bat[i - 1], 0, axis.size));
  }
  Params p = params;
  p.set("branches", programs);
  return Batched{core::bind(Prim::cond, std::move(args), std::move(p)), dims_of(out_bat, 0)};
}

namespace {

// A while whose predicate is batched runs until every member's is false; members already
// done keep their carry (JAX's batched while: reduce_or of the predicate, and a select of
// the body's update by it).
struct WhileParts {
  std::vector<Array> cconsts, bconsts, carry;
};

// Binds a while of the traced cond and body, each taking the constants its trace
// captured, then `cond_consts` (`body_consts`), then the carry.
std::vector<Array> bind_while(const ClosedProgram& cond, const std::vector<Array>& cond_consts,
                              const ClosedProgram& body, const std::vector<Array>& body_consts,
                              const std::vector<Array>& carry, const Params& params) {
  std::vector<Array> args = cond.consts;
  args.insert(args.end(), cond_consts.begin(), cond_consts.end());
  args.insert(args.end(), body.consts.begin(), body.consts.end());
  args.insert(args.end(), body_consts.begin(), body_consts.end());
  args.insert(args.end(), carry.begin(), carry.end());
  Params p = params;
  p.set("cond_jaxpr", core::lift_consts(cond));
  p.set("cond_nconsts", int64_t(cond.consts.size() + cond_consts.size()));
  p.set("body_jaxpr", core::lift_consts(body));
  p.set("body_nconsts", int64_t(body.consts.size() + body_consts.size()));
  return core::bind(Prim::while_, std::move(args), std::move(p));
}

Batched while_batched_pred(const WhileParts& w, const Mask& cc_bat, const Mask& bc_bat,
                           const WhileShape& shape, const Params& params, const BatchAxis& axis) {
  const Mask carry_bat(w.carry.size(), true);
  const Mask cond_in = concat(cc_bat, carry_bat);
  const Mask body_in = concat(bc_bat, carry_bat);
  const Mask one{true};
  const size_t ncc = w.cconsts.size();
  const size_t nbc = w.bconsts.size();
  std::vector<Aval> carry_avals = avals_of(w.carry);
  std::vector<Aval> cond_avals = avals_of(w.cconsts);
  cond_avals.insert(cond_avals.end(), carry_avals.begin(), carry_avals.end());
  ClosedProgram cond = core::trace_to_program(cond_avals, [&](const std::vector<Array>& xs) {
    Array pred = run_batched(*shape.cond, xs, cond_in, one, axis).outs[0];
    return std::vector<Array>{lax::reduce_or(pred, {0})};
  });
  std::vector<Aval> body_avals = avals_of(w.cconsts);
  std::vector<Aval> bc_avals = avals_of(w.bconsts);
  body_avals.insert(body_avals.end(), bc_avals.begin(), bc_avals.end());
  body_avals.insert(body_avals.end(), carry_avals.begin(), carry_avals.end());
  ClosedProgram body = core::trace_to_program(body_avals, [&](const std::vector<Array>& xs) {
    const std::span<const Array> all(xs);
    std::vector<Array> cond_args = slice_of(all, 0, ncc);
    std::vector<Array> body_args = slice_of(all, ncc, xs.size());
    const std::vector<Array> carry = slice_of(all, ncc + nbc, xs.size());
    cond_args.insert(cond_args.end(), carry.begin(), carry.end());
    const Array pred = run_batched(*shape.cond, cond_args, cond_in, one, axis).outs[0];
    std::vector<Array> next = run_batched(*shape.body, body_args, body_in, carry_bat, axis).outs;
    for (size_t c = 0; c < next.size(); ++c) {
      next[c] = lax::select(broadcast_which(pred, next[c].shape()), next[c], carry[c]);
    }
    return next;
  });
  // The body reads the cond's constants too (it evaluates the predicate).
  std::vector<Array> body_consts = w.cconsts;
  body_consts.insert(body_consts.end(), w.bconsts.begin(), w.bconsts.end());
  return core::batched_at_front(bind_while(cond, w.cconsts, body, body_consts, w.carry, params));
}

}  // namespace

Batched while_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                    const BatchAxis& axis) {
  const WhileShape shape(params);
  const size_t ncc = size_t(shape.cond_nconsts);
  const size_t nbc = size_t(shape.body_nconsts);
  const Mask bat = batched_mask(dims);
  const Mask cc_bat(bat.begin(), bat.begin() + long(ncc));
  const Mask bc_bat(bat.begin() + long(ncc), bat.begin() + long(ncc + nbc));
  Mask carry_bat(bat.begin() + long(ncc + nbc), bat.end());
  for (;;) {
    const Mask next = carry_bat | batched_outputs(*shape.body, concat(bc_bat, carry_bat), axis);
    if (next == carry_bat) break;
    carry_bat = next;
  }
  const bool pred_bat = batched_outputs(*shape.cond, concat(cc_bat, carry_bat), axis)[0];
  if (pred_bat) carry_bat.assign(carry_bat.size(), true);
  WhileParts w;
  for (size_t i = 0; i < in.size(); ++i) {
    const bool batched = i < ncc + nbc ? bat[i] : carry_bat[i - ncc - nbc];
    auto& dst = i < ncc ? w.cconsts : i < ncc + nbc ? w.bconsts : w.carry;
    dst.push_back(to_layout(in[i], dims[i], batched, 0, axis.size));
  }
  if (pred_bat) return while_batched_pred(w, cc_bat, bc_bat, shape, params, axis);
  const ClosedProgram cond = batch_program(*shape.cond, concat(cc_bat, carry_bat), {}, axis).closed;
  const ClosedProgram body =
      batch_program(*shape.body, concat(bc_bat, carry_bat), carry_bat, axis).closed;
  return Batched{bind_while(cond, w.cconsts, body, w.bconsts, w.carry, params),
                 dims_of(carry_bat, 0)};
}

// scan: consts and carry batched at the front, xs at dimension 1 (0 is the scanned one),
// so each x slice is batched at the front too; the stacked ys come out batched at 1.
Batched scan_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                   const BatchAxis& axis) {
  const ScanShape shape(params);
  const size_t nc = size_t(shape.num_consts);
  const size_t ncarry = size_t(shape.num_carry);
  const Mask bat = batched_mask(dims);
  const Mask const_bat(bat.begin(), bat.begin() + long(nc));
  Mask carry_bat(bat.begin() + long(nc), bat.begin() + long(nc + ncarry));
  const Mask xs_bat(bat.begin() + long(nc + ncarry), bat.end());
  auto body_in = [&] { return concat(concat(const_bat, carry_bat), xs_bat); };
  for (;;) {
    Mask out = batched_outputs(*shape.body, body_in(), axis);
    out.resize(ncarry);
    const Mask next = carry_bat | out;
    if (next == carry_bat) break;
    carry_bat = next;
  }
  Mask force = carry_bat;
  force.resize(shape.body->outvars.size(), false);
  const BatchedProgram body = batch_program(*shape.body, body_in(), force, axis);
  std::vector<Array> args = body.closed.consts;
  const Mask in_bat = body_in();
  for (size_t i = 0; i < in.size(); ++i) {
    const int to = i < nc + ncarry ? 0 : 1;
    args.push_back(to_layout(in[i], dims[i], in_bat[i], to, axis.size));
  }
  Params p = params;
  p.set("jaxpr", core::lift_consts(body.closed));
  p.set("num_consts", int64_t(body.closed.consts.size() + nc));
  std::vector<int> out_dims = dims_of(carry_bat, 0);
  for (size_t o = ncarry; o < body.out_batched.size(); ++o) {
    out_dims.push_back(body.out_batched[o] ? 1 : kNotMapped);
  }
  return Batched{core::bind(Prim::scan, std::move(args), std::move(p)), std::move(out_dims)};
}

// remat2: a remat2 (same policy) of the batched program.
Batched checkpoint_batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
                         const BatchAxis& axis) {
  const ProgramRef& jaxpr = params.get<ProgramRef>("jaxpr");
  const Mask in_bat = batched_mask(dims);
  const BatchedProgram body = batch_program(*jaxpr, in_bat, {}, axis);
  std::vector<Array> args = body.closed.consts;
  for (size_t i = 0; i < in.size(); ++i) {
    args.push_back(to_layout(in[i], dims[i], in_bat[i], 0, axis.size));
  }
  Params p = params;
  p.set("jaxpr", core::lift_consts(body.closed));
  return Batched{core::bind(Prim::checkpoint, std::move(args), std::move(p)),
                 dims_of(body.out_batched, 0)};
}

// check_vma. A sub-program's results vary as its equations make them (program_vma, as
// shard_map's check reads them); a loop's carry varies over what it enters with and
// whatever the body adds, to a fixed point.
namespace {

using Vma = std::vector<uint64_t>;

Vma join(Vma a, const Vma& b) {
  a.insert(a.end(), b.begin(), b.end());
  return a;
}

// Iterates `carry |= step(carry)` (the step's leading results are the carry's) until it
// settles.
template <class Step>
Vma carry_fixed_point(Vma carry, Step step) {
  for (;;) {
    const Vma out = step(carry);
    bool changed = false;
    for (size_t c = 0; c < carry.size(); ++c) {
      const uint64_t next = carry[c] | out[c];
      changed = changed || next != carry[c];
      carry[c] = next;
    }
    if (!changed) return carry;
  }
}

}  // namespace

// A varying index picks different branches on different devices: every result varies
// over its axes too.
std::vector<uint64_t> cond_vma(std::span<const uint64_t> in, const Params& params,
                               std::span<const std::string> axes) {
  const auto& branches = params.get<core::ProgramList>("branches");
  const Vma ops(in.begin() + 1, in.end());
  Vma out(branches[0]->outvars.size(), in[0]);
  for (const ProgramRef& b : branches) {
    const Vma r = program_vma(*b, ops, axes);
    for (size_t o = 0; o < out.size(); ++o) out[o] |= r[o];
  }
  return out;
}

// A varying predicate runs different trip counts on different devices: what the body
// updates varies over its axes too.
std::vector<uint64_t> while_vma(std::span<const uint64_t> in, const Params& params,
                                std::span<const std::string> axes) {
  const WhileShape shape(params);
  const size_t ncc = size_t(shape.cond_nconsts);
  const size_t nbc = size_t(shape.body_nconsts);
  const Vma cc(in.begin(), in.begin() + long(ncc));
  const Vma bc(in.begin() + long(ncc), in.begin() + long(ncc + nbc));
  auto step = [&](const Vma& carry) {
    const uint64_t pred = program_vma(*shape.cond, join(cc, carry), axes)[0];
    Vma out = program_vma(*shape.body, join(bc, carry), axes);
    const Program& body = *shape.body;
    for (size_t c = 0; c < out.size(); ++c) {
      const core::Atom& o = body.outvars[c];
      const bool unchanged = !o.is_literal() && o.var == body.invars[nbc + c];
      if (!unchanged) out[c] |= pred;
    }
    return out;
  };
  return carry_fixed_point(Vma(in.begin() + long(ncc + nbc), in.end()), step);
}

std::vector<uint64_t> scan_vma(std::span<const uint64_t> in, const Params& params,
                               std::span<const std::string> axes) {
  const ScanShape shape(params);
  const size_t nc = size_t(shape.num_consts);
  const size_t ncarry = size_t(shape.num_carry);
  const Vma consts(in.begin(), in.begin() + long(nc));
  const Vma xs(in.begin() + long(nc + ncarry), in.end());
  auto run = [&](const Vma& carry) {
    return program_vma(*shape.body, join(join(consts, carry), xs), axes);
  };
  const Vma carry =
      carry_fixed_point(Vma(in.begin() + long(nc), in.begin() + long(nc + ncarry)), run);
  Vma out = run(carry);
  std::copy(carry.begin(), carry.end(), out.begin());
  return out;
}

}  // namespace parax::prims
