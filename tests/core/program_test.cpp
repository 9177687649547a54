// The IR prints as JAX's jaxprs do (expected texts from JAX 0.4.35's make_jaxpr) and the
// verifier catches broken SSA.
#include <gtest/gtest.h>

#include "core/program.h"
#include "core/rules.h"

namespace parax::core {
namespace {

Aval f32(Shape s) { return Aval{std::move(s), DType::float32, false}; }

TEST(Program, PrintsOneLineWhenShort) {
  Program p;
  int a = p.new_var(f32({8}));
  int b = p.new_var(f32({8}));
  p.invars = {a};
  p.eqns.push_back(Eqn{Prim::sin, {Atom::of(a)}, {b}, {}});
  p.outvars = {Atom::of(b)};
  EXPECT_EQ(to_string(p), "{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }");
  EXPECT_FALSE(verify(p).has_value());
}

TEST(Program, PrintsParamsSortedAndOneEquationALine) {
  Program p;
  int a = p.new_var(f32({8, 4}));
  int b = p.new_var(f32({4}));
  int c = p.new_var(f32({1, 4}));
  int d = p.new_var(f32({8, 4}));
  int e = p.new_var(f32({4}));
  p.invars = {a, b};
  p.eqns.push_back(Eqn{Prim::broadcast_in_dim,
                       {Atom::of(b)},
                       {c},
                       Params{{"shape", std::vector<int64_t>{1, 4}},
                              {"broadcast_dimensions", std::vector<int64_t>{1}}}});
  p.eqns.push_back(Eqn{Prim::add, {Atom::of(a), Atom::of(c)}, {d}, {}});
  p.eqns.push_back(
      Eqn{Prim::reduce_sum, {Atom::of(d)}, {e}, Params{{"axes", std::vector<int64_t>{0}}}});
  p.outvars = {Atom::of(e)};
  EXPECT_EQ(to_string(p),
            "{ lambda ; a:f32[8,4] b:f32[4]. let\n"
            "    c:f32[1,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(1, 4)] b\n"
            "    d:f32[8,4] = add a c\n"
            "    e:f32[4] = reduce_sum[axes=(0,)] d\n"
            "  in (e,) }");
}

TEST(Program, LiteralsAndConstvars) {
  Program p;
  int a = p.new_var(f32({8, 4}));
  int b = p.new_var(f32({8, 4}));
  p.invars = {a};
  p.eqns.push_back(Eqn{Prim::add, {Atom::of(a), Atom::of(Literal{f32({}), 2.0})}, {b}, {}});
  p.outvars = {Atom::of(b)};
  EXPECT_EQ(to_string(p), "{ lambda ; a:f32[8,4]. let b:f32[8,4] = add a 2.0 in (b,) }");
  Program q;
  int c = q.new_var(f32({8}));
  int x = q.new_var(f32({8}));
  int y = q.new_var(f32({8}));
  q.constvars = {c};
  q.invars = {x};
  q.eqns.push_back(Eqn{Prim::mul, {Atom::of(x), Atom::of(c)}, {y}, {}});
  q.outvars = {Atom::of(y)};
  EXPECT_EQ(to_string(q), "{ lambda a:f32[8]; b:f32[8]. let c:f32[8] = mul b a in (c,) }");
}

TEST(Program, VariableNamesFollowJax) {
  EXPECT_EQ(var_name(0), "a");
  EXPECT_EQ(var_name(25), "z");
  EXPECT_EQ(var_name(26), "ba");
  EXPECT_EQ(var_name(27), "bb");
}

TEST(Program, VerifierCatchesBrokenSsa) {
  Program p;
  int a = p.new_var(f32({8}));
  int b = p.new_var(f32({8}));
  p.invars = {a};
  p.eqns.push_back(Eqn{Prim::sin, {Atom::of(b)}, {b}, {}});
  p.outvars = {Atom::of(b)};
  auto err = verify(p);
  ASSERT_TRUE(err.has_value());
  EXPECT_EQ(*err, "equation 0 (b:f32[8] = sin b): variable b is used before it is defined");
  p.eqns[0].inputs = {Atom::of(a)};
  p.eqns.push_back(Eqn{Prim::cos, {Atom::of(a)}, {b}, {}});
  EXPECT_EQ(verify(p).value_or(""), "equation 1 (b:f32[8] = cos a): variable b is defined twice");
}

TEST(Primitives, TraitsAreData) {
  EXPECT_EQ(prim_name(Prim::and_), "and");
  EXPECT_TRUE(has_trait(Prim::add, kElementwise));
  EXPECT_TRUE(has_trait(Prim::add, kLinear));
  EXPECT_FALSE(has_trait(Prim::sin, kLinear));
  EXPECT_TRUE(has_trait(Prim::broadcast_in_dim, kBroadcast));
  EXPECT_TRUE(has_trait(Prim::pjit, kHasProgram));
  EXPECT_TRUE(has_trait(Prim::all_gather, kCollective));
  EXPECT_EQ(prim_name(Prim::all_gather), "all-gather");
  EXPECT_TRUE(has_trait(Prim::psum, kNamedAxes));
  EXPECT_EQ(prim_name(Prim::pall_gather), "all_gather");
  EXPECT_EQ(prim_name(Prim(kNumPrims - 1)), "manual-exit");
}

// kLinear is what the list says of a primitive's transpose rule: one has it exactly when
// the other does (linearize + transpose needs it of every primitive jvp binds on tangents).
TEST(Primitives, LinearOnesHaveATransposeRule) {
  for (int i = 0; i < kNumPrims; ++i) {
    const Prim p = Prim(i);
    EXPECT_EQ(has_trait(p, kLinear), rules(p).transpose != nullptr)
        << prim_name(p)
        << (has_trait(p, kLinear) ? " is kLinear without a transpose rule"
                                  : " has a transpose rule but is not kLinear");
  }
}

}  // namespace
}  // namespace parax::core
