// The compiler's passes, one at a time through the pass list, text in and text out: each
// expected program was checked by hand. run_passes type-checks the program after every
// pass, so each test also shows the pass's output is well typed. Last, the whole list on
// a sharded program, and PARAX_DUMP_IR writing the program after each pass.
#include "compiler/passes.h"
#include "compiler/schedule.h"

#include <gtest/gtest.h>
#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <sstream>

#include "core/parse.h"
#include "parax/parax.h"

namespace parax::compiler {
namespace {

const Pass& pass_named(std::string_view name) {
  const auto passes = pass_list();
  auto it =
      std::find_if(passes.begin(), passes.end(), [&](const Pass& p) { return p.name == name; });
  EXPECT_NE(it, passes.end()) << name;
  return *it;
}

// Runs the pass `name` on the global program `text` (or on `program`, when the parser
// cannot read its params).
std::string after_global_pass(std::string_view name, const std::string& text,
                              std::optional<core::Program> program = std::nullopt) {
  PassState state{.global = program ? std::move(*program) : core::parse_program(text)};
  run_passes(state, {&pass_named(name), 1}, "test");
  return core::to_string(state.global);
}

// Runs the pass `name` on the per-device program `text` (of a one-device mesh).
std::string after_local_pass(std::string_view name, const std::string& text) {
  PassState state;
  state.mesh.emplace(make_mesh({1}, {"x"}));
  state.partitioned = Partitioned{core::parse_program(text), {}, {}};
  run_passes(state, {&pass_named(name), 1}, "test");
  return core::to_string(state.partitioned->local);
}

// Runs plan-buffers on the per-device program `text` and returns the program with its
// buffer plan under it, as Plan::as_text prints them (the pass leaves the program as is).
std::string with_plan(const std::string& text) {
  PassState state;
  state.mesh.emplace(make_mesh({1}, {"x"}));
  state.partitioned = Partitioned{core::parse_program(text), {}, {}};
  run_passes(state, {&pass_named("plan-buffers"), 1}, "test");
  const core::Program& local = state.partitioned->local;
  return core::to_string(local) + "\n" + buffers_text(local, *state.buffers);
}

// The buffer plan alone, of a program written as it prints (so the names match).
std::string planned(const std::string& text) {
  std::string all = with_plan(text);
  EXPECT_EQ(all.rfind(text + "\n", 0), 0u) << "not as it prints:\n" << all;
  return all.substr(all.find("# buffers"));
}

TEST(Passes, TheListIsThePipelineInOrder) {
  std::vector<std::string_view> names;
  for (const Pass& p : pass_list()) names.push_back(p.name);
  EXPECT_EQ(names, (std::vector<std::string_view>{
                       "inline-calls", "check-devices", "propagate-sharding", "inspect-shardings",
                       "partition-spmd", "fold-scalar-broadcasts", "dce", "schedule-memory",
                       "fuse-elementwise", "plan-buffers"}));
}

TEST(Passes, InlineCallsSplicesPjitBodies) {
  EXPECT_EQ(after_global_pass(
                "inline-calls",
                "{ lambda ; a:f32[8]. let\n"
                "    b:f32[8] = pjit[jaxpr={ lambda ; x:f32[8]. let y:f32[8] = sin x in (y,) } "
                "name=f] a\n"
                "    c:f32[8] = pjit[jaxpr={ lambda ; x:f32[8] y:f32[8]. let\n"
                "        z:f32[8] = pjit[jaxpr={ lambda ; u:f32[8]. let v:f32[8] = cos u in "
                "(v,) } name=g] x\n"
                "        w:f32[8] = mul z y\n"
                "      in (w,) } name=h] b a\n"
                "  in (c,) }"),
            "{ lambda ; a:f32[8]. let\n"
            "    b:f32[8] = sin a\n"
            "    c:f32[8] = cos b\n"
            "    d:f32[8] = mul c a\n"
            "  in (d,) }");
}

TEST(Passes, InlineCallsOpensShardMapRegionsBetweenBoundaries) {
  // (The parser reads no spec tuples: the shard_map equation is made here.)
  core::Program p = core::parse_program("{ lambda ; a:f32[8,4]. let b:f32[8,4] = neg a in (b,) }");
  const std::vector<PartitionSpec> specs{PartitionSpec("i", None)};
  p.eqns[0].prim = core::Prim::shard_map;
  p.eqns[0].params =
      core::Params{{"jaxpr", std::make_shared<const core::Program>(core::parse_program(
                                 "{ lambda ; x:f32[2,4]. let y:f32[2,4] = neg x in (y,) }"))},
                   {"axis_names", std::vector<std::string>{"i"}},
                   {"axis_sizes", std::vector<int64_t>{4}},
                   {"in_specs", specs},
                   {"out_specs", specs},
                   {"mesh", std::shared_ptr<const Sharding>()}};
  EXPECT_EQ(after_global_pass("inline-calls", core::to_string(p), std::move(p)),
            "{ lambda ; a:f32[8,4]. let\n"
            "    b:f32[2,4] = manual-enter[axes=('i',) axis_sizes=(4,) mesh=None "
            "spec=(P('i', None),)] a\n"
            "    c:f32[2,4] = neg b\n"
            "    d:f32[8,4] = manual-exit[axes=('i',) axis_sizes=(4,) mesh=None "
            "spec=(P('i', None),)] c\n"
            "  in (d,) }");
}

TEST(Passes, FoldScalarBroadcastsFeedsTheScalarToElementwiseEquations) {
  EXPECT_EQ(
      after_local_pass("fold-scalar-broadcasts",
                       "{ lambda ; a:f32[4,8] b:f32[]. let\n"
                       "    c:f32[4,8] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 8)] b\n"
                       "    d:f32[4,8] = mul a c\n"
                       "    e:f32[4,8] = reshape[dimensions=None new_sizes=(4, 8)] c\n"
                       "  in (d, e) }"),
      // The reshape is not elementwise: it still reads the broadcast.
      "{ lambda ; a:f32[4,8] b:f32[]. let\n"
      "    c:f32[4,8] = broadcast_in_dim[broadcast_dimensions=() shape=(4, 8)] b\n"
      "    d:f32[4,8] = mul a b\n"
      "    e:f32[4,8] = reshape[dimensions=None new_sizes=(4, 8)] c\n"
      "  in (d, e) }");
}

TEST(Passes, DceRemovesEquationsWhoseResultsAreUnused) {
  EXPECT_EQ(after_local_pass("dce",
                             "{ lambda ; a:f32[8] b:f32[8]. let\n"
                             "    c:f32[8] = sin a\n"
                             "    d:f32[8] = cos c\n"
                             "    e:f32[8] = mul a b\n"
                             "    f:f32[8] = exp e\n"
                             "  in (e, a) }"),
            "{ lambda ; a:f32[8] b:f32[8]. let c:f32[8] = mul a b in (c, a) }");
}

TEST(Passes, FuseElementwiseMakesOneFusionOfAChain) {
  EXPECT_EQ(after_local_pass("fuse-elementwise",
                             "{ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
                             "    c:f32[8,4] = sin a\n"
                             "    d:f32[8,4] = mul c b\n"
                             "    e:f32[8,4] = add d 1.0\n"
                             "    f:f32[4,8] = transpose[permutation=(1, 0)] e\n"
                             "  in (f,) }"),
            "{ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
            "    c:f32[8,4] = fusion[jaxpr={ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
            "          c:f32[8,4] = sin a\n"
            "          d:f32[8,4] = mul c b\n"
            "          e:f32[8,4] = add d 1.0\n"
            "        in (e,) }] a b\n"
            "    d:f32[4,8] = transpose[permutation=(1, 0)] c\n"
            "  in (d,) }");
}

TEST(Passes, FuseElementwiseTakesInATrailingReduction) {
  EXPECT_EQ(after_local_pass("fuse-elementwise",
                             "{ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
                             "    c:f32[8,4] = sub a b\n"
                             "    d:f32[8,4] = mul c c\n"
                             "    e:f32[8] = reduce_sum[axes=(1,)] d\n"
                             "  in (e,) }"),
            "{ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
            "    c:f32[8] = fusion[jaxpr={ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
            "          c:f32[8,4] = sub a b\n"
            "          d:f32[8,4] = mul c c\n"
            "          e:f32[8] = reduce_sum[axes=(1,)] d\n"
            "        in (e,) }] a b\n"
            "  in (c,) }");
}

TEST(Passes, PlanBuffersFreesValuesAfterTheirLastReadAndWritesOverDeadOperands) {
  // c dies at the cos, which writes over it; a program input (a, b) is freed but never
  // written over: the caller still holds it.
  EXPECT_EQ(planned("{ lambda ; a:f32[8] b:f32[8]. let\n"
                    "    c:f32[8] = sin a\n"
                    "    d:f32[8] = cos c\n"
                    "    e:f32[8] = mul d b\n"
                    "    f:f32[] = reduce_sum[axes=(0,)] e\n"
                    "  in (f,) }"),
            "# buffers\n"
            "#   0: c new; frees a\n"
            "#   1: d reuses c; frees c\n"
            "#   2: e reuses d; frees b d\n"
            "#   3: f to result 0 else new; frees e\n");
}

TEST(Passes, PlanBuffersWritesOverNoOperandStillReadOrOfAnotherShapeOrSize) {
  EXPECT_EQ(planned("{ lambda ; a:f32[8] b:f32[]. let\n"
                    "    c:f32[] = exp b\n"
                    "    d:f32[8] = sin a\n"
                    "    e:f32[8] = cos d\n"
                    "    f:f32[8] = mul c d\n"
                    "    g:f16[8] = convert_element_type[new_dtype=float16 weak_type=False] f\n"
                    "    h:i32[8] = convert_element_type[new_dtype=int32 weak_type=False] e\n"
                    "  in (g, h) }"),
            // e: d is read later. f: c dies there but is f32[], d is f32[8]. g: f's 32
            // bytes are not g's 16. h: e's f32[8] has h's shape and size (the dtype
            // may differ).
            "# buffers\n"
            "#   0: c new; frees b\n"
            "#   1: d new; frees a\n"
            "#   2: e new\n"
            "#   3: f reuses d; frees c d\n"
            "#   4: g to result 0 else new; frees f\n"
            "#   5: h to result 1 else reuses e; frees e\n");
}

TEST(Passes, PlanBuffersKeepsResultsAndInputsTheCallerHolds) {
  // a is an input and a result: never freed. c and d are results read later: kept, not
  // written over. f is a result twice: no slot of its own. The tanh's result nothing
  // reads (`_`) is freed at once.
  EXPECT_EQ(with_plan("{ lambda ; a:f32[8] b:f32[8]. let\n"
                      "    c:f32[8] = sin a\n"
                      "    d:f32[8] = cos c\n"
                      "    g:f32[8] = tanh d\n"
                      "    e:f32[8] = neg b\n"
                      "    f:f32[8] = exp e\n"
                      "  in (a, c, d, f, f) }"),
            "{ lambda ; a:f32[8] b:f32[8]. let\n"
            "    c:f32[8] = sin a\n"
            "    d:f32[8] = cos c\n"
            "    _:f32[8] = tanh d\n"
            "    e:f32[8] = neg b\n"
            "    f:f32[8] = exp e\n"
            "  in (a, c, d, f, f) }\n"
            "# buffers\n"
            "#   0: c to result 1 else new\n"
            "#   1: d to result 2 else new\n"
            "#   2: _ new; frees _\n"
            "#   3: e new; frees b\n"
            "#   4: f reuses e; frees e\n");
}

TEST(Passes, PlanBuffersLetsAFusionResultWriteOverAnOperandNoLaterEquationReads) {
  // In the first fusion, c is made by the chain's first equation, which reads b's tile
  // for the last time: it writes over b. In the second, the chain reads its operand again
  // after making its first result, so only the last result may take it. The third ends in
  // a reduction, whose result is smaller.
  EXPECT_EQ(planned("{ lambda ; a:f32[8,4]. let\n"
                    "    b:f32[8,4] = sin a\n"
                    "    c:f32[8,4] d:f32[8,4] = fusion[jaxpr={ lambda ; a:f32[8,4]. let "
                    "b:f32[8,4] = cos a; c:f32[8,4] = exp b in (b, c) }] b\n"
                    "    e:f32[8,4] f:f32[8,4] = fusion[jaxpr={ lambda ; a:f32[8,4]. let "
                    "b:f32[8,4] = cos a; c:f32[8,4] = mul b a in (b, c) }] c\n"
                    "    g:f32[8] = fusion[jaxpr={ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
                    "          c:f32[8,4] = mul a b\n"
                    "          d:f32[8] = reduce_sum[axes=(1,)] c\n"
                    "        in (d,) }] e f\n"
                    "  in (g, d) }"),
            "# buffers\n"
            "#   0: b new; frees a\n"
            "#   1: c reuses b, d to result 1 else new; frees b\n"
            "#   2: e new, f reuses c; frees c\n"
            "#   3: g to result 0 else new; frees e f\n");
}

// schedule-memory on a per-device program written as it prints, with `donated` per input.
std::string scheduled(const std::string& text, std::vector<bool> donated = {}) {
  core::Program p = core::parse_program(text);
  schedule_for_memory(p, donated);
  return core::to_string(p);
}

TEST(Passes, ScheduleMemoryRunsAnUpdateRightAfterItsGradient) {
  // e plays a gradient, f and h the rest of a backward pass, u and q the update. Run where
  // they were traced, e lives until the end; right after e, it goes at once, and the update
  // writes q where it let go of as much (e, and p when donated).
  const std::string text =
      "{ lambda ; a:f32[256,256] b:f32[256,256]. let\n"
      "    c:f32[256,256] = sin b\n"
      "    d:f32[256,256] = cos b\n"
      "    e:f32[256,256] = exp d\n"
      "    f:f32[256,256] = mul c 0.1\n"
      "    g:f32[256,256] = sub a f\n"
      "  in (g, e) }";
  const std::string moved =
      "{ lambda ; a:f32[256,256] b:f32[256,256]. let\n"
      "    c:f32[256,256] = sin b\n"
      "    d:f32[256,256] = mul c 0.1\n"
      "    e:f32[256,256] = sub a d\n"
      "    f:f32[256,256] = cos b\n"
      "    g:f32[256,256] = exp f\n"
      "  in (e, g) }";
  EXPECT_EQ(scheduled(text, {true, false}), moved);
  EXPECT_EQ(scheduled(text), moved);  // q in place of c: no more memory either way
  // An update making more than it lets go of (a second result) stays where it was, and so
  // does work on small values.
  const std::string two =
      "{ lambda ; a:f32[256,256] b:f32[256,256]. let\n"
      "    c:f32[256,256] = sin b\n"
      "    d:f32[256,256] = cos b\n"
      "    e:f32[256,256] = exp d\n"
      "    f:f32[256,256] = mul c 0.1\n"
      "    g:f32[256,256] = sub a f\n"
      "  in (g, e, f) }";
  EXPECT_EQ(scheduled(two), two);
  const std::string tiny =
      "{ lambda ; a:f32[8,8] b:f32[8,8]. let\n"
      "    c:f32[8,8] = sin b\n"
      "    d:f32[8,8] = cos b\n"
      "    e:f32[8,8] = exp d\n"
      "    f:f32[8,8] = mul c 0.1\n"
      "    g:f32[8,8] = sub a f\n"
      "  in (g, e) }";
  EXPECT_EQ(scheduled(tiny, {true, false}), tiny);
}

TEST(Passes, ScheduleMemoryTakesTheSmallWorkAnUpdateWaitsOn) {
  // The update reads a scale computed from a scalar input after the backward pass: the
  // scale moves along with it.
  const std::string text =
      "{ lambda ; a:f32[256,256] b:f32[256,256] c:f32[]. let\n"
      "    d:f32[256,256] = sin b\n"
      "    e:f32[256,256] = cos b\n"
      "    f:f32[256,256] = exp e\n"
      "    g:f32[] = mul c 2.0\n"
      "    h:f32[256,256] = mul d g\n"
      "    i:f32[256,256] = sub a h\n"
      "    j:f32[256,256] = add f e\n"
      "  in (i, j) }";
  EXPECT_EQ(scheduled(text, {true, false, false}),
            "{ lambda ; a:f32[256,256] b:f32[256,256] c:f32[]. let\n"
            "    d:f32[256,256] = sin b\n"
            "    e:f32[] = mul c 2.0\n"
            "    f:f32[256,256] = mul d e\n"
            "    g:f32[256,256] = sub a f\n"
            "    h:f32[256,256] = cos b\n"
            "    i:f32[256,256] = exp h\n"
            "    j:f32[256,256] = add i h\n"
            "  in (g, j) }");
}

TEST(Passes, PlanBuffersPlansControlFlowsProgramsToo) {
  // Each program is planned on its own, named on as it prints: a scan's body writes its
  // results into the slots the scan lends (the stacked ys'), and never over its inputs
  // (the carry, the slice of xs), which the scan still holds.
  EXPECT_EQ(
      planned("{ lambda ; a:f32[8] b:f32[4,8]. let\n"
              "    c:f32[8] d:f32[4,8] = scan[\n"
              "      jaxpr={ lambda ; e:f32[8] f:f32[8]. let\n"
              "          g:f32[8] = sin f\n"
              "          h:f32[8] = add e g\n"
              "          i:f32[8] = exp g\n"
              "        in (h, i) }\n"
              "      length=4\n"
              "      num_carry=1\n"
              "      num_consts=0\n"
              "      reverse=False\n"
              "      unroll=1\n"
              "    ] a b\n"
              "    j:f32[] = reduce_sum[axes=(0,)] c\n"
              "    k:bool[] = gt j 0.0\n"
              "    l:i32[] = convert_element_type[new_dtype=int32 weak_type=False] k\n"
              "    m:f32[8] = cond[\n"
              "      branches=(\n"
              "        { lambda ; n:f32[8]. let in (n,) }\n"
              "        { lambda ; o:f32[8]. let p:f32[8] = cos o; q:f32[8] = neg p in (q,) }\n"
              "      )\n"
              "    ] l c\n"
              "  in (m, d) }"),
      "# buffers\n"
      "#   0: c, d from its programs; frees a b\n"
      "#     jaxpr:\n"
      "#       0: g new; frees f\n"
      "#       1: h to result 0 else new; frees e\n"
      "#       2: i to result 1 else reuses g; frees g\n"
      "#   1: j new\n"
      "#   2: k new; frees j\n"
      "#   3: l new; frees k\n"
      "#   4: m from its programs; frees c l\n"
      "#     branches[0]:\n"
      "#     branches[1]:\n"
      "#       0: p new; frees o\n"
      "#       1: q to result 0 else reuses p; frees p\n");
}

// What the whole list makes of a global program and its arguments' layouts: the
// per-device program, as Executable::as_text prints it.
std::string compiled(const std::string& text, const Mesh& mesh,
                     const std::vector<std::optional<PartitionSpec>>& specs) {
  PassState state{.global = core::parse_program(text, &mesh)};
  std::vector<ArgInfo> args;
  for (size_t i = 0; i < state.global.invars.size(); ++i) {
    ArgInfo a{state.global.avals[size_t(state.global.invars[i])], std::nullopt, false};
    if (specs[i]) {
      a.sharding = NamedSharding(mesh, *specs[i]);
      a.committed = true;
    }
    args.push_back(a);
  }
  state.args = args;
  state.choose_mesh = [&](const core::Program&) { return MeshInfo(mesh); };
  run_passes(state, pass_list(), "test");
  std::string head = "# in_layouts (";
  for (size_t i = 0; i < state.partitioned->inputs.size(); ++i)
    head += (i ? ", " : "") + state.mesh->spec_str(state.partitioned->inputs[i]);
  head += ")\n# out_layouts (";
  for (size_t i = 0; i < state.partitioned->outputs.size(); ++i)
    head += (i ? ", " : "") + state.mesh->spec_str(state.partitioned->outputs[i]);
  return head + ")\n" + program_text(state.partitioned->local, *state.mesh);
}

TEST(Passes, PropagationLaysOutAnUncommittedInputLikeItsPartner) {
  // b is free: propagate-sharding gives it a's layout, so the add needs no communication.
  const Mesh mesh = make_mesh({4}, {"x"});
  EXPECT_EQ(compiled("{ lambda ; a:f32[8,4] b:f32[8,4]. let c:f32[8,4] = add a b in (c,) }", mesh,
                     {PartitionSpec("x", None), std::nullopt}),
            "# in_layouts (P('x', None), P('x', None))\n"
            "# out_layouts (P('x', None))\n"
            "{ lambda ; a:f32[2,4] b:f32[2,4]. let c:f32[2,4] = add a b in (c,) }");
}

const char* kShardedMatmul =
    "{ lambda ; a:f32[8,16] b:f32[16,4]. let\n"
    "    c:f32[8,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
    "preferred_element_type=float32 rhs_batch_dimensions=() rhs_contracting_dimensions=(0,)] "
    "a b\n"
    "    d:f32[8,4] = mul c 2.0\n"
    "    e:f32[8,4] = tanh d\n"
    "  in (e,) }";

TEST(Passes, TheWholeListPartitionsAndFuses) {
  const Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  // The contraction over y ends in an all-reduce; the elementwise tail is one fusion.
  EXPECT_EQ(compiled(kShardedMatmul, mesh, {PartitionSpec("x", "y"), PartitionSpec("y", None)}),
            "# in_layouts (P('x', 'y'), P('y', None))\n"
            "# out_layouts (P('x', None))\n"
            "{ lambda ; a:f32[4,4] b:f32[4,4]. let\n"
            "    c:f32[4,4] = dot_general[lhs_batch_dimensions=() lhs_contracting_dimensions=(1,) "
            "preferred_element_type=float32 rhs_batch_dimensions=() "
            "rhs_contracting_dimensions=(0,)] a b\n"
            "    d:f32[4,4] = all-reduce[mesh_axes=('y',) op=sum] c\n"
            "    e:f32[4,4] = fusion[jaxpr={ lambda ; a:f32[4,4]. let b:f32[4,4] = mul a 2.0; "
            "c:f32[4,4] = tanh b in (c,) }] d\n"
            "  in (e,) }");
}

// A pass that breaks a program: the sin's result claims another shape.
void break_types(PassState& s) { s.partitioned->local.avals.back().shape = {3}; }

TEST(Passes, AnIllTypedResultIsCaughtAfterThePassThatMadeIt) {
  set_verify_after_passes(true);
  PassState state;
  state.mesh.emplace(make_mesh({1}, {"x"}));
  state.partitioned = Partitioned{
      core::parse_program("{ lambda ; a:f32[8]. let b:f32[8] = sin a in (b,) }"), {}, {}};
  const Pass broken[] = {pass_named("dce"), Pass{"break-types", break_types}};
  // A compiler bug, so an internal check fails (and aborts) with the pass and equation.
  GTEST_FLAG_SET(death_test_style, "threadsafe");  // the runtime's thread pool is running
  EXPECT_DEATH(run_passes(state, broken, "test"),
               "the program after break-types is ill-typed: equation 0 .b:f32.3. = sin a.: "
               "sin gives f32.8., the program says f32.3.");
}

// A pass that breaks the buffer plan: the value the last equation reads is freed a step
// too early.
void free_early(PassState& s) {
  std::vector<BufferStep>& steps = s.buffers->steps;
  steps[0].frees.push_back(steps[1].frees.front());
  steps[1].frees.erase(steps[1].frees.begin());
}

TEST(Passes, ABufferPlanThatFreesALiveValueIsCaught) {
  PassState state;
  state.mesh.emplace(make_mesh({1}, {"x"}));
  state.partitioned = Partitioned{
      core::parse_program("{ lambda ; a:f32[8]. let b:f32[8] = sin a; c:f32[8] = cos b in (c,) }"),
      {},
      {}};
  const Pass broken[] = {pass_named("plan-buffers"), Pass{"free-early", free_early}};
  GTEST_FLAG_SET(death_test_style, "threadsafe");
  EXPECT_DEATH(run_passes(state, broken, "test"),
               "the program after free-early has an unsound buffer plan: equation 0 .b = sin.: "
               "frees b, which equation 1 reads");
}

TEST(Passes, DumpIrWritesTheProgramAfterEachPass) {
  const std::filesystem::path dir =
      std::filesystem::temp_directory_path() / ("parax_dump_" + std::to_string(::getpid()));
  std::filesystem::remove_all(dir);
  ::setenv("PARAX_DUMP_IR", dir.c_str(), 1);
  const Mesh mesh = make_mesh({2, 4}, {"x", "y"});
  const std::string text =
      compiled(kShardedMatmul, mesh, {PartitionSpec("x", "y"), PartitionSpec("y", None)});
  ::unsetenv("PARAX_DUMP_IR");
  std::vector<std::string> files;
  for (const auto& entry : std::filesystem::directory_iterator(dir)) {
    const std::string name = entry.path().filename().string();
    files.push_back(name.substr(name.find('.') + 1));  // drops the compilation's number
  }
  std::sort(files.begin(), files.end());
  EXPECT_EQ(files, (std::vector<std::string>{
                       "test.00-input.txt", "test.01-inline-calls.txt", "test.02-check-devices.txt",
                       "test.03-propagate-sharding.txt", "test.04-inspect-shardings.txt",
                       "test.05-partition-spmd.txt", "test.06-fold-scalar-broadcasts.txt",
                       "test.07-dce.txt", "test.08-schedule-memory.txt",
                       "test.09-fuse-elementwise.txt", "test.10-plan-buffers.txt"}));
  auto read = [&](const std::string& suffix) {
    for (const auto& entry : std::filesystem::directory_iterator(dir)) {
      const std::string name = entry.path().filename().string();
      if (name.size() < suffix.size() || name.substr(name.size() - suffix.size()) != suffix) {
        continue;
      }
      std::ifstream in(entry.path());
      std::stringstream s;
      s << in.rdbuf();
      return s.str();
    }
    return std::string();
  };
  EXPECT_EQ(read("00-input.txt"), std::string(kShardedMatmul) + "\n");
  EXPECT_EQ(read("09-fuse-elementwise.txt"), "# mesh Mesh('x': 2, 'y': 4)\n" + text + "\n");
  // The last adds the buffer plan.
  EXPECT_EQ(read("10-plan-buffers.txt"), "# mesh Mesh('x': 2, 'y': 4)\n" + text +
                                             "\n"
                                             "# buffers\n"
                                             "#   0: c new; frees a b\n"
                                             "#   1: d new; frees c\n"
                                             "#   2: e to result 0 else reuses d; frees d\n");
  std::filesystem::remove_all(dir);
}

}  // namespace
}  // namespace parax::compiler
