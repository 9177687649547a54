// The rows of the gradient sweep, shared by its legs: each file that checks jvp rules
// against finite differences exports its rows here, so that vjp_jvp_test.cpp checks
// reverse mode (linearize + transpose) against forward mode at exactly the same points.
#pragma once

#include <string>
#include <vector>

#include "core/primitive.h"
#include "core/program.h"
#include "parax/array.h"

namespace parax::sweep {

// One application of a primitive: its operands (the primal point), params, and the
// operands differentiated (floating ones only; the others stay fixed).
struct GradCase {
  std::string name;
  core::Prim prim;
  std::vector<Array> operands;
  core::Params params;
  std::vector<bool> diff;
};

// Returns the rows of elementwise_grad_test.cpp (float64 operands).
std::vector<GradCase> elementwise_grad_cases();
// Returns the rows of structural_grad_test.cpp (float64 operands).
std::vector<GradCase> structural_grad_cases();

}  // namespace parax::sweep
