// What the multi-process workers (multihost_api_child.cpp, jax_multiprocess_child.cpp)
// share: each check prints `ok <what>` or `FAIL <what>: <detail>`, and the worker exits
// non-zero when any failed.
#pragma once

#include <cstdint>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include "parax/errors.h"

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

// Prints values as a list, for failure details.
template <class T>
std::string text(const std::vector<T>& v) {
  std::ostringstream os;
  os << "[";
  for (size_t i = 0; i < v.size(); ++i) os << (i ? ", " : "") << v[i];
  return os.str() + "]";
}

// offset, offset + 1, ... (n values).
inline std::vector<float> iota(int64_t n, float offset = 0.0f) {
  std::vector<float> v;
  for (int64_t i = 0; i < n; ++i) v.push_back(float(i) + offset);
  return v;
}

// The message of the parax::Error f raises, or "" when it raises none.
template <class F>
std::string error_of(F&& f) {
  try {
    f();
  } catch (const Error& e) {
    return e.what();
  }
  return "";
}

}  // namespace parax::test_support
