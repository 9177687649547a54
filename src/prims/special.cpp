// Special functions: log-gamma, digamma, the incomplete gamma function and the gamma sampler's gradient.
// Placeholder rules (issue 15): the owner of this file replaces them.
#include "core/rules.h"

namespace parax::prims {

extern const core::PrimRules lgamma_rules = {};
extern const core::PrimRules digamma_rules = {};
extern const core::PrimRules polygamma_rules = {};
extern const core::PrimRules igamma_rules = {};
extern const core::PrimRules random_gamma_grad_rules = {};

}  // namespace parax::prims
