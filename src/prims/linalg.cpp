// Dense linear algebra on LAPACK, batched over leading dimensions.
// Placeholder rules (issue 15): the owner of this file replaces them.
#include "core/rules.h"

namespace parax::prims {

extern const core::PrimRules cholesky_rules = {};
extern const core::PrimRules lu_rules = {};
extern const core::PrimRules lu_pivots_to_permutation_rules = {};
extern const core::PrimRules qr_rules = {};
extern const core::PrimRules svd_rules = {};
extern const core::PrimRules eigh_rules = {};
extern const core::PrimRules triangular_solve_rules = {};

}  // namespace parax::prims
