// The type checker (core/verify.h): each program is written as text, with one mistake, and
// the verifier must name the equation that has it and say what its rule expected.
#include "core/verify.h"

#include <gtest/gtest.h>

#include "core/parse.h"
#include "core/rules.h"

namespace parax::core {
namespace {

// Returns the verifier's complaint about `text` (a global program), or "" when none.
std::string complaint(const std::string& text) { return verify(parse_program(text)).value_or(""); }

// Returns the complaint about `text` as a per-device program on a mesh of `axis_sizes`.
std::string local_complaint(const std::string& text, std::vector<int64_t> axis_sizes) {
  const VerifyOptions options{.mesh_axis_sizes = axis_sizes, .weak_types = false};
  return verify(parse_program(text), options).value_or("");
}

TEST(Verify, AcceptsAWellTypedProgram) {
  EXPECT_EQ(
      complaint("{ lambda ; a:f32[8,4] b:f32[4]. let\n"
                "    c:f32[8,4] = broadcast_in_dim[broadcast_dimensions=(1,) shape=(8, 4)] b\n"
                "    d:f32[8,4] = add a c\n"
                "    e:f32[4] = reduce_sum[axes=(0,)] d\n"
                "    f:i32[4] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
                "  in (f,) }"),
      "");
}

TEST(Verify, CatchesAWrongShape) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[8,4]. let\n"
                      "    b:f32[8,4] = sin a\n"
                      "    c:f32[4] = reduce_sum[axes=(1,)] b\n"
                      "  in (c,) }"),
            "equation 1 (c:f32[4] = reduce_sum[axes=(1,)] b): reduce_sum gives f32[8], the "
            "program says f32[4]");
}

TEST(Verify, CatchesAWrongDtype) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[8] b:f32[8]. let c:i32[8] = mul a b in (c,) }"),
            "equation 0 (c:i32[8] = mul a b): mul gives f32[8], the program says i32[8]");
}

TEST(Verify, CatchesOperandsTheRuleRejects) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[8] b:f32[4]. let c:f32[8] = add a b in (c,) }"),
            "equation 0 (c:f32[8] = add a b): add got incompatible shapes for broadcasting: "
            "(8,), (4,).");
}

TEST(Verify, CatchesAWrongWeakType) {
  Program p = parse_program("{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }");
  p.avals[1].weak_type = true;
  EXPECT_EQ(verify(p).value_or(""),
            "equation 0 (b:f32[8] = sin a): sin gives f32[8], the program says f32[8]{weak}");
  // Per-device programs take their types from global ones: weak types are not compared.
  EXPECT_EQ(verify(p, {.weak_types = false}), std::nullopt);
}

TEST(Verify, CatchesUseBeforeDefinition) {
  // The parser refuses such text, so the program is broken after parsing.
  Program p = parse_program(
      "{ lambda ; a:f32[8]. let\n"
      "    b:f32[8] = sin a\n"
      "    c:f32[8] = cos a\n"
      "  in (b,) }");
  p.eqns[0].inputs = {Atom::of(p.eqns[1].outputs[0])};
  EXPECT_EQ(verify(p).value_or(""),
            "equation 0 (b:f32[8] = sin c): variable c is used before it is defined");
}

TEST(Verify, CatchesAResultWithoutAType) {
  Program p = parse_program("{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }");
  p.eqns[0].outputs = {7};
  EXPECT_EQ(verify(p).value_or(""), "equation 0 (?7:? = sin a): variable 7 has no type");
}

TEST(Verify, ChecksSubPrograms) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[8]. let\n"
                      "    b:f32[8] = pjit[jaxpr={ lambda ; a:f32[8]. let b:i32[8] = sin a in "
                      "(b,) } name=f] a\n"
                      "  in (b,) }"),
            "equation 0 (pjit), in its program: equation 0 (b:i32[8] = sin a): sin gives "
            "f32[8], the program says i32[8]");
}

TEST(Verify, CatchesAPjitOperandThatDisagreesWithItsBody) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[8]. let\n"
                      "    b:f32[4] = pjit[jaxpr={ lambda ; a:f32[4]. let b:f32[4] = sin a in "
                      "(b,) } name=f] a\n"
                      "  in (b,) }"),
            "equation 0 (b:f32[4] = pjit[jaxpr={ lambda ; a:f32[4]. let b:f32[4] = sin a in (b,) } "
            "name=f] a): [pjit] operand 0 does not match its body's input: got f32[8]; expected "
            "f32[4]");
  EXPECT_EQ(complaint("{ lambda ; a:i32[8]. let\n"
                      "    b:f32[8] = pjit[jaxpr={ lambda ; a:f32[8]. let b:f32[8] = sin a in "
                      "(b,) } name=f] a\n"
                      "  in (b,) }"),
            "equation 0 (b:f32[8] = pjit[jaxpr={ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) } "
            "name=f] a): [pjit] operand 0 does not match its body's input: got i32[8]; expected "
            "f32[8]");
}

TEST(Verify, CatchesAFusionOperandThatDisagreesWithItsBody) {
  EXPECT_EQ(
      complaint("{ lambda ; a:f32[8] b:i32[8]. let\n"
                "    c:f32[8] = fusion[jaxpr={ lambda ; a:f32[8] b:f32[8]. let c:f32[8] = "
                "add a b in (c,) }] a b\n"
                "  in (c,) }"),
      "equation 0 (c:f32[8] = fusion[jaxpr={ lambda ; a:f32[8] b:f32[8]. let c:f32[8] = add a b "
      "in (c,) }] a b): [fusion] operand 1 does not match its body's input: got i32[8]; "
      "expected f32[8]");
}

TEST(Verify, CatchesAShardMapOperandThatDisagreesWithItsBody) {
  // Axis i of size 4 splits operand dimension 0: the body sees [2, 6] blocks of [8, 6].
  // (Axis names in text need a mesh, and so devices: the params are set after parsing.)
  Program p = parse_program(
      "{ lambda ; a:f32[8,6]. let\n"
      "    b:f32[8,6] = pjit[jaxpr={ lambda ; a:f32[2,6]. let b:f32[2,6] = sin a in (b,) } "
      "name=f] a\n"
      "  in (b,) }");
  p.eqns[0].prim = Prim::shard_map;
  p.eqns[0].params.set("axis_names", std::vector<std::string>{"i"});
  p.eqns[0].params.set("axis_sizes", std::vector<int64_t>{4});
  p.eqns[0].params.set("in_specs", std::vector<PartitionSpec>{PartitionSpec("i", None)});
  p.eqns[0].params.set("out_specs", std::vector<PartitionSpec>{PartitionSpec("i", None)});
  EXPECT_EQ(verify(p), std::nullopt);
  p.eqns[0].params.set("in_specs", std::vector<PartitionSpec>{PartitionSpec(None, None)});
  EXPECT_EQ(
      verify(p).value_or(""),
      "equation 0 (b:f32[8,6] = shard_map[axis_names=('i',) axis_sizes=(4,) in_specs=(P(None, "
      "None),) jaxpr={ lambda ; a:f32[2,6]. let b:f32[2,6] = sin a in (b,) } name=f "
      "out_specs=(P('i', None),)] a): [shard_map] operand 0 does not match its body's "
      "input: got f32[8,6], f32[8,6] per device; expected f32[2,6] per device");
  // A global shape the spec does not split evenly has no per-device block.
  p.avals[size_t(p.invars[0])].shape = {6, 6};
  p.eqns[0].params.set("in_specs", std::vector<PartitionSpec>{PartitionSpec("i", None)});
  EXPECT_EQ(verify(p).value_or(""),
            "equation 0 (b:f32[8,6] = shard_map[axis_names=('i',) axis_sizes=(4,) in_specs=(P('i', "
            "None),) jaxpr={ lambda ; a:f32[2,6]. let b:f32[2,6] = sin a in (b,) } name=f "
            "out_specs=(P('i', None),)] a): [shard_map] operand 0: dimension 0 of f32[6,6] does "
            "not split into 4 blocks");
}

TEST(Verify, RankZeroOperandsOfElementwiseEquationsBroadcast) {
  // What fold-scalar-broadcasts leaves: kernels broadcast the scalar operand.
  EXPECT_EQ(complaint("{ lambda ; a:bool[2,3] b:i32[2,3] c:i32[]. let\n"
                      "    d:i32[2,3] = select_n a b c\n"
                      "  in (d,) }"),
            "");
}

TEST(Verify, PerDeviceCollectivesHaveTypesOnTheirMesh) {
  // Mesh axes 0 and 1 of sizes 2 and 4: all-gather over axis 1 multiplies by 4, a
  // reduce-scatter over both divides by 8, an all-to-all over 0 moves a factor of 2.
  const std::string program =
      "{ lambda ; a:f32[2,8]. let\n"
      "    b:f32[8,8] = all-gather[dimension=0 mesh_axes=(1,)] a\n"
      "    c:f32[8,1] = reduce-scatter[dimension=1 mesh_axes=(0, 1) op=sum] b\n"
      "    d:f32[4,2] = all-to-all[concat_dimension=1 mesh_axes=(0,) split_dimension=0] c\n"
      "    e:f32[4,2] = all-reduce[mesh_axes=(0,) op=max] d\n"
      "    f:f32[4,2] = collective-permute[source_target_pairs=(0, 1, 1, 0)] e\n"
      "    g:f32[4,1] = shard-slice[dimension=1 mesh_axes=(0,)] f\n"
      "  in (g,) }";
  EXPECT_EQ(local_complaint(program, {2, 4}), "");
  // On a mesh of other sizes, the same program is wrong from its first equation.
  EXPECT_EQ(local_complaint(program, {4, 2}),
            "equation 0 (b:f32[8,8] = all-gather[dimension=0 mesh_axes=(1,)] a): all-gather "
            "gives f32[4,8], the program says f32[8,8]");
}

TEST(Verify, CatchesAPerDeviceCollectiveWithAWrongShape) {
  EXPECT_EQ(local_complaint("{ lambda ; a:f32[8,6]. let\n"
                            "    b:f32[8,6] = reduce-scatter[dimension=0 mesh_axes=(0,) op=sum] a\n"
                            "  in (b,) }",
                            {4}),
            "equation 0 (b:f32[8,6] = reduce-scatter[dimension=0 mesh_axes=(0,) op=sum] a): "
            "reduce-scatter gives f32[2,6], the program says f32[8,6]");
  EXPECT_EQ(local_complaint("{ lambda ; a:f32[6]. let\n"
                            "    b:f32[1] = shard-slice[dimension=0 mesh_axes=(0,)] a\n"
                            "  in (b,) }",
                            {4}),
            "equation 0 (b:f32[1] = shard-slice[dimension=0 mesh_axes=(0,)] a): shard-slice: "
            "dimension 0 of f32[6] does not split into 4 blocks");
}

TEST(Verify, PerDeviceCollectivesNeedTheirMesh) {
  EXPECT_EQ(complaint("{ lambda ; a:f32[2]. let\n"
                      "    b:f32[8] = all-gather[dimension=0 mesh_axes=(0,)] a\n"
                      "  in (b,) }"),
            "equation 0 (b:f32[8] = all-gather[dimension=0 mesh_axes=(0,)] a): all-gather: the "
            "sizes of mesh axes are unknown: no mesh is bound (per-device programs are checked "
            "with VerifyOptions::mesh_axis_sizes)");
  EXPECT_EQ(local_complaint("{ lambda ; a:f32[2]. let\n"
                            "    b:f32[8] = all-gather[dimension=0 mesh_axes=(1,)] a\n"
                            "  in (b,) }",
                            {4}),
            "equation 0 (b:f32[8] = all-gather[dimension=0 mesh_axes=(1,)] a): all-gather: "
            "mesh axis 1 is not an axis of the program's mesh (it has 1)");
}

TEST(Verify, RegionBoundariesSplitAndAssembleByTheirSpecs) {
  // A shard_map region over axis i (size 4) of a [8, 6] value split as P('i', None).
  // (Axis names in text need a mesh, and so devices: the boundaries are set after parsing.)
  Program p = parse_program(
      "{ lambda ; a:f32[8,6]. let\n"
      "    b:f32[2,6] = neg a\n"
      "    c:f32[2,6] = sin b\n"
      "    d:f32[8,6] = neg c\n"
      "  in (d,) }");
  p.eqns[0].prim = Prim::manual_enter;
  p.eqns[2].prim = Prim::manual_exit;
  for (size_t e : {size_t(0), size_t(2)}) {
    p.eqns[e].params = Params{{"axes", std::vector<std::string>{"i"}},
                              {"axis_sizes", std::vector<int64_t>{4}},
                              {"spec", std::vector<PartitionSpec>{PartitionSpec("i", None)}}};
  }
  EXPECT_EQ(verify(p), std::nullopt);
  p.eqns[2].params.set("spec", std::vector<PartitionSpec>{PartitionSpec(None, "i")});
  EXPECT_EQ(verify(p).value_or(""),
            "equation 2 (d:f32[8,6] = manual-exit[axes=('i',) axis_sizes=(4,) spec=(P(None, "
            "'i'),)] c): manual-exit gives f32[2,24], the program says f32[8,6]");
}

// Every primitive, the per-device ones included, has a shape rule, so every program the
// compiler makes can be checked.
TEST(Verify, EveryPrimitiveHasAShapeRule) {
  for (int i = 0; i < kNumPrims; ++i) {
    EXPECT_NE(rules(Prim(i)).abstract_eval, nullptr) << prim_name(Prim(i));
  }
}

}  // namespace
}  // namespace parax::core
