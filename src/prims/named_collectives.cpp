// The named-axis collectives of per-device code (JAX's lax.parallel): psum, pmax, pmin,
// all_gather, reduce_scatter (psum_scatter), ppermute, all_to_all and axis_index. Param
// `axes` names the axes they act over, bound by an enclosing vmap, pmap or shard_map. Under
// vmap their batching rules act along the batch dimension; inside pmap and shard_map their
// lower_local rules make them the collectives of the mesh axes of those names (through the
// partitioner's context), so they have no kernel of their own. Their vma rules are
// shard_map's check_vma.
#include <algorithm>

#include "core/backend.h"
#include "core/batching.h"
#include "core/program_trace.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace named_collectives_impl {

using core::BatchAxis;
using core::Batched;
using core::kNotMapped;
using core::Prim;

const std::vector<std::string>& axes_of(const Params& p) {
  return p.get<std::vector<std::string>>("axes");
}

// Returns the axes other than `name`, or nullopt when `name` is not among them.
std::optional<std::vector<std::string>> without(const Params& p, const std::string& name) {
  std::vector<std::string> rest = axes_of(p);
  auto it = std::find(rest.begin(), rest.end(), name);
  if (name.empty() || it == rest.end()) return std::nullopt;
  rest.erase(it);
  return rest;
}

Params with_axes(Params p, std::vector<std::string> axes) {
  p.set("axes", std::move(axes));
  return p;
}

int64_t int_param(const Params& p, std::string_view name) { return p.get<int64_t>(name); }

std::vector<Aval> same_eval(std::span<const Aval> in, const Params&) { return {in[0]}; }

std::vector<Aval> all_gather_eval(std::span<const Aval> in, const Params& p) {
  Aval out = in[0];
  const int64_t d = int_param(p, "all_gather_dimension");
  const int64_t n = int_param(p, "axis_size");
  const int64_t rank = int64_t(out.shape.size());
  if (p.get<bool>("tiled")) {
    if (d < 0 || d >= rank) {
      throw ValueError("all_gather_dimension " + std::to_string(d) + " is out of bounds for " +
                       in[0].str());
    }
    out.shape[size_t(d)] *= n;
  } else {
    if (d < 0 || d > rank) {
      throw ValueError("all_gather_dimension " + std::to_string(d) + " is out of bounds for " +
                       in[0].str());
    }
    out.shape.insert(out.shape.begin() + d, n);
  }
  return {out};
}

std::vector<Aval> reduce_scatter_eval(std::span<const Aval> in, const Params& p) {
  Aval out = in[0];
  const int64_t d = int_param(p, "scatter_dimension");
  const int64_t n = int_param(p, "axis_size");
  if (d < 0 || d >= int64_t(out.shape.size())) {
    throw ValueError("scatter_dimension " + std::to_string(d) + " is out of bounds for " +
                     in[0].str());
  }
  const int64_t size = out.shape[size_t(d)];
  if (p.get<bool>("tiled")) {
    if (size % n != 0) {
      throw ValueError("tiled reduce_scatter operand scatter dimension size " +
                       std::to_string(size) + " must be divisible by shard_count " +
                       std::to_string(n));
    }
    out.shape[size_t(d)] = size / n;
  } else {
    if (size != n) {
      throw ValueError("reduce_scatter operand scatter dimension size " + std::to_string(size) +
                       " must match shard count " + std::to_string(n));
    }
    out.shape.erase(out.shape.begin() + d);
  }
  return {out};
}

std::vector<Aval> all_to_all_eval(std::span<const Aval> in, const Params& p) {
  Aval out = in[0];
  const int64_t split = int_param(p, "split_axis");
  const int64_t concat = int_param(p, "concat_axis");
  const int64_t n = int_param(p, "axis_size");
  const int64_t rank = int64_t(out.shape.size());
  if (split < 0 || split >= rank || concat < 0 || concat >= rank) {
    throw ValueError("all_to_all split_axis " + std::to_string(split) + " and concat_axis " +
                     std::to_string(concat) + " must be axes of " + in[0].str());
  }
  const int64_t size = out.shape[size_t(split)];
  if (p.get<bool>("tiled")) {
    if (size % n != 0) {
      throw ValueError("The size of all_to_all split_axis (" + std::to_string(size) +
                       ") has to be divisible by the size of the named axis " + axes_of(p)[0] +
                       " (" + std::to_string(n) + ")");
    }
    out.shape[size_t(split)] /= n;
    out.shape[size_t(concat)] *= n;
  } else {
    if (size != n) {
      throw ValueError(
          "all_to_all requires the size of the mapped axis axis_name to equal "
          "x.shape[split_axis], but they are " +
          std::to_string(n) + " and " + std::to_string(size) + " respectively.");
    }
    // The split axis becomes the one the pieces come from: its size stays n, and it moves
    // to concat_axis.
    out.shape.erase(out.shape.begin() + split);
    out.shape.insert(out.shape.begin() + concat, n);
  }
  return {out};
}

std::vector<Aval> axis_index_eval(std::span<const Aval>, const Params&) {
  return {Aval{{}, DType::int32, false}};
}

// In a per-device program (`mesh_axes` set by the partitioner): this device's index.
void axis_index_kernel(const KernelCall& c) {
  *out_ptr<int32_t>(c, 0) =
      int32_t(c.device.linear_index(c.params.get<std::vector<int64_t>>("mesh_axes")));
}

// Inside a shard_map with axes left to the automatic partitioner, a collective's operand
// may be split over those axes on every dimension but the ones it gathers, scatters or
// splits along.
ShardingRule rule_except(std::span<const Aval> in, std::span<const Aval> out,
                         std::vector<int64_t> whole_in, std::vector<int64_t> whole_out) {
  ShardingRule rule;
  const size_t rank = in[0].shape.size();
  rule.operands.assign(1, std::vector<int>(rank, ShardingRule::kNone));
  rule.results.assign(1, std::vector<int>(out[0].shape.size(), ShardingRule::kNone));
  // Dimensions other than the special ones pair up in order.
  std::vector<size_t> od;
  for (size_t d = 0; d < out[0].shape.size(); ++d) {
    if (std::count(whole_out.begin(), whole_out.end(), int64_t(d)) == 0) od.push_back(d);
  }
  size_t k = 0;
  for (size_t d = 0; d < rank; ++d) {
    if (std::count(whole_in.begin(), whole_in.end(), int64_t(d)) > 0) continue;
    if (k >= od.size()) break;
    rule.operands[0][d] = rule.num_factors();
    rule.results[0][od[k++]] = rule.num_factors();
    rule.factor_sizes.push_back(in[0].shape[d]);
  }
  return rule;
}

ShardingRule all_gather_sharding(std::span<const Aval> in, std::span<const Aval> out,
                                 const Params& p) {
  const int64_t d = int_param(p, "all_gather_dimension");
  return p.get<bool>("tiled") ? rule_except(in, out, {d}, {d}) : rule_except(in, out, {}, {d});
}

ShardingRule reduce_scatter_sharding(std::span<const Aval> in, std::span<const Aval> out,
                                     const Params& p) {
  const int64_t d = int_param(p, "scatter_dimension");
  return p.get<bool>("tiled") ? rule_except(in, out, {d}, {d}) : rule_except(in, out, {d}, {});
}

ShardingRule all_to_all_sharding(std::span<const Aval> in, std::span<const Aval> out,
                                 const Params& p) {
  const int64_t s = int_param(p, "split_axis");
  const int64_t c = int_param(p, "concat_axis");
  return p.get<bool>("tiled") ? rule_except(in, out, {s, c}, {s, c})
                              : rule_except(in, out, {s, c}, {c, s});
}

// ---------------------------------------------------------------------------------------
// Derivatives. Each instance's output is a function of every instance's input, so the
// transposes are the adjoint collectives: psum's is psum (each instance's cotangent reaches
// every input), all_gather's is reduce_scatter and back, ppermute's runs the pairs backwards
// and all_to_all's swaps its axes.

std::vector<Array> psum_transpose(std::span<const Array> cts, std::span<const Array>,
                                  std::span<const bool>, const Params& p) {
  if (!cts[0].valid()) return {Array()};
  return {core::bind1(Prim::psum, {cts[0]}, p)};
}

std::vector<Array> all_gather_transpose(std::span<const Array> cts, std::span<const Array>,
                                        std::span<const bool>, const Params& p) {
  if (!cts[0].valid()) return {Array()};
  Params q{{"axes", axes_of(p)},
           {"scatter_dimension", int_param(p, "all_gather_dimension")},
           {"axis_size", int_param(p, "axis_size")},
           {"tiled", p.get<bool>("tiled")}};
  return {core::bind1(Prim::psum_scatter, {cts[0]}, std::move(q))};
}

std::vector<Array> reduce_scatter_transpose(std::span<const Array> cts, std::span<const Array>,
                                            std::span<const bool>, const Params& p) {
  if (!cts[0].valid()) return {Array()};
  Params q{{"axes", axes_of(p)},
           {"all_gather_dimension", int_param(p, "scatter_dimension")},
           {"axis_size", int_param(p, "axis_size")},
           {"tiled", p.get<bool>("tiled")}};
  return {core::bind1(Prim::pall_gather, {cts[0]}, std::move(q))};
}

std::vector<Array> ppermute_transpose(std::span<const Array> cts, std::span<const Array>,
                                      std::span<const bool>, const Params& p) {
  if (!cts[0].valid()) return {Array()};
  std::vector<int64_t> inverse = p.get<std::vector<int64_t>>("perm");
  for (size_t k = 0; k + 1 < inverse.size(); k += 2) std::swap(inverse[k], inverse[k + 1]);
  Params q = p;
  q.set("perm", std::move(inverse));
  return {core::bind1(Prim::ppermute, {cts[0]}, std::move(q))};
}

std::vector<Array> all_to_all_transpose(std::span<const Array> cts, std::span<const Array>,
                                        std::span<const bool>, const Params& p) {
  if (!cts[0].valid()) return {Array()};
  Params q = p;
  q.set("split_axis", int_param(p, "concat_axis"));
  q.set("concat_axis", int_param(p, "split_axis"));
  return {core::bind1(Prim::pall_to_all, {cts[0]}, std::move(q))};
}

// pmax and pmin pass the tangent of the instances holding the extreme value, averaged over
// ties (as reduce_max's jvp does within one array).
template <Prim P>
std::vector<Array> extreme_jvp(std::span<const Array> primals, std::span<const Array> tangents,
                               std::span<const Array> outs, const Params& p) {
  if (!tangents[0].valid()) return {Array()};
  const Array& x = primals[0];
  Array hit = lax::convert_element_type(lax::eq(x, outs[0]), x.dtype());
  Array count = core::bind1(Prim::psum, {hit}, p);
  Array picked = core::bind1(Prim::psum, {lax::mul(tangents[0], hit)}, p);
  return {lax::div(picked, count)};
}

// ---------------------------------------------------------------------------------------
// Batching. A collective over the vmapped axis acts along the batch dimension; over other
// axes it applies to the batched value as it is (every element is one more instance).

// Returns the collective applied to `x` over the axes other than the vmapped one.
Array over_rest(Prim prim, const Array& x, const Params& p, const std::vector<std::string>& rest) {
  if (rest.empty()) return x;
  return core::bind1(prim, {x}, with_axes(p, rest));
}

// psum, pmax, pmin.
template <Prim P>
Batched reduce_batch(std::span<const Array> in, std::span<const int> dims, const Params& p,
                     const BatchAxis& axis) {
  auto rest = without(p, axis.name);
  if (!rest) {
    return Batched{{core::bind1(P, {in[0]}, p)}, {dims[0]}};
  }
  Array x = in[0];
  Array r;
  if (dims[0] == kNotMapped) {
    r = P == Prim::psum ? lax::mul(x, lax::convert_element_type(
                                          core::literal_array(core::Literal{
                                              Aval{{}, DType::int64, false}, double(axis.size)}),
                                          x.dtype()))
                        : x;
  } else {
    const std::vector<int64_t> a{int64_t(dims[0])};
    r = P == Prim::psum   ? lax::reduce_sum(x, a)
        : P == Prim::pmax ? lax::reduce_max(x, a)
                          : lax::reduce_min(x, a);
  }
  return Batched{{over_rest(P, r, p, *rest)}, {kNotMapped}};
}

// ---------------------------------------------------------------------------------------
// A collective over the vmapped axis together with others: written per instance as psum
// and axis_index over all its names plus slicing, then batched (psum and axis_index know
// how to mix a vmapped axis with others). It costs the group's size in memory, which the
// single-axis rules avoid.

Array index_constant(int64_t v) { return constant(double(v), DType::int32); }

// Returns starts for dynamic_slice / dynamic_update_slice: `at` in dimension d, else 0.
std::vector<Array> starts_at(size_t rank, size_t d, const Array& at) {
  std::vector<Array> starts(rank, index_constant(0));
  starts[d] = at;
  return starts;
}

// Every instance's x stacked in a new leading dimension, in the row-major order of `names`.
Array gather_stacked(const Array& x, const std::vector<std::string>& names, int64_t n) {
  Shape stacked = x.shape();
  stacked.insert(stacked.begin(), n);
  Array slot = zeros_like_aval(Aval{stacked, x.dtype(), false});
  Array mine = lax::dynamic_update_slice(
      slot, lax::expand_dims(x, {0}),
      starts_at(stacked.size(), 0, core::bind1(Prim::axis_index, {}, {{"axes", names}})));
  return core::bind1(Prim::psum, {mine}, {{"axes", names}});
}

// Returns x with dimension `from` moved to `to`.
Array move_dim(const Array& x, int64_t from, int64_t to) {
  return core::move_batch_dim(x, int(from), int(to), 0);
}

// Returns x with dimensions d and d + 1 merged (d major).
Array merge_dims(const Array& x, int64_t d) {
  Shape s = x.shape();
  s[size_t(d)] *= s[size_t(d) + 1];
  s.erase(s.begin() + d + 1);
  return lax::reshape(x, s);
}

Array composed(Prim prim, const Array& x, const Params& p) {
  const std::vector<std::string>& names = axes_of(p);
  const Array me = core::bind1(Prim::axis_index, {}, {{"axes", names}});
  switch (prim) {
    case Prim::pall_gather: {
      const int64_t n = int_param(p, "axis_size");
      const int64_t d = int_param(p, "all_gather_dimension");
      Array g = move_dim(gather_stacked(x, names, n), 0, d);
      return p.get<bool>("tiled") ? merge_dims(g, d) : g;
    }
    case Prim::psum_scatter: {
      const int64_t n = int_param(p, "axis_size");
      const int64_t d = int_param(p, "scatter_dimension");
      Array sum = core::bind1(Prim::psum, {x}, {{"axes", names}});
      Shape sizes = sum.shape();
      const int64_t block = sizes[size_t(d)] / n;
      sizes[size_t(d)] = p.get<bool>("tiled") ? block : 1;
      Array start = p.get<bool>("tiled") ? lax::mul(me, index_constant(block)) : me;
      Array mine = lax::dynamic_slice(sum, starts_at(sizes.size(), size_t(d), start), sizes);
      return p.get<bool>("tiled") ? mine : lax::squeeze(mine, {d});
    }
    case Prim::ppermute: {
      // Each source writes its x into its destination's slot (one spare slot for
      // instances that send nowhere); the sum over the group leaves each slot with what
      // its instance receives, zeros where nothing arrives.
      const auto& perm = p.get<std::vector<int64_t>>("perm");
      int64_t n = 1;
      for (const std::string& a : names) n *= core::find_axis(a).size;
      std::vector<int32_t> dest(static_cast<size_t>(n), static_cast<int32_t>(n));
      for (size_t k = 0; k + 1 < perm.size(); k += 2) dest[size_t(perm[k])] = int32_t(perm[k + 1]);
      Array table = core::backend().from_host(dest.data(), Aval{{n}, DType::int32, false});
      Array to = lax::reshape(lax::dynamic_slice(table, {me}, {1}), {});
      Shape slots = x.shape();
      slots.insert(slots.begin(), n + 1);
      Array sent =
          lax::dynamic_update_slice(zeros_like_aval(Aval{slots, x.dtype(), false}),
                                    lax::expand_dims(x, {0}), starts_at(slots.size(), 0, to));
      Array all = core::bind1(Prim::psum, {sent}, {{"axes", names}});
      Shape one = slots;
      one[0] = 1;
      return lax::squeeze(lax::dynamic_slice(all, starts_at(one.size(), 0, me), one), {0});
    }
    case Prim::pall_to_all: {
      // Every instance's x, then this instance's block of each, stacked along concat_axis.
      const int64_t n = int_param(p, "axis_size");
      const int64_t split = int_param(p, "split_axis");
      const int64_t concat = int_param(p, "concat_axis");
      Array all = gather_stacked(x, names, n);  // [n, *x]
      Shape sizes = all.shape();
      const bool tiled = p.get<bool>("tiled");
      const int64_t block = tiled ? sizes[size_t(split) + 1] / n : 1;
      sizes[size_t(split) + 1] = block;
      Array start = tiled ? lax::mul(me, index_constant(block)) : me;
      Array mine =
          lax::dynamic_slice(all, starts_at(sizes.size(), size_t(split) + 1, start), sizes);
      if (!tiled) return move_dim(lax::squeeze(mine, {split + 1}), 0, concat);
      return merge_dims(move_dim(mine, 0, concat), concat);
    }
    default:
      PARAX_CHECK(false, "no composed form for " << core::prim_name(prim));
  }
  PARAX_UNREACHABLE();
}

// Batches the composed form of a collective over several names, one of them vmapped.
Batched batch_composed(Prim prim, const Array& x, int dim, const Params& p, const BatchAxis& axis) {
  Aval element = core::aval_of(x);
  if (dim != kNotMapped) element.shape.erase(element.shape.begin() + dim);
  core::ClosedProgram closed = core::trace_to_program(
      std::vector<Aval>{element},
      [&](const std::vector<Array>& xs) { return std::vector<Array>{composed(prim, xs[0], p)}; });
  std::vector<Array> inputs(closed.consts);
  inputs.push_back(x);
  std::vector<int> dims(closed.consts.size(), kNotMapped);
  dims.push_back(dim);
  return core::vmap_program(*closed.program, inputs, dims, axis);
}

Batched all_gather_batch(std::span<const Array> in, std::span<const int> dims, const Params& p,
                         const BatchAxis& axis) {
  if (!without(p, axis.name)) {
    // Gather each batch element's value: the batch dimension is untouched.
    Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
    Params q = p;
    q.set("all_gather_dimension", int_param(p, "all_gather_dimension") + 1);
    return Batched{{core::bind1(Prim::pall_gather, {x}, std::move(q))}, {0}};
  }
  if (axes_of(p).size() > 1) return batch_composed(Prim::pall_gather, in[0], dims[0], p, axis);
  const int64_t d = int_param(p, "all_gather_dimension");
  Array x = core::move_batch_dim(in[0], dims[0], int(d), axis.size);
  if (p.get<bool>("tiled")) {
    Shape s = x.shape();
    s[size_t(d)] *= s[size_t(d) + 1];
    s.erase(s.begin() + d + 1);
    x = lax::reshape(x, s);
  }
  return Batched{{x}, {kNotMapped}};
}

Batched reduce_scatter_batch(std::span<const Array> in, std::span<const int> dims, const Params& p,
                             const BatchAxis& axis) {
  if (!without(p, axis.name)) {
    Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
    Params q = p;
    q.set("scatter_dimension", int_param(p, "scatter_dimension") + 1);
    return Batched{{core::bind1(Prim::psum_scatter, {x}, std::move(q))}, {0}};
  }
  if (axes_of(p).size() > 1) return batch_composed(Prim::psum_scatter, in[0], dims[0], p, axis);
  // The sum over the batch, whose scatter dimension (split into n blocks) becomes the
  // batch dimension.
  Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
  Array sum = lax::reduce_sum(x, {0});
  const int64_t d = int_param(p, "scatter_dimension");
  if (p.get<bool>("tiled")) {
    Shape s = sum.shape();
    s[size_t(d)] /= axis.size;
    s.insert(s.begin() + d, axis.size);
    sum = lax::reshape(sum, s);
  }
  return Batched{{sum}, {int(d)}};
}

Batched ppermute_batch(std::span<const Array> in, std::span<const int> dims, const Params& p,
                       const BatchAxis& axis) {
  if (!without(p, axis.name)) {
    return Batched{{core::bind1(Prim::ppermute, {in[0]}, p)}, {dims[0]}};
  }
  if (axes_of(p).size() > 1) return batch_composed(Prim::ppermute, in[0], dims[0], p, axis);
  Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
  const auto& perm = p.get<std::vector<int64_t>>("perm");
  std::vector<int64_t> source(size_t(axis.size), -1);
  for (size_t k = 0; k + 1 < perm.size(); k += 2) source[size_t(perm[k + 1])] = perm[k];
  // Element b takes element source[b]'s value, or zeros when no pair sends to it.
  Shape one = x.shape();
  one[0] = 1;
  std::vector<Array> parts;
  for (int64_t b = 0; b < axis.size; ++b) {
    if (source[size_t(b)] < 0) {
      parts.push_back(zeros_like_aval(Aval{one, x.dtype(), false}));
      continue;
    }
    std::vector<int64_t> start(one.size(), 0), limit(x.shape().begin(), x.shape().end());
    start[0] = source[size_t(b)];
    limit[0] = source[size_t(b)] + 1;
    parts.push_back(lax::slice(x, start, limit));
  }
  return Batched{{parts.size() == 1 ? parts[0] : lax::concatenate(parts, 0)}, {0}};
}

Batched all_to_all_batch(std::span<const Array> in, std::span<const int> dims, const Params& p,
                         const BatchAxis& axis) {
  const int64_t split = int_param(p, "split_axis");
  const int64_t concat = int_param(p, "concat_axis");
  if (!without(p, axis.name)) {
    Array x = core::move_batch_dim(in[0], dims[0], 0, axis.size);
    Params q = p;
    q.set("split_axis", split + 1);
    q.set("concat_axis", concat + 1);
    return Batched{{core::bind1(Prim::pall_to_all, {x}, std::move(q))}, {0}};
  }
  if (axes_of(p).size() > 1) return batch_composed(Prim::pall_to_all, in[0], dims[0], p, axis);
  const int64_t n = axis.size;
  // x[b, ...] with batch first; element b sends block k of its split axis to element k,
  // which stacks what it receives, in order of b, along its concat axis.
  Array x = core::move_batch_dim(in[0], dims[0], 0, n);
  const bool tiled = p.get<bool>("tiled");
  Shape s = x.shape();
  const int64_t sd = split + 1;  // the split axis with the batch in front
  if (tiled) {                   // split it into (n, block)
    s[size_t(sd)] /= n;
    s.insert(s.begin() + sd, n);
    x = lax::reshape(x, s);
  }
  // Now x[b, ..., k (at sd), ...]: the new batch is k, and b lands at the concat axis.
  std::vector<int64_t> rest;  // dims of x other than 0 and sd, in order
  for (int64_t d = 1; d < int64_t(x.ndim()); ++d) {
    if (d != sd) rest.push_back(d);
  }
  // Without b and k, the operand's dims (tiled: with the block kept at the split axis);
  // b goes to concat_axis among them.
  std::vector<int64_t> perm{sd};
  std::vector<int64_t> element_dims = rest;
  element_dims.insert(element_dims.begin() + concat, 0);
  perm.insert(perm.end(), element_dims.begin(), element_dims.end());
  Array y = lax::transpose(x, perm);
  if (tiled) {  // merge b (at concat + 1, before the concat axis's blocks) into the concat axis
    Shape t = y.shape();
    const size_t c = size_t(concat) + 1;
    t[c] *= t[c + 1];
    t.erase(t.begin() + long(c) + 1);
    y = lax::reshape(y, t);
  }
  return Batched{{y}, {0}};
}

Batched axis_index_batch(std::span<const Array>, std::span<const int>, const Params& p,
                         const BatchAxis& axis) {
  const std::vector<std::string>& names = axes_of(p);
  auto it = std::find(names.begin(), names.end(), axis.name);
  if (axis.name.empty() || it == names.end()) {
    return Batched{{core::bind1(Prim::axis_index, {}, p)}, {kNotMapped}};
  }
  // The row-major index over the names: (before..., this axis, after...).
  const std::vector<std::string> before(names.begin(), it), after(it + 1, names.end());
  int64_t after_size = 1;
  for (const std::string& a : after) after_size *= core::find_axis(a).size;
  Array index = lax::iota(DType::int32, axis.size);
  if (!after.empty()) {
    index = lax::add(lax::mul(index, index_constant(after_size)),
                     core::bind1(Prim::axis_index, {}, with_axes(p, after)));
  }
  if (!before.empty()) {
    index = lax::add(index, lax::mul(core::bind1(Prim::axis_index, {}, with_axes(p, before)),
                                     index_constant(axis.size * after_size)));
  }
  return Batched{{index}, {0}};
}

// ---------------------------------------------------------------------------------------
// Inside pmap and shard_map regions the partitioner lowers each one (lower_local) to the
// collectives of the mesh axes its names stand for, asking it for every equation.

using core::Atom;
using core::LowerContext;

std::vector<int64_t> mesh_axes(const LowerContext& c) {
  return std::vector<int64_t>(c.named_axes.begin(), c.named_axes.end());
}

// Devices along the named axes.
int64_t group_size(const LowerContext& c) {
  int64_t n = 1;
  for (int64_t a : c.named_axes) n *= c.axis_sizes[size_t(a)];
  return n;
}

// Collectives exchange buffers: a literal operand (psum(1.0), a gradient's seed) gets one.
Atom buffer_of(std::span<const Atom> in, const LowerContext& c) {
  return in[0].is_literal() ? c.emit(Prim::copy, {in[0]}, {}, c.in_avals[0]) : in[0];
}

Aval insert_one(const Aval& a, int64_t d) {
  Aval r = a;
  r.shape.insert(r.shape.begin() + d, 1);
  return r;
}

template <core::ReduceOp kOp>
std::vector<Atom> all_reduce_lower(std::span<const Atom> in, const Params&, const LowerContext& c) {
  const Atom x = buffer_of(in, c);
  Params params{{"mesh_axes", mesh_axes(c)}, {"op", std::string(core::reduce_op_name(kOp))}};
  return {c.emit(Prim::all_reduce, {x}, std::move(params), c.out_avals[0])};
}

// Untiled: each block gets a unit dimension to be gathered along.
std::vector<Atom> all_gather_lower(std::span<const Atom> in, const Params& p,
                                   const LowerContext& c) {
  Atom cur = buffer_of(in, c);
  const int64_t d = int_param(p, "all_gather_dimension");
  if (!p.get<bool>("tiled")) {
    cur = c.emit(Prim::expand_dims, {cur}, {{"dimensions", std::vector<int64_t>{d}}},
                 insert_one(c.in_avals[0], d));
  }
  return {c.emit(Prim::all_gather, {cur}, {{"mesh_axes", mesh_axes(c)}, {"dimension", d}},
                 c.out_avals[0])};
}

// Untiled: a unit block is scattered, and its dimension goes.
std::vector<Atom> reduce_scatter_lower(std::span<const Atom> in, const Params& p,
                                       const LowerContext& c) {
  const Atom x = buffer_of(in, c);
  const int64_t d = int_param(p, "scatter_dimension");
  Params params{{"mesh_axes", mesh_axes(c)}, {"dimension", d}, {"op", std::string("sum")}};
  if (p.get<bool>("tiled")) {
    return {c.emit(Prim::reduce_scatter, {x}, std::move(params), c.out_avals[0])};
  }
  Aval unit = c.in_avals[0];
  unit.shape[size_t(d)] = 1;
  const Atom one = c.emit(Prim::reduce_scatter, {x}, std::move(params), unit);
  return {c.emit(Prim::squeeze, {one}, {{"dimensions", std::vector<int64_t>{d}}}, c.out_avals[0])};
}

// Untiled (the split axis has n elements): a unit axis receives the pieces, and the
// emptied split axis goes.
Atom untiled_all_to_all(const Atom& v, const Aval& a, int64_t split, int64_t concat,
                        const Aval& res, const LowerContext& c) {
  const int64_t n = group_size(c);
  const int64_t q = concat < split ? concat : concat + 1;
  if (q <= split) ++split;
  Aval grown = insert_one(a, q);
  Atom cur = c.emit(Prim::expand_dims, {v}, {{"dimensions", std::vector<int64_t>{q}}}, grown);
  Aval moved = grown;
  moved.shape[size_t(q)] = n;
  moved.shape[size_t(split)] /= n;
  cur = c.emit(Prim::all_to_all, {cur},
               {{"mesh_axes", mesh_axes(c)}, {"split_dimension", split}, {"concat_dimension", q}},
               moved);
  return c.emit(Prim::squeeze, {cur}, {{"dimensions", std::vector<int64_t>{split}}}, res);
}

std::vector<Atom> all_to_all_lower(std::span<const Atom> in, const Params& p,
                                   const LowerContext& c) {
  const Atom x = buffer_of(in, c);
  const Aval& a = c.in_avals[0];
  const Aval& out = c.out_avals[0];
  const int64_t split = int_param(p, "split_axis");
  const int64_t concat = int_param(p, "concat_axis");
  if (!p.get<bool>("tiled")) return {untiled_all_to_all(x, a, split, concat, out, c)};
  if (split != concat) {
    Params params{
        {"mesh_axes", mesh_axes(c)}, {"split_dimension", split}, {"concat_dimension", concat}};
    return {c.emit(Prim::all_to_all, {x}, std::move(params), out)};
  }
  // Split and concatenated along one axis: as (n, block), the n pieces trade places.
  const int64_t n = group_size(c);
  Aval blocks = a;
  blocks.shape[size_t(split)] /= n;
  blocks.shape.insert(blocks.shape.begin() + split, n);
  Atom cur = c.emit(Prim::reshape, {x}, {{"new_sizes", blocks.shape}}, blocks);
  cur = untiled_all_to_all(cur, blocks, split, split, blocks, c);
  return {c.emit(Prim::reshape, {cur}, {{"new_sizes", out.shape}}, out)};
}

// Index pairs along the axes become device pairs: every device whose index is a source
// sends to the device that differs from it only in those axes' coordinates (sources are
// unique: lax::ppermute checks).
std::vector<Atom> ppermute_lower(std::span<const Atom> in, const Params& p, const LowerContext& c) {
  const Atom x = buffer_of(in, c);
  const auto& perm = p.get<std::vector<int64_t>>("perm");
  const auto to = [&](int64_t index) -> int64_t {
    for (size_t k = 0; k + 1 < perm.size(); k += 2) {
      if (perm[k] == index) return perm[k + 1];
    }
    return -1;
  };
  return {c.move_blocks(x, c.out_avals[0], mesh_axes(c), to)};
}

std::vector<Atom> axis_index_lower(std::span<const Atom>, const Params&, const LowerContext& c) {
  return {c.emit(Prim::axis_index, {}, {{"mesh_axes", mesh_axes(c)}}, c.out_avals[0])};
}

// ---------------------------------------------------------------------------------------
// check_vma: which manual axes of a shard_map region a result varies over.

uint64_t mask_of(const Params& p, std::span<const std::string> axis_names) {
  uint64_t m = 0;
  for (const std::string& n : axes_of(p)) {
    auto it = std::find(axis_names.begin(), axis_names.end(), n);
    if (it != axis_names.end()) m |= uint64_t{1} << (it - axis_names.begin());
  }
  return m;
}

uint64_t any_of(std::span<const uint64_t> in) {
  uint64_t any = 0;
  for (uint64_t m : in) any |= m;
  return any;
}

// psum-like collectives make their result the same on every instance along their axes.
std::vector<uint64_t> invariant_vma(std::span<const uint64_t> in, const Params& p,
                                    std::span<const std::string> axis_names) {
  return {any_of(in) & ~mask_of(p, axis_names)};
}

// Collectives handing each instance different data (and axis_index) make it vary.
std::vector<uint64_t> varying_vma(std::span<const uint64_t> in, const Params& p,
                                  std::span<const std::string> axis_names) {
  return {any_of(in) | mask_of(p, axis_names)};
}

}  // namespace named_collectives_impl
}  // namespace

extern const PrimRules psum_rules = {
    .abstract_eval = named_collectives_impl::same_eval,
    .sharding_rule = elementwise_sharding_rule,
    .lower_local = named_collectives_impl::all_reduce_lower<core::ReduceOp::sum>,
    .jvp = unary_linear_jvp<core::Prim::psum>,
    .transpose = named_collectives_impl::psum_transpose,
    .batch = named_collectives_impl::reduce_batch<core::Prim::psum>,
    .vma = named_collectives_impl::invariant_vma};
extern const PrimRules pmax_rules = {
    .abstract_eval = named_collectives_impl::same_eval,
    .sharding_rule = elementwise_sharding_rule,
    .lower_local = named_collectives_impl::all_reduce_lower<core::ReduceOp::max>,
    .jvp = named_collectives_impl::extreme_jvp<core::Prim::pmax>,
    .batch = named_collectives_impl::reduce_batch<core::Prim::pmax>,
    .vma = named_collectives_impl::invariant_vma};
extern const PrimRules pmin_rules = {
    .abstract_eval = named_collectives_impl::same_eval,
    .sharding_rule = elementwise_sharding_rule,
    .lower_local = named_collectives_impl::all_reduce_lower<core::ReduceOp::min>,
    .jvp = named_collectives_impl::extreme_jvp<core::Prim::pmin>,
    .batch = named_collectives_impl::reduce_batch<core::Prim::pmin>,
    .vma = named_collectives_impl::invariant_vma};
extern const PrimRules pall_gather_rules = {
    .abstract_eval = named_collectives_impl::all_gather_eval,
    .sharding_rule = named_collectives_impl::all_gather_sharding,
    .lower_local = named_collectives_impl::all_gather_lower,
    .jvp = unary_linear_jvp<core::Prim::pall_gather>,
    .transpose = named_collectives_impl::all_gather_transpose,
    .batch = named_collectives_impl::all_gather_batch,
    .vma = named_collectives_impl::invariant_vma};
extern const PrimRules psum_scatter_rules = {
    .abstract_eval = named_collectives_impl::reduce_scatter_eval,
    .sharding_rule = named_collectives_impl::reduce_scatter_sharding,
    .lower_local = named_collectives_impl::reduce_scatter_lower,
    .jvp = unary_linear_jvp<core::Prim::psum_scatter>,
    .transpose = named_collectives_impl::reduce_scatter_transpose,
    .batch = named_collectives_impl::reduce_scatter_batch,
    .vma = named_collectives_impl::varying_vma};
extern const PrimRules ppermute_rules = {.abstract_eval = named_collectives_impl::same_eval,
                                         .sharding_rule = elementwise_sharding_rule,
                                         .lower_local = named_collectives_impl::ppermute_lower,
                                         .jvp = unary_linear_jvp<core::Prim::ppermute>,
                                         .transpose = named_collectives_impl::ppermute_transpose,
                                         .batch = named_collectives_impl::ppermute_batch,
                                         .vma = named_collectives_impl::varying_vma};
extern const PrimRules pall_to_all_rules = {
    .abstract_eval = named_collectives_impl::all_to_all_eval,
    .sharding_rule = named_collectives_impl::all_to_all_sharding,
    .lower_local = named_collectives_impl::all_to_all_lower,
    .jvp = unary_linear_jvp<core::Prim::pall_to_all>,
    .transpose = named_collectives_impl::all_to_all_transpose,
    .batch = named_collectives_impl::all_to_all_batch,
    .vma = named_collectives_impl::varying_vma};
extern const PrimRules axis_index_rules = {.abstract_eval = named_collectives_impl::axis_index_eval,
                                           .kernel = named_collectives_impl::axis_index_kernel,
                                           .lower_local = named_collectives_impl::axis_index_lower,
                                           .batch = named_collectives_impl::axis_index_batch,
                                           .vma = named_collectives_impl::varying_vma};

}  // namespace parax::prims
