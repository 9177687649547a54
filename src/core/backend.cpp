#include "core/backend.h"

#include <atomic>

namespace parax::core {
namespace {
std::atomic<Backend*> g_backend{nullptr};
}  // namespace

void install_backend(Backend& backend) { g_backend.store(&backend); }

Backend* installed_backend() { return g_backend.load(); }

Backend& backend() {
  if (Backend* b = g_backend.load()) return *b;
  return default_backend();
}

}  // namespace parax::core
