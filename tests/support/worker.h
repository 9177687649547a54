// What the multi-process workers (multihost_api_child.cpp, jax_multiprocess_child.cpp)
// share: each check prints `ok <what>` or `FAIL <what>: <detail>`, and the worker exits
// non-zero when any failed.
#pragma once

#include <iostream>
#include <string>

namespace parax::test_support {

inline int& worker_failures() {
  static int failures = 0;
  return failures;
}

inline void check(bool ok, const std::string& what, const std::string& detail = "") {
  std::cout << (ok ? "ok " : "FAIL ") << what << (ok || detail.empty() ? "" : ": " + detail)
            << std::endl;
  worker_failures() += ok ? 0 : 1;
}

}  // namespace parax::test_support
