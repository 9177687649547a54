// axis_index_groups on psum, pmean, pmax, pmin, all_gather, psum_scatter and all_to_all: each
// under pmap, vmap (with an axis name), shard_map and pmap inside jit over 8 instances,
// against host loops; their gradients against closed forms; groups over several axis names;
// JAX's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cstdint>
#include <functional>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lax/mapped_collectives.h"
#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

using namespace collectives_testing;

// Groups used throughout: contiguous, interleaved, and out of order (JAX's example order).
const std::vector<AxisIndexGroups>& all_groups() {
  static const std::vector<AxisIndexGroups> g = {
      {{0, 1, 2, 3}, {4, 5, 6, 7}},
      {{0, 2, 4, 6}, {1, 3, 5, 7}},
      {{3, 1}, {0, 2}, {7, 5}, {6, 4}},
      {{0, 1, 2, 3, 4, 5, 6, 7}},
  };
  return g;
}

struct GroupIndex {
  std::vector<std::vector<int64_t>> members_of;  // per instance: its group, in order
  std::vector<int64_t> rank;                     // per instance
};

GroupIndex index(const AxisIndexGroups& groups) {
  GroupIndex gi;
  gi.members_of.resize(kN);
  gi.rank.resize(kN);
  for (const auto& g : groups) {
    for (size_t k = 0; k < g.size(); ++k) {
      gi.members_of[size_t(g[k])] = g;
      gi.rank[size_t(g[k])] = int64_t(k);
    }
  }
  return gi;
}

std::string what(Map m, const std::string& op, const AxisIndexGroups& groups) {
  std::string s = std::string(name(m)) + " " + op + " groups ";
  for (const auto& g : groups) {
    s += "[";
    for (int64_t i : g) s += std::to_string(i) + " ";
    s += "]";
  }
  return s;
}

// ---------------------------------------------------------------------------------------
// Reductions within groups.

TEST(AxisIndexGroups, ReductionsWithinGroups) {
  const Shape shape{2, 3};
  Array x = input(shape);
  const Rows xs = rows(x);
  using Red = std::function<Array(const Array&, const AxisIndexGroups&)>;
  const std::vector<std::tuple<std::string, Red, std::function<double(double, double)>, bool>> ops =
      {
          {"psum", [](const Array& a, const AxisIndexGroups& g) { return lax::psum(a, "i", g); },
           [](double a, double b) { return a + b; }, false},
          {"pmean", [](const Array& a, const AxisIndexGroups& g) { return lax::pmean(a, "i", g); },
           [](double a, double b) { return a + b; }, true},
          {"pmax", [](const Array& a, const AxisIndexGroups& g) { return lax::pmax(a, "i", g); },
           [](double a, double b) { return std::max(a, b); }, false},
          {"pmin", [](const Array& a, const AxisIndexGroups& g) { return lax::pmin(a, "i", g); },
           [](double a, double b) { return std::min(a, b); }, false},
      };
  for (const auto& groups : all_groups()) {
    const GroupIndex gi = index(groups);
    for (const auto& [op, fn, combine, mean] : ops) {
      Rows want(kN);
      for (size_t i = 0; i < kN; ++i) {
        const auto& members = gi.members_of[i];
        want[i] = xs[size_t(members[0])];
        for (size_t k = 1; k < members.size(); ++k) {
          for (size_t e = 0; e < want[i].size(); ++e) {
            want[i][e] = combine(want[i][e], xs[size_t(members[k])][e]);
          }
        }
        if (mean) {
          for (double& v : want[i]) v /= double(members.size());
        }
      }
      for (Map m : kMaps) {
        const auto& f = fn;
        const AxisIndexGroups g = groups;
        Array got = run(
            m, [&f, g](const Array& a) { return f(a, g); }, x);
        EXPECT_EQ(got.dtype(), DType::float32);
        expect_rows(got, want, shape, what(m, op, groups));
      }
    }
  }
}

TEST(AxisIndexGroups, PsumOfIntsBoolsAndConstants) {
  const AxisIndexGroups groups = {{0, 2, 4, 6}, {1, 3, 5, 7}};
  Array ints = jnp::arange(kN * 2, DType::int32).reshape({kN, 2});
  for (Map m : kMaps) {
    Array s = run(
        m, [&](const Array& a) { return lax::psum(a, "i", groups); }, ints);
    EXPECT_EQ(s.dtype(), DType::int32);
    // Even instances: rows 0,2,4,6 -> [0+4+8+12, 1+5+9+13].
    expect_rows(
        s, Rows{{24, 28}, {32, 36}, {24, 28}, {32, 36}, {24, 28}, {32, 36}, {24, 28}, {32, 36}},
        {2}, what(m, "psum int32", groups));
    // psum of bool counts, as int32.
    Array count = run(
        m, [&](const Array& a) { return lax::psum(lax::gt(a, 5), "i", groups); }, ints);
    EXPECT_EQ(count.dtype(), DType::int32);
    expect_rows(count, Rows{{2, 2}, {3, 3}, {2, 2}, {3, 3}, {2, 2}, {3, 3}, {2, 2}, {3, 3}}, {2},
                what(m, "psum bool", groups));
    // A constant sums to itself times the group's size (JAX's psum(1, axis_index_groups=...)).
    Array n = run(
        m, [&](const Array& a) { return a * 0 + lax::psum(1, "i", groups); }, ints);
    expect_rows(n, Rows(kN, {4, 4}), {2}, what(m, "psum constant", groups));
  }
}

// ---------------------------------------------------------------------------------------
// all_gather, psum_scatter and all_to_all within groups.

TEST(AxisIndexGroups, AllGatherWithinGroups) {
  const Shape shape{2, 3};
  Array x = input(shape, 1);
  const Rows xs = rows(x);
  for (const auto& groups : all_groups()) {
    const GroupIndex gi = index(groups);
    const int64_t gs = int64_t(groups[0].size());
    for (int64_t axis : {0, 1, 2}) {
      for (bool tiled : {false, true}) {
        if (tiled && axis == 2) continue;
        // Host: stack (or concatenate) the members' [2, 3] blocks along `axis`.
        Shape out = shape;
        if (tiled) {
          out[size_t(axis)] *= gs;
        } else {
          out.insert(out.begin() + axis, gs);
        }
        Rows want(kN);
        for (size_t i = 0; i < kN; ++i) {
          const auto& mem = gi.members_of[i];
          want[i].assign(size_t(out[0] * out[1] * (out.size() > 2 ? out[2] : 1)), 0);
          for (int64_t k = 0; k < gs; ++k) {
            const auto& src = xs[size_t(mem[size_t(k)])];
            for (int64_t r = 0; r < 2; ++r) {
              for (int64_t c = 0; c < 3; ++c) {
                int64_t at;
                if (tiled) {
                  at = axis == 0 ? (k * 2 + r) * 3 + c : r * (3 * gs) + k * 3 + c;
                } else {
                  at = axis == 0   ? (k * 2 + r) * 3 + c
                       : axis == 1 ? (r * gs + k) * 3 + c
                                   : (r * 3 + c) * gs + k;
                }
                want[i][size_t(at)] = src[size_t(r * 3 + c)];
              }
            }
          }
        }
        for (Map m : kMaps) {
          Array got = run(
              m, [&](const Array& a) { return lax::all_gather(a, "i", axis, tiled, groups); }, x);
          expect_rows(
              got, want, out,
              what(m, "all_gather axis " + std::to_string(axis) + (tiled ? " tiled" : ""), groups));
        }
      }
    }
  }
}

TEST(AxisIndexGroups, PsumScatterWithinGroups) {
  for (const auto& groups : all_groups()) {
    const GroupIndex gi = index(groups);
    const int64_t gs = int64_t(groups[0].size());
    for (bool tiled : {false, true}) {
      const Shape shape{3, tiled ? 2 * gs : gs};
      Array x = input(shape, 2);
      const Rows xs = rows(x);
      const int64_t block = tiled ? 2 : 1;
      const Shape out = tiled ? Shape{3, 2} : Shape{3};
      Rows want(kN);
      for (size_t i = 0; i < kN; ++i) {
        for (int64_t r = 0; r < 3; ++r) {
          for (int64_t b = 0; b < block; ++b) {
            double sum = 0;
            for (int64_t src : gi.members_of[i]) {
              sum += xs[size_t(src)][size_t(r * shape[1] + gi.rank[i] * block + b)];
            }
            want[i].push_back(sum);
          }
        }
      }
      for (Map m : kMaps) {
        Array got = run(
            m, [&](const Array& a) { return lax::psum_scatter(a, "i", 1, tiled, groups); }, x);
        expect_rows(got, want, out, what(m, tiled ? "psum_scatter tiled" : "psum_scatter", groups));
      }
    }
  }
}

// Host all_to_all of a [rows, cols] block per instance within groups, split along
// `split`, concatenated (or stacked) along `concat`.
Rows host_all_to_all(const Rows& xs, const Shape& shape, const AxisIndexGroups& groups,
                     int64_t split, int64_t concat, bool tiled, Shape* out_shape) {
  const GroupIndex gi = index(groups);
  const int64_t gs = int64_t(groups[0].size());
  const int64_t block = tiled ? shape[size_t(split)] / gs : 1;
  // Member k's block for me: rows/cols [rank*block, (rank+1)*block) of the split axis.
  Rows out(kN);
  for (size_t i = 0; i < kN; ++i) {
    std::vector<std::vector<double>> pieces;  // per k: [r][c] of the block, row-major
    Shape piece = shape;
    piece[size_t(split)] = block;
    for (int64_t k = 0; k < gs; ++k) {
      const auto& src = xs[size_t(gi.members_of[i][size_t(k)])];
      std::vector<double> p;
      for (int64_t r = 0; r < piece[0]; ++r) {
        for (int64_t c = 0; c < piece[1]; ++c) {
          const int64_t rr = split == 0 ? gi.rank[i] * block + r : r;
          const int64_t cc = split == 1 ? gi.rank[i] * block + c : c;
          p.push_back(src[size_t(rr * shape[1] + cc)]);
        }
      }
      pieces.push_back(p);
    }
    if (tiled) {  // concatenate the [piece] blocks along concat
      Shape o = piece;
      o[size_t(concat)] *= gs;
      *out_shape = o;
      out[i].assign(size_t(o[0] * o[1]), 0);
      for (int64_t k = 0; k < gs; ++k) {
        for (int64_t r = 0; r < piece[0]; ++r) {
          for (int64_t c = 0; c < piece[1]; ++c) {
            const int64_t orow = concat == 0 ? k * piece[0] + r : r;
            const int64_t ocol = concat == 1 ? k * piece[1] + c : c;
            out[i][size_t(orow * o[1] + ocol)] = pieces[size_t(k)][size_t(r * piece[1] + c)];
          }
        }
      }
    } else {  // the split axis (size 1 now) goes; a new axis of size gs at concat
      const int64_t other = shape[size_t(1 - split)];
      *out_shape = concat == 0 ? Shape{gs, other} : Shape{other, gs};
      out[i].assign(size_t(gs * other), 0);
      for (int64_t k = 0; k < gs; ++k) {
        for (int64_t e = 0; e < other; ++e) {
          const double v = pieces[size_t(k)][size_t(e)];
          out[i][size_t(concat == 0 ? k * other + e : e * gs + k)] = v;
        }
      }
    }
  }
  return out;
}

TEST(AxisIndexGroups, AllToAllWithinGroups) {
  for (const auto& groups : all_groups()) {
    const int64_t gs = int64_t(groups[0].size());
    for (bool tiled : {false, true}) {
      for (int64_t split : {0, 1}) {
        for (int64_t concat : {0, 1}) {
          Shape shape{3, 3};
          shape[size_t(split)] = tiled ? 2 * gs : gs;
          Array x = input(shape, 3);
          Shape out;
          const Rows want = host_all_to_all(rows(x), shape, groups, split, concat, tiled, &out);
          for (Map m : kMaps) {
            Array got = run(
                m,
                [&](const Array& a) {
                  return lax::all_to_all(a, "i", split, concat, tiled, groups);
                },
                x);
            expect_rows(got, want, out,
                        what(m,
                             "all_to_all " + std::to_string(split) + "->" + std::to_string(concat) +
                                 (tiled ? " tiled" : ""),
                             groups));
          }
        }
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// Gradients of the grouped forms (of the mapped function: total = sum(mapped(x) * w)).

TEST(AxisIndexGroups, Gradients) {
  const AxisIndexGroups groups = {{3, 1}, {0, 2}, {7, 5}, {6, 4}};
  const GroupIndex gi = index(groups);
  const int64_t gs = 2;
  Array x = input({4}, 11);
  const Rows xs = rows(x);
  for (Map m : kMaps) {
    auto grad_of = [&](const Fn& f, const Shape& out_shape) {
      Shape ws = out_shape;
      ws.insert(ws.begin(), kN);
      Array w = input(Shape(ws.begin() + 1, ws.end()), 12);
      Array g = grad([&](const Array& a) { return jnp::sum(run(m, f, a) * w); })(x);
      return std::pair<Array, Rows>{g, rows(w)};
    };
    {  // psum: d/dx_i = sum of w_j over i's group.
      auto [g, ws] = grad_of([&](const Array& a) { return lax::psum(a, "i", groups); }, {4});
      Rows want(kN, std::vector<double>(4, 0));
      for (size_t i = 0; i < kN; ++i) {
        for (int64_t j : gi.members_of[i]) {
          for (size_t e = 0; e < 4; ++e) want[i][e] += ws[size_t(j)][e];
        }
      }
      expect_rows(g, want, {4}, std::string(name(m)) + " grad psum");
    }
    {  // pmean: the same over the group's size.
      auto [g, ws] = grad_of([&](const Array& a) { return lax::pmean(a, "i", groups); }, {4});
      Rows want(kN, std::vector<double>(4, 0));
      for (size_t i = 0; i < kN; ++i) {
        for (int64_t j : gi.members_of[i]) {
          for (size_t e = 0; e < 4; ++e) want[i][e] += ws[size_t(j)][e] / double(gs);
        }
      }
      expect_rows(g, want, {4}, std::string(name(m)) + " grad pmean");
    }
    {  // pmax: the group's maximum takes every member's weight (values are distinct).
      auto [g, ws] = grad_of([&](const Array& a) { return lax::pmax(a, "i", groups); }, {4});
      Rows want(kN, std::vector<double>(4, 0));
      for (size_t i = 0; i < kN; ++i) {
        for (size_t e = 0; e < 4; ++e) {
          bool is_max = true;
          for (int64_t j : gi.members_of[i]) is_max = is_max && xs[size_t(j)][e] <= xs[i][e];
          if (!is_max) continue;
          for (int64_t j : gi.members_of[i]) want[i][e] += ws[size_t(j)][e];
        }
      }
      expect_rows(g, want, {4}, std::string(name(m)) + " grad pmax");
    }
    {  // all_gather: instance j's slot rank(i) is x_i.
      auto [g, ws] = grad_of(
          [&](const Array& a) { return lax::all_gather(a, "i", 0, false, groups); }, {gs, 4});
      Rows want(kN, std::vector<double>(4, 0));
      for (size_t i = 0; i < kN; ++i) {
        for (int64_t j : gi.members_of[i]) {
          for (size_t e = 0; e < 4; ++e) want[i][e] += ws[size_t(j)][size_t(gi.rank[i] * 4) + e];
        }
      }
      expect_rows(g, want, {4}, std::string(name(m)) + " grad all_gather");
    }
    {  // all_to_all (x as [2, 2], split 0, concat 0): out_j[k] = x_{member k}[rank j].
      auto [g, ws] = grad_of(
          [&](const Array& a) {
            return lax::all_to_all(a.reshape({2, 2}), "i", 0, 0, false, groups).reshape({4});
          },
          {4});
      Rows want(kN, std::vector<double>(4, 0));
      for (size_t i = 0; i < kN; ++i) {
        for (int64_t r = 0; r < gs; ++r) {
          const size_t j = size_t(gi.members_of[i][size_t(r)]);  // receives my block r
          for (size_t e = 0; e < 2; ++e) {
            want[i][size_t(r * 2) + e] += ws[j][size_t(gi.rank[i] * 2) + e];
          }
        }
      }
      expect_rows(g, want, {4}, std::string(name(m)) + " grad all_to_all");
    }
  }
}

TEST(AxisIndexGroups, GradInsidePmapMatchesJax) {
  // grad inside the map: psum's transpose is psum over the same groups, so each instance
  // gets the sum of its group's cotangents (1 each): the group's size.
  const AxisIndexGroups groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  Array x = input({2}, 13);
  Array g = pmap(
      [&](const Array& a) {
        return grad([&](const Array& b) { return jnp::sum(lax::psum(b, "i", groups)); })(a);
      },
      {.axis_name = "i"})(x);
  expect_rows(g, Rows(kN, {4, 4}), {2}, "grad inside pmap");
}

// Over several names the groups index the instances row-major (the first name major), as
// axis_index over those names numbers them: a 4x2 mesh, groups over ('i', 'j').
TEST(AxisIndexGroups, OverSeveralNames) {
  const AxisIndexGroups groups = {{0, 7}, {1, 6}, {2, 5}, {3, 4}};
  Array x = input({3}, 15);  // instance (i, j) holds row 2 * i + j
  const Rows xs = rows(x);
  Rows sum(kN), gathered(kN);
  for (const auto& g : groups) {
    for (int64_t me : g) {
      for (size_t e = 0; e < 3; ++e) {
        sum[size_t(me)].push_back(xs[size_t(g[0])][e] + xs[size_t(g[1])][e]);
      }
      gathered[size_t(me)] = xs[size_t(g[0])];
      gathered[size_t(me)].insert(gathered[size_t(me)].end(), xs[size_t(g[1])].begin(),
                                  xs[size_t(g[1])].end());
    }
  }
  const Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  auto per_device = [&](const Array& b) {
    Array v = jnp::squeeze(b, {0});
    return std::vector<Array>{
        jnp::expand_dims(lax::psum(v, {"i", "j"}, groups), {0}),
        jnp::expand_dims(lax::all_gather(v, {"i", "j"}, 0, false, groups), {0})};
  };
  std::vector<Array> outs = shard_map(per_device, mesh, P({"i", "j"}), P({"i", "j"}))(x);
  expect_rows(outs[0], sum, {3}, "shard_map psum over (i, j)");
  expect_rows(outs[1], gathered, {2, 3}, "shard_map all_gather over (i, j)");
  // The same with nested pmaps (i outer) and nested vmaps.
  Array x2 = x.reshape({4, 2, 3});
  auto inner = [&](const Array& v) {
    return std::vector<Array>{lax::psum(v, {"i", "j"}, groups),
                              lax::all_gather(v, {"i", "j"}, 0, false, groups)};
  };
  std::vector<Array> by_pmap = pmap(
      [&](const Array& r) { return pmap(inner, {.axis_name = "j"})(r); }, {.axis_name = "i"})(x2);
  std::vector<Array> by_vmap = vmap(
      [&](const Array& r) { return vmap(inner, {.axis_name = "j"})(r); }, {.axis_name = "i"})(x2);
  for (const auto& [outs2, how] : {std::pair{by_pmap, "pmap"}, std::pair{by_vmap, "vmap"}}) {
    expect_rows(outs2[0].reshape({kN, 3}), sum, {3}, std::string(how) + " psum over (i, j)");
    expect_rows(outs2[1].reshape({kN, 2, 3}), gathered, {2, 3},
                std::string(how) + " all_gather over (i, j)");
  }
}

// ---------------------------------------------------------------------------------------
// Errors, with JAX's texts where JAX has them.

TEST(AxisIndexGroups, Errors) {
  Array x = input({8});
  auto under_pmap = [&](const Fn& f) { return pmap(f, {.axis_name = "i"})(x); };
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::psum(a, "i", {{0, 1, 2, 3}, {3, 4, 5, 6}});
                   }),
                   ValueError, "axis_index_groups must cover all indices exactly once");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pmax(a, "i", {{0, 1, 2, 3}, {4, 5, 6, 9}});
                   }),
                   ValueError, "axis_index_groups must cover all indices exactly once");
  EXPECT_THROW_MSG(
      under_pmap([](const Array& a) {
        return lax::psum(a, "i", {{0, 1}, {2, 3}});
      }),
      ValueError,
      "axis_index_groups [[0, 1], [2, 3]] cover 4 indices, but axis i has size 8; they must "
      "partition the axis");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pmean(a, "i", {{0, 1, 2}, {3, 4, 5, 6, 7}});
                   }),
                   ValueError,
                   "axis_index_groups must all be the same size; got groups of sizes [3, 5]");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::all_gather(a, "i", 0, false, {{0, 1, 2, 3, 4, 5, 6}, {7}});
                   }),
                   ValueError,
                   "axis_index_groups must all be the same size; got groups of sizes [7, 1]");
  // all_to_all: the split axis against the group's size (JAX's texts).
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::all_to_all(a, "i", 0, 0, false, {{0, 1, 2, 3}, {4, 5, 6, 7}});
                   }),
                   ValueError,
                   "all_to_all requires the size of the mapped axis axis_name to equal "
                   "x.shape[split_axis], but they are 4 and 8 respectively.");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::all_to_all(a.reshape({2, 4}), "i", 1, 1, true,
                                            {{0, 1, 2}, {3, 4, 5}, {6, 7, 8}});
                   }),
                   ValueError,
                   "axis_index_groups [[0, 1, 2], [3, 4, 5], [6, 7, 8]] cover 9 "
                   "indices, but axis i has size 8; they must partition the axis");
  EXPECT_THROW_MSG(
      under_pmap([](const Array& a) {
        return lax::all_to_all(a.reshape({2, 4}), "i", 0, 1, true, {{0, 1, 2, 3}, {4, 5, 6, 7}});
      }),
      ValueError,
      "The size of all_to_all split_axis (2) has to be divisible by the size of "
      "the named axis i (4)");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::psum_scatter(a, "i", 0, false, {{0, 1}, {2, 3}, {4, 5}, {6, 7}});
                   }),
                   ValueError,
                   "reduce_scatter operand scatter dimension size 8 must match "
                   "shard count 2");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pswapaxes(a, "i", 0, {{0, 1}, {2, 3}, {4, 5}, {6, 7}});
                   }),
                   ValueError,
                   "all_to_all requires the size of the mapped axis axis_name to equal "
                   "x.shape[split_axis], but they are 2 and 8 respectively.");
  // pshuffle takes a permutation (JAX's text, with Python's list notation).
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pshuffle(a, "i", {0, 0, 1});
                   }),
                   ValueError, "`perm` does not represent a permutation: [0, 0, 1]");
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pshuffle(a, "i", {1, 2});
                   }),
                   ValueError, "`perm` does not represent a permutation: [1, 2]");
  // A permutation longer than the axis is out of range for ppermute.
  EXPECT_THROW_MSG(under_pmap([](const Array& a) {
                     return lax::pshuffle(a, "i", {0, 1, 2, 3, 4, 5, 6, 7, 8});
                   }),
                   ValueError, "ppermute pair (8, 8) is out of range for axis size 8");
  // Unbound names are still NameErrors.
  EXPECT_THROW(under_pmap([](const Array& a) { return lax::psum(a, "j", {{0}}); }), NameError);
}

}  // namespace
}  // namespace parax
