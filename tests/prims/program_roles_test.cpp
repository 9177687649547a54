// The program_roles slot (core/rules.h): every primitive that holds programs says what each
// is for; the roles fit the programs lax's control flow, the transforms and the compiler's
// fusion really make; and roles that lie are caught by the verifier's check.
#include <gtest/gtest.h>

#include <functional>
#include <map>

#include "compiler/fuse.h"
#include "core/program_trace.h"
#include "core/rules.h"
#include "core/verify.h"
#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;
using core::Prim;
using core::ProgramRole;
using core::ProgramRoles;

TEST(ProgramRoles, DeclaredByEveryPrimitiveThatHoldsPrograms) {
  for (int i = 0; i < core::kNumPrims; ++i) {
    const Prim p = Prim(i);
    // custom_lin holds custom_vjp's bwd (a rule) without being a call or control flow.
    const bool holds = core::has_trait(p, core::kHasProgram) ||
                       core::has_trait(p, core::kControlFlow) || p == Prim::custom_lin;
    EXPECT_EQ(core::rules(p).program_roles != nullptr, holds) << core::prim_name(p);
  }
}

void walk(const core::Program& p,
          const std::function<void(const core::Program&, const core::Eqn&)>& f) {
  for (const core::Eqn& e : p.eqns) {
    f(p, e);
    for (const auto& sub : core::sub_programs(e)) walk(*sub, f);
  }
}

// Checks the roles of every equation of `p` (and of the programs it holds) that holds
// programs; returns the roles of the first equation of each primitive.
std::map<Prim, ProgramRoles> checked_roles(const core::Program& p) {
  std::map<Prim, ProgramRoles> first;
  walk(p, [&](const core::Program& q, const core::Eqn& e) {
    if (core::sub_programs(e).empty()) return;
    EXPECT_NE(core::rules(e.prim).program_roles, nullptr) << core::prim_name(e.prim);
    const ProgramRoles roles = core::program_roles(e);
    EXPECT_EQ(core::check_program_roles(q, e, roles), std::nullopt) << core::prim_name(e.prim);
    first.emplace(e.prim, roles);
  });
  EXPECT_EQ(core::verify(p), std::nullopt);
  return first;
}

auto sin_jvp = custom_jvp(
    [](const Array& x) { return jnp::sin(x); },
    [](const std::tuple<Array>& p, const std::tuple<Array>& t) {
      return std::pair{jnp::sin(std::get<0>(p)), jnp::cos(std::get<0>(p)) * std::get<0>(t)};
    });

auto sin_vjp = custom_vjp([](const Array& x) { return jnp::sin(x); },
                          [](const Array& x) {
                            return std::pair{jnp::sin(x), jnp::cos(x)};
                          },
                          [](const Array& cos_x, const Array& g) { return cos_x * g; });

// One program with each primitive that holds programs: x is f32[4], xs f32[5,4].
core::ClosedProgram traced() {
  const std::vector<core::Aval> in = {{Shape{4}, DType::float32, false},
                                      {Shape{5, 4}, DType::float32, false}};
  const Array w = jnp::arange(4.0f);  // a constant the loops capture
  const Mesh mesh = make_mesh({1}, {"a"});
  return core::trace_to_program(in, [&](const std::vector<Array>& a) {
    const Array& x = a[0];
    const Array& xs = a[1];
    Array c = lax::cond(
        jnp::sum(x) > 0, [](const Array& y) { return jnp::sin(y); },
        [](const Array& y) { return jnp::cos(y); }, x);
    Array l = lax::while_loop([](const Array& y) { return jnp::sum(y) < 10.0f; },
                              [w](const Array& y) { return y + w; }, c);
    auto [carry, ys] = lax::scan(
        [w](const std::vector<Array>& cr, const Array& xi) {
          return std::pair{std::vector<Array>{cr[0] * w + xi, cr[1] + xi}, jnp::sin(xi)};
        },
        std::vector<Array>{x, l}, xs);
    Array j = jit([](const Array& y) { return y * 2.0f; })(carry[0]);
    Array r = checkpoint([](const Array& y) { return jnp::sin(y); })(carry[1]);
    Array s = shard_map([](const Array& y) { return jnp::cos(y); }, mesh, P("a"), P("a"))(j);
    return std::vector<Array>{sin_jvp(r), sin_vjp(s), ys};
  });
}

TEST(ProgramRoles, FitTracedPrograms) {
  const core::ClosedProgram closed = traced();
  std::map<Prim, ProgramRoles> roles = checked_roles(*closed.program);
  for (Prim p : {Prim::cond, Prim::while_, Prim::scan, Prim::pjit, Prim::checkpoint,
                 Prim::shard_map, Prim::custom_jvp_call, Prim::custom_vjp_call}) {
    EXPECT_TRUE(roles.count(p)) << core::prim_name(p) << " in\n" << to_string(*closed.program);
  }
  // cond: the index picks one of two branches, which take the operand after it.
  const ProgramRoles& cond = roles[Prim::cond];
  EXPECT_EQ(cond.index, std::optional<size_t>(0));
  ASSERT_EQ(cond.programs.size(), 2u);
  for (const core::SubProgram& b : cond.programs) {
    EXPECT_EQ(b.role, ProgramRole::branch);
    EXPECT_EQ(b.consts_begin, 1u);
    EXPECT_EQ(b.num_consts, 1u);
  }
  EXPECT_EQ(cond.trip_count, std::optional<int64_t>(1));
  // while: the body (holding w) and the predicate (holding nothing) over one carry, run
  // a number of times known only when it runs.
  const ProgramRoles& loop = roles[Prim::while_];
  ASSERT_EQ(loop.programs.size(), 2u);
  EXPECT_EQ(loop.programs[0].role, ProgramRole::body);
  EXPECT_EQ(loop.programs[0].num_consts, 1u);
  EXPECT_EQ(loop.programs[1].role, ProgramRole::predicate);
  EXPECT_EQ(loop.programs[1].num_consts, 0u);
  EXPECT_EQ(loop.carry_begin, 1u);
  EXPECT_EQ(loop.num_carry, 1u);
  EXPECT_EQ(loop.num_xs, 0u);
  EXPECT_EQ(loop.trip_count, std::nullopt);
  // scan: w, then the carry (two), then xs, five steps.
  const ProgramRoles& scan = roles[Prim::scan];
  ASSERT_EQ(scan.programs.size(), 1u);
  EXPECT_EQ(scan.programs[0].role, ProgramRole::body);
  EXPECT_EQ(scan.programs[0].consts_begin, 0u);
  EXPECT_EQ(scan.programs[0].num_consts, 1u);
  EXPECT_EQ(scan.carry_begin, 1u);
  EXPECT_EQ(scan.num_carry, 2u);
  EXPECT_EQ(scan.xs_begin, 3u);
  EXPECT_EQ(scan.num_xs, 1u);
  EXPECT_EQ(scan.trip_count, std::optional<int64_t>(5));
  EXPECT_FALSE(scan.reverse);
  // Calls run their program on all their operands; a custom derivative's rules only
  // under autodiff.
  for (Prim p : {Prim::pjit, Prim::checkpoint}) {
    ASSERT_EQ(roles[p].programs.size(), 1u);
    EXPECT_EQ(roles[p].programs[0].role, ProgramRole::call);
  }
  EXPECT_EQ(roles[Prim::shard_map].programs.at(0).role, ProgramRole::manual);
  const ProgramRoles& jvp_call = roles[Prim::custom_jvp_call];
  ASSERT_EQ(jvp_call.programs.size(), 2u);
  EXPECT_EQ(jvp_call.programs[0].role, ProgramRole::call);
  EXPECT_EQ(jvp_call.programs[1].role, ProgramRole::rule);
  const ProgramRoles& vjp_call = roles[Prim::custom_vjp_call];
  ASSERT_EQ(vjp_call.programs.size(), 3u);
  EXPECT_EQ(vjp_call.programs[2].role, ProgramRole::call);
}

TEST(ProgramRoles, FitAFusion) {
  const std::vector<core::Aval> in = {{Shape{8}, DType::float32, false}};
  const core::ClosedProgram closed = core::trace_to_program(
      in, [](const std::vector<Array>& a) { return std::vector<Array>{jnp::cos(jnp::sin(a[0]))}; });
  const core::Program fused = compiler::fuse_elementwise(*closed.program);
  std::map<Prim, ProgramRoles> roles = checked_roles(fused);
  ASSERT_TRUE(roles.count(Prim::fusion)) << to_string(fused);
  ASSERT_EQ(roles[Prim::fusion].programs.size(), 1u);
  EXPECT_EQ(roles[Prim::fusion].programs[0].role, ProgramRole::tiles);
}

// The first equation of `p` that `prim` makes.
const core::Eqn& first_eqn(const core::Program& p, Prim prim) {
  for (const core::Eqn& e : p.eqns) {
    if (e.prim == prim) return e;
  }
  throw ValueError("no " + std::string(core::prim_name(prim)));
}

TEST(ProgramRoles, LiesAreCaught) {
  const core::ClosedProgram closed = traced();
  const core::Program& p = *closed.program;
  const core::Eqn& scan = first_eqn(p, Prim::scan);
  const ProgramRoles truth = core::program_roles(scan);
  ASSERT_EQ(core::check_program_roles(p, scan, truth), std::nullopt);

  ProgramRoles lie = truth;  // the const taken for a carry: it does not come back
  lie.programs[0].num_consts = 0;
  lie.carry_begin = 0;
  lie.num_carry = 3;
  EXPECT_EQ(core::check_program_roles(p, scan, lie),
            "scan's program roles: the carry (f32[4], f32[4], f32[4]) does not come back as the "
            "results (f32[4], f32[4], f32[5,4])");
  lie = truth;  // no trip count: the ys cannot stack
  lie.trip_count = std::nullopt;
  EXPECT_EQ(core::check_program_roles(p, scan, lie),
            "scan's program roles: the body (program 0): result f32[5,4] is no ys stacked along "
            "the trip count");
  lie = truth;  // an xs read whole
  lie.programs[0].num_consts = 2;
  lie.num_xs = 0;
  lie.xs_begin = 0;
  lie.carry_begin = 2;
  lie.programs[0].consts_begin = 0;
  EXPECT_NE(core::check_program_roles(p, scan, lie), std::nullopt);
  lie = truth;  // the program left out
  lie.programs.clear();
  EXPECT_EQ(core::check_program_roles(p, scan, lie),
            "scan's program roles: they name 0 programs; the equation holds 1");

  const core::Eqn& loop = first_eqn(p, Prim::while_);
  ProgramRoles swapped = core::program_roles(loop);  // the predicate taken for the body
  std::swap(swapped.programs[0].role, swapped.programs[1].role);
  EXPECT_NE(core::check_program_roles(p, loop, swapped), std::nullopt);
  ProgramRoles wrong_order = core::program_roles(loop);
  std::swap(wrong_order.programs[0], wrong_order.programs[1]);
  EXPECT_EQ(core::check_program_roles(p, loop, wrong_order),
            "while's program roles: program 0 is not the one held in that place");

  const core::Eqn& cond = first_eqn(p, Prim::cond);
  ProgramRoles no_index = core::program_roles(cond);  // the index read by the branches
  no_index.index.reset();
  no_index.programs[0].consts_begin = 0;
  EXPECT_NE(core::check_program_roles(p, cond, no_index), std::nullopt);
  ProgramRoles beyond = core::program_roles(cond);
  beyond.programs[1].num_consts = 2;
  EXPECT_EQ(core::check_program_roles(p, cond, beyond),
            "cond's program roles: the branch (program 1)'s consts [1, 3) is beyond the 2 "
            "operands");
}

}  // namespace
}  // namespace parax
