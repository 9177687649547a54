// scatter and its combining forms, with JAX's ScatterDimensionNumbers.
// Placeholder rules (issue 15): the owner of this file replaces them.
#include "core/rules.h"

namespace parax::prims {

extern const core::PrimRules scatter_rules = {};
extern const core::PrimRules scatter_add_rules = {};
extern const core::PrimRules scatter_mul_rules = {};
extern const core::PrimRules scatter_min_rules = {};
extern const core::PrimRules scatter_max_rules = {};

}  // namespace parax::prims
