// Internal invariant checks. Never used on user input: that raises parax::Error.
#pragma once

#include <sstream>
#include <string>

namespace parax::detail {
[[noreturn]] void check_failed(const char* file, int line, const char* cond,
                               const std::string& msg);
}  // namespace parax::detail

#define PARAX_CHECK(cond, ...)                                                         \
  do {                                                                                 \
    if (!(cond)) [[unlikely]] {                                                        \
      std::ostringstream parax_check_os_;                                              \
      parax_check_os_ << "" __VA_ARGS__;                                               \
      ::parax::detail::check_failed(__FILE__, __LINE__, #cond, parax_check_os_.str()); \
    }                                                                                  \
  } while (0)

#define PARAX_UNREACHABLE() ::parax::detail::check_failed(__FILE__, __LINE__, "unreachable", "")
