// Collectives over pytrees: ppermute, all_to_all, pshuffle and pswapaxes of a vector, tuple
// or dict give each leaf what the single-array form gives; grouped psum and all_gather over
// a tree.
#include <gtest/gtest.h>

#include <cstdint>
#include <map>
#include <string>
#include <tuple>
#include <utility>
#include <vector>

#include "lax/mapped_collectives.h"
#include "parax/parax.h"

namespace parax {
namespace {

using namespace collectives_testing;

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

}  // namespace
}  // namespace parax
