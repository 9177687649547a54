// What gather and the scatters share: their dimension numbers and mode read from params,
// and the inverse relation between a gather and a scatter (JAX builds one from the other
// in every derivative rule). Internal to src/prims.
#pragma once

#include <algorithm>
#include <cstdint>
#include <optional>
#include <set>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "parax/lax.h"
#include "prims/prim_util.h"

namespace parax::prims {

using lax::GatherDimensionNumbers;
using lax::GatherScatterMode;
using lax::ScatterDimensionNumbers;

inline GatherDimensionNumbers gather_dnums(const Params& p) {
  return {param_ints(p, "offset_dims"), param_ints(p, "collapsed_slice_dims"),
          param_ints(p, "start_index_map"), param_ints(p, "operand_batching_dims"),
          param_ints(p, "start_indices_batching_dims")};
}

inline ScatterDimensionNumbers scatter_dnums(const Params& p) {
  return {param_ints(p, "update_window_dims"), param_ints(p, "inserted_window_dims"),
          param_ints(p, "scatter_dims_to_operand_dims"), param_ints(p, "operand_batching_dims"),
          param_ints(p, "scatter_indices_batching_dims")};
}

// Their params as JAX prints them (gather_params.cpp): the print_params and parse_params
// rules.
std::vector<std::pair<std::string, core::ParamValue>> gather_print_params(std::span<const Aval> in,
                                                                          const Params& params);
Params gather_parse_params(const Params& printed);
std::vector<std::pair<std::string, core::ParamValue>> scatter_print_params(core::Prim prim,
                                                                           std::span<const Aval> in,
                                                                           const Params& params);
Params scatter_parse_params(const Params& printed);

// Reads the `mode` param (JAX's printed enum, `GatherScatterMode.CLIP`).
inline GatherScatterMode gather_mode(const Params& p) {
  const std::string& m = p.get<std::string>("mode");
  if (m == "GatherScatterMode.CLIP") return GatherScatterMode::CLIP;
  if (m == "GatherScatterMode.FILL_OR_DROP") return GatherScatterMode::FILL_OR_DROP;
  if (m == "GatherScatterMode.ONE_HOT") return GatherScatterMode::ONE_HOT;
  PARAX_CHECK(m == "GatherScatterMode.PROMISE_IN_BOUNDS", "unknown gather/scatter mode " << m);
  return GatherScatterMode::PROMISE_IN_BOUNDS;
}

inline bool contains(const std::vector<int64_t>& v, int64_t x) {
  return std::find(v.begin(), v.end(), x) != v.end();
}

// The gather that reads back what a scatter wrote (JAX's inverse dimension numbers).
inline GatherDimensionNumbers inverse_gather_dnums(const ScatterDimensionNumbers& s) {
  return {s.update_window_dims, s.inserted_window_dims, s.scatter_dims_to_operand_dims,
          s.operand_batching_dims, s.scatter_indices_batching_dims};
}

// The scatter that writes where a gather read (gather's transpose).
inline ScatterDimensionNumbers inverse_scatter_dnums(const GatherDimensionNumbers& g) {
  return {g.offset_dims, g.collapsed_slice_dims, g.start_index_map, g.operand_batching_dims,
          g.start_indices_batching_dims};
}

// The window of a scatter in each operand dimension: 1 for inserted and batching
// dimensions, else the size of the matching update window dimension (in order).
inline Shape scatter_window(size_t operand_rank, const Shape& updates_shape,
                            const ScatterDimensionNumbers& d) {
  Shape w;
  size_t pos = 0;
  for (size_t i = 0; i < operand_rank; ++i) {
    if (contains(d.inserted_window_dims, int64_t(i)) ||
        contains(d.operand_batching_dims, int64_t(i))) {
      w.push_back(1);
    } else {
      w.push_back(updates_shape[size_t(d.update_window_dims[pos++])]);
    }
  }
  return w;
}

// JAX's helpers of _gather_shape_rule / _scatter_shape_rule, with their messages.
inline void check_sorted(const std::vector<int64_t>& dims, const std::string& op,
                         const std::string& name) {
  for (size_t i = 1; i < dims.size(); ++i) {
    if (dims[i] < dims[i - 1]) {
      throw TypeError(name + " in " + op + " op must be sorted; got " + shape_str(dims));
    }
  }
}

inline void check_in_range(const std::vector<int64_t>& dims, size_t rank, const std::string& op,
                           const std::string& name) {
  for (int64_t d : dims) {
    if (d >= 0 && d < int64_t(rank)) continue;
    throw TypeError("Invalid " + name + " set in " + op + " op; valid range is [0, " +
                    std::to_string(rank) + "); got: " + std::to_string(d) + ".");
  }
}

// JAX tests only the ends of a sorted list (and a bad 0 passes, as Python's `if 0:`).
inline void check_sorted_in_range(const std::vector<int64_t>& dims, size_t rank,
                                  const std::string& op, const std::string& name) {
  if (dims.empty()) return;
  int64_t bad = 0;
  if (dims.front() < 0) {
    bad = dims.front();
  } else if (dims.back() >= int64_t(rank)) {
    bad = dims.back();
  }
  if (bad != 0) {
    throw TypeError("Invalid " + name + " set in " + op + " op; valid range is [0, " +
                    std::to_string(rank) + "); got: " + std::to_string(bad) + ".");
  }
}

inline void check_no_duplicates(const std::vector<int64_t>& dims, const std::string& op,
                                const std::string& name) {
  if (std::set<int64_t>(dims.begin(), dims.end()).size() == dims.size()) return;
  throw TypeError(name + " in " + op + " op must not repeat; got: " + shape_str(dims) + ".");
}

inline void check_disjoint(const std::vector<int64_t>& a, const std::vector<int64_t>& b,
                           const std::string& op, const std::string& na, const std::string& nb) {
  for (int64_t x : a) {
    if (!contains(b, x)) continue;
    throw TypeError(na + " and " + nb + " in " + op + " op must be disjoint; got: " + shape_str(a) +
                    " and " + shape_str(b) + ".");
  }
}

inline void check_index_dtype(DType dtype) {
  if (!is_integer(dtype)) throw ValueError("indices must have an integer type");
}

// Per-device equations of a sharded gather or scatter (their lower_local rules), asked of
// the partitioner's context.
class LocalEmitter {
 public:
  explicit LocalEmitter(const core::LowerContext& c) : c_(c) {}

  core::Atom emit(core::Prim p, std::vector<core::Atom> in, Params params, Aval out) const {
    return c_.emit(p, std::move(in), std::move(params), std::move(out));
  }
  static core::Atom literal(double v, DType t) {
    return core::Atom::of(core::Literal{Aval{{}, t, false}, v});
  }
  // Returns this device's shard number along `axes` (major to minor), an int64 scalar.
  core::Atom shard_number(const std::vector<int64_t>& axes) const {
    const core::Atom i = emit(core::Prim::iota, {},
                              {{"dtype", DType::int64},
                               {"shape", Shape{1}},
                               {"dimension", int64_t{0}},
                               {"offset_axes", axes}},
                              Aval{{1}, DType::int64, false});
    return emit(core::Prim::reshape, {i}, {{"new_sizes", Shape{}}}, Aval{{}, DType::int64, false});
  }
  // Returns whether this device is the first along `axes` (a bool scalar).
  core::Atom is_first(const std::vector<int64_t>& axes) const {
    return emit(core::Prim::eq, {shard_number(axes), literal(0, DType::int64)}, {},
                Aval{{}, DType::bool_, false});
  }
  // Returns `x` broadcast to `shape` along `dims`.
  core::Atom broadcast(core::Atom x, const Shape& shape, std::vector<int64_t> dims,
                       DType dtype) const {
    return emit(core::Prim::broadcast_in_dim, {x},
                {{"shape", shape}, {"broadcast_dimensions", std::move(dims)}},
                Aval{shape, dtype, false});
  }

  // Rewrites index vectors (type `idx`) for an operand whose dimension of component k is
  // split over `axes[k]` (empty: whole) in blocks of `block[k]`: as int64, each component
  // clamped into [0, hi[k]] when `clamp`, then shifted by its shard's offset, so that what
  // the shard does not hold is out of its bounds. With `oob`, also returns whether each
  // vector was out of [0, hi] before (bool, the batch shape).
  core::Atom shift_indices(core::Atom idx, const Aval& type, const std::vector<int64_t>& hi,
                           const std::vector<std::vector<int64_t>>& axes,
                           const std::vector<int64_t>& block, bool clamp, core::Atom* oob) const {
    using core::Atom;
    using core::Prim;
    const size_t q = type.shape.size();
    Shape shape = type.shape;
    idx =
        emit(Prim::convert_element_type, {idx}, {{"new_dtype", DType::int64}, {"weak_type", false}},
             Aval{shape, DType::int64, false});
    Shape comp_shape = shape;
    comp_shape[q - 1] = 1;
    const Aval comp{comp_shape, DType::int64, false};
    const Aval pred{comp_shape, DType::bool_, false};
    std::vector<Atom> comps;
    std::optional<Atom> any_out;
    for (size_t k = 0; k < hi.size(); ++k) {
      Shape start(q, 0), limit = shape;
      start[q - 1] = int64_t(k);
      limit[q - 1] = int64_t(k) + 1;
      Atom x = hi.size() == 1 ? idx
                              : emit(Prim::slice, {idx},
                                     {{"start_indices", start},
                                      {"limit_indices", limit},
                                      {"strides", std::vector<int64_t>{}}},
                                     comp);
      if (oob != nullptr) {
        const Atom lo = emit(Prim::lt, {x, literal(0, DType::int64)}, {}, pred);
        const Atom up = emit(Prim::gt, {x, literal(double(hi[k]), DType::int64)}, {}, pred);
        Atom out = emit(Prim::or_, {lo, up}, {}, pred);
        any_out = any_out ? emit(Prim::or_, {*any_out, out}, {}, pred) : out;
      }
      if (clamp) {
        x = emit(Prim::clamp,
                 {literal(0, DType::int64), x,
                  literal(double(std::max<int64_t>(hi[k], 0)), DType::int64)},
                 {}, comp);
      }
      if (!axes[k].empty()) {
        const Atom offset =
            emit(Prim::mul, {shard_number(axes[k]), literal(double(block[k]), DType::int64)}, {},
                 Aval{{}, DType::int64, false});
        x = emit(Prim::sub, {x, offset}, {}, comp);
      }
      comps.push_back(x);
    }
    if (oob != nullptr) {
      const Shape batch(shape.begin(), shape.end() - 1);
      *oob =
          emit(Prim::reshape, {*any_out}, {{"new_sizes", batch}}, Aval{batch, DType::bool_, false});
    }
    if (comps.size() == 1) return comps[0];
    return emit(Prim::concatenate, comps, {{"dimension", int64_t(q - 1)}},
                Aval{shape, DType::int64, false});
  }

 private:
  const core::LowerContext& c_;
};

}  // namespace parax::prims
