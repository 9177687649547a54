// What gather and the scatters share: their dimension numbers and mode read from params,
// and the inverse relation between a gather and a scatter (JAX builds one from the other
// in every derivative rule). Internal to src/prims.
#pragma once

#include <algorithm>
#include <cstdint>
#include <set>
#include <string>
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

}  // namespace parax::prims
