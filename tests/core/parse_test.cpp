// The parser reads back what the printer writes: parse(text) prints as text, literals get
// their equation's types, and malformed text fails with its line and column. (Sharding
// params need devices; they are tested with the partitioner in tests/compiler/.)
#include <gtest/gtest.h>

#include "core/parse.h"
#include "parax/errors.h"

namespace parax::core {
namespace {

void expect_round_trip(const std::string& text) {
  SCOPED_TRACE(text);
  const Program p = parse_program(text);
  EXPECT_FALSE(verify(p).has_value());
  EXPECT_EQ(to_string(p), text);
}

TEST(Parse, RoundTripsOneLinePrograms) {
  expect_round_trip("{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }");
  expect_round_trip("{ lambda ; . let in () }");
  expect_round_trip("{ lambda ; a:bool[] b:u8[2,3]. let in (b, a) }");
  expect_round_trip("{ lambda a:f32[8]; b:f32[8]. let c:f32[8] = mul b a in (c,) }");
}

TEST(Parse, RoundTripsMultiLineProgramsWithParams) {
  expect_round_trip(
      "{ lambda ; a:f32[8,4] b:f32[4]. let\n"
      "    c:f32[8,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(8, 4)] b\n"
      "    d:f32[8,4] = add a c\n"
      "    e:f32[4] = reduce_sum[axes=(0,)] d\n"
      "  in (e,) }");
  expect_round_trip(
      "{ lambda ; a:f32[8,4] b:f32[4,2]. let\n"
      "    c:f32[8,2] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
      "preferred_element_type=float32 rhs_batch_dimensions=() "
      "rhs_contracting_dimensions=(0,)] a b\n"
      "  in (c,) }");
}

TEST(Parse, RoundTripsConstvars) {
  const std::string text =
      "{ lambda a:f32[8]; b:f32[8,8] c:i32[]. let\n"
      "    d:f32[8,8] = add b 1.0\n"
      "    e:f32[8,8] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(8, 8)] a\n"
      "    f:f32[8,8] = mul d e\n"
      "    g:i32[] = mul c 2\n"
      "  in (f, g) }";
  expect_round_trip(text);
  const Program p = parse_program(text);
  EXPECT_EQ(p.constvars, std::vector<int>{0});
  EXPECT_EQ(p.invars, (std::vector<int>{1, 2}));
}

TEST(Parse, NamesAreAnyIdentifiersNumberedInOrderOfDefinition) {
  const Program p = parse_program(
      "{ lambda w:f32[3]; x:f32[3] in:i32[]. let\n"
      "    y1:f32[3] = mul x w\n"
      "  in (y1, in) }");
  EXPECT_EQ(p.invars, (std::vector<int>{1, 2}));
  EXPECT_EQ(to_string(p),
            "{ lambda a:f32[3]; b:f32[3] c:i32[]. let d:f32[3] = mul b a in (d, c) }");
}

TEST(Parse, RoundTripsLiteralsAndMultipleResults) {
  expect_round_trip(
      "{ lambda ; a:f32[4] b:i32[4]. let\n"
      "    c:f32[4] d:i32[4] = sort[dimension=0 is_stable=True num_keys=1] a b\n"
      "    e:f32[4] = max c -inf\n"
      "    f:f32[4] = mul e 1e-05\n"
      "    g:bool[4] = lt d -3\n"
      "    h:f32[4] = select_n g f nan\n"
      "    i:bool[4] = and g True\n"
      "  in (h, i, 2.5) }");
}

TEST(Parse, RoundTripsNestedPrograms) {
  expect_round_trip(
      "{ lambda ; a:f32[8]. let\n"
      "    b:f32[8] = pjit[jaxpr={ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) } "
      "name=f] a\n"
      "  in (b,) }");
}

TEST(Parse, LiteralsTakeTheTypeOfAnOperandOfTheirKind) {
  const Program p = parse_program(
      "{ lambda ; a:f16[4] b:u8[4]. let\n"
      "    c:f16[4] = add 1.0 a\n"
      "    d:u8[4] = mul b 2\n"
      "    e:bool[4] = gt a 0.5\n"
      "    f:f16[2] = dynamic_slice[slice_sizes=(2,)] a 1\n"
      "  in (c, d, e, f, 3) }");
  auto lit = [&](size_t e, size_t i) { return p.eqns[e].inputs[i].literal->aval; };
  EXPECT_EQ(lit(0, 0), (Aval{{}, DType::float16, false}));
  EXPECT_EQ(lit(1, 1), (Aval{{}, DType::uint8, false}));
  EXPECT_EQ(lit(2, 1), (Aval{{}, DType::float16, false}));
  // No integer operand or result: the default, a weak int32 (as a Python int).
  EXPECT_EQ(lit(3, 1), (Aval{{}, DType::int32, true}));
  EXPECT_EQ(p.outvars[4].literal->aval, (Aval{{}, DType::int32, true}));
  EXPECT_EQ(p.outvars[4].literal->value, 3.0);
}

TEST(Parse, ParamValuesKeepTheirTypes) {
  const Program p = parse_program(
      "{ lambda ; a:f32[4]. let\n"
      "    b:f32[4] = copy[d=float32 f=1.5 i=-2 n=jit t=False u=(0, 1) v=()] a\n"
      "  in (b,) }");
  const Params& params = p.eqns[0].params;
  EXPECT_EQ(params.get<DType>("d"), DType::float32);
  EXPECT_EQ(params.get<double>("f"), 1.5);
  EXPECT_EQ(params.get<int64_t>("i"), -2);
  EXPECT_EQ(params.get<std::string>("n"), "jit");
  EXPECT_EQ(params.get<bool>("t"), false);
  EXPECT_EQ(params.get<std::vector<int64_t>>("u"), (std::vector<int64_t>{0, 1}));
  EXPECT_TRUE(params.get<std::vector<int64_t>>("v").empty());
}

void expect_error(const std::string& text, const std::string& message) {
  SCOPED_TRACE(text);
  try {
    parse_program(text);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), message);
  }
}

TEST(Parse, ErrorsNameTheLineColumnAndWhatWasExpected) {
  expect_error("{ lambda ; a:f32[8]. let b:f32[8] = frob a in (b,) }",
               "[parse_program] line 1, column 37: expected a primitive name; got 'frob'");
  expect_error("{ lambda ; a:f32[8]. let\n    b:f32[8] = sin c\n  in (b,) }",
               "[parse_program] line 2, column 20: variable 'c' is used before it is defined");
  expect_error("{ lambda ; a:f32[8]. let\n    a:f32[8] = sin a\n  in (a,) }",
               "[parse_program] line 2, column 5: variable 'a' is defined twice");
  expect_error("{ lambda ; a:f32[8]. let b:f32[8] = sin b in (b,) }",
               "[parse_program] line 1, column 41: variable 'b' is used before it is defined");
  expect_error("{ lambda ; a:float[8]. let in (a,) }",
               "[parse_program] line 1, column 14: expected a dtype such as f32, i32, bool; "
               "got 'float'");
  expect_error("{ lambda ; a:f32[8]. let in (a,) } x",
               "[parse_program] line 1, column 36: expected the end of the text after the "
               "program's '}'; got 'x'");
  expect_error("{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b, }",
               "[parse_program] line 1, column 50: expected an output (a variable or a "
               "literal); got '}'");
  expect_error("{ lambda ; 1a:f32[8]. let in (1a,) }",
               "[parse_program] line 1, column 12: expected a variable name such as a or ba; "
               "got '1a'");
  expect_error(
      "{ lambda ; a:f32[8]. let b:f32[8] = sharding_constraint[sharding=P('a')] a "
      "in (b,) }",
      "[parse_program] line 1, column 66: the sharding P('a',) needs a mesh; pass one "
      "to parse_program or write NamedSharding(...)");
  expect_error("{ lambda ; a:f32[8]. let b:f32[8] = copy[x=1 x=2] a in (b,) }",
               "[parse_program] line 1, column 46: param 'x' appears twice");
  expect_error("{ lambda ; a:f32[8]",
               "[parse_program] line 1, column 20: expected a typed variable such as a:f32[8] "
               "or '.'; got the end of the text");
}

TEST(Parse, PartitionSpecs) {
  EXPECT_EQ(parse_partition_spec("P('a', None)"), P("a", None));
  EXPECT_EQ(parse_partition_spec("PartitionSpec(('a', 'b'),)"), P({"a", "b"}));
  EXPECT_EQ(parse_partition_spec("P(('a',), UNCONSTRAINED)").to_ir_string(),
            "P(('a',), UNCONSTRAINED)");
  EXPECT_EQ(parse_partition_spec("P()"), P());
  EXPECT_THROW(parse_partition_spec("P('a'"), ValueError);
}

}  // namespace
}  // namespace parax::core
