// The shard leg of the primitive sweep: each row of prims/prim_table.cpp with the shard leg,
// bound on arrays laid out over the meshes (8), (4,2), (2,4) and (2,2,2) with a set of
// specs per rank, gives the single-device values; and elementwise primitives keep their
// operands' sharding. (iota, which has no operands, is checked sharded through the
// padding masks and in prims/structural_test.cpp.)
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <random>

#include "core/trace.h"
#include "parax/parax.h"
#include "prims/prim_table.h"

namespace parax {
namespace {

using core::Params;
using core::Prim;

using prim_table::Case;

// An operand's shape on this leg: elementwise rows run on 8 x 8 arrays (rank-0 operands
// stay scalars), which every mesh of 8 devices divides; other rows give their shapes.
Shape leg_shape(const Case& c, size_t i) {
  const Shape& s = c.operands[i].shape;
  return core::has_trait(c.prim, core::kElementwise) && !s.empty() ? Shape{8, 8} : s;
}

// The specs tried for an array of `rank` on `mesh`: replicated, each axis on each
// dimension, and all axes on the first dimension.
std::vector<PartitionSpec> specs_for(const Mesh& mesh, size_t rank) {
  std::vector<PartitionSpec> out{P()};
  if (rank == 0) return out;
  const auto& names = mesh.axis_names();
  for (size_t d = 0; d < rank && d < 2; ++d) {
    for (const std::string& a : names) {
      std::vector<SpecEntry> e(d + 1, SpecEntry(None));
      e[d] = SpecEntry(a);
      out.push_back(PartitionSpec::from_entries(e));
    }
  }
  if (names.size() >= 2) {
    out.push_back(P(std::vector<std::string>(names.begin(), names.end())));
    if (rank >= 2) out.push_back(P(names[1], names[0]));
  }
  return out;
}

bool divides(const Mesh& mesh, const PartitionSpec& spec, const Shape& shape) {
  for (size_t d = 0; d < spec.size(); ++d) {
    int64_t n = 1;
    for (const auto& a : spec[d].axes()) n *= mesh.axis_size(a);
    if (d >= shape.size() || shape[d] % n != 0) return false;
  }
  return true;
}

void expect_close(const Array& got, const Array& want, double tol, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  auto g = got.to_vector<double>();
  auto w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    if (std::isnan(w[i])) {
      EXPECT_TRUE(std::isnan(g[i])) << what << " at " << i;
    } else if (tol == 0) {
      ASSERT_EQ(g[i], w[i]) << what << " at " << i;
    } else {
      ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << what << " at " << i;
    }
  }
}

TEST(ShardedSweep, EveryPrimitiveMatchesSingleDeviceOnEveryMesh) {
  std::vector<Mesh> meshes{make_mesh({8}, {"x"}), make_mesh({4, 2}, {"a", "b"}),
                           make_mesh({2, 4}, {"a", "b"}), make_mesh({2, 2, 2}, {"a", "b", "c"})};
  int runs = 0;
  for (const Case& c : prim_table::cases()) {
    if (!c.has(prim_table::kShard)) continue;
    std::vector<Array> host;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      std::mt19937 rng(uint32_t(i + 1));
      host.push_back(prim_table::draw(c.operands[i], leg_shape(c, i), rng));
    }
    std::vector<Array> want = core::bind(c.prim, host, c.params);
    for (const Mesh& mesh : meshes) {
      // The first operand takes each spec; the others are replicated or take the same.
      const Shape shape0 = leg_shape(c, 0);
      for (const PartitionSpec& spec : specs_for(mesh, shape0.size())) {
        if (!divides(mesh, spec, shape0)) continue;
        for (bool same : {true, false}) {
          std::vector<Array> in;
          for (size_t i = 0; i < host.size(); ++i) {
            const Shape s = leg_shape(c, i);
            PartitionSpec si = (i == 0 || (same && s == shape0)) ? spec : P();
            in.push_back(device_put(host[i], NamedSharding(mesh, si)));
          }
          const std::string what = c.name + " on " + mesh.to_string() + " with " +
                                   spec.to_string() + (same ? " (all)" : " (first)");
          std::vector<Array> got;
          try {
            got = core::bind(c.prim, in, c.params);
          } catch (const Error& e) {
            ADD_FAILURE() << what << ": " << e.what();
            continue;
          }
          ASSERT_EQ(got.size(), want.size()) << what;
          for (size_t r = 0; r < got.size(); ++r) {
            expect_close(got[r], want[r], c.tolerance, what);
            EXPECT_TRUE(got[r].is_committed()) << what;
          }
          if (core::has_trait(c.prim, core::kElementwise) && same && shape0 == got[0].shape()) {
            EXPECT_TRUE(got[0].sharding().is_equivalent_to(in[0].sharding(), got[0].ndim()))
                << what << ": got " << got[0].sharding();
          }
          ++runs;
        }
      }
    }
  }
  EXPECT_GT(runs, 500);
}

}  // namespace
}  // namespace parax
