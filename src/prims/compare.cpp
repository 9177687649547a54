// The comparison primitives: operands of one dtype, a bool result. IEEE semantics, so
// every comparison with NaN is false except ne.
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

#define PARAX_COMPARE_ROWS(X)    \
  X(eq, kAnyDtype, true, a == b) \
  X(ne, kAnyDtype, true, a != b) \
  X(lt, kAnyDtype, true, a < b)  \
  X(le, kAnyDtype, true, a <= b) \
  X(gt, kAnyDtype, true, a > b)  \
  X(ge, kAnyDtype, true, a >= b)

PARAX_COMPARE_ROWS(PARAX_BINARY_OP)

}  // namespace

#define PARAX_COMPARE_RULES(prim, accepts, predicate, expr) \
  extern const PrimRules prim##_rules = binary_rules<prim##_op>;
PARAX_COMPARE_ROWS(PARAX_COMPARE_RULES)
#undef PARAX_COMPARE_RULES

}  // namespace parax::prims
