#include "core/backend.h"

#include <atomic>

#include "base/check.h"

namespace parax::core {
namespace {
std::atomic<Backend*> g_backend{nullptr};
}  // namespace

void install_backend(Backend& backend) { g_backend.store(&backend); }

Backend* installed_backend() { return g_backend.load(); }

Backend& backend() {
  Backend* b = g_backend.load();
  PARAX_CHECK(b != nullptr,
              "no backend installed: concrete arrays are made by the runtime "
              "(runtime/eager.h), which installs one first");
  return *b;
}

}  // namespace parax::core
