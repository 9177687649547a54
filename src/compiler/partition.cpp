#include "compiler/partition.h"

#include <algorithm>
#include <cmath>
#include <functional>
#include <optional>

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
  // `notes` collects the collectives' notes, the loop bodies' and branches' too.
  Partitioner(const core::Program& global, const MeshInfo& mesh, const Propagation& prop,
              std::vector<CollectiveNote>& notes)
      : notes_(notes),
        global_(global),
        mesh_(mesh),
        prop_(prop),
        map_(global.avals.size()),
        layout_(prop.vars),
        producer_(global.avals.size(), -1) {
    for (size_t e = 0; e < global.eqns.size(); ++e) {
      for (int v : global.eqns[e].outputs) producer_[size_t(v)] = int(e);
    }
  }

  Partitioned run(std::span<const std::optional<DimShard>> out_layouts);

 private:
  // Emits one equation of the local program and returns its (single) result variable. A
  // collective carries why it is there (hidden params the explainer reads) and the site of
  // the user's line that needed it.
  int emit(Prim p, std::vector<Atom> in, core::Params params, Aval out) {
    int v = local_.new_var(std::move(out));
    if (core::has_trait(p, core::kCollective)) {
      CollectiveNote note;
      note.primitive = std::string(core::prim_name(p));
      note.site = why_.site;
      note.why = why_.kind;
      note.reason = reason();
      note.is_explicit = why_.is_explicit;
      if (ends_from_) note.before = mesh_.spec_str(*ends_from_);
      if (ends_to_) note.after = mesh_.spec_str(*ends_to_);
      if (params.has("mesh_axes")) {
        for (int64_t a : params.get<std::vector<int64_t>>("mesh_axes")) {
          note.mesh_axes.push_back(mesh_.names[size_t(a)]);
        }
      }
      note.local = local_.aval_of(in[0]);
      params.set("_note", int64_t(notes_.size()));
      notes_.push_back(std::move(note));
    }
    local_.eqns.push_back(core::Eqn{p, std::move(in), {v}, std::move(params), why_.site});
    return v;
  }
  // Why the next collectives are needed: a kind ("contraction", "operand", "constraint",
  // "out_sharding", "control_flow", "region", "named_collective", "lowering", "result",
  // "reshard"), the global equation that needs the layout (null: the program's result) and
  // which of its operands (or -1 - r for its result r), whether the user asked for the
  // collective itself, and the user's line. The sentence is made only when a collective
  // is emitted (reason()); `text` holds one that the rest cannot give.
  struct Why {
    const char* kind = "";
    const core::Eqn* eqn = nullptr;
    int index = 0;
    bool is_explicit = false;
    std::source_location site{};
    std::string text;
  };
  void because(const char* kind, const core::Eqn* eqn, int index, bool is_explicit,
               std::source_location site, std::string text = {}) {
    why_ = Why{kind, eqn, index, is_explicit, site, std::move(text)};
  }
  std::string reason() const;
  // The user's line of global equation e (or of the whole program's call, when none).
  std::source_location site_of(size_t e) const { return global_.eqns[e].site; }
  // `var` is the global variable being resharded (-1 for a literal): partial sums it holds
  // are explained by the equation that made them.
  Atom reshard(const Atom& a, int var, const Aval& global, const DimShard& start,
               const DimShard& to);
  // reshard's steps, in order; each emits its collectives and advances `from`.
  Atom reduce_unreduced(Atom cur, const Aval& global, DimShard& from, const DimShard& to);
  Atom gather_padded_dimensions(Atom cur, const Aval& global, DimShard& from, const DimShard& to);
  bool same_tile_counts(const DimShard& from, const DimShard& to) const;
  std::vector<int64_t> tile_of(const DimShard& s, int64_t device) const;
  Atom permute_tiles(Atom cur, const Aval& global, const DimShard& from, const DimShard& to);
  bool remove_one_axis(Atom& cur, const Aval& global, DimShard& from, const DimShard& to);
  std::optional<size_t> all_to_all_target(const Aval& global, const DimShard& from,
                                          const DimShard& to, size_t d) const;
  Atom all_to_all_axis(Atom cur, const Aval& global, DimShard& from, size_t d, size_t e);
  Atom slice_added_axes(Atom cur, const Aval& global, DimShard& from, const DimShard& to);
  Atom pad_to_shards(Atom cur, const Aval& global, const DimShard& from, const DimShard& next,
                     size_t d);
  // True when dimension d of a `global` value laid out as `s` does not divide: shards are
  // then padded up to ceil(size / shards) and the last ones hold padding. This is a
  // deliberate extension (README's decisions): for an argument whose jit in_shardings
  // entry does not divide it, JAX raises "One of pjit arguments ... should be divisible by
  // ..."; parax pads inside the program instead.
  bool padded(const Aval& global, const DimShard& s, size_t d) const {
    return global.shape[d] % mesh_.size_of(s.dims[d]) != 0;
  }
  Atom gather_dimension(Atom cur, const Aval& global, DimShard& from, size_t d);
  // A collective-permute sending the block of tile t over `axes` to tile to(t) (for a
  // primitive's lower_local); devices that receive nothing get zeros.
  Atom move_blocks(Atom x, const Aval& local, const AxisList& axes,
                   const std::function<int64_t(int64_t)>& to);
  Atom mask_padding(Atom cur, const Aval& local, const Aval& global, const DimShard& s, size_t d,
                    double fill);
  void partition_eqn(size_t e);
  void partition_control_flow(size_t e);

  std::vector<CollectiveNote>& notes_;
  const core::Program& global_;
  const MeshInfo& mesh_;
  const Propagation& prop_;
  core::Program local_;
  std::vector<Atom> map_;         // global variable -> local atom
  std::vector<DimShard> layout_;  // global variable -> its current layout
  std::vector<int> producer_;     // global variable -> the equation that made it, or -1
  Why why_;
  // The current reshard's ends (null outside one), for the collectives it emits.
  const DimShard* ends_from_ = nullptr;
  const DimShard* ends_to_ = nullptr;
};

std::string Partitioner::reason() const {
  if (!why_.text.empty()) return why_.text;
  const std::string kind = why_.kind;
  const std::string prim = why_.eqn ? std::string(core::prim_name(why_.eqn->prim)) : "";
  const std::string index = std::to_string(why_.index);
  if (kind == "operand") return prim + " reads operand " + index + " in another layout than it has";
  if (kind == "result") {
    return why_.eqn ? prim + "'s result is wanted in another layout than it computes"
                    : "the program returns this value whole";
  }
  if (kind == "control_flow") {
    if (why_.index < 0) {
      return prim + "'s result " + std::to_string(-1 - why_.index) +
             " leaves in its carried layout; its readers want another";
    }
    const bool branches =
        core::program_roles(*why_.eqn).programs.front().role == core::ProgramRole::branch;
    return branches ? prim + "'s branches read operand " + index + " in one layout"
                    : prim + " keeps operand " + index +
                          " in the layout its loop carries (the carry's fixed point)";
  }
  if (kind == "region") {
    return std::string("shard_map's ") +
           (core::has_trait(why_.eqn->prim, core::kRegionEnter) ? "in_specs" : "out_specs") +
           " ask for this layout";
  }
  if (kind == "reshard") return "reshard asks for this layout";
  if (kind == "out_sharding") {
    const std::string api = why_.eqn && why_.eqn->params.has("_api")
                                ? why_.eqn->params.get<std::string>("_api")
                                : std::string("out_shardings");
    return "jit's " + api + " ask for this layout";
  }
  if (kind == "constraint") return prim + " asks for this layout";
  if (kind == "lowering") return prim + "'s sharded form moves blocks between devices";
  return prim;
}

// reshard, step by step: settle pending partial results, gather dimensions whose padding
// changes, then either move whole tiles between devices or, one collective at a time,
// remove the axes a dimension should lose (all-to-all or all-gather) and slice locally
// for the axes it should gain.
Atom Partitioner::reshard(const Atom& a, int var, const Aval& global, const DimShard& start,
                          const DimShard& to) {
  if (a.is_literal() || start == to) return a;
  ends_from_ = &start;
  ends_to_ = &to;
  struct ClearEnds {
    Partitioner& p;
    ~ClearEnds() { p.ends_from_ = p.ends_to_ = nullptr; }
  } clear_ends{*this};
  DimShard from = start;
  Atom cur = a;
  if (!from.unreduced.empty()) {
    // Partial sums are settled for whoever reads them; they are there because of the
    // reduction that made them.
    const Why reader = why_;
    const int e = var >= 0 ? producer_[size_t(var)] : -1;
    const std::string made_by =
        e >= 0 ? std::string(core::prim_name(global_.eqns[size_t(e)].prim)) : "a reduction";
    because("contraction", e >= 0 ? &global_.eqns[size_t(e)] : nullptr, 0, reader.is_explicit,
            e >= 0 ? site_of(size_t(e)) : reader.site,
            made_by + " reduces over a dimension sharded on " + mesh_.axes_str(from.unreduced) +
                ": each device holds a partial result, combined here");
    cur = reduce_unreduced(cur, global, from, to);
    why_ = reader;
  }
  if (from == to) return cur;
  cur = gather_padded_dimensions(cur, global, from, to);
  if (from == to) return cur;
  if (same_tile_counts(from, to)) return permute_tiles(cur, global, from, to);
  for (int guard = 0; from.dims != to.dims; ++guard) {
    PARAX_CHECK(guard < 64, "reshard did not converge: " << mesh_.spec_str(from) << " -> "
                                                         << mesh_.spec_str(to));
    if (!remove_one_axis(cur, global, from, to)) cur = slice_added_axes(cur, global, from, to);
  }
  return cur;
}

// Pending partial results: a reduce-scatter where the target shards a dimension by the
// unreduced axes, an all-reduce for the rest.
Atom Partitioner::reduce_unreduced(Atom cur, const Aval& global, DimShard& from,
                                   const DimShard& to) {
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
    if (padded(global, next, d)) continue;  // a padded target is all-reduced, then sliced
    std::erase_if(next.unreduced, [&](int64_t x) { return contains(scatter, x); });
    core::Params params{{"mesh_axes", scatter},
                        {"dimension", int64_t(d)},
                        {"op", std::string(core::reduce_op_name(from.op))}};
    cur = Atom::of(
        emit(Prim::reduce_scatter, {cur}, std::move(params), mesh_.local_aval(global, next)));
    from = next;
  }
  if (!from.unreduced.empty()) {
    core::Params params{{"mesh_axes", from.unreduced},
                        {"op", std::string(core::reduce_op_name(from.op))}};
    from.unreduced.clear();
    cur =
        Atom::of(emit(Prim::all_reduce, {cur}, std::move(params), mesh_.local_aval(global, from)));
  }
  from.op = core::ReduceOp::none;
  return cur;
}

// A dimension that is or becomes padded changes layout through its whole value: gather
// it (trimming the padding); slice_added_axes shards it again.
Atom Partitioner::gather_padded_dimensions(Atom cur, const Aval& global, DimShard& from,
                                           const DimShard& to) {
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (from.dims[d] == to.dims[d] || from.dims[d].empty()) continue;
    if (padded(global, from, d) || padded(global, to, d)) {
      cur = gather_dimension(cur, global, from, d);
    }
  }
  return cur;
}

bool Partitioner::same_tile_counts(const DimShard& from, const DimShard& to) const {
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (mesh_.size_of(from.dims[d]) != mesh_.size_of(to.dims[d])) return false;
  }
  return true;
}

// The tile a device holds under a layout, per dimension: the linear index of its
// coordinates over that dimension's axes.
std::vector<int64_t> Partitioner::tile_of(const DimShard& s, int64_t device) const {
  const std::vector<int64_t> c = mesh_.coords(device);
  std::vector<int64_t> t;
  for (const AxisList& axes : s.dims) {
    int64_t i = 0;
    for (int64_t ax : axes) i = i * mesh_.axis_sizes[size_t(ax)] + c[size_t(ax)];
    t.push_back(i);
  }
  return t;
}

// The same tiles on other devices: a collective-permute moves each tile once, from the
// first device holding it under `from` to each device wanting it under `to`.
Atom Partitioner::permute_tiles(Atom cur, const Aval& global, const DimShard& from,
                                const DimShard& to) {
  const int64_t n = mesh_.num_devices();
  std::vector<std::vector<int64_t>> held, wanted;
  for (int64_t dev = 0; dev < n; ++dev) {
    held.push_back(tile_of(from, dev));
    wanted.push_back(tile_of(to, dev));
  }
  // A device that already holds its tile (a replicated axis) receives nothing; replicated
  // axes also make several devices hold one tile, and each destination takes one source.
  std::vector<bool> filled(static_cast<size_t>(n), false);
  for (int64_t dst = 0; dst < n; ++dst) {
    filled[size_t(dst)] = held[size_t(dst)] == wanted[size_t(dst)];
  }
  std::vector<int64_t> pairs;
  for (int64_t src = 0; src < n; ++src) {
    for (int64_t dst = 0; dst < n; ++dst) {
      if (src == dst || filled[size_t(dst)]) continue;
      if (held[size_t(src)] != wanted[size_t(dst)]) continue;
      filled[size_t(dst)] = true;
      pairs.push_back(src);
      pairs.push_back(dst);
    }
  }
  core::Params params{{"source_target_pairs", pairs}};
  return Atom::of(
      emit(Prim::collective_permute, {cur}, std::move(params), mesh_.local_aval(global, to)));
}

// Removes one axis a dimension has but should not: an all-to-all moves it to the
// dimension that wants it next, else an all-gather drops it (with any axes after it).
// Returns false when no dimension has axes to lose.
bool Partitioner::remove_one_axis(Atom& cur, const Aval& global, DimShard& from,
                                  const DimShard& to) {
  for (size_t d = 0; d < from.dims.size(); ++d) {
    size_t c = 0;
    while (c < from.dims[d].size() && c < to.dims[d].size() && from.dims[d][c] == to.dims[d][c])
      ++c;
    if (from.dims[d].size() == c) continue;
    if (std::optional<size_t> e = all_to_all_target(global, from, to, d)) {
      cur = all_to_all_axis(cur, global, from, d, *e);
    } else {
      DimShard next = from;
      AxisList gathered(from.dims[d].begin() + long(c), from.dims[d].end());
      next.dims[d].resize(c);
      core::Params params{{"mesh_axes", gathered}, {"dimension", int64_t(d)}};
      cur = Atom::of(
          emit(Prim::all_gather, {cur}, std::move(params), mesh_.local_aval(global, next)));
      from = next;
    }
    return true;
  }
  return false;
}

// The dimension that wants dimension d's last axis next, when an all-to-all can move it
// there: the target is not padded and the local size there splits by the axis.
std::optional<size_t> Partitioner::all_to_all_target(const Aval& global, const DimShard& from,
                                                     const DimShard& to, size_t d) const {
  const int64_t ax = from.dims[d].back();
  for (size_t e = 0; e < from.dims.size(); ++e) {
    if (e == d || !is_prefix(from.dims[e], to.dims[e])) continue;
    if (to.dims[e].size() <= from.dims[e].size() || to.dims[e][from.dims[e].size()] != ax) continue;
    if (padded(global, to, e) ||
        mesh_.local_aval(global, from).shape[e] % mesh_.axis_sizes[size_t(ax)] != 0) {
      continue;
    }
    return e;
  }
  return std::nullopt;
}

Atom Partitioner::all_to_all_axis(Atom cur, const Aval& global, DimShard& from, size_t d,
                                  size_t e) {
  const int64_t ax = from.dims[d].back();
  DimShard next = from;
  next.dims[d].pop_back();
  next.dims[e].push_back(ax);
  core::Params params{{"mesh_axes", AxisList{ax}},
                      {"concat_dimension", int64_t(d)},
                      {"split_dimension", int64_t(e)}};
  cur = Atom::of(emit(Prim::all_to_all, {cur}, std::move(params), mesh_.local_aval(global, next)));
  from = next;
  return cur;
}

// Adds the axes each dimension lacks: every device keeps its slice of data it holds whole
// (no communication), padding a dimension first where the shards do not divide it.
Atom Partitioner::slice_added_axes(Atom cur, const Aval& global, DimShard& from,
                                   const DimShard& to) {
  const AxisList used = from.used_axes();
  for (size_t d = 0; d < from.dims.size(); ++d) {
    if (from.dims[d] == to.dims[d]) continue;
    PARAX_CHECK(is_prefix(from.dims[d], to.dims[d]), "reshard: unexpected layout");
    AxisList added(to.dims[d].begin() + long(from.dims[d].size()), to.dims[d].end());
    for (int64_t ax : added) PARAX_CHECK(!contains(used, ax), "reshard: axis in use");
    DimShard next = from;
    next.dims[d] = to.dims[d];
    if (padded(global, next, d)) cur = pad_to_shards(cur, global, from, next, d);
    core::Params params{{"mesh_axes", added}, {"dimension", int64_t(d)}};
    cur =
        Atom::of(emit(Prim::shard_slice, {cur}, std::move(params), mesh_.local_aval(global, next)));
    from = next;
  }
  return cur;
}

// Pads the whole dimension d up to shards * shard size of `next`; the last shards hold
// padding.
Atom Partitioner::pad_to_shards(Atom cur, const Aval& global, const DimShard& from,
                                const DimShard& next, size_t d) {
  Aval grown = mesh_.local_aval(global, from);
  const int64_t total = mesh_.local_aval(global, next).shape[d] * mesh_.size_of(next.dims[d]);
  std::vector<int64_t> config(3 * grown.shape.size(), 0);
  config[3 * d + 1] = total - grown.shape[d];
  grown.shape[d] = total;
  core::Literal zero{Aval{{}, global.dtype, false}, 0.0};
  return Atom::of(emit(Prim::pad, {cur, Atom::of(zero)}, {{"padding_config", config}}, grown));
}

Atom Partitioner::move_blocks(Atom x, const Aval& local, const AxisList& axes,
                              const std::function<int64_t(int64_t)>& to) {
  std::vector<int64_t> pairs;
  for (int64_t src = 0; src < mesh_.num_devices(); ++src) {
    std::vector<int64_t> c = mesh_.coords(src);
    int64_t t = 0;
    for (int64_t a : axes) t = t * mesh_.axis_sizes[size_t(a)] + c[size_t(a)];
    int64_t u = to(t);
    if (u < 0) continue;
    for (size_t k = axes.size(); k-- > 0;) {
      c[size_t(axes[k])] = u % mesh_.axis_sizes[size_t(axes[k])];
      u /= mesh_.axis_sizes[size_t(axes[k])];
    }
    int64_t dst = 0;
    for (size_t a = 0; a < c.size(); ++a) dst = dst * mesh_.axis_sizes[a] + c[a];
    pairs.push_back(src);
    pairs.push_back(dst);
  }
  core::Params params{{"source_target_pairs", pairs}, {"zero_others", true}};
  return Atom::of(emit(Prim::collective_permute, {x}, std::move(params), local));
}

Atom Partitioner::gather_dimension(Atom cur, const Aval& global, DimShard& from, size_t d) {
  DimShard next = from;
  next.dims[d].clear();
  Aval gathered = mesh_.local_aval(global, from);
  gathered.shape[d] *= mesh_.size_of(from.dims[d]);
  core::Params params{{"mesh_axes", from.dims[d]}, {"dimension", int64_t(d)}};
  cur = Atom::of(emit(Prim::all_gather, {cur}, std::move(params), gathered));
  const Aval trimmed = mesh_.local_aval(global, next);
  if (gathered.shape[d] != trimmed.shape[d]) {
    core::Params slice{{"start_indices", std::vector<int64_t>(trimmed.shape.size(), 0)},
                       {"limit_indices", trimmed.shape},
                       {"strides", std::vector<int64_t>{}}};
    cur = Atom::of(emit(Prim::slice, {cur}, std::move(slice), trimmed));
  }
  from = next;
  return cur;
}

Atom Partitioner::mask_padding(Atom cur, const Aval& local, const Aval& global, const DimShard& s,
                               size_t d, double fill) {
  // where(global index < size, x, fill), the global index being iota plus this shard's
  // offset (iota's offset_axes).
  Aval index{local.shape, DType::int32, false};
  core::Params iota{{"dtype", DType::int32},
                    {"shape", local.shape},
                    {"dimension", int64_t(d)},
                    {"offset_axes", s.dims[d]}};
  Atom idx = Atom::of(emit(Prim::iota, {}, std::move(iota), index));
  core::Literal size{Aval{{}, DType::int32, false}, double(global.shape[d])};
  Atom valid =
      Atom::of(emit(Prim::lt, {idx, Atom::of(size)}, {}, Aval{local.shape, DType::bool_, false}));
  core::Literal value{Aval{{}, local.dtype, false}, fill};
  core::Params bcast{{"shape", local.shape}, {"broadcast_dimensions", std::vector<int64_t>{}}};
  Atom filler = Atom::of(emit(Prim::broadcast_in_dim, {Atom::of(value)}, std::move(bcast), local));
  return Atom::of(emit(Prim::select_n, {valid, filler, cur}, {}, local));
}

// The value that leaves a reduction unchanged, to fill padding with.
double identity_of(core::ReduceOp op, DType dtype) {
  const bool is_float = is_floating(dtype);
  switch (op) {
    case core::ReduceOp::max:
      return is_float ? -INFINITY
                      : (is_signed_integer(dtype) ? -std::ldexp(1.0, 8 * dtype_itemsize(dtype) - 1)
                                                  : 0.0);
    case core::ReduceOp::min:
      return is_float
                 ? INFINITY
                 : std::ldexp(1.0, 8 * dtype_itemsize(dtype) - (is_signed_integer(dtype) ? 1 : 0)) -
                       1;
    case core::ReduceOp::prod:
    case core::ReduceOp::and_:
      return dtype == DType::bool_ ? 1.0
                                   : (is_integer(dtype) && op == core::ReduceOp::and_ ? -1.0 : 1.0);
    default:
      return 0.0;
  }
}

// Control flow: the operands are resharded to the layouts its sub-programs take, each
// sub-program is partitioned on its own (its collectives stay inside it, run on every
// step), and the per-device equation holds the per-device sub-programs.
void Partitioner::partition_control_flow(size_t e) {
  const core::Eqn& eqn = global_.eqns[e];
  const ControlFlowLayouts& cf = prop_.control_flow.at(e);
  std::vector<Atom> inputs;
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    const Atom& a = eqn.inputs[i];
    if (a.is_literal()) {
      inputs.push_back(a);
      continue;
    }
    because("control_flow", &eqn, int(i), false, eqn.site);
    inputs.push_back(reshard(map_[size_t(a.var)], a.var, global_.avals[size_t(a.var)],
                             layout_[size_t(a.var)], cf.operands[i]));
  }
  size_t k = 0;
  core::Eqn local = core::with_sub_programs(
      core::Eqn{eqn.prim, std::move(inputs), {}, eqn.params},
      [&](const std::shared_ptr<const core::Program>& sub) {
        std::vector<std::optional<DimShard>> outs(cf.program_outputs[k].begin(),
                                                  cf.program_outputs[k].end());
        Partitioned part = Partitioner(*sub, mesh_, cf.programs[k], notes_).run(outs);
        ++k;
        return std::make_shared<const core::Program>(std::move(part.local));
      });
  for (size_t r = 0; r < eqn.outputs.size(); ++r) {
    const int v = eqn.outputs[r];
    const int lv = local_.new_var(mesh_.local_aval(global_.avals[size_t(v)], cf.results[r]));
    local.outputs.push_back(lv);
    because("control_flow", &eqn, -1 - int(r), false, eqn.site);
    map_[size_t(v)] =
        reshard(Atom::of(lv), v, global_.avals[size_t(v)], cf.results[r], layout_[size_t(v)]);
  }
  local_.eqns.push_back(std::move(local));
}

void Partitioner::partition_eqn(size_t e) {
  const core::Eqn& eqn = global_.eqns[e];
  if (core::has_trait(eqn.prim, core::kControlFlow)) {
    partition_control_flow(e);
    return;
  }
  if (core::has_trait(eqn.prim, core::kRegionEnter) ||
      core::has_trait(eqn.prim, core::kRegionExit)) {
    // A region boundary: the per-device value is the operand laid out as the region needs.
    const Atom& in = eqn.inputs[0];
    const int out = eqn.outputs[0];
    if (in.is_literal()) {
      map_[size_t(out)] = in;
      return;
    }
    because("region", &eqn, 0, true, eqn.site);
    map_[size_t(out)] = reshard(map_[size_t(in.var)], in.var, global_.avals[size_t(in.var)],
                                layout_[size_t(in.var)], required_operand(global_, prop_, e, 0));
    return;
  }
  if (core::has_trait(eqn.prim, core::kLayout)) {
    const Atom& in = eqn.inputs[0];
    const int out = eqn.outputs[0];
    DimShard from = in.is_literal() ? DimShard::replicated(0) : layout_[size_t(in.var)];
    Atom src = in.is_literal() ? in : map_[size_t(in.var)];
    const std::string api =
        eqn.params.has("_api") ? eqn.params.get<std::string>("_api") : std::string();
    if (api == "reshard") {
      because("reshard", &eqn, 0, true, eqn.site);
    } else if (api == "in_shardings" || api == "out_shardings") {
      because("out_sharding", &eqn, 0, false, eqn.site);
    } else {
      because("constraint", &eqn, 0, false, eqn.site);
    }
    map_[size_t(out)] = reshard(src, in.var, global_.aval_of(in), from, layout_[size_t(out)]);
    return;
  }
  std::vector<Atom> inputs;
  std::vector<Aval> in_avals;
  std::vector<Aval> global_in;
  std::vector<std::vector<AxisList>> in_axes;
  for (size_t i = 0; i < eqn.inputs.size(); ++i) {
    const Atom& a = eqn.inputs[i];
    if (a.is_literal()) {
      inputs.push_back(a);
      in_avals.push_back(a.literal->aval);
      global_in.push_back(a.literal->aval);
      in_axes.push_back(DimShard::replicated(a.literal->aval.shape.size()).dims);
      continue;
    }
    DimShard need = required_operand(global_, prop_, e, i);
    global_in.push_back(global_.avals[size_t(a.var)]);
    in_axes.push_back(need.dims);
    const Aval& g = global_.avals[size_t(a.var)];
    because("operand", &eqn, int(i), false, eqn.site);
    Atom in = reshard(map_[size_t(a.var)], a.var, g, layout_[size_t(a.var)], need);
    const Aval local = mesh_.local_aval(g, need);
    // Padding reaching a reduction (or a contraction, on one operand) would count: mask it.
    const core::ShardingRule& rule = prop_.rules[e];
    for (size_t d = 0; d < need.dims.size(); ++d) {
      const int f = rule.operands[i][d];
      if (need.dims[d].empty() || !padded(g, need, d) || rule.in_results(f)) continue;
      if (i < 32 && (rule.masked_operands >> i & 1u) == 0) continue;
      in = mask_padding(in, local, g, need, d, identity_of(rule.reduction, g.dtype));
    }
    inputs.push_back(in);
    in_avals.push_back(local);
  }
  std::vector<Aval> out_avals;
  // The layout the kernel produces; a result asked to keep its operand's layout is then
  // sliced locally.
  std::vector<DimShard> computed;
  for (size_t r = 0; r < eqn.outputs.size(); ++r) {
    const auto& c = prop_.computed[e][r];
    computed.push_back(c ? *c : layout_[size_t(eqn.outputs[r])]);
    out_avals.push_back(mesh_.local_aval(global_.avals[size_t(eqn.outputs[r])], computed.back()));
  }
  if (const auto lower = core::rules(eqn.prim).lower_local) {
    // The primitive emits its own per-device equations (its rule says why); a named-axis
    // collective learns the mesh axes of its names.
    AxisList named;
    if (core::has_trait(eqn.prim, core::kNamedAxes)) {
      named = mesh_.axes_named(eqn.params.get<std::vector<std::string>>("axes"),
                               std::string(core::prim_name(eqn.prim)));
    }
    auto emit_one = [&](Prim p, std::vector<Atom> in, core::Params params, Aval out) {
      return Atom::of(emit(p, std::move(in), std::move(params), std::move(out)));
    };
    auto move = [&](Atom x, const Aval& local, const AxisList& axes,
                    const std::function<int64_t(int64_t)>& to) {
      return move_blocks(x, local, axes, to);
    };
    const core::LowerContext ctx{global_in,        in_avals, out_avals, in_axes,
                                 mesh_.axis_sizes, emit_one, move,      named};
    const std::string name(core::prim_name(eqn.prim));
    if (core::has_trait(eqn.prim, core::kNamedAxes)) {
      because("named_collective", &eqn, 0, true, eqn.site,
              name + " over " + mesh_.axes_str(named) + " in shard_map");
    } else {
      because("lowering", &eqn, 0, false, eqn.site);
    }
    const std::vector<Atom> res = lower(inputs, eqn.params, ctx);
    for (size_t r = 0; r < res.size(); ++r) {
      const int v = eqn.outputs[r];
      because("result", &eqn, -1 - int(r), false, eqn.site);
      map_[size_t(v)] =
          reshard(res[r], v, global_.avals[size_t(v)], computed[r], layout_[size_t(v)]);
    }
    return;
  }
  core::Params params = eqn.params;
  if (const auto localize = core::rules(eqn.prim).localize) {
    params = localize(params, core::LocalizeInfo{in_avals, out_avals, computed[0].dims});
  }
  std::vector<int> outs;
  for (const Aval& a : out_avals) outs.push_back(local_.new_var(a));
  local_.eqns.push_back(core::Eqn{eqn.prim, std::move(inputs), outs, std::move(params)});
  for (size_t r = 0; r < outs.size(); ++r) {
    const int v = eqn.outputs[r];
    because("result", &eqn, -1 - int(r), false, eqn.site);
    map_[size_t(v)] =
        reshard(Atom::of(outs[r]), v, global_.avals[size_t(v)], computed[r], layout_[size_t(v)]);
  }
}

Partitioned Partitioner::run(std::span<const std::optional<DimShard>> out_layouts) {
  Partitioned result;
  std::vector<int> inputs(global_.constvars);
  inputs.insert(inputs.end(), global_.invars.begin(), global_.invars.end());
  for (int v : inputs) {
    // Arguments arrive in even shards; a padded layout is made inside, by reshard.
    for (size_t d = 0; d < layout_[size_t(v)].dims.size(); ++d) {
      if (padded(global_.avals[size_t(v)], layout_[size_t(v)], d))
        layout_[size_t(v)].dims[d].clear();
    }
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
    const bool explicit_layout = i < out_layouts.size() && out_layouts[i].has_value();
    if (explicit_layout) to = *out_layouts[i];
    for (size_t d = 0; d < to.dims.size(); ++d) {
      if (!padded(aval, to, d)) continue;
      if (explicit_layout) {
        throw ValueError("One of pjit outputs was given the sharding of " + mesh_.spec_str(to) +
                         ", which implies that the global size of its dimension " +
                         std::to_string(d) + " should be divisible by " +
                         std::to_string(mesh_.size_of(to.dims[d])) + ", but it is equal to " +
                         std::to_string(aval.shape[d]) + " (full shape: " + shape_str(aval.shape) +
                         ")");
      }
      // Arrays hold even shards only: an output that ended padded is returned whole along
      // that dimension, as JAX does.
      to.dims[d].clear();
    }
    if (!a.is_literal()) {
      const int e = producer_[size_t(a.var)];
      because(explicit_layout ? "out_sharding" : "result", nullptr, 0, false,
              e >= 0 ? site_of(size_t(e)) : std::source_location{});
    }
    Atom out = a.is_literal() ? a : reshard(map_[size_t(a.var)], a.var, aval, from, to);
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
  std::vector<CollectiveNote> notes;
  Partitioned p = Partitioner(global, mesh, prop, notes).run(out_layouts);
  p.notes = std::move(notes);
  return p;
}

}  // namespace parax::compiler
