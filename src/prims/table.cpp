// Builds the rule table from the primitive list: every primitive's file defines
// `prims::<name>_rules`, and this array is the only place that collects them (no static
// self-registration, which the linker would drop from static libraries).
#include <array>

#include "core/rules.h"
#include "parax/errors.h"

#include <string>

namespace parax::prims {
// Weak while the primitive files are being written: a missing one reads as null.
#define PARAX_PRIM_DECLARE(name, printed, traits) \
  extern const core::PrimRules name##_rules __attribute__((weak));
PARAX_PRIMITIVES(PARAX_PRIM_DECLARE)
#undef PARAX_PRIM_DECLARE
}  // namespace parax::prims

namespace parax::core {

const PrimRules& rules(Prim p) {
  static const std::array<const PrimRules*, kNumPrims> table = {{
#define PARAX_PRIM_ENTRY(name, printed, traits) &prims::name##_rules,
      PARAX_PRIMITIVES(PARAX_PRIM_ENTRY)
#undef PARAX_PRIM_ENTRY
  }};
  const PrimRules* r = table[size_t(p)];
  if (r == nullptr) {
    throw NotImplementedError("primitive " + std::string(prim_name(p)) + " has no rules yet");
  }
  return *r;
}

}  // namespace parax::core
