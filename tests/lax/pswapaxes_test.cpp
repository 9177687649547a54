// lax::pswapaxes swaps the mapped axis with a dimension of each instance's block (within
// groups too), under pmap, vmap, shard_map and pmap inside jit, against a host loop.
#include <gtest/gtest.h>

#include <string>

#include "lax/mapped_collectives.h"
#include "parax/parax.h"

namespace parax {
namespace {

using namespace collectives_testing;

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

}  // namespace
}  // namespace parax
