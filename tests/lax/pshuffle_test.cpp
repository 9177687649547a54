// lax::pshuffle: instance i receives instance perm[i]'s value under pmap, vmap, shard_map and
// pmap inside jit; its gradient runs the permutation backwards; a shorter permutation leaves
// the rest zero.
#include <gtest/gtest.h>

#include <cstdint>
#include <string>
#include <vector>

#include "lax/mapped_collectives.h"
#include "parax/parax.h"

namespace parax {
namespace {

using namespace collectives_testing;

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
