// Binding primitives, and the interpreters that give binding its meaning. A thread-local
// stack holds the active interpreters (autodidax's "current trace" chosen by context):
// `bind` hands an equation to the innermost interpreter that owns one of its inputs, or
// to the top of the stack, or, with an empty stack, evaluates it eagerly through the
// installed Backend (core/backend.h: eager is jit of one primitive).
#pragma once

#include <memory>
#include <span>
#include <vector>

#include "core/program.h"
#include "parax/array.h"

namespace parax::core {

class Trace {
 public:
  virtual ~Trace() = default;
  // Applies `p` to `in` (some of which may belong to other interpreters) and returns the
  // results as arrays of this interpreter.
  virtual std::vector<Array> process(Prim p, std::span<const Array> in, const Params& params) = 0;
  int level() const { return level_; }

 private:
  friend class TraceScope;
  int level_ = 0;
};

// A value owned by an interpreter: the Array handle of a traced value points at one.
struct Tracer {
  Trace* trace = nullptr;
  int level = 0;
  int var = -1;  // the variable in the interpreter's program
};

// Applies primitive `p`; returns its results. Checks operand types via the rule table.
std::vector<Array> bind(Prim p, std::vector<Array> in, Params params = {});
// bind for single-result primitives.
Array bind1(Prim p, std::vector<Array> in, Params params = {});

// Pushes `trace` for the lifetime of the scope.
class TraceScope {
 public:
  explicit TraceScope(Trace& trace);
  ~TraceScope();
  TraceScope(const TraceScope&) = delete;
  TraceScope& operator=(const TraceScope&) = delete;

 private:
  Trace& trace_;
};

// Returns the innermost active interpreter, or nullptr when evaluating eagerly.
Trace* current_trace();

// Returns the tracer behind `x`, or nullptr for a concrete array.
const Tracer* tracer_of(const Array& x);
// Returns an abstract Array of type `aval` owned by `tracer`'s interpreter.
Array make_tracer(Aval aval, Tracer tracer);
// Returns x's type, and those of xs.
const Aval& aval_of(const Array& x);
std::vector<Aval> avals_of(std::span<const Array> xs);

// Returns a concrete rank-0 array holding a literal's value.
Array literal_array(const Literal& l);

}  // namespace parax::core
