// Batching (vmap) of programs, as an interpreter that binds primitives: each equation with
// a batched operand is replaced by its primitive's batching rule, so the result runs
// eagerly or staged alike and composes with jit, grad and itself. Also the named axes
// that enclosing vmap, pmap and shard_map bind while a function is traced, which
// collectives look up.
#pragma once

#include <optional>
#include <span>
#include <string>
#include <vector>

#include "core/rules.h"

namespace parax::core {

// Returns `p` evaluated on inputs (its constvars then invars) that carry a batch
// dimension at `dims[i]` (kNotMapped: shared by all batch elements): the outputs with
// their batch dimensions.
Batched vmap_program(const Program& p, std::span<const Array> inputs, std::span<const int> dims,
                     const BatchAxis& axis);

// The default rule: applies `prim` to each batch element and stacks the results.
Batched batch_by_loop(Prim prim, std::span<const Array> in, std::span<const int> dims,
                      const Params& params, const BatchAxis& axis);

// Helpers for batching rules (they bind primitives).
// Returns x with its batch dimension `dim` moved to `to`; an unbatched x (kNotMapped) is
// broadcast along a new dimension `to` of size `size`.
Array move_batch_dim(const Array& x, int dim, int to, int64_t size);
// Returns x with its batch dimension first (broadcasting an unbatched x).
inline Array batch_first(const Array& x, int dim, int64_t size) {
  return move_batch_dim(x, dim, 0, size);
}
// Returns results batched at dimension 0.
Batched batched_at_front(std::vector<Array> outs);

// One named axis bound by an enclosing transform while its function is traced.
struct AxisFrame {
  std::string name;
  int64_t size = 0;
  bool manual = false;  // bound by pmap or shard_map (a mesh axis), else by vmap
};

// Binds a named axis for the lifetime of the scope (no-op for an empty name).
class AxisScope {
 public:
  explicit AxisScope(AxisFrame frame);
  ~AxisScope();
  AxisScope(const AxisScope&) = delete;
  AxisScope& operator=(const AxisScope&) = delete;

 private:
  bool pushed_ = false;
};

// Returns the innermost frame binding `name`, or throws NameError as JAX does
// ("unbound axis name: j. The following axis names ... are available ...: ['i']").
const AxisFrame& find_axis(const std::string& name);
// Returns the innermost frame binding `name`, or nullptr.
const AxisFrame* lookup_axis(const std::string& name);
// Returns the frames bound now, outermost first.
std::vector<AxisFrame> bound_axes();

}  // namespace parax::core
