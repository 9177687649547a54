// The named-axis collectives: each binds its primitive with the axes' names and the size
// of the group they span (looked up among the axes enclosing transforms bind).
#include <algorithm>
#include <set>

#include "core/backend.h"
#include "core/batching.h"
#include "lax/promote.h"
#include "parax/collectives.h"
#include "parax/lax.h"

namespace parax::lax {
namespace {

using core::Prim;

// Returns the names, after checking that each is bound (NameError otherwise).
std::vector<std::string> bound(const AxisNames& axes) {
  for (const std::string& n : axes.names()) core::find_axis(n);
  return axes.names();
}

Array reduce_over(Prim prim, Array x, const AxisNames& axes) {
  std::vector<std::string> names = bound(axes);
  if (names.empty()) return x;
  return core::bind1(prim, {std::move(x)}, {{"axes", std::move(names)}});
}

// axis_index_groups, checked against the axis: which group each instance is in, and its
// rank there.
struct Groups {
  int64_t size = 0;                           // instances per group
  std::vector<std::vector<int64_t>> members;  // per group, in the caller's order
  std::vector<int64_t> group_of, rank_of;     // per instance
};

std::string list_str(const std::vector<int64_t>& v) {
  std::string s = "[";
  for (size_t i = 0; i < v.size(); ++i) s += (i ? ", " : "") + std::to_string(v[i]);
  return s + "]";
}

std::string groups_str(const AxisIndexGroups& groups) {
  std::string s = "[";
  for (size_t g = 0; g < groups.size(); ++g) s += (g ? ", " : "") + list_str(groups[g]);
  return s + "]";
}

std::string names_str(const std::vector<std::string>& names) {
  if (names.size() == 1) return names[0];
  std::string s = "(";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + ")";
}

Groups check_groups(const AxisIndexGroups& groups, const AxisNames& axes) {
  const int64_t n = axis_size(axes);
  // JAX's test first: the indices are 0 .. total - 1, each once.
  int64_t total = 0;
  for (const auto& g : groups) total += int64_t(g.size());
  std::vector<int64_t> seen(size_t(total), 0);
  bool cover = true;
  for (const auto& g : groups) {
    for (int64_t i : g) {
      if (i < 0 || i >= total || seen[size_t(i)]++ > 0) cover = false;
    }
  }
  if (!cover) throw ValueError("axis_index_groups must cover all indices exactly once");
  if (total != n) {
    throw ValueError("axis_index_groups " + groups_str(groups) + " cover " + std::to_string(total) +
                     " indices, but axis " + names_str(axes.names()) + " has size " +
                     std::to_string(n) + "; they must partition the axis");
  }
  std::vector<int64_t> sizes;
  for (const auto& g : groups) sizes.push_back(int64_t(g.size()));
  for (int64_t s : sizes) {
    if (s != sizes[0]) {
      throw ValueError("axis_index_groups must all be the same size; got groups of sizes " +
                       list_str(sizes));
    }
  }
  Groups out;
  out.size = sizes[0];
  out.members = groups;
  out.group_of.assign(size_t(n), 0);
  out.rank_of.assign(size_t(n), 0);
  for (size_t g = 0; g < groups.size(); ++g) {
    for (size_t k = 0; k < groups[g].size(); ++k) {
      out.group_of[size_t(groups[g][k])] = int64_t(g);
      out.rank_of[size_t(groups[g][k])] = int64_t(k);
    }
  }
  return out;
}

Array index_scalar(int64_t v) { return frontend::scalar_int(v, DType::int32); }

// Looks up this instance's entry of a per-instance table of int32 (its first dimension).
Array row_of(const std::vector<int32_t>& flat, int64_t n, int64_t width, const Array& me) {
  Array table = core::backend().from_host(flat.data(), core::Aval{{n, width}, DType::int32, false});
  return reshape(dynamic_slice(table, {me, index_scalar(0)}, {1, width}), {width});
}

// The members of this instance's group, every one's x stacked in a new leading dimension
// in the group's order: an all_gather over the whole axis, then this group's rows. Every
// grouped collective is written with it, so each is a composition of collectives that
// already batch, partition and transpose.
Array group_stack(const Array& x, const AxisNames& axes, const Groups& groups) {
  const std::vector<std::string>& names = axes.names();
  const int64_t n = axis_size(axes);
  Array me = core::bind1(Prim::axis_index, {}, {{"axes", names}});
  Array all = core::bind1(
      Prim::pall_gather, {x},
      {{"axes", names}, {"all_gather_dimension", int64_t(0)}, {"axis_size", n}, {"tiled", false}});
  std::vector<int32_t> flat;
  for (int64_t i = 0; i < n; ++i) {
    for (int64_t m : groups.members[size_t(groups.group_of[size_t(i)])]) flat.push_back(int32_t(m));
  }
  Array row = row_of(flat, n, groups.size, me);
  Shape one = all.shape();
  one[0] = 1;
  std::vector<Array> pieces;
  for (int64_t k = 0; k < groups.size; ++k) {
    std::vector<Array> starts(one.size(), index_scalar(0));
    starts[0] = reshape(slice(row, {k}, {k + 1}), {});
    pieces.push_back(dynamic_slice(all, starts, one));
  }
  return pieces.size() == 1 ? pieces[0] : concatenate(pieces, 0);
}

// This instance's rank in its group, int32.
Array group_rank(const AxisNames& axes, const Groups& groups) {
  const int64_t n = axis_size(axes);
  std::vector<int32_t> flat(groups.rank_of.begin(), groups.rank_of.end());
  Array me = core::bind1(Prim::axis_index, {}, {{"axes", axes.names()}});
  return reshape(row_of(flat, n, 1, me), {});
}

int64_t normalize(int64_t axis, int64_t rank, const char* what) {
  const int64_t a = axis < 0 ? axis + rank : axis;
  if (a < 0 || a >= rank) {
    throw ValueError(std::string(what) + " " + std::to_string(axis) +
                     " is out of bounds for an array of rank " + std::to_string(rank));
  }
  return a;
}

}  // namespace

int64_t axis_size(const AxisNames& axis_name) {
  int64_t n = 1;
  for (const std::string& name : axis_name.names()) n *= core::find_axis(name).size;
  return n;
}

Array psum(const ArrayLike& x, const AxisNames& axis_name, const AxisIndexGroups& groups) {
  bound(axis_name);
  const int64_t n = groups.empty() ? axis_size(axis_name) : check_groups(groups, axis_name).size;
  Array a = x.array();
  if (a.dtype() == DType::bool_) a = convert_element_type(a, DType::int32);
  // A value that is the same everywhere (not traced: a constant of the function) sums to
  // itself times the group's size, without communication (psum(1, "i") is the axis size).
  if (core::tracer_of(a) == nullptr) {
    return mul(a, frontend::scalar_int(n, a.dtype(), a.weak_type()));
  }
  if (!groups.empty()) {
    return reduce_sum(group_stack(a, axis_name, check_groups(groups, axis_name)), {0});
  }
  return reduce_over(Prim::psum, a, axis_name);
}

Array pmean(const ArrayLike& x, const AxisNames& axis_name, const AxisIndexGroups& groups) {
  Array s = psum(x, axis_name, groups);
  // An integer count, as JAX divides by psum(1): an int array's mean is then a strong float.
  const int64_t n = groups.empty() ? axis_size(axis_name) : int64_t(groups[0].size());
  const Array count = frontend::scalar_int(n, base::default_int_dtype(), true);
  const std::vector<Array> args = frontend::promote_args_inexact("div", {s, count});
  return div(args[0], args[1]);
}

Array pmax(const ArrayLike& x, const AxisNames& axis_name, const AxisIndexGroups& groups) {
  if (!groups.empty()) {
    bound(axis_name);
    return reduce_max(group_stack(x.array(), axis_name, check_groups(groups, axis_name)), {0});
  }
  return reduce_over(Prim::pmax, x.array(), axis_name);
}

Array pmin(const ArrayLike& x, const AxisNames& axis_name, const AxisIndexGroups& groups) {
  if (!groups.empty()) {
    bound(axis_name);
    return reduce_min(group_stack(x.array(), axis_name, check_groups(groups, axis_name)), {0});
  }
  return reduce_over(Prim::pmin, x.array(), axis_name);
}

Array all_gather(const Array& x, const AxisNames& axis_name, int64_t axis, bool tiled,
                 const AxisIndexGroups& groups) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t d = normalize(axis, x.ndim() + (tiled ? 0 : 1), "all_gather axis");
  if (!groups.empty()) {
    Array g = group_stack(x, axis_name, check_groups(groups, axis_name));  // [k, *x]
    g = core::move_batch_dim(g, 0, int(d), 0);
    if (!tiled) return g;
    Shape s = g.shape();
    s[size_t(d)] *= s[size_t(d) + 1];
    s.erase(s.begin() + d + 1);
    return reshape(g, s);
  }
  return core::bind1(Prim::pall_gather, {x},
                     {{"axes", std::move(names)},
                      {"all_gather_dimension", d},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array psum_scatter(const Array& x, const AxisNames& axis_name, int64_t scatter_dimension,
                   bool tiled, const AxisIndexGroups& groups) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t d = normalize(scatter_dimension, x.ndim(), "psum_scatter scatter_dimension");
  if (!groups.empty()) {
    const Groups g = check_groups(groups, axis_name);
    const int64_t size = x.shape()[size_t(d)];
    if (tiled && size % g.size != 0) {
      throw ValueError("tiled reduce_scatter operand scatter dimension size " +
                       std::to_string(size) + " must be divisible by shard_count " +
                       std::to_string(g.size));
    }
    if (!tiled && size != g.size) {
      throw ValueError("reduce_scatter operand scatter dimension size " + std::to_string(size) +
                       " must match shard count " + std::to_string(g.size));
    }
    // The group's sum, then this instance's block of it.
    Array sum = reduce_sum(group_stack(x, axis_name, g), {0});
    const int64_t block = size / g.size;
    Shape sizes = sum.shape();
    sizes[size_t(d)] = block;
    std::vector<Array> starts(sizes.size(), index_scalar(0));
    starts[size_t(d)] = mul(group_rank(axis_name, g), index_scalar(block));
    Array mine = dynamic_slice(sum, starts, sizes);
    return tiled ? mine : squeeze(mine, {d});
  }
  return core::bind1(Prim::psum_scatter, {x},
                     {{"axes", std::move(names)},
                      {"scatter_dimension", d},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array ppermute(const Array& x, const AxisNames& axis_name,
               const std::vector<std::pair<int64_t, int64_t>>& perm) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t n = axis_size(axis_name);
  std::set<int64_t> sources, dests;
  std::vector<int64_t> flat;
  std::string listed;
  for (const auto& [s, d] : perm) {
    listed += std::string(listed.empty() ? "" : ", ") + "(" + std::to_string(s) + ", " +
              std::to_string(d) + ")";
  }
  for (const auto& [s, d] : perm) {
    if (!sources.insert(s).second || !dests.insert(d).second) {
      throw ValueError("ppermute sources and destinations must be unique, got [" + listed + "].");
    }
    if (s < 0 || s >= n || d < 0 || d >= n) {
      throw ValueError("ppermute pair (" + std::to_string(s) + ", " + std::to_string(d) +
                       ") is out of range for axis size " + std::to_string(n));
    }
    flat.push_back(s);
    flat.push_back(d);
  }
  return core::bind1(Prim::ppermute, {x}, {{"axes", std::move(names)}, {"perm", std::move(flat)}});
}

Array pshuffle(const Array& x, const AxisNames& axis_name, const std::vector<int64_t>& perm) {
  std::vector<int64_t> sorted = perm;
  std::sort(sorted.begin(), sorted.end());
  for (size_t i = 0; i < sorted.size(); ++i) {
    if (sorted[i] != int64_t(i)) {
      throw ValueError("`perm` does not represent a permutation: " + list_str(perm));
    }
  }
  std::vector<std::pair<int64_t, int64_t>> pairs;
  for (size_t i = 0; i < perm.size(); ++i) pairs.emplace_back(perm[i], int64_t(i));
  return ppermute(x, axis_name, pairs);
}

// all_to_all within groups: every member's x, then this instance's block of each, in the
// group's order.
Array grouped_all_to_all(const Array& x, const AxisNames& axis_name, int64_t split, int64_t concat,
                         bool tiled, const Groups& g) {
  const int64_t size = x.shape()[size_t(split)];
  if (tiled && size % g.size != 0) {
    throw ValueError("The size of all_to_all split_axis (" + std::to_string(size) +
                     ") has to be divisible by the size of the named axis " +
                     names_str(axis_name.names()) + " (" + std::to_string(g.size) + ")");
  }
  if (!tiled && size != g.size) {
    throw ValueError(
        "all_to_all requires the size of the mapped axis axis_name to equal "
        "x.shape[split_axis], but they are " +
        std::to_string(g.size) + " and " + std::to_string(size) + " respectively.");
  }
  Array all = group_stack(x, axis_name, g);  // [k, *x]
  const int64_t block = size / g.size;
  Shape sizes = all.shape();
  sizes[size_t(split) + 1] = block;
  std::vector<Array> starts(sizes.size(), index_scalar(0));
  starts[size_t(split) + 1] = mul(group_rank(axis_name, g), index_scalar(block));
  Array mine = dynamic_slice(all, starts, sizes);  // [k, *x with the split axis one block]
  if (!tiled) return core::move_batch_dim(squeeze(mine, {split + 1}), 0, int(concat), 0);
  Array moved = core::move_batch_dim(mine, 0, int(concat), 0);
  Shape s = moved.shape();
  s[size_t(concat)] *= s[size_t(concat) + 1];
  s.erase(s.begin() + concat + 1);
  return reshape(moved, s);
}

Array all_to_all(const Array& x, const AxisNames& axis_name, int64_t split_axis,
                 int64_t concat_axis, bool tiled, const AxisIndexGroups& groups) {
  std::vector<std::string> names = bound(axis_name);
  const int64_t split = normalize(split_axis, x.ndim(), "all_to_all split_axis");
  const int64_t concat = normalize(concat_axis, x.ndim(), "all_to_all concat_axis");
  if (!groups.empty()) {
    return grouped_all_to_all(x, axis_name, split, concat, tiled, check_groups(groups, axis_name));
  }
  return core::bind1(Prim::pall_to_all, {x},
                     {{"axes", std::move(names)},
                      {"split_axis", split},
                      {"concat_axis", concat},
                      {"axis_size", axis_size(axis_name)},
                      {"tiled", tiled}});
}

Array pswapaxes(const Array& x, const AxisNames& axis_name, int64_t axis,
                const AxisIndexGroups& groups) {
  return all_to_all(x, axis_name, axis, axis, false, groups);
}

Array axis_index(const AxisNames& axis_name) {
  std::vector<std::string> names = bound(axis_name);
  return core::bind1(Prim::axis_index, {}, {{"axes", std::move(names)}});
}

}  // namespace parax::lax
