// conv_general_dilated with JAX's ConvDimensionNumbers.
// Placeholder rules (issue 15): the owner of this file replaces them.
#include "core/rules.h"

namespace parax::prims {

extern const core::PrimRules conv_general_dilated_rules = {};

}  // namespace parax::prims
