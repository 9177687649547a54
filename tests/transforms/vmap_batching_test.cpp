// The batching leg of the primitive sweep: each row of prims/prim_table.cpp with the batch
// leg makes a one-equation program, vmapped with the primitive's batching rule and
// compared with the loop over batch elements (core::batch_by_loop), for batch dimensions
// at the front, at the end and in the middle, with some operands unbatched, and batch
// sizes 3, 1 and 0. Results agree exactly, except where the row gives a tolerance
// (floating sums and products: a reduction tree may group a batch differently).
// A second pass traces each vmapped program and checks that the rule, not the loop, made
// it. iota has no operands, so nothing of it is ever batched.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <random>
#include <set>
#include <string>
#include <vector>

#include "core/batching.h"
#include "core/program_trace.h"
#include "core/trace.h"
#include "parax/numpy.h"
#include "parax/sharding.h"
#include "prims/prim_table.h"

namespace parax {
namespace {

using core::Aval;
using core::BatchAxis;
using core::Batched;
using core::kNotMapped;
using core::Params;
using core::Prim;
using Ints = std::vector<int64_t>;

using prim_table::Case;
using prim_table::Operand;

Operand f32(Shape s) { return {std::move(s), DType::float32}; }

Params dot_params(Ints lc, Ints rc) {
  return {{"lhs_contracting_dimensions", lc},
          {"rhs_contracting_dimensions", rc},
          {"lhs_batch_dimensions", Ints{}},
          {"rhs_batch_dimensions", Ints{}}};
}

// The rows of the batching leg.
std::vector<Case> all_cases() {
  std::vector<Case> cases;
  for (const Case& c : prim_table::cases()) {
    if (c.has(prim_table::kBatch)) cases.push_back(c);
  }
  return cases;
}

// ---------------------------------------------------------------------------------------
// Placements of the batch dimension: one batch dimension per operand.

enum class Where { front, last, middle, none };

int place(Where w, size_t rank) {
  switch (w) {
    case Where::front:
      return 0;
    case Where::last:
      return int(rank);
    case Where::middle:
      return int(rank + 1) / 2;
    case Where::none:
      return kNotMapped;
  }
  return kNotMapped;
}

// All operands at the front, at the end or in the middle; each operand alone; and
// alternating front and end.
std::vector<std::vector<int>> placements(const Case& c) {
  const size_t n = c.operands.size();
  auto all = [&](auto where) {
    std::vector<int> dims;
    for (size_t i = 0; i < n; ++i) dims.push_back(place(where(i), c.operands[i].shape.size()));
    return dims;
  };
  std::set<std::vector<int>> out;
  out.insert(all([](size_t) { return Where::front; }));
  out.insert(all([](size_t) { return Where::last; }));
  out.insert(all([](size_t) { return Where::middle; }));
  out.insert(all([](size_t i) { return i % 2 ? Where::last : Where::front; }));
  for (size_t k = 0; n > 1 && k < n; ++k) {
    out.insert(all([&](size_t i) { return i == k ? Where::middle : Where::none; }));
    out.insert(all([&](size_t i) { return i == k ? Where::none : Where::last; }));
  }
  return {out.begin(), out.end()};
}

std::string dims_str(const std::vector<int>& dims) {
  std::string s;
  for (int d : dims) s += (s.empty() ? "" : ",") + (d == kNotMapped ? "-" : std::to_string(d));
  return "dims (" + s + ")";
}

// ---------------------------------------------------------------------------------------
// Running a row.

std::mt19937& rng() {
  static std::mt19937 gen(20240611);
  return gen;
}

Array draw(const Operand& o, const Shape& shape) { return prim_table::draw(o, shape, rng()); }

Shape with_batch(Shape s, int dim, int64_t size) {
  if (dim != kNotMapped) s.insert(s.begin() + dim, size);
  return s;
}

std::shared_ptr<const core::Program> one_equation(const Case& c) {
  std::vector<Aval> avals;
  for (const Operand& o : c.operands) avals.push_back(Aval{o.shape, o.dtype, false});
  core::ClosedProgram closed = core::trace_to_program(
      avals, [&](const std::vector<Array>& xs) { return core::bind(c.prim, xs, c.params); });
  EXPECT_TRUE(closed.consts.empty());
  return closed.program;
}

// Sums and products round differently when a batch changes the shape of their reduction
// tree (or, for dot_general, of the GEMM's blocking): their rows give a tolerance;
// everything else is exact, the vector loops of elementwise math included.
void expect_same(const Array& got, const Array& want, double tolerance, const std::string& what) {
  ASSERT_EQ(got.shape(), want.shape()) << what;
  ASSERT_EQ(got.dtype(), want.dtype()) << what;
  if (is_floating(want.dtype())) {
    const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
    const double tol = tolerance;
    for (size_t i = 0; i < g.size(); ++i) {
      if (std::isnan(g[i]) && std::isnan(w[i])) continue;
      if (std::abs(g[i] - w[i]) <= tol * (1 + std::abs(w[i]))) continue;
      ADD_FAILURE() << what << ": element " << i << " is " << g[i] << ", the loop's " << w[i];
      return;  // the first difference is enough
    }
  } else {
    EXPECT_EQ(got.to_vector<int64_t>(), want.to_vector<int64_t>()) << what;
  }
}

// Compares the rule with the loop for one placement and batch size.
void check(const Case& c, const core::Program& program, const std::vector<int>& dims,
           int64_t size) {
  const std::string what = c.name + ", " + dims_str(dims) + ", batch of " + std::to_string(size);
  std::vector<Array> in;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    in.push_back(draw(c.operands[i], with_batch(c.operands[i].shape, dims[i], size)));
  }
  const BatchAxis axis{size, ""};
  Batched got;
  Batched want;
  try {
    got = core::vmap_program(program, in, dims, axis);
    want = core::batch_by_loop(c.prim, in, dims, c.params, axis);
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  ASSERT_EQ(got.outs.size(), want.outs.size()) << what;
  for (size_t k = 0; k < got.outs.size(); ++k) {
    const Array front = core::batch_first(got.outs[k], got.dims[k], size);
    expect_same(front, want.outs[k], c.tolerance, what + ", result " + std::to_string(k));
  }
}

TEST(VmapBatching, EveryRuleAgreesWithTheLoop) {
  int checked = 0;
  for (const Case& c : all_cases()) {
    const auto program = one_equation(c);
    for (const std::vector<int>& dims : placements(c)) {
      for (int64_t size : {3, 1, 0}) {
        check(c, *program, dims, size);
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 500);
}

// vmap of vmap: the outer vmap batches the program the inner one made (other primitives,
// batch dimensions wherever the inner rules left them), checked against evaluating that
// program on each outer slice.
void check_nested(const Case& c, const std::vector<int>& inner_dims,
                  const std::vector<int>& outer_dims) {
  const int64_t inner = 2;
  const int64_t outer = 3;
  const std::string what =
      c.name + ", inner " + dims_str(inner_dims) + ", outer " + dims_str(outer_dims);
  const auto program = one_equation(c);
  std::vector<Aval> avals;
  std::vector<Array> in;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    const Operand& o = c.operands[i];
    const Shape shape = with_batch(o.shape, inner_dims[i], inner);
    avals.push_back(Aval{shape, o.dtype, false});
    in.push_back(draw(o, with_batch(shape, outer_dims[i], outer)));
  }
  const BatchAxis inner_axis{inner, ""};
  const core::ClosedProgram batched =
      core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
        Batched r = core::vmap_program(*program, xs, inner_dims, inner_axis);
        for (size_t k = 0; k < r.outs.size(); ++k) {
          r.outs[k] = core::batch_first(r.outs[k], r.dims[k], inner);
        }
        return r.outs;
      });
  std::vector<Array> args = batched.consts;
  std::vector<int> dims(batched.consts.size(), kNotMapped);
  args.insert(args.end(), in.begin(), in.end());
  dims.insert(dims.end(), outer_dims.begin(), outer_dims.end());
  Batched got;
  std::vector<std::vector<Array>> slices;
  try {
    got = core::vmap_program(*batched.program, args, dims, BatchAxis{outer, ""});
    for (int64_t b = 0; b < outer; ++b) {
      std::vector<Array> element = args;
      for (size_t i = 0; i < args.size(); ++i) {
        if (dims[i] == kNotMapped) continue;
        Array front = core::batch_first(args[i], dims[i], outer);
        element[i] = front[b];
      }
      // With nothing batched, vmap_program just evaluates the program.
      const std::vector<int> none(args.size(), kNotMapped);
      slices.push_back(core::vmap_program(*batched.program, element, none, inner_axis).outs);
    }
  } catch (const std::exception& e) {
    ADD_FAILURE() << what << ": " << e.what();
    return;
  }
  for (size_t k = 0; k < got.outs.size(); ++k) {
    std::vector<Array> parts;
    for (const auto& outs : slices) parts.push_back(outs[k]);
    expect_same(core::batch_first(got.outs[k], got.dims[k], outer), numpy::stack(parts),
                c.tolerance, what + ", result " + std::to_string(k));
  }
}

TEST(VmapBatching, NestedVmapsAgreeWithEvaluatingEachSlice) {
  for (const Case& c : all_cases()) {
    std::vector<int> middle, last, first_only;
    for (size_t i = 0; i < c.operands.size(); ++i) {
      const size_t rank = c.operands[i].shape.size();
      middle.push_back(place(Where::middle, rank));
      last.push_back(place(Where::last, rank + 1));
      first_only.push_back(i == 0 ? 0 : kNotMapped);
    }
    check_nested(c, middle, last);
    check_nested(c, middle, first_only);
  }
}

// ---------------------------------------------------------------------------------------
// The rule, not the loop, batched each row: traced, the vmapped program applies the
// primitive at most once and concatenates nothing (the loop stacks its slices with a
// concatenate).

int count(const core::Program& p, Prim prim) {
  return int(std::count_if(p.eqns.begin(), p.eqns.end(),
                           [&](const core::Eqn& e) { return e.prim == prim; }));
}

core::ClosedProgram trace_vmapped(const core::Program& program, const std::vector<Aval>& avals,
                                  const std::vector<int>& dims, int64_t size) {
  return core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    return core::vmap_program(program, xs, dims, BatchAxis{size, ""}).outs;
  });
}

TEST(VmapBatching, RulesAreUsedInsteadOfTheLoop) {
  const int64_t size = 4;
  for (const Case& c : all_cases()) {
    const auto program = one_equation(c);
    for (const std::vector<int>& dims : placements(c)) {
      std::vector<Aval> avals;
      for (size_t i = 0; i < c.operands.size(); ++i) {
        const Operand& o = c.operands[i];
        avals.push_back(Aval{with_batch(o.shape, dims[i], size), o.dtype, false});
      }
      const core::ClosedProgram traced = trace_vmapped(*program, avals, dims, size);
      const core::Program& p = *traced.program;
      const std::string what = c.name + ", " + dims_str(dims) + ":\n" + core::to_string(p);
      EXPECT_EQ(core::verify(p), std::nullopt) << what;
      // Two rules apply their primitive twice: pad with batched padding values (the
      // operand and a mask of where it lands), dynamic_update_slice with batched starts
      // (the update and its mask, placed by the unbatched starts).
      const bool twice = c.prim == Prim::pad || c.prim == Prim::dynamic_update_slice;
      EXPECT_LE(count(p, c.prim), twice ? 2 : 1) << what;
      EXPECT_EQ(count(p, Prim::concatenate), c.prim == Prim::concatenate ? 1 : 0) << what;
    }
  }
}

// ---------------------------------------------------------------------------------------
// Where results land: rules leave batch dimensions where they fall instead of moving them.

core::Program traced_program(const Case& c, const std::vector<int>& dims, int64_t size,
                             std::vector<int>* out_dims) {
  const auto program = one_equation(c);
  std::vector<Aval> avals;
  for (size_t i = 0; i < c.operands.size(); ++i) {
    avals.push_back(
        Aval{with_batch(c.operands[i].shape, dims[i], size), c.operands[i].dtype, false});
  }
  core::ClosedProgram traced = core::trace_to_program(avals, [&](const std::vector<Array>& xs) {
    Batched r = core::vmap_program(*program, xs, dims, BatchAxis{size, ""});
    *out_dims = r.dims;
    return r.outs;
  });
  return *traced.program;
}

TEST(VmapBatching, ElementwiseKeepsAgreeingBatchDimensions) {
  std::vector<int> out;
  const Case add{"add", Prim::add, {f32({3, 4}), f32({3, 4})}, {}};
  core::Program p = traced_program(add, {1, 1}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{1});
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  // A scalar that is not batched still broadcasts in the primitive itself.
  const Case scaled{"mul", Prim::mul, {f32({3, 4}), f32({})}, {}};
  p = traced_program(scaled, {2, kNotMapped}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{2});
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  // Disagreeing batch dimensions meet at the first operand's.
  p = traced_program(add, {0, 2}, 5, &out);
  EXPECT_EQ(out, std::vector<int>{0});
  EXPECT_EQ(count(p, Prim::transpose), 1) << core::to_string(p);
}

TEST(VmapBatching, DotGeneralNeedsNoTranspose) {
  const Case matmul{"dot", Prim::dot_general, {f32({3, 4}), f32({4, 5})}, dot_params({1}, {0})};
  std::vector<int> out;
  core::Program p = traced_program(matmul, {2, 1}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{0});  // a dot batch dimension
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  p = traced_program(matmul, {kNotMapped, 0}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{1});  // a free dimension of the right operand
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
  p = traced_program(matmul, {1, kNotMapped}, 6, &out);
  EXPECT_EQ(out, std::vector<int>{1});  // after the left operand's free dimension
  EXPECT_EQ(p.eqns.size(), 1u) << core::to_string(p);
}

TEST(VmapBatching, StructuralRulesNeedNoTranspose) {
  const Case cases[] = {
      {"broadcast_in_dim",
       Prim::broadcast_in_dim,
       {f32({3, 4})},
       {{"shape", Ints{3, 2, 4}}, {"broadcast_dimensions", Ints{0, 2}}}},
      {"expand_dims", Prim::expand_dims, {f32({2, 3})}, {{"dimensions", Ints{0, 2}}}},
      {"squeeze", Prim::squeeze, {f32({2, 1, 3})}, {{"dimensions", Ints{1}}}},
      {"reduce_max", Prim::reduce_max, {f32({2, 3, 4})}, {{"axes", Ints{0, 2}}}},
      {"cumsum", Prim::cumsum, {f32({3, 4})}, {{"axis", int64_t{1}}, {"reverse", false}}}};
  for (const Case& c : cases) {
    for (int d = 0; d <= int(c.operands[0].shape.size()); ++d) {
      std::vector<int> out;
      core::Program p = traced_program(c, {d}, 5, &out);
      EXPECT_EQ(p.eqns.size(), 1u) << c.name << " at " << d << ":\n" << core::to_string(p);
    }
  }
}

TEST(VmapBatching, ShardingConstraintLeavesTheBatchUnsharded) {
  const Mesh mesh = make_mesh({1}, {"a"});
  const Case c{"sharding_constraint",
               Prim::sharding_constraint,
               {f32({2, 3})},
               {{"sharding", std::make_shared<const Sharding>(NamedSharding(mesh, P(None, "a")))}}};
  std::vector<int> out;
  core::Program p = traced_program(c, {1}, 4, &out);
  ASSERT_EQ(p.eqns.size(), 1u);
  const auto& s = p.eqns[0].params.get<std::shared_ptr<const Sharding>>("sharding");
  ASSERT_TRUE(s->as_named().has_value());
  EXPECT_EQ(s->as_named()->spec(), P(None, None, "a"));
  EXPECT_EQ(out, std::vector<int>{1});
}

}  // namespace
}  // namespace parax
