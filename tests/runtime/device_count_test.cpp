// The device count comes from set_num_cpu_devices, PARAX_NUM_CPU_DEVICES, XLA_FLAGS, else
// 1, in that order. Each case runs in a fresh process (a gtest death test re-executes the
// binary), because the count is fixed once devices exist.
#include <gtest/gtest.h>

#include <cstdlib>

#include "parax/parax.h"

namespace parax {
namespace {

class DeviceCount : public ::testing::Test {
 protected:
  void SetUp() override { GTEST_FLAG_SET(death_test_style, "threadsafe"); }
};

[[noreturn]] void exit_with_count() { std::exit(device_count()); }

TEST_F(DeviceCount, DefaultsToOne) {
  EXPECT_EXIT(
      {
        unsetenv("PARAX_NUM_CPU_DEVICES");
        unsetenv("XLA_FLAGS");
        exit_with_count();
      },
      ::testing::ExitedWithCode(1), "");
}

TEST_F(DeviceCount, FromXlaFlags) {
  EXPECT_EXIT(
      {
        unsetenv("PARAX_NUM_CPU_DEVICES");
        setenv("XLA_FLAGS", "--xla_cpu_foo=1 --xla_force_host_platform_device_count=6", 1);
        exit_with_count();
      },
      ::testing::ExitedWithCode(6), "");
}

TEST_F(DeviceCount, EnvironmentBeatsXlaFlags) {
  EXPECT_EXIT(
      {
        setenv("PARAX_NUM_CPU_DEVICES", "3", 1);
        setenv("XLA_FLAGS", "--xla_force_host_platform_device_count=6", 1);
        exit_with_count();
      },
      ::testing::ExitedWithCode(3), "");
}

TEST_F(DeviceCount, SetNumCpuDevicesBeatsEverything) {
  EXPECT_EXIT(
      {
        setenv("PARAX_NUM_CPU_DEVICES", "3", 1);
        config::set_num_cpu_devices(16);
        exit_with_count();
      },
      ::testing::ExitedWithCode(16), "");
}

TEST_F(DeviceCount, CannotChangeAfterDevicesExist) {
  EXPECT_EXIT(
      {
        config::set_num_cpu_devices(2);
        devices();
        try {
          config::set_num_cpu_devices(4);
        } catch (const RuntimeError& e) {
          std::exit(std::string(e.what()).find("already fixed") != std::string::npos ? 42 : 1);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST_F(DeviceCount, BadEnvironmentValueIsAnError) {
  EXPECT_EXIT(
      {
        setenv("PARAX_NUM_CPU_DEVICES", "eight", 1);
        try {
          devices();
        } catch (const ValueError&) {
          std::exit(42);
        }
        std::exit(1);
      },
      ::testing::ExitedWithCode(42), "");
}

TEST(Config, Flags) {
  EXPECT_TRUE(config::read("jax_threefry_partitionable"));
  auto e = config::epoch();
  config::update("jax_threefry_partitionable", false);
  EXPECT_FALSE(config::read("jax_threefry_partitionable"));
  EXPECT_NE(config::epoch(), e);
  config::update("jax_threefry_partitionable", true);
  EXPECT_THROW(config::update("jax_no_such_flag", true), ValueError);
  EXPECT_THROW(config::set_num_cpu_devices(0), ValueError);
}

}  // namespace
}  // namespace parax
