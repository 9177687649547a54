// Checks that a statement throws exception type E whose message is exactly `msg`.
#pragma once

#include <gtest/gtest.h>

#include <string>
#include <typeinfo>

#define EXPECT_THROW_MSG(stmt, E, msg)                                        \
  do {                                                                        \
    try {                                                                     \
      (void)(stmt);                                                           \
      ADD_FAILURE() << "expected " #E " from " #stmt;                         \
    } catch (const E& parax_error_) {                                         \
      EXPECT_EQ(std::string(parax_error_.what()), std::string(msg)) << #stmt; \
    }                                                                         \
  } while (0)

// Checks that `stmt` throws E (or a subclass) with `text` in its message, and
// reports any other exception by its type and message.
#define EXPECT_THROW_HAS(stmt, E, text)                                              \
  do {                                                                               \
    try {                                                                            \
      (void)(stmt);                                                                  \
      ADD_FAILURE() << "expected " #E " from " #stmt;                                \
    } catch (const E& e_) {                                                          \
      EXPECT_NE(std::string(e_.what()).find(text), std::string::npos)                \
          << #stmt << " threw: " << e_.what();                                       \
    } catch (const std::exception& e_) {                                             \
      ADD_FAILURE() << #stmt << " threw " << typeid(e_).name() << ": " << e_.what(); \
    }                                                                                \
  } while (0)
