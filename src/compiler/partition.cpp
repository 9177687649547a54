#include "compiler/partition.h"

#include <algorithm>

#include "base/check.h"
#include "parax/errors.h"

namespace parax::compiler {
namespace {

using core::Atom;
using core::Aval;
using core::Prim;

bool is_prefix(const AxisList& a, const AxisList& b) {
  return a.size() <= b.size() && std::equal(a.begin(), a.end(), b.begin());
}

bool contains(const AxisList& axes, int64_t a) {
  return std::find(axes.begin(), axes.end(), a) != axes.end();
}

class Partitioner {
 public:
  Partitioner(const core::Program& global, const MeshInfo& mesh, const Propagation& prop)
      : global_(global), mesh_(mesh), prop_(prop), map_(global.avals.size()),
        layout_(prop.vars) {}

  Partitioned run(std::span<const std::optional<DimShard>> out_layouts);

 private:
  // Emits one equation of the local program and returns its (single) result variable.
  int emit(Prim p, std::vector<Atom> in, core::Params params, Aval out) {
    int v = local_.new_var(std::move(out));
    local_.eqns.push_back(core::Eqn{p, std::move(in), {v}, std::move(params)});
    return v;
  }
  Atom reshard(const Atom& a, const Aval& global, DimShard from, const DimShard& to);
  void partition_eqn(size_t e);

  const core::Program& global_;
  const MeshInfo& mesh_;
  const Propagation& prop_;
  core::Program local_;
  std::vector<Atom> map_;          // global variable -> local atom
  std::vector<DimShard> layout_;   // global variable -> its current layout
};

Atom Partitioner::reshard(const Atom& a, const Aval& global, DimShard from, const DimShard& to) {
  if (a.is_literal() || from == to) return a;
  Atom cur = a;
  auto local = [&](const DimShard& s) { return mesh_.local_aval(global, s); };
  auto axes_param = [](const AxisList& axes) { return axes; };
  for (size_t d = 0; d < global.shape.size(); ++d) {
    const int64_t n = mesh_.size_of(to.dims[d]);
    if (global.shape[d] % n != 0) {
      throw NotImplementedError(
          "[jit] dimension " + std::to_string(d) + " of " + global.str() + " does not divide " +
          "evenly over the " + std::to_string(n) + " devices of " + mesh_.spec_str(to) +
          "; uneven shardings are not supported yet. Choose a sharding that divides the shape");
    }
  }
  // Pending partial results: a reduce-scatter where the target shards a dimension by
  // the unreduced axes, an all-reduce for the rest.
  if (!from.unreduced.empty()) {
    for (size_t d = 0; d < from.dims.size() && !from.unreduced.empty(); ++d) {
      if (!is_prefix(from.dims[d], to.dims[d])) continue;
      AxisList scatter;
      for (size_t k = from.dims[d].size(); k < to.dims[d].size(); ++k) {
        if (!contains(from.unreduced, to.dims[d][k])) break;
        scatter.push_back(to.dims[d][k]);
      }
      if (scatter.empty()) continue;
      DimShard next = from;
      next.dims[d].insert(next.dims[d].end(), scatter.begin(), scatter.end());
      std::erase_if(next.unreduced, [&](int64_t x) { return contains(scatter, x); });
      core::Params params{{"mesh_axes", axes_param(scatter)},
                          {"dimension", int64_t(d)},
                          {"op", std::string(core::reduce_op_name(from.op))}};
      cur = Atom::of(emit(Prim::reduce_scatter, {cur}, std::move(params), local(next)));
      from = next;
    }
    if (!from.unreduced.empty()) {
      core::Params params{{"mesh_axes", axes_param(from.unreduced)},
                          {"op", std::string(core::reduce_op_name(from.op))}};
      from.unreduced.clear();
      cur = Atom::of(emit(Prim::all_reduce, {cur}, std::move(params), local(from)));
    }
    from.op = core::ReduceOp::none;
  }
  if (from == to) return cur;
  // The same tiles on other devices: a collective-permute moves each tile once.
  bool same_tiles = true;
  for (size_t d = 0; d < from.dims.size(); ++d) {
    same_tiles = same_tiles && mesh_.size_of(from.dims[d]) == mesh_.size_of(to.dims[d]);
  }
  if (same_tiles) {
    std::vector<int64_t> pairs;
    for (int64_t src = 0; src < mesh_.num_devices(); ++src) {
      // The device holding, under `to`, the tile that `src` holds under `from`: the tile
      // index per dimension is the linear index over that dimension's axes.
      auto c = mesh_.coords(src);
      for (int64_t dst = 0; dst < mesh_.num_devices(); ++dst) {
        auto t = mesh_.coords(dst);
        bool match = true;
        for (size_t d = 0; d < from.dims.size() && match; ++d) {
          int64_t i = 0, j = 0;
          for (int64_t ax : from.dims[d]) i = i * mesh_.axis_sizes[size_t(ax)] + c[size_t(ax)];
          for (int64_t ax : to.dims[d]) j = j * mesh_.axis_sizes[size_t(ax)] + t[size_t(ax)];
          match = i == j;
        }
        if (match && src != dst) {
          pairs.push_back(src);
          pairs.push_back(dst);
        }
      }
    }
    // Replicated axes make several devices hold one tile; every destination must get
    // exactly one source, so keep the first source per destination.
    std::vector<int64_t> dedup;
    std::vector<bool> filled(size_t(mesh_.num_devices()), false);
    for (size_t k = 0; k < pairs.size(); k += 2) {
      if (filled[size_t(pairs[k + 1])]) continue;
      filled[size_t(pairs[k + 1])] = true;
      dedup.push_back(pairs[k]);
      dedup.push_back(pairs[k + 1]);
    }
    core::Params params{{"source_target_pairs", dedup}};
    return Atom::of(emit(Prim::collective_permute, {cur}, std::move(params), local(to)));
  }
  for (int guard = 0; from.dims != to.dims; ++guard) {
    PARAX_CHECK(guard < 64, "reshard did not converge: " << mesh_.spec_str(from) << " -> "
                                                          << mesh_.spec_str(to));
    bool progress = false;
    // Remove axes a dimension has but should not: move one to the dimension that wants it
    // next (all-to-all), else gather.
    for (size_t d = 0; d < from.dims.size() && !progress; ++d) {
      size_t c = 0;
      while (c < from.dims[d].size() && c < to.dims[d].size() && from.dims[d][c] == to.dims[d][c]) ++c;
      if (from.dims[d].size() == c) continue;
      const int64_t ax = from.dims[d].back();
      for (size_t e = 0; e < from.dims.size() && !progress; ++e) {
        if (e == d || !is_prefix(from.dims[e], to.dims[e])) continue;
        if (to.dims[e].size() <= from.dims[e].size() || to.dims[e][from.dims[e].size()] != ax) continue;
        DimShard next = from;
        next.dims[d].pop_back();
        next.dims[e].push_back(ax);
        core::Params params{{"mesh_axes", axes_param({ax})},
                            {"concat_dimension", int64_t(d)},
                            {"split_dimension", int64_t(e)}};
        cur = Atom::of(emit(Prim::all_to_all, {cur}, std::move(params), local(next)));
        from = next;
        progress = true;
      }
      if (progress) break;
      DimShard next = from;
      AxisList gathered(from.dims[d].begin() + long(c), from.dims[d].end());
      next.dims[d].resize(c);
      core::Params params{{"mesh_axes", axes_param(gathered)}, {"dimension", int64_t(d)}};
      cur = Atom::of(emit(Prim::all_gather, {cur}, std::move(params), local(next)));
      from = next;
      progress = true;
    }
    if (progress) continue;
    // Add axes: each device keeps its slice of data it holds whole (no communication).
    AxisList used = from.used_axes();
    for (size_t d = 0; d < from.dims.size(); ++d) {
      if (from.dims[d] == to.dims[d]) continue;
      PARAX_CHECK(is_prefix(from.dims[d], to.dims[d]), "reshard: unexpected layout");
      AxisList added(to.dims[d].begin() + long(from.dims[d].size()), to.dims[d].end());
      for (int64_t ax : added) PARAX_CHECK(!contains(used, ax), "reshard: axis in use");
      DimShard next = from;
      next.dims[d] = to.dims[d];
      core::Params params{{"mesh_axes", added}, {"dimension", int64_t(d)}};
      cur = Atom::of(emit(Prim::shard_slice, {cur}, std::move(params), local(next)));
      from = next;
    }
  }
  return cur;
}

void Partitioner::partition_eqn(size_t e) {
  const core::Eqn& eqn = global_.eqns[e];
  if (eqn.prim == Prim::sharding_constraint) {
    const Atom& in = eqn.inputs[0];
    const int out = eqn.outputs[0];
    DimShard from = in.is_literal() ? DimShard::replicated(0) : layout_[size_t(in.var)];
    Atom src = in.is_literal() ? in : map_[size_t(in.var)];
    map_[size_t(out)] = reshard(src, global_.aval_of(in), from, layout_[size_t(out)]);
    return;
  }
  std::vector<Atom> inputs;
  std::vector<Aval> in_avals;
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    const Atom& a = eqn.inputs[i];
    if (a.is_literal()) {
      inputs.push_back(a);
      in_avals.push_back(a.literal->aval);
      continue;
    }
    DimShard need = required_operand(global_, prop_, e, i);
    inputs.push_back(reshard(map_[size_t(a.var)], global_.avals[size_t(a.var)],
                             layout_[size_t(a.var)], need));
    in_avals.push_back(mesh_.local_aval(global_.avals[size_t(a.var)], need));
  }
  std::vector<Aval> out_avals;
  std::vector<AxisList> out_dims;
  for (int v : eqn.outputs) {
    out_avals.push_back(mesh_.local_aval(global_.avals[size_t(v)], layout_[size_t(v)]));
  }
  core::Params params = eqn.params;
  if (const auto localize = core::rules(eqn.prim).localize) {
    const auto& dims = layout_[size_t(eqn.outputs[0])].dims;
    params = localize(params, core::LocalizeInfo{in_avals, out_avals, dims});
  }
  std::vector<int> outs;
  for (const Aval& a : out_avals) outs.push_back(local_.new_var(a));
  local_.eqns.push_back(core::Eqn{eqn.prim, std::move(inputs), outs, std::move(params)});
  for (size_t r = 0; r < outs.size(); ++r) map_[size_t(eqn.outputs[r])] = Atom::of(outs[r]);
}

Partitioned Partitioner::run(std::span<const std::optional<DimShard>> out_layouts) {
  Partitioned result;
  std::vector<int> inputs(global_.constvars);
  inputs.insert(inputs.end(), global_.invars.begin(), global_.invars.end());
  for (int v : inputs) {
    const int lv = local_.new_var(mesh_.local_aval(global_.avals[size_t(v)], layout_[size_t(v)]));
    local_.invars.push_back(lv);
    map_[size_t(v)] = Atom::of(lv);
    result.inputs.push_back(layout_[size_t(v)]);
  }
  for (size_t e = 0; e < global_.eqns.size(); ++e) partition_eqn(e);
  for (size_t i = 0; i < global_.outvars.size(); ++i) {
    const Atom& a = global_.outvars[i];
    const Aval& aval = global_.aval_of(a);
    DimShard from = a.is_literal() ? DimShard::replicated(0) : layout_[size_t(a.var)];
    DimShard to = from;
    to.unreduced.clear();
    to.op = core::ReduceOp::none;
    if (i < out_layouts.size() && out_layouts[i]) to = *out_layouts[i];
    Atom out = a.is_literal() ? a : reshard(map_[size_t(a.var)], aval, from, to);
    if (out.is_literal()) out = Atom::of(emit(Prim::copy, {out}, {}, aval));
    local_.outvars.push_back(out);
    result.outputs.push_back(to);
  }
  result.local = std::move(local_);
  return result;
}

}  // namespace

Partitioned partition(const core::Program& global, const MeshInfo& mesh, const Propagation& prop,
                      std::span<const std::optional<DimShard>> out_layouts) {
  return Partitioner(global, mesh, prop).run(out_layouts);
}

}  // namespace parax::compiler
