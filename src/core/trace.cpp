#include "core/trace.h"

#include <algorithm>

#include "core/array_value.h"
#include "core/backend.h"
#include "core/rules.h"

namespace parax::core {
namespace {

thread_local std::vector<Trace*> g_stack;

bool on_stack(const Trace* t) {
  return std::find(g_stack.begin(), g_stack.end(), t) != g_stack.end();
}

}  // namespace

TraceScope::TraceScope(Trace& trace) : trace_(trace) {
  trace.level_ = int(g_stack.size()) + 1;
  g_stack.push_back(&trace);
}

TraceScope::~TraceScope() { g_stack.pop_back(); }

Trace* current_trace() { return g_stack.empty() ? nullptr : g_stack.back(); }

const Tracer* tracer_of(const Array& x) { return detail::impl_of(x).tracer.get(); }

const Aval& aval_of(const Array& x) { return detail::impl_of(x).aval; }

std::vector<Aval> avals_of(std::span<const Array> xs) {
  std::vector<Aval> out;
  out.reserve(xs.size());
  for (const Array& x : xs) out.push_back(aval_of(x));
  return out;
}

Array make_tracer(Aval aval, Tracer tracer) {
  auto impl = std::make_shared<detail::ArrayImpl>();
  impl->aval = std::move(aval);
  impl->tracer = std::make_shared<const Tracer>(tracer);
  return Array(std::move(impl));
}

std::vector<Array> bind(Prim p, std::vector<Array> in, Params params) {
  // The innermost interpreter wins: the top of the stack (which stages everything, as
  // JAX's omnistaging does) unless an input belongs to a deeper one.
  Trace* trace = current_trace();
  for (const Array& x : in) {
    const Tracer* t = tracer_of(x);
    if (t == nullptr) continue;
    if (!on_stack(t->trace)) {
      throw ValueError(
          "Encountered an unexpected tracer: a value traced by a transformation that has "
          "finished (of type " +
          aval_of(x).str() + ") was used by " + std::string(prim_name(p)) +
          ". Values computed inside jit/grad/vmap must be returned, not stored in captures.");
    }
    if (trace == nullptr || t->level > trace->level()) trace = t->trace;
  }
  if (trace == nullptr) return backend().eval_eqn(p, in, params);
  return trace->process(p, in, params);
}

Array bind1(Prim p, std::vector<Array> in, Params params) {
  std::vector<Array> out = bind(p, std::move(in), std::move(params));
  return std::move(out.at(0));
}

}  // namespace parax::core
