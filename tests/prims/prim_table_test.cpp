// The sweep's table itself: complete against the primitive list (core/primitive.h), and
// its shape leg: every row's abstract_eval gives the types its computed results have.
#include <gtest/gtest.h>

#include <random>
#include <set>

#include "core/rules.h"
#include "core/trace.h"
#include "prims/prim_table.h"
#include "support/x64.h"

namespace parax {
namespace {

using core::Prim;
using prim_table::Case;

// Every primitive has rows, or a reason in prim_table::exempt() (and not both).
TEST(PrimTable, EveryPrimitiveHasRowsOrAReason) {
  std::set<Prim> covered;
  for (const Case& c : prim_table::cases()) covered.insert(c.prim);
  for (int i = 0; i < core::kNumPrims; ++i) {
    const Prim p = Prim(i);
    const bool exempt = prim_table::exempt().count(core::prim_name(p)) == 1;
    EXPECT_TRUE(covered.count(p) == 1 || exempt)
        << core::prim_name(p) << ": add rows to tests/prims/prim_table.cpp, or a reason to "
        << "prim_table::exempt()";
    EXPECT_FALSE(covered.count(p) == 1 && exempt) << core::prim_name(p) << " has rows now";
  }
  for (const auto& [name, reason] : prim_table::exempt()) {
    bool known = false;
    for (int i = 0; i < core::kNumPrims; ++i) known = known || core::prim_name(Prim(i)) == name;
    EXPECT_TRUE(known) << "exempt() names " << name << ", which is not a primitive";
  }
}

// Every primitive with rows has rows of every leg that applies to it, or a reason in
// prim_table::leg_exempt() (and not both). (A values row has a reference: RowsAreWellFormed.)
TEST(PrimTable, EveryLegHasRowsOrAReason) {
  using prim_table::Leg;
  const std::pair<Leg, const char*> legs[] = {{prim_table::kValues, "values"},
                                              {prim_table::kJvp, "jvp"},
                                              {prim_table::kTranspose, "transpose"},
                                              {prim_table::kVjp, "vjp"},
                                              {prim_table::kBatch, "batch"},
                                              {prim_table::kShard, "shard"},
                                              {prim_table::kFuse, "fuse"}};
  for (const auto& [leg, leg_name] : legs) {
    std::set<Prim> with_rows, with_leg;
    for (const Case& c : prim_table::cases()) {
      with_rows.insert(c.prim);
      if (c.has(leg)) with_leg.insert(c.prim);
    }
    const auto found = prim_table::leg_exempt().find(leg);
    for (Prim p : with_rows) {
      if (leg == prim_table::kTranspose && !core::has_trait(p, core::kLinear)) continue;
      if (leg == prim_table::kFuse && !core::has_trait(p, core::kElementwise)) continue;
      const bool exempt =
          found != prim_table::leg_exempt().end() && found->second.count(core::prim_name(p));
      EXPECT_TRUE(with_leg.count(p) == 1 || exempt)
          << core::prim_name(p) << " has no row of the " << leg_name << " leg: add one to "
          << "tests/prims/prim_table.cpp, or a reason to prim_table::leg_exempt()";
      EXPECT_FALSE(with_leg.count(p) == 1 && exempt)
          << core::prim_name(p) << " has rows of the " << leg_name << " leg now";
    }
  }
}

// Each row is well formed: operands have the fields its legs read.
TEST(PrimTable, RowsAreWellFormed) {
  for (const Case& c : prim_table::cases()) {
    SCOPED_TRACE(c.name);
    EXPECT_TRUE(c.has(prim_table::kShape));
    for (const prim_table::Operand& o : c.operands) {
      if (!o.values.empty()) {
        EXPECT_EQ(int64_t(o.values.size()), shape_size(o.shape));
      }
    }
    if (!c.diff.empty()) {
      EXPECT_EQ(c.diff.size(), c.operands.size());
    }
    for (const std::vector<bool>& l : c.linear) EXPECT_EQ(l.size(), c.operands.size());
    if (c.has(prim_table::kFuse)) {
      EXPECT_TRUE(core::has_trait(c.prim, core::kElementwise));
    }
    if (c.has(prim_table::kValues)) {
      const prim_table::Reference& r = c.ref;
      EXPECT_TRUE(r.unary || r.binary || r.integer || r.compare || r.index || r.naive);
    }
  }
}

using PrimTableShapes = testing::WithX64;

// The shape leg: abstract_eval against the results computed eagerly, for every row (in
// its own dtypes, and in float64 where the gradient legs run it).
TEST_F(PrimTableShapes, AbstractEvalGivesTheComputedTypes) {
  std::mt19937 rng(5);
  int checked = 0;
  for (const Case& c : prim_table::cases()) {
    SCOPED_TRACE(c.name);
    const bool grad_legs =
        c.has(prim_table::kJvp) || c.has(prim_table::kVjp) || c.has(prim_table::kTranspose);
    for (bool grad : {false, true}) {
      if (grad && !grad_legs) continue;
      std::vector<Array> xs;
      std::vector<core::Aval> avals;
      for (size_t i = 0; i < c.operands.size(); ++i) {
        xs.push_back(grad ? prim_table::draw_for_grad(c, i, rng)
                          : prim_table::draw(c.operands[i], c.operands[i].shape, rng));
        avals.push_back(core::aval_of(xs.back()));
      }
      const std::vector<core::Aval> want = core::abstract_eval(c.prim, avals, c.params);
      const std::vector<Array> got = core::bind(c.prim, xs, c.params);
      ASSERT_EQ(got.size(), want.size());
      for (size_t o = 0; o < got.size(); ++o) {
        EXPECT_EQ(core::aval_of(got[o]), want[o]) << "result " << o;
      }
      ++checked;
    }
  }
  EXPECT_GT(checked, 500);
}

}  // namespace
}  // namespace parax
