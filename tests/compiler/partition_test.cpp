// propagate-sharding and partition-spmd, tested text-in, text-out: a global program and
// the layouts of its inputs in, the per-device program (with its input and output layouts)
// out. Each expected text was checked by hand: local shapes, and only the collectives the
// layouts force.
#include <gtest/gtest.h>

#include <stdexcept>

#include "compiler/partition.h"
#include "core/parse.h"
#include "core/program_trace.h"
#include "core/verify.h"
#include "parax/errors.h"
#include "parax/parax.h"

namespace parax::compiler {
namespace {

using Specs = std::vector<std::optional<std::string>>;

// Partitions the program `text` on the mesh `axis_sizes`/`axis_names` (over the first
// devices by id), each input laid out as its `P(...)` (nullopt: the compiler chooses), and
// returns the layouts and per-device program, printed as Plan::as_text prints them.
std::string partitioned(const std::string& text, std::vector<int64_t> axis_sizes,
                        std::vector<std::string> axis_names, const Specs& in_specs,
                        const Specs& out_specs = {}) {
  const MeshInfo mesh(make_mesh(std::move(axis_sizes), std::move(axis_names)));
  const core::Program global = core::parse_program(text, &mesh.mesh);
  // The parser reads syntax only; a mistyped expected program would partition nonsense.
  for (const core::Eqn& e : global.eqns) {
    std::vector<core::Aval> in;
    for (const core::Atom& a : e.inputs) in.push_back(global.aval_of(a));
    const std::vector<core::Aval> out = core::abstract_eval(e.prim, in, e.params);
    for (size_t r = 0; r < out.size() && r < e.outputs.size(); ++r) {
      const core::Aval& declared = global.avals[size_t(e.outputs[r])];
      if (declared.short_str() == out[r].short_str()) continue;
      throw std::invalid_argument(std::string(core::prim_name(e.prim)) + " gives " +
                                  out[r].short_str() + ", not " + declared.short_str());
    }
  }
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
  EXPECT_EQ(core::verify(part.local, {.mesh_axis_sizes = mesh.axis_sizes, .weak_types = false}),
            std::nullopt);
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
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[8,4]. let c:f32[8,4] = add a b in (c,) }", {4},
                        {"a"}, {"P('a', None)", "P('a', None)"}),
            "# in_layouts (P('a', None), P('a', None))\n"
            "# out_layouts (P('a', None))\n"
            "{ lambda ; a:f32[2,4] b:f32[2,4]. let c:f32[2,4] = add a b in (c,) }");
}

TEST(Partition, DotOfRowAndColumnShardsIsShardedBothWays) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[4,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "  in (c,) }",
                        {4, 2}, {"a", "b"}, {"P('a', None)", "P(None, 'b')"}),
            "# in_layouts (P('a', None), P(None, 'b'))\n"
            "# out_layouts (P('a', 'b'))\n"
            "{ lambda ; a:f32[2,4] b:f32[4,4]. let\n"
            "    c:f32[2,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
            "preferred_element_type=float32 rhs_batch_dimensions=() "
            "rhs_contracting_dimensions=(0,)] a b\n"
            "  in (c,) }");
}

TEST(Partition, ContractionOverAShardedDimensionEndsInAnAllReduce) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "  in (c,) }",
                        {4}, {"a"}, {"P(None, 'a')", "P('a', None)"}),
            "# in_layouts (P(None, 'a'), P('a', None))\n"
            "# out_layouts (P(None, None))\n"
            "{ lambda ; a:f32[8,2] b:f32[2,8]. let\n"
            "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
            "preferred_element_type=float32 rhs_batch_dimensions=() "
            "rhs_contracting_dimensions=(0,)] a b\n"
            "    d:f32[8,8] = all-reduce[mesh_axes=('a',) op=sum] c\n"
            "  in (d,) }");
}

TEST(Partition, ContractionConstrainedToShardByTheSameAxisEndsInAReduceScatter) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "    d:f32[8,8] = sharding_constraint[sharding=P('a', None)] c\n"
                        "  in (d,) }",
                        {4}, {"a"}, {"P(None, 'a')", "P('a', None)"}),
            "# in_layouts (P(None, 'a'), P('a', None))\n"
            "# out_layouts (P('a', None))\n"
            "{ lambda ; a:f32[8,2] b:f32[2,8]. let\n"
            "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
            "preferred_element_type=float32 rhs_batch_dimensions=() "
            "rhs_contracting_dimensions=(0,)] a b\n"
            "    d:f32[2,8] = reduce-scatter[dimension=0 mesh_axes=('a',) op=sum] c\n"
            "  in (d,) }");
}

TEST(Partition, ReduceSumOverAShardedAxisEndsInAnAllReduce) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4]. let b:f32[4] = reduce_sum[axes=(0,)] a in (b,) }",
                        {4}, {"a"}, {"P('a', None)"}),
            "# in_layouts (P('a', None))\n"
            "# out_layouts (P(None))\n"
            "{ lambda ; a:f32[2,4]. let\n"
            "    b:f32[4] = reduce_sum[axes=(0,)] a\n"
            "    c:f32[4] = all-reduce[mesh_axes=('a',) op=sum] b\n"
            "  in (c,) }");
}

TEST(Partition, MismatchedOperandsMeetThroughAnAllToAll) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let c:f32[8,8] = add a b in (c,) }", {4},
                        {"a"}, {"P('a', None)", "P(None, 'a')"}),
            "# in_layouts (P('a', None), P(None, 'a'))\n"
            "# out_layouts (P('a', None))\n"
            "{ lambda ; a:f32[2,8] b:f32[8,2]. let\n"
            "    c:f32[2,8] = all-to-all[concat_dimension=1 mesh_axes=('a',) split_dimension=0] b\n"
            "    d:f32[2,8] = add a c\n"
            "  in (d,) }");
}

TEST(Partition, ReplicatingConstraintAllGathersEachDimension) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8]. let\n"
                        "    b:f32[8,8] = sharding_constraint[sharding=P()] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P('a', 'b')"}),
            "# in_layouts (P('a', 'b'))\n"
            "# out_layouts (P(None, None))\n"
            "{ lambda ; a:f32[2,4]. let\n"
            "    b:f32[8,4] = all-gather[dimension=0 mesh_axes=('a',)] a\n"
            "    c:f32[8,8] = all-gather[dimension=1 mesh_axes=('b',)] b\n"
            "  in (c,) }");
}

TEST(Partition, ShardingAReplicatedValueSlicesLocally) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8]. let\n"
                        "    b:f32[8] = sharding_constraint[sharding=P('a')] a\n"
                        "  in (b,) }",
                        {4}, {"a"}, {"P(None)"}),
            "# in_layouts (P(None))\n"
            "# out_layouts (P('a'))\n"
            "{ lambda ; a:f32[8]. let\n"
            "    b:f32[2] = shard-slice[dimension=0 mesh_axes=('a',)] a\n"
            "  in (b,) }");
}

TEST(Partition, ReorderedAxesMoveTilesByCollectivePermute) {
  // Device p = 2a + b holds tile 2a + b and needs tile 4b + a: tile p goes to device
  // 2(p % 4) + p / 4; devices 0 and 7 keep theirs.
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8]. let\n"
                        "    b:f32[8] = sharding_constraint[sharding=P(('b', 'a'))] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P(('a', 'b'))"}),
            "# in_layouts (P(('a', 'b')))\n"
            "# out_layouts (P(('b', 'a')))\n"
            "{ lambda ; a:f32[1]. let\n"
            "    b:f32[1] = collective-permute[source_target_pairs=(1, 2, 2, 4, 3, 6, 4, 1, 5, 3, "
            "6, 5)] a\n"
            "  in (b,) }");
}

TEST(Partition, UncommittedOperandTakesItsNeighboursLayout) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,4] b:f32[8,4]. let c:f32[8,4] = mul a b in (c,) }", {4},
                        {"a"}, {"P('a', None)", std::nullopt}),
            "# in_layouts (P('a', None), P('a', None))\n"
            "# out_layouts (P('a', None))\n"
            "{ lambda ; a:f32[2,4] b:f32[2,4]. let c:f32[2,4] = mul a b in (c,) }");
}

TEST(Partition, SwappedAxesGatherMoveAndSlice) {
  // Tiles differ in shape, so no permute: gather 'a', move 'b' to dimension 0, slice 'a'.
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8]. let\n"
                        "    b:f32[8,8] = sharding_constraint[sharding=P('b', 'a')] a\n"
                        "  in (b,) }",
                        {4, 2}, {"a", "b"}, {"P('a', 'b')"}),
            "# in_layouts (P('a', 'b'))\n"
            "# out_layouts (P('b', 'a'))\n"
            "{ lambda ; a:f32[2,4]. let\n"
            "    b:f32[8,4] = all-gather[dimension=0 mesh_axes=('a',)] a\n"
            "    c:f32[4,8] = all-to-all[concat_dimension=1 mesh_axes=('b',) split_dimension=0] b\n"
            "    d:f32[4,2] = shard-slice[dimension=1 mesh_axes=('a',)] c\n"
            "  in (d,) }");
}

TEST(Partition, PartialSumsScatterOntoTheMinorAxisOfAShardedDimension) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
                        "    c:f32[8,8] = dot_general[lhs_batch_dimensions=() "
                        "lhs_contracting_dimensions=(1,) preferred_element_type=float32 "
                        "rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] a b\n"
                        "    d:f32[8,8] = sharding_constraint[sharding=P(('b', 'a'), None)] c\n"
                        "  in (d,) }",
                        {4, 2}, {"a", "b"}, {"P('b', 'a')", "P('a', None)"}),
            "# in_layouts (P('b', 'a'), P('a', None))\n"
            "# out_layouts (P(('b', 'a'), None))\n"
            "{ lambda ; a:f32[4,2] b:f32[2,8]. let\n"
            "    c:f32[4,8] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
            "preferred_element_type=float32 rhs_batch_dimensions=() "
            "rhs_contracting_dimensions=(0,)] a b\n"
            "    d:f32[1,8] = reduce-scatter[dimension=0 mesh_axes=('a',) op=sum] c\n"
            "  in (d,) }");
}

TEST(Partition, RequestedOutputLayoutIsReachedAtTheEnd) {
  EXPECT_EQ(partitioned("{ lambda ; a:f32[8,8]. let\n"
                        "    b:f32[8,8] = transpose[permutation=(1, 0)] a\n"
                        "    c:f32[8,8] = add a b\n"
                        "    d:f32[8,8] = mul c 2.0\n"
                        "  in (d,) }",
                        {4}, {"a"}, {"P('a', None)"}, {"P(None, 'a')"}),
            "# in_layouts (P('a', None))\n"
            "# out_layouts (P(None, 'a'))\n"
            "{ lambda ; a:f32[2,8]. let\n"
            "    b:f32[8,2] = transpose[permutation=(1, 0)] a\n"
            "    c:f32[2,8] = all-to-all[concat_dimension=1 mesh_axes=('a',) split_dimension=0] b\n"
            "    d:f32[2,8] = add a c\n"
            "    e:f32[2,8] = mul d 2.0\n"
            "    f:f32[8,2] = all-to-all[concat_dimension=0 mesh_axes=('a',) split_dimension=1] e\n"
            "  in (f,) }");
}

// Sharding params need devices, so the parser's tests for them live here.
void expect_round_trip(const std::string& text, const Mesh* mesh = nullptr) {
  SCOPED_TRACE(text);
  const core::Program p = core::parse_program(text, mesh);
  EXPECT_FALSE(core::verify(p).has_value());
  EXPECT_EQ(core::to_string(p), text);
}

TEST(ParseWithDevices, ShardingParamsRoundTrip) {
  const std::string text =
      "{ lambda ; a:f32[8,8]. let\n"
      "    b:f32[8,8] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('a': 4, 'b': 2), "
      "spec=PartitionSpec('b', 'a'))] a\n"
      "    c:f32[8,8] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('x': 8), "
      "spec=PartitionSpec(('x',), UNCONSTRAINED))] b\n"
      "    d:f32[8,8] = sharding_constraint[sharding=SingleDeviceSharding("
      "device=CpuDevice(id=3))] c\n"
      "  in (d,) }";
  expect_round_trip(text);
  // Meshes are made by make_mesh over the first devices by id.
  const core::Program p = core::parse_program(text);
  const auto& s = p.eqns[0].params.get<std::shared_ptr<const Sharding>>("sharding");
  EXPECT_EQ(s->as_named()->mesh(), make_mesh({4, 2}, {"a", "b"}));
}

TEST(ParseWithDevices, ShortShardingsAndAxisNamesUseTheGivenMesh) {
  const Mesh mesh(DeviceGrid(devices(), {2, 4}), {"b", "a"});
  const core::Program p = core::parse_program(
      "{ lambda ; a:f32[8]. let\n"
      "    b:f32[8] = sharding_constraint[sharding=P('a')] a\n"
      "    c:f32[8] = all-gather[dimension=0 mesh_axes=('a', 'b')] b\n"
      "  in (c,) }",
      &mesh);
  const auto& s = p.eqns[0].params.get<std::shared_ptr<const Sharding>>("sharding");
  EXPECT_EQ(*s, NamedSharding(mesh, P("a")));
  EXPECT_EQ(p.eqns[1].params.get<std::vector<int64_t>>("mesh_axes"), (std::vector<int64_t>{1, 0}));
  // A NamedSharding printed on the given mesh reads back on it.
  expect_round_trip(
      "{ lambda ; a:f32[8]. let\n"
      "    b:f32[8] = sharding_constraint[sharding=NamedSharding(mesh=Mesh('b': 2, 'a': 4), "
      "spec=PartitionSpec('a',))] a\n"
      "  in (b,) }",
      &mesh);
  try {
    core::parse_program(
        "{ lambda ; a:f32[8]. let\n"
        "    b:f32[8] = sharding_constraint[sharding=P('z')] a\n"
        "  in (b,) }",
        &mesh);
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "[parse_program] line 2, column 45: Resource axis: z of PartitionSpec('z',) is "
              "not found in mesh: ('b', 'a').");
  }
}

TEST(ParseWithDevices, TracedProgramsRoundTrip) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array c = numpy::ones({8});
  const std::vector<core::Aval> args = {core::Aval{{8, 8}, DType::float32, false},
                                        core::Aval{{8}, DType::int32, false}};
  auto closed = core::trace_to_program(args, [&](const std::vector<Array>& a) {
    Array x = lax::with_sharding_constraint(a[0] * 2.0f + c, NamedSharding(mesh, P("b", "a")));
    Array y = jit([](const Array& v) { return numpy::sin(v); })(x);
    return std::vector<Array>{numpy::sum(y, 1), a[1] > 3, lax::sort(y, 0)};
  });
  const std::string text = core::to_string(*closed.program);
  expect_round_trip(text);
  EXPECT_FALSE(closed.program->constvars.empty());
}

TEST(ParseWithDevices, PartitionedProgramsReadBackOnTheirMesh) {
  const MeshInfo mesh(make_mesh({4, 2}, {"a", "b"}));
  const std::string text =
      "{ lambda ; a:f32[2,4]. let\n"
      "    b:f32[8,4] = all-gather[dimension=0 mesh_axes=('a',)] a\n"
      "    c:f32[4,8] = all-to-all[concat_dimension=1 mesh_axes=('b',) split_dimension=0] b\n"
      "    d:f32[4,2] = shard-slice[dimension=1 mesh_axes=('a',)] c\n"
      "    e:f32[1,2] = reduce-scatter[dimension=0 mesh_axes=('a', 'b') op=sum] d\n"
      "  in (e,) }";
  EXPECT_EQ(program_text(core::parse_program(text, &mesh.mesh), mesh), text);
}

}  // namespace
}  // namespace parax::compiler
