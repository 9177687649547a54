// Forward- and reverse-mode differentiation of programs, as interpreters that bind
// primitives (so they run eagerly or staged inside jit alike, and compose):
//   jvp: evaluate a program on (primal, tangent) pairs with each primitive's jvp rule;
//   vjp = linearize + transpose: trace the jvp with the tangents abstract into a program
//   whose tangent part is linear, evaluate its primal part forward, then run the linear
//   part backward with each linear primitive's transpose rule.
#pragma once

#include <functional>
#include <memory>
#include <span>
#include <vector>

#include "core/program_trace.h"

namespace parax::core {

// Returns (outputs, output tangents) of `p` at (inputs, tangents); inputs are the program's
// constvars then invars. An invalid tangent is a symbolic zero.
std::pair<std::vector<Array>, std::vector<Array>> jvp_program(const Program& p,
                                                              std::span<const Array> inputs,
                                                              std::span<const Array> tangents);

// A function linearized at a point: its outputs there and the linear map of tangents.
struct Linearized {
  std::vector<Array> outs;  // the primal outputs
  std::shared_ptr<const Program> linear;
  std::vector<Array> consts;   // values of `linear`'s constvars
  std::vector<Aval> in_avals;  // the tangent inputs' types
  std::vector<Array> known;    // values of the primal (non-linear) variables
  std::vector<bool> wrt;       // per input: whether it has a tangent
};

// Linearizes `closed` (constvars bound to closed.consts) at `inputs` (its invars), with
// respect to the inputs `wrt` marks (empty: all of them); the others are held constant.
Linearized linearize(const ClosedProgram& closed, std::span<const Array> inputs,
                     const std::vector<bool>& wrt = {});

// Returns the cotangents of the inputs given cotangents of the outputs (invalid: zero);
// an input held constant gets an invalid one.
std::vector<Array> transpose(const Linearized& lin, std::span<const Array> cts);

// A program split by partial evaluation: the part computable from its known inputs, and
// the rest (JAX's partial_eval_jaxpr_nounits with residuals).
struct ProgramSplit {
  // Known inputs -> the known outputs, then the residuals.
  std::shared_ptr<const Program> known;
  // The forwarded known inputs, the residuals, then the unknown inputs -> the unknown outputs.
  std::shared_ptr<const Program> unknown;
  std::vector<bool> out_unknown;  // per output of the program
  std::vector<int> forwarded;     // indices of the known inputs the unknown part reads
};

// Whether the results of a known equation may be residuals (a checkpoint policy, JAX's
// `saveable`); a null one lets every result be saved.
using Saveable = std::function<bool(const Eqn&)>;

// Splits `p` given which of its inputs (constvars then invars) are unknown: an output is
// unknown when it depends on one. Equations with mixed operands split by their
// primitive's partial_eval rule, else go to the unknown part whole. A known value the
// unknown part reads becomes a residual where `saveable` allows it (and for the inputs);
// otherwise the unknown part recomputes it from such values, as JAX's
// partial_eval_jaxpr_custom does under a remat policy.
ProgramSplit partial_eval_program(const Program& p, std::span<const bool> unknown,
                                  const Saveable& saveable = nullptr);

// Returns the cotangents of the inputs of `p` (constvars then invars) marked `linear`,
// given the values of the other inputs, in order, and the cotangents of the outputs
// (invalid: zero; so may the results be). `p` must be linear in those inputs. Binds
// primitives, so it runs eagerly or staged alike.
std::vector<Array> transpose_program(const Program& p, std::span<const bool> linear,
                                     std::span<const Array> values, std::span<const Array> cts);

// Returns zeros (ones) of type `aval`.
Array zeros(const Aval& aval);
Array ones(const Aval& aval);

}  // namespace parax::core
