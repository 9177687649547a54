// Runs one primitive's CPU kernel on host data, bypassing tracing and the compiler, so
// kernels can be checked against naive references on their own.
#pragma once

#include <cstring>
#include <vector>

#include "core/rules.h"

namespace parax::testing {

struct HostBuffer {
  core::Aval aval;
  std::vector<uint8_t> bytes;

  template <class T>
  static HostBuffer of(Shape shape, const std::vector<T>& values, bool weak = false) {
    HostBuffer b{core::Aval{std::move(shape), dtype_of<T>(), weak}, {}};
    b.bytes.resize(values.size() * sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < values.size(); ++i) b.bytes[i] = values[i] ? 1 : 0;
    } else {
      std::memcpy(b.bytes.data(), values.data(), b.bytes.size());
    }
    return b;
  }
  template <class T>
  std::vector<T> values() const {
    std::vector<T> out(bytes.size() / sizeof(T));
    if constexpr (std::is_same_v<T, bool>) {
      for (size_t i = 0; i < out.size(); ++i) out[i] = bytes[i] != 0;
    } else {
      std::memcpy(out.data(), bytes.data(), bytes.size());
    }
    return out;
  }
};

// Checks types with the primitive's shape rule, then runs its kernel (single device).
std::vector<HostBuffer> run_kernel(core::Prim p, const std::vector<HostBuffer>& in,
                                   const core::Params& params = {});

}  // namespace parax::testing
