#include "base/check.h"

#include <cstdio>
#include <cstdlib>

namespace parax::detail {

// An internal invariant broke: this is a parax bug, not a user error, so abort with
// the location rather than throw something a caller might swallow.
void check_failed(const char* file, int line, const char* cond, const std::string& msg) {
  std::fprintf(stderr, "parax internal error: %s:%d: CHECK(%s) failed %s\n", file, line, cond,
               msg.c_str());
  std::abort();
}

}  // namespace parax::detail
