// What jit(f).lower(args) holds: the traced program and the arguments it was lowered for,
// which api/compiled.cpp hands to the compiler.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/program_trace.h"
#include "parax/jit.h"

namespace parax {

struct Lowered::Impl {
  core::ClosedProgram closed;
  std::shared_ptr<const core::Program> lifted;
  std::vector<Array> args;
  std::vector<bool> donated;  // per arg: given by the jit's donate_argnums
  std::string name;
};

}  // namespace parax
