// The compiler's plan is plain data: compiling the same program for the same arguments
// twice (as every process of a multi-process run does) gives the same plan and
// fingerprint; another program, or other layouts, another fingerprint; and its per-device
// program reads back through core's parser.
#include <gtest/gtest.h>

#include <string>

#include "compiler/compile.h"
#include "core/parse.h"
#include "parax/parax.h"

namespace parax::compiler {
namespace {

const char* const kSum =
    "{ lambda ; a:f32[8,4] b:f32[8,4]. let\n"
    "    c:f32[8,4] = add a b\n"
    "    d:f32[4] = reduce_sum[axes=(0,)] c\n"
    "  in (d,) }";

// Compiles `text` with both arguments committed to `spec` over a 4x2 mesh.
std::shared_ptr<const Plan> plan_of(const std::string& text, const PartitionSpec& spec) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  auto program = std::make_shared<const core::Program>(core::parse_program(text, &mesh));
  const core::Aval aval{{8, 4}, DType::float32, false};
  const Sharding sharding = NamedSharding(mesh, spec);
  const std::vector<ArgInfo> args = {{aval, sharding, true}, {aval, sharding, true}};
  return compile(program, args, CompileOptions{});
}

TEST(Plan, SameProgramSameFingerprint) {
  auto first = plan_of(kSum, P("a", "b"));
  auto second = plan_of(kSum, P("a", "b"));
  EXPECT_NE(first, second);  // two compilations, not one cached object
  EXPECT_EQ(first->serialize(), second->serialize());
  EXPECT_EQ(first->fingerprint(), second->fingerprint());
}

TEST(Plan, OtherProgramOrLayoutOtherFingerprint) {
  std::string mul = kSum;
  mul.replace(mul.find("add"), 3, "mul");
  const uint64_t sum = plan_of(kSum, P("a", "b"))->fingerprint();
  EXPECT_NE(sum, plan_of(mul, P("a", "b"))->fingerprint());
  EXPECT_NE(sum, plan_of(kSum, P("b", "a"))->fingerprint());
}

TEST(Plan, SerializationHoldsTheWholePlan) {
  auto plan = plan_of(kSum, P("a", "b"));
  const std::string text = plan->serialize();
  EXPECT_EQ(text.rfind(plan->as_text(), 0), 0u) << text;
  for (const char* field : {"# args (", "# in_shardings (", "# out_shardings (", "# in_avals (",
                            "# out_avals (f32[4])", "# committed true", "# cost flops="}) {
    EXPECT_NE(text.find(field), std::string::npos) << field << " missing from\n" << text;
  }
}

TEST(Plan, PerDeviceProgramReadsBack) {
  auto plan = plan_of(kSum, P("a", "b"));
  // The program is every line of the serialized plan that is not a `#` field.
  std::string program;
  const std::string text = plan->serialize();
  for (size_t at = 0; at < text.size();) {
    const size_t end = text.find('\n', at);
    const std::string line = text.substr(at, end - at);
    if (!line.empty() && line[0] != '#') program += (program.empty() ? "" : "\n") + line;
    at = end + 1;
  }
  EXPECT_NE(program.find("all-reduce"), std::string::npos) << program;
  const core::Program parsed = core::parse_program(program, &plan->mesh.mesh);
  EXPECT_EQ(program_text(parsed, plan->mesh), program_text(*plan->local, plan->mesh));
}

}  // namespace
}  // namespace parax::compiler
