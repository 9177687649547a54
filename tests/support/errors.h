// Checks that a statement throws exception type E whose message is exactly `msg`.
#pragma once

#include <gtest/gtest.h>

#include <string>

#define EXPECT_THROW_MSG(stmt, E, msg)                                          \
  do {                                                                          \
    try {                                                                       \
      (void)(stmt);                                                             \
      ADD_FAILURE() << "expected " #E " from " #stmt;                           \
    } catch (const E& parax_error_) {                                           \
      EXPECT_EQ(std::string(parax_error_.what()), std::string(msg)) << #stmt;   \
    }                                                                           \
  } while (0)
