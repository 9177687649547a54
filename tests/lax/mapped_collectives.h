// What the tests of lax's collectives under a mapped axis share: inputs of 8 instances with
// distinct values exact in float32, running a per-instance function under pmap, vmap (with an
// axis name), shard_map or pmap inside jit, and comparing each instance's values with a host
// loop's.
#pragma once

#include <gtest/gtest.h>

#include <cmath>
#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "parax/parax.h"

namespace parax::collectives_testing {

namespace jnp = numpy;
using lax::AxisIndexGroups;

constexpr int64_t kN = 8;
using Fn = std::function<Array(const Array&)>;

// Per instance, its values (row-major) in double.
using Rows = std::vector<std::vector<double>>;

// Distinct values, multiples of 1/8, so sums of a few are exact in float32.
inline Array input(const Shape& per_instance, int64_t seed = 0) {
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

inline Rows rows(const Array& a) {
  std::vector<double> v = a.to_vector<double>();
  const size_t per = v.size() / size_t(a.shape()[0]);
  Rows r;
  for (size_t i = 0; i < size_t(a.shape()[0]); ++i) {
    r.emplace_back(v.begin() + long(i * per), v.begin() + long((i + 1) * per));
  }
  return r;
}

enum class Map { pmap, vmap, shard_map, pmap_in_jit };
inline const char* name(Map m) {
  return m == Map::pmap        ? "pmap"
         : m == Map::vmap      ? "vmap"
         : m == Map::shard_map ? "shard_map"
                               : "pmap in jit";
}
constexpr Map kMaps[] = {Map::pmap, Map::vmap, Map::shard_map, Map::pmap_in_jit};

// Runs f per instance of x's leading axis "i" (size 8).
inline Array run(Map m, const Fn& f, const Array& x) {
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

inline void expect_rows(const Array& got, const Rows& want, const Shape& instance_shape,
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

}  // namespace parax::collectives_testing
