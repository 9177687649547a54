// A fixture for tests that need float64 (or int64), which parax has only with
// jax_enable_x64: turns it on for the test and restores it after.
#pragma once

#include <gtest/gtest.h>

#include "parax/config.h"

namespace parax::testing {

class WithX64 : public ::testing::Test {
 protected:
  void SetUp() override {
    saved_ = config::read("jax_enable_x64");
    config::update("jax_enable_x64", true);
  }
  void TearDown() override { config::update("jax_enable_x64", saved_); }

 private:
  bool saved_ = false;
};

}  // namespace parax::testing
