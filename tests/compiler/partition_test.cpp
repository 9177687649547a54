// propagate-sharding and partition-spmd, tested text-in, text-out: a global program and
// the layouts of its inputs in, the per-device program (with its input and output layouts)
// out. Each expected text was checked by hand: local shapes, and only the collectives the
// layouts force.
#include <gtest/gtest.h>
#include <iostream>

#include "compiler/partition.h"
#include "core/parse.h"
#include "parax/errors.h"

namespace parax::compiler {
namespace {

using Specs = std::vector<std::optional<std::string>>;

// Partitions the program `text` on the mesh `axis_sizes`/`axis_names` (over the first
// devices by id), each input laid out as its `P(...)` (nullopt: the compiler chooses), and
// returns the layouts and per-device program, printed as Executable::as_text prints them.
std::string partitioned(const std::string& text, std::vector<int64_t> axis_sizes,
                        std::vector<std::string> axis_names, const Specs& in_specs,
                        const Specs& out_specs = {}) {
  const MeshInfo mesh(make_mesh(std::move(axis_sizes), std::move(axis_names)));
  const core::Program global = core::parse_program(text, &mesh.mesh);
  auto layout = [&](const std::optional<std::string>& spec, const core::Aval& aval) {
    std::optional<DimShard> s;
    if (spec) s = mesh.from_spec(core::parse_partition_spec(*spec), aval.shape.size());
    return s;
  };
  std::vector<int> inputs(global.constvars);
  inputs.insert(inputs.end(), global.invars.begin(), global.invars.end());
  EXPECT_EQ(in_specs.size(), inputs.size()) << "one layout per program input";
  std::vector<std::optional<DimShard>> seeds;
  for (size_t i = 0; i < inputs.size() && i < in_specs.size(); ++i) {
    seeds.push_back(layout(in_specs[i], global.avals[size_t(inputs[i])]));
  }
  std::vector<std::optional<DimShard>> out_layouts;
  for (size_t o = 0; o < out_specs.size(); ++o) {
    out_layouts.push_back(layout(out_specs[o], global.aval_of(global.outvars[o])));
  }
  const Propagation prop = propagate(global, mesh, seeds);
  const Partitioned part = partition(global, mesh, prop, out_layouts);
  EXPECT_FALSE(core::verify(part.local).has_value());
  std::string head = "# in_layouts (";
  for (size_t i = 0; i < part.inputs.size(); ++i) {
    head += (i ? ", " : "") + mesh.spec_str(part.inputs[i]);
  }
  head += ")\n# out_layouts (";
  for (size_t i = 0; i < part.outputs.size(); ++i) {
    head += (i ? ", " : "") + mesh.spec_str(part.outputs[i]);
  }
  return head + ")\n" + program_text(part.local, mesh);
}

TEST(Partition, ElementwiseKeepsTheOperandsShardingWithoutCommunication) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[8,4]. let c:f32[8,4] = add a b in (c,) }",
                        {4}, {"a"}, {"P('a', None)", "P('a', None)"}),
            "");
}

TEST(Partition, DotOfRowAndColumnShardsIsShardedBothWays) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[4,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "  in (c,) }",
                        {4, 2}, {"a", "b"}, {"P('a', None)", "P(None, 'b')"}),
            "");
}

TEST(Partition, ContractionOverAShardedDimensionEndsInAnAllReduce) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "  in (c,) }",
                        {4}, {"a"}, {"P(None, 'a')", "P('a', None)"}),
            "");
}

TEST(Partition, ContractionConstrainedToShardByTheSameAxisEndsInAReduceScatter) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "    d:f32[8,8] = sharding_constraint[sharding=P('a', None)] c\n"
                        "  in (d,) }",
                        {4}, {"a"}, {"P(None, 'a')", "P('a', None)"}),
            "");
}

TEST(Partition, ReduceSumOverAShardedAxisEndsInAnAllReduce) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4]. let b:f32[4] = reduce_sum[axes=(0,)] a in (b,) }",
                        {4}, {"a"}, {"P('a', None)"}),
            "");
}

TEST(Partition, MismatchedOperandsMeetThroughAnAllToAll) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let c:f32[8,8] = add a b in (c,) }",
                        {4}, {"a"}, {"P('a', None)", "P(None, 'a')"}),
            "");
}

TEST(Partition, ReplicatingConstraintAllGathersEachDimension) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8]. let\n"
                        "    b:f32[8,8] = sharding_constraint[sharding=P()] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P('a', 'b')"}),
            "");
}

TEST(Partition, ShardingAReplicatedValueSlicesLocally) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8]. let\n"
                        "    b:f32[8] = sharding_constraint[sharding=P('a')] a\n"
                        "  in (b,) }",
                        {4}, {"a"}, {"P(None)"}),
            "");
}

TEST(Partition, ReorderedAxesMoveTilesByCollectivePermute) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8]. let\n"
                        "    b:f32[8] = sharding_constraint[sharding=P(('b', 'a'))] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P(('a', 'b'))"}),
            "");
}

TEST(Partition, UncommittedOperandTakesItsNeighboursLayout) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[8,4]. let c:f32[8,4] = mul a b in (c,) }",
                        {4}, {"a"}, {"P('a', None)", std::nullopt}),
            "");
}

}  // namespace
}  // namespace parax::compiler

namespace parax::compiler {
namespace {
TEST(Probe, All) {
  const char* dot =
      "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
      "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
      "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n";
  std::cout << partitioned("{ lambda ; a:f32[8,8]. let\n"
                        "    b:f32[8,8] = sharding_constraint[sharding=P('b', 'a')] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P('a', 'b')"}) << "\n\n";
  std::cout << partitioned(std::string("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n") + dot +
                        "    d:f32[8,8] = sharding_constraint[sharding=P(('b', 'a'), None)] c\n"
                        "  in (d,) }",
                        {4, 2}, {"a", "b"}, {"P('b', 'a')", "P('a', None)"}) << "\n\n";
  std::cout << partitioned("{ lambda ; a:f32[8]. let\n"
                        "    b:f32[8] = sharding_constraint[sharding=P('b')] a\n"
                        "  in (b,) }",
                        {2, 2, 2}, {"a", "b", "c"}, {"P('a')"}) << "\n\n";
  std::cout << partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let c:f32[8,8] = add a b in (c,) }",
                        {4}, {"a"}, {std::nullopt, "P(None, 'a')"}) << "\n\n";
  std::cout << partitioned("{ lambda ; a:f32[8,8]. let\n"
                           "    b:f32[8,8] = transpose[permutation=(1, 0)] a\n"
                           "    c:f32[8,8] = add a b\n"
                           "    d:f32[8,8] = mul c 2.0\n"
                           "  in (d,) }",
                        {4}, {"a"}, {"P('a', None)"}, {"P(None, 'a')"}) << "\n\n";
  std::cout << partitioned("{ lambda ; a:f32[8,8]. let\n"
                           "    b:f32[8,8] = reduce_max[axes=(1,)] a\n"
                           "  in (b, 1.0) }",
                        {4,2}, {"a", "b"}, {"P('a', 'b')"}) << "\n\n";
  std::cout << partitioned("{ lambda ; a:f32[8,8]. let\n"
                           "    b:f32[8,8] = reshape[dimensions=None new_sizes=(64,)] a\n"
                           "  in (b,) }",
                        {4,2}, {"a", "b"}, {"P('a', 'b')"}) << "\n\n";
}
}  // namespace
}  // namespace parax::compiler
