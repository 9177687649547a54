// Windowed reductions (pooling) and the selections their gradients use.
// Placeholder rules (issue 15): the owner of this file replaces them.
#include "core/rules.h"

namespace parax::prims {

extern const core::PrimRules reduce_window_sum_rules = {};
extern const core::PrimRules reduce_window_max_rules = {};
extern const core::PrimRules reduce_window_min_rules = {};
extern const core::PrimRules select_and_scatter_add_rules = {};
extern const core::PrimRules select_and_gather_add_rules = {};

}  // namespace parax::prims
