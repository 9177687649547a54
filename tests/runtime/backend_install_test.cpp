// Core evaluates concrete arrays through the Backend the runtime installs before the first
// concrete array exists. Each case is a program's very first parax call, in a fresh
// process (a gtest death test re-executes the binary), for each way of making a value from
// nothing.
#include <gtest/gtest.h>

#include <cstdlib>

#include "parax/parax.h"
#include "support/first_calls.h"

namespace parax {
namespace {

class BackendInstall : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_F(BackendInstall, FirstValueAnIota) {
  EXPECT_EXIT(std::exit(numpy::sum(lax::iota(DType::int32, 4)).item<int>()),
              ::testing::ExitedWithCode(6), "");
}

TEST_F(BackendInstall, FirstValueAHostScalar) {
  EXPECT_EXIT(std::exit(int((numpy::array({2.0f}) * 3.0f).to_vector<float>()[0])),
              ::testing::ExitedWithCode(6), "");
}

// A gradient's seed is a constant core makes while tracing on a ShapeDtypeStruct.
TEST_F(BackendInstall, FirstValueAShapeDtypeStructLoweredThroughGrad) {
  auto f = [](const Array& x) { return numpy::sum(numpy::sin(x)); };
  EXPECT_EXIT(
      {
        const Compiled c = jit(grad(f)).lower(ShapeDtypeStruct({4}, DType::float32)).compile();
        std::exit(c.as_text().find("cos") == std::string::npos ? 1 : 7);
      },
      ::testing::ExitedWithCode(7), "");
}

// Every public entry point of support/first_calls.h as the first call of its own process,
// on 8 devices: it gives the right value, or the parax::Error JAX's call raises.
class FirstCallOfAProcess : public ::testing::TestWithParam<std::string> {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

TEST_P(FirstCallOfAProcess, GivesAValueOrAParaxError) {
  const testing::FirstCall& call = testing::first_call(GetParam());
  for (uint64_t seed : {1, 2}) {
    EXPECT_EXIT(
        {
          setenv("PARAX_NUM_CPU_DEVICES", "8", 1);
          std::exit(testing::run_first_call(call, seed));
        },
        ::testing::ExitedWithCode(call.expected), "")
        << "seed " << seed;
  }
}

std::vector<std::string> first_call_names() {
  std::vector<std::string> names;
  for (const testing::FirstCall& c : testing::first_calls()) names.push_back(c.name);
  return names;
}

INSTANTIATE_TEST_SUITE_P(EntryPoints, FirstCallOfAProcess, ::testing::ValuesIn(first_call_names()),
                         [](const auto& info) { return info.param; });

}  // namespace
}  // namespace parax
