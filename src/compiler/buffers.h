// plan-buffers: where each instruction of a per-device program writes its results and
// which values the executor lets go of after it, worked out once with the plan instead of
// by every executor that loads it. Plain data: it prints under the program (buffers_text)
// and a verifier checks it against the program after the pass.
#pragma once

#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "core/program.h"

namespace parax::compiler {

struct BufferPlan;

// Where one result of an instruction goes, tried in this order; a fresh buffer else.
struct ResultBuffer {
  // The program result it is: a caller that lends a buffer for that result (a scan lends
  // each step its slot of the stacked ys) has it written there. -1: none.
  int result = -1;
  // The operand (index into the instruction's inputs) whose buffer it may overwrite: an
  // elementwise kernel reads element i before writing it, and the operand dies here.
  // The executor still takes the buffer only when nothing else holds it. -1: none.
  int reuse = -1;
  bool operator==(const ResultBuffer&) const = default;
};

// One instruction's plan.
struct BufferStep {
  std::vector<ResultBuffer> results;  // per result of the instruction
  // Variables released right after it: those it reads last, and its results nothing
  // reads. Program results are never released.
  std::vector<int> frees;
  // Control flow: the plan of each program it runs, in core::sub_programs' order.
  std::vector<std::shared_ptr<const BufferPlan>> subs;
};

struct BufferPlan {
  std::vector<BufferStep> steps;  // per equation of the program
  // Per program input (constvars, then invars), or empty: the caller gave the input's
  // buffers up (jit's donate_argnums), so it may be written over once read for the last time.
  std::vector<bool> donated;
};

// Plans `p`'s buffers and, inside out, those of its control flow's sub-programs.
// `donated`, per program input (constvars, then invars) or empty, marks inputs whose
// buffers the caller gave up.
BufferPlan plan_buffers(const core::Program& p, std::vector<bool> donated = {});

// Returns the plan of `sub`, one of the programs that equation `e` runs.
const std::shared_ptr<const BufferPlan>& sub_plan(const core::Program& p, const BufferPlan& plan,
                                                  size_t e, const core::Program& sub);

// Checks that `plan` fits `p` and is safe: every value released once, after its last
// read, program results never; a reused operand dies at its equation, has the result's
// shape and size and belongs to no one else (a program input only if donated); a result
// slot is that result's alone.
// Returns the first violation, or nullopt.
std::optional<std::string> verify_buffers(const core::Program& p, const BufferPlan& plan);

// Returns the plan as `#` lines naming values as core::to_string names them (so they read
// under the program's text, and the program still parses), e.g.
//   # buffers
//   #   donated: a
//   #   0: c new
//   #   1: d reuses c; frees c
std::string buffers_text(const core::Program& p, const BufferPlan& plan);

}  // namespace parax::compiler
