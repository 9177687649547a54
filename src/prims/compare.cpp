// The comparison primitives: operands of one dtype, a bool result. IEEE semantics, so
// every comparison with NaN is false except ne. The last column names the vector loop.
// Their results are bool, so their tangents are zero.
#include "prims/autodiff_util.h"
#include "prims/elementwise.h"

namespace parax::prims {
namespace {

#define PARAX_COMPARE_ROWS(X)                   \
  X(eq, kAnyDtype, true, a == b, CompareOp::eq) \
  X(ne, kAnyDtype, true, a != b, CompareOp::ne) \
  X(lt, kAnyDtype, true, a < b, CompareOp::lt)  \
  X(le, kAnyDtype, true, a <= b, CompareOp::le) \
  X(gt, kAnyDtype, true, a > b, CompareOp::gt)  \
  X(ge, kAnyDtype, true, a >= b, CompareOp::ge)

PARAX_COMPARE_ROWS(PARAX_BINARY_OP)

}  // namespace

#define PARAX_COMPARE_RULES(prim, accepts, predicate, expr, simd_op) \
  extern const PrimRules prim##_rules = with_autodiff(binary_rules<prim##_op>, &zero_jvp);
PARAX_COMPARE_ROWS(PARAX_COMPARE_RULES)
#undef PARAX_COMPARE_RULES

}  // namespace parax::prims
