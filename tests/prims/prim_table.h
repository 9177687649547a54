// The primitive sweep's one table: every test case of every primitive, as data. A row is
// one application of a primitive (operand types and value ranges, params) and the legs
// that check it; each leg's driver iterates over the rows:
//   shape      abstract_eval against the types of the computed results (prim_table_test)
//   values     the kernel against a naive reference (elementwise_test, structural_test,
//              contraction_test: one driver per kind of reference)
//   jvp        the jvp rule against finite differences (grad_legs_test)
//   transpose  the transpose rule by the dot-product test (grad_legs_test)
//   vjp        reverse mode against forward mode, eagerly, under jit, of a jitted f
//   batch      the batching rule against the loop over the batch (vmap_batching_test)
//   shard      sharded against unsharded over several meshes and specs on 8 devices
//              (compiler/sharded_sweep_test)
//   fuse       fused against unfused (compiler/fusion_test), elementwise rows only
// Adding a primitive: one row in core/primitive.h, one file in src/prims/, rows here;
// prim_table_test fails for a primitive with no row unless exempt() gives the reason.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <random>
#include <string>
#include <string_view>
#include <vector>

#include "core/primitive.h"
#include "core/program.h"
#include "parax/array.h"

namespace parax::prim_table {

// One operand: the type of one value (without any batch dimension) and where its values
// come from: uniform in [lo, hi] (integers: the integers in it), or `values` when given.
struct Operand {
  Shape shape;
  DType dtype = DType::float32;
  double lo = -2;
  double hi = 2;
  std::vector<double> values = {};
};

enum Leg : uint32_t {
  kShape = 1u << 0,
  kValues = 1u << 1,
  kJvp = 1u << 2,
  kTranspose = 1u << 3,
  kVjp = 1u << 4,
  kBatch = 1u << 5,
  kShard = 1u << 6,
  kFuse = 1u << 7,
};

struct Case;

// Naive references of the values leg for elementwise rows (long double holds every value
// of every dtype exactly; __int128 every integer result before wrapping).
using Real = long double;
// Element `index` (row-major) of array operand `input` (operands with given values, the
// trailing start indices, are not counted).
struct Source {
  size_t input;
  int64_t index;
};
struct Reference {
  Real (*unary)(Real) = nullptr;  // floating dtypes, over [lo, hi]
  Real lo = 0, hi = 0;
  Real (*binary)(Real, Real) = nullptr;  // floating dtypes, over a pool of pairs
  Real ulps = 0;                         // 0: correctly rounded
  // Every integer dtype the primitive takes; unary rows ignore the second argument.
  __int128 (*integer)(DType, __int128, __int128) = nullptr;
  bool (*compare)(Real, Real) = nullptr;  // every dtype
  // Data movement: where each element of the result (of type out_shape) comes from, bit
  // for bit, over several dtypes.
  std::function<Source(const std::vector<int64_t>& out)> index = nullptr;
  Shape out_shape = {};
  // Everything else: the results of types `out`, one after the other, computed naively in
  // double from the operands' values (integer results wrap, bool results are "any");
  // `scale` gets each element's sum of magnitudes, for a relative tolerance, or 0 where the
  // kernel must give the reference rounded to the result's dtype exactly.
  std::vector<double> (*naive)(const Case& c, const std::vector<std::vector<double>>& in,
                               const std::vector<core::Aval>& out,
                               std::vector<double>& scale) = nullptr;
  // The naive leg runs the row as written, then with each of these dtypes in place of the
  // first operand's (in every operand of that dtype).
  std::vector<DType> dtypes = {};
};

// How the transpose leg fixes the operands that are not linear: keep their values (the
// coefficients of mul, div, dot_general, sort's keys) or, for floating ones, zeros (where
// the primitive adds them in: a constant term would make the map affine).
enum class Fixed { keep, zero };

struct Case {
  std::string name;
  core::Prim prim;
  std::vector<Operand> operands;
  core::Params params;
  uint32_t legs = 0;
  // jvp and vjp: the differentiated operands (empty: every floating one).
  std::vector<bool> diff = {};
  // transpose: each set of operands taken as linear (empty: {diff}).
  std::vector<std::vector<bool>> linear = {};
  Fixed fixed = Fixed::keep;
  bool blank = false;           // transpose also with untyped (invalid) placeholders
  size_t first_linear_out = 0;  // transpose: earlier results do not depend on linear operands
  bool zero_tangent = false;    // jvp: the rule must return a symbolic zero
  bool keep_dtypes = false;     // jvp/vjp/transpose run in float64 unless this is set
  double tolerance = 0;         // batch and shard: relative; 0 = exact
  Reference ref = {};

  bool has(Leg l) const { return (legs & l) != 0; }
};

// Returns every row.
const std::vector<Case>& cases();

// Primitives without rows, by printed name, and why.
const std::map<std::string_view, std::string_view>& exempt();

// Primitives with rows but none for one leg, by leg and printed name, and why. (The
// transpose leg applies to linear primitives only, the fuse leg to elementwise ones.)
const std::map<Leg, std::map<std::string_view, std::string_view>>& leg_exempt();

// Returns the operands differentiated by the jvp and vjp legs.
std::vector<bool> diff_of(const Case& c);

// Returns values drawn for operand `o` with shape `shape` (its own when `values` are given).
Array draw(const Operand& o, const Shape& shape, std::mt19937& rng);
// As draw, with floating operands in float64 unless the row keeps its dtypes.
Array draw_for_grad(const Case& c, size_t i, std::mt19937& rng);

// Returns the width in bits of integer dtype t.
int bits_of(DType t);
// Reduces v modulo 2^bits_of(t) into t's range (integer arithmetic as the kernels wrap it).
__int128 wrap(DType t, __int128 v);

}  // namespace parax::prim_table
