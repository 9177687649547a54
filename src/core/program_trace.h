// The staging interpreter: records every primitive applied to its tracers as an equation
// of a Program (JAX's DynamicJaxprTrace). Concrete arrays and values of outer traces that
// the traced function captures become constants of the program; scalar constants are
// inlined as literals.
#pragma once

#include <map>
#include <memory>
#include <vector>

#include "core/trace.h"

namespace parax::core {

// A program with the values of its constvars.
struct ClosedProgram {
  std::shared_ptr<const Program> program;
  std::vector<Array> consts;
};

class ProgramTrace final : public Trace {
 public:
  // Adds an input of type `aval` and returns its tracer.
  Array new_arg(const Aval& aval);
  std::vector<Array> process(Prim p, std::span<const Array> in, const Params& params) override;
  // Ends tracing with `outputs` as the program's results.
  ClosedProgram finish(std::span<const Array> outputs);

 private:
  Atom atom_of(const Array& x);
  Program program_;
  std::vector<Array> consts_;
  std::map<const void*, int> const_vars_;  // captured array impl -> constvar
};

// Traces `f` on abstract inputs of types `in` and returns the closed program; `f` maps
// input tracers to output arrays.
template <class F>
ClosedProgram trace_to_program(std::span<const Aval> in, F&& f) {
  ProgramTrace trace;
  std::vector<Array> args;
  for (const Aval& a : in) args.push_back(trace.new_arg(a));
  TraceScope scope(trace);
  std::vector<Array> outs = f(args);
  return trace.finish(outs);
}

// Returns `closed` with its constvars turned into leading invars (for pjit's sub-program).
std::shared_ptr<const Program> lift_consts(const ClosedProgram& closed);

}  // namespace parax::core
