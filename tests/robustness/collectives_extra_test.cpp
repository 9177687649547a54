// Issue 11: the collectives JAX users reach for that parax lacked. axis_index_groups on
// psum, pmean, pmax, pmin, all_gather, psum_scatter and all_to_all; pswapaxes; pshuffle;
// pytrees in ppermute and all_to_all. Each runs under pmap, vmap (with an axis name) and
// shard_map over an 8-device mesh, against host loops; gradients of the grouped forms
// against their closed forms; JAX's errors.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <tuple>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;
using lax::AxisIndexGroups;

constexpr int64_t kN = 8;
using Fn = std::function<Array(const Array&)>;

// Per instance, its values (row-major) in double.
using Rows = std::vector<std::vector<double>>;

// Distinct values, multiples of 1/8, so sums of a few are exact in float32.
Array input(const Shape& per_instance, int64_t seed = 0) {
  Shape s = per_instance;
  s.insert(s.begin(), kN);
  int64_t n = 1;
  for (int64_t d : s) n *= d;
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    v[size_t(i)] = float((i * 389 + 17 + seed * 101) % 1009 - 504) / 8;
  }
  return jnp::array(v, s);
}

Rows rows(const Array& a) {
  std::vector<double> v = a.to_vector<double>();
  const size_t per = v.size() / size_t(a.shape()[0]);
  Rows r;
  for (size_t i = 0; i < size_t(a.shape()[0]); ++i) {
    r.emplace_back(v.begin() + long(i * per), v.begin() + long((i + 1) * per));
  }
  return r;
}

enum class Map { pmap, vmap, shard_map, pmap_in_jit };
const char* name(Map m) {
  return m == Map::pmap        ? "pmap"
         : m == Map::vmap      ? "vmap"
         : m == Map::shard_map ? "shard_map"
                               : "pmap in jit";
}
constexpr Map kMaps[] = {Map::pmap, Map::vmap, Map::shard_map, Map::pmap_in_jit};

// Runs f per instance of x's leading axis "i" (size 8).
Array run(Map m, const Fn& f, const Array& x) {
  switch (m) {
    case Map::pmap:
      return pmap(f, {.axis_name = "i"})(x);
    case Map::vmap:
      return vmap(f, {.axis_name = "i"})(x);
    case Map::shard_map: {
      Mesh mesh = make_mesh({kN}, {"i"});
      return shard_map(
          [f](const Array& b) { return jnp::expand_dims(f(jnp::squeeze(b, {0})), {0}); }, mesh,
          P("i"), P("i"))(x);
    }
    case Map::pmap_in_jit:
      return jit([f](const Array& a) { return pmap(f, {.axis_name = "i"})(a); })(x);
  }
  return Array();
}

void expect_rows(const Array& got, const Rows& want, const Shape& instance_shape,
                 const std::string& what) {
  Shape s = instance_shape;
  s.insert(s.begin(), kN);
  ASSERT_EQ(got.shape(), s) << what;
  const Rows g = rows(got);
  for (size_t i = 0; i < want.size(); ++i) {
    ASSERT_EQ(g[i].size(), want[i].size()) << what;
    for (size_t e = 0; e < want[i].size(); ++e) {
      ASSERT_NEAR(g[i][e], want[i][e], 1e-5 * (1 + std::abs(want[i][e])))
          << what << ": instance " << i << " element " << e;
    }
  }
}

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
// pswapaxes and pshuffle.

TEST(Pswapaxes, SwapsTheMappedAxisWithADimension) {
  // x per instance [8, 3]: result[i][j] = x[j][i] (the mapped and the first axis swap).
  Array x = input({kN, 3}, 4);
  const Rows xs = rows(x);
  Rows want(kN);
  for (size_t i = 0; i < kN; ++i) {
    for (size_t j = 0; j < kN; ++j) {
      for (size_t c = 0; c < 3; ++c) want[i].push_back(xs[j][i * 3 + c]);
    }
  }
  for (Map m : kMaps) {
    expect_rows(run(
                    m, [](const Array& a) { return lax::pswapaxes(a, "i", 0); }, x),
                want, {kN, 3}, std::string(name(m)) + " pswapaxes axis 0");
  }
  // Axis 1 of a [3, 8] block, and -1 for the same.
  Array y = input({3, kN}, 5);
  const Rows ys = rows(y);
  Rows want1(kN);
  for (size_t i = 0; i < kN; ++i) {
    for (size_t r = 0; r < 3; ++r) {
      for (size_t j = 0; j < kN; ++j) want1[i].push_back(ys[j][r * kN + i]);
    }
  }
  for (Map m : kMaps) {
    expect_rows(run(
                    m, [](const Array& a) { return lax::pswapaxes(a, "i", -1); }, y),
                want1, {3, kN}, std::string(name(m)) + " pswapaxes axis -1");
  }
  // Within groups of 4 the axis must have the group's size.
  const AxisIndexGroups groups = {{0, 1, 2, 3}, {4, 5, 6, 7}};
  Array z = input({4, 2}, 6);
  const Rows zs = rows(z);
  Rows want2(kN);
  for (size_t i = 0; i < kN; ++i) {
    const size_t base = i / 4 * 4, me = i % 4;
    for (size_t j = 0; j < 4; ++j) {
      for (size_t c = 0; c < 2; ++c) want2[i].push_back(zs[base + j][me * 2 + c]);
    }
  }
  for (Map m : kMaps) {
    expect_rows(run(
                    m, [&](const Array& a) { return lax::pswapaxes(a, "i", 0, groups); }, z),
                want2, {4, 2}, std::string(name(m)) + " pswapaxes in groups");
  }
}

TEST(Pshuffle, InstanceIReceivesPermI) {
  const std::vector<int64_t> perm = {3, 0, 1, 2, 7, 4, 6, 5};
  Array x = input({2}, 7);
  const Rows xs = rows(x);
  Rows want(kN);
  for (size_t i = 0; i < kN; ++i) want[i] = xs[size_t(perm[i])];
  for (Map m : kMaps) {
    expect_rows(run(
                    m, [&](const Array& a) { return lax::pshuffle(a, "i", perm); }, x),
                want, {2}, std::string(name(m)) + " pshuffle");
  }
  // Its gradient runs the permutation backwards.
  Array w = input({2}, 8);
  const Rows ws = rows(w);
  Rows gwant(kN);
  for (size_t i = 0; i < kN; ++i) gwant[size_t(perm[i])] = ws[i];
  for (Map m : {Map::pmap, Map::vmap}) {
    Array g = grad([&](const Array& a) {
      return jnp::sum(run(
                          m, [&](const Array& b) { return lax::pshuffle(b, "i", perm); }, a) *
                      w);
    })(x);
    expect_rows(g, gwant, {2}, std::string(name(m)) + " grad of pshuffle");
  }
}

// ---------------------------------------------------------------------------------------
// Pytrees in ppermute and all_to_all (and the other collectives' tree forms).

TEST(CollectiveTrees, PpermuteAndAllToAllMapOverLeaves) {
  Array a = input({kN}, 9);
  Array b = jnp::arange(kN * kN * 2, DType::int32).reshape({kN, kN, 2});
  const std::vector<std::pair<int64_t, int64_t>> ring = {{0, 1}, {1, 2}, {2, 3}, {3, 4},
                                                         {4, 5}, {5, 6}, {6, 7}, {7, 0}};
  const Rows as = rows(a), bs = rows(b);
  for (Map m : kMaps) {
    // A vector of leaves, a tuple and a dict, each leaf as the single-array form gives.
    auto pair_fn = [&](const Array& x, const Array& y) {
      auto tree = lax::ppermute(std::vector<Array>{x, y}, "i", ring);
      auto tup = lax::all_to_all(std::tuple<Array, Array>{x, y}, "i", 0, 0);
      std::map<std::string, Array> d = {{"p", x}, {"q", y}};
      auto shuffled = lax::pshuffle(d, "i", {1, 2, 3, 4, 5, 6, 7, 0});
      auto swapped = lax::pswapaxes(std::vector<Array>{y}, "i", 0);
      return std::vector<Array>{tree[0],       tree[1],       std::get<0>(tup), std::get<1>(tup),
                                shuffled["p"], shuffled["q"], swapped[0]};
    };
    std::vector<Array> outs;
    if (m == Map::pmap) {
      outs = pmap(pair_fn, {.axis_name = "i"})(a, b);
    } else if (m == Map::vmap) {
      outs = vmap(pair_fn, {.axis_name = "i"})(a, b);
    } else {
      Mesh mesh = make_mesh({kN}, {"i"});
      outs = shard_map(
          [&](const Array& x, const Array& y) {
            std::vector<Array> o = pair_fn(jnp::squeeze(x, {0}), jnp::squeeze(y, {0}));
            for (Array& e : o) e = jnp::expand_dims(e, {0});
            return o;
          },
          mesh, std::vector<PartitionSpec>{P("i"), P("i")}, P("i"))(a, b);
    }
    ASSERT_EQ(outs.size(), 7u);
    const std::vector<Array> single = {
        run(
            m, [&](const Array& x) { return lax::ppermute(x, "i", ring); }, a),
        run(
            m, [&](const Array& x) { return lax::ppermute(x, "i", ring); }, b),
        run(
            m, [&](const Array& x) { return lax::all_to_all(x, "i", 0, 0); }, a),
        run(
            m, [&](const Array& x) { return lax::all_to_all(x, "i", 0, 0); }, b),
    };
    for (size_t k = 0; k < single.size(); ++k) {
      EXPECT_EQ(outs[k].dtype(), single[k].dtype());
      expect_rows(outs[k], rows(single[k]),
                  Shape(single[k].shape().begin() + 1, single[k].shape().end()),
                  std::string(name(m)) + " tree leaf " + std::to_string(k));
    }
    // The ring moves instance i's value to i + 1; pshuffle by {1, .., 7, 0} takes i + 1's.
    Rows ring_want(kN), shuffle_want(kN);
    for (size_t i = 0; i < kN; ++i) {
      ring_want[(i + 1) % kN] = as[i];
      shuffle_want[i] = as[(i + 1) % kN];
    }
    expect_rows(outs[0], ring_want, {kN}, std::string(name(m)) + " ppermute tree");
    expect_rows(outs[4], shuffle_want, {kN}, std::string(name(m)) + " pshuffle tree");
    EXPECT_EQ(outs[5].dtype(), DType::int32);
    Rows swap_want(kN);
    for (size_t i = 0; i < kN; ++i) {
      for (size_t j = 0; j < kN; ++j) {
        for (size_t c = 0; c < 2; ++c) swap_want[i].push_back(bs[j][i * 2 + c]);
      }
    }
    expect_rows(outs[6], swap_want, {kN, 2}, std::string(name(m)) + " pswapaxes tree");
  }
}

TEST(CollectiveTrees, GroupedReductionsOverATree) {
  const AxisIndexGroups groups = {{0, 1}, {2, 3}, {4, 5}, {6, 7}};
  Array a = input({3}, 10);
  const Rows as = rows(a);
  auto f = [&](const Array& x) {
    auto s = lax::psum(std::pair<Array, Array>{x, x * 2}, "i", groups);
    auto g = lax::all_gather(std::vector<Array>{x}, "i", 0, false, groups);
    return std::vector<Array>{s.first, s.second, g[0]};
  };
  std::vector<Array> outs = pmap(f, {.axis_name = "i"})(a);
  Rows s1(kN), s2(kN), g(kN);
  for (size_t i = 0; i < kN; ++i) {
    const size_t p = i / 2 * 2;
    for (size_t e = 0; e < 3; ++e) {
      s1[i].push_back(as[p][e] + as[p + 1][e]);
      s2[i].push_back(2 * (as[p][e] + as[p + 1][e]));
    }
    g[i] = as[p];
    g[i].insert(g[i].end(), as[p + 1].begin(), as[p + 1].end());
  }
  expect_rows(outs[0], s1, {3}, "psum tree first");
  expect_rows(outs[1], s2, {3}, "psum tree second");
  expect_rows(outs[2], g, {2, 3}, "all_gather tree");
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

// A shorter pshuffle leaves the instances it does not name with zeros, as ppermute does.
TEST(Pshuffle, ShorterPermutationZerosTheRest) {
  Array x = input({1}, 14);
  const Rows xs = rows(x);
  Array got = pmap(
      [](const Array& a) {
        return lax::pshuffle(a, "i", {1, 0});
      },
      {.axis_name = "i"})(x);
  Rows want(kN, {0.0});
  want[0] = xs[1];
  want[1] = xs[0];
  expect_rows(got, want, {1}, "pshuffle {1, 0}");
}

}  // namespace
}  // namespace parax
