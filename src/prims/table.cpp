// Builds the rule table from the primitive list: every primitive's file defines
// `prims::<name>_rules`, and this array is the only place that collects them (no static
// self-registration, which the linker would drop from static libraries).
#include <array>

#include "core/rules.h"

namespace parax::prims {
#define PARAX_PRIM_DECLARE(name, printed, traits) extern const core::PrimRules name##_rules;
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
  return *table[size_t(p)];
}

}  // namespace parax::core
