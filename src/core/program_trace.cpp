#include "core/program_trace.h"

#include <cstring>

#include "base/check.h"
#include "base/dtype_dispatch.h"
#include "core/array_value.h"
#include "core/backend.h"
#include "core/rules.h"
#include "core/source_site.h"

namespace parax::core {
namespace {

// Returns a concrete rank-0 array's value, read from its device by the backend.
double scalar_value(const Array& x, DType dtype) {
  alignas(8) unsigned char bytes[16];
  backend().to_host(x, bytes);
  return dispatch_dtype(dtype, [&](auto tag) {
    decltype(tag) v;
    std::memcpy(&v, bytes, sizeof v);
    return scalar_cast<double>(v);
  });
}

}  // namespace

Array ProgramTrace::new_arg(const Aval& aval) {
  int v = program_.new_var(aval);
  program_.invars.push_back(v);
  return make_tracer(aval, Tracer{this, level(), v});
}

Atom ProgramTrace::atom_of(const Array& x) {
  const Tracer* t = tracer_of(x);
  if (t != nullptr && t->trace == this) return Atom::of(t->var);
  const Aval& aval = aval_of(x);
  // Scalars are written inline, as JAX does, when a double holds them exactly.
  const bool wide_int = aval.dtype == DType::int64 || aval.dtype == DType::uint64;
  if (t == nullptr && aval.shape.empty() && !wide_int) {
    return Atom::of(Literal{aval, scalar_value(x, aval.dtype)});
  }
  const void* key = x.impl().get();
  auto it = const_vars_.find(key);
  if (it != const_vars_.end()) return Atom::of(it->second);
  int v = program_.new_var(aval);
  program_.constvars.push_back(v);
  consts_.push_back(x);
  const_vars_.emplace(key, v);
  return Atom::of(v);
}

std::vector<Array> ProgramTrace::process(Prim p, std::span<const Array> in, const Params& params) {
  Eqn eqn{p, {}, {}, params, current_site()};
  std::vector<Aval> in_avals;
  for (const Array& x : in) {
    eqn.inputs.push_back(atom_of(x));
    in_avals.push_back(aval_of(x));
  }
  std::vector<Aval> out_avals = abstract_eval(p, in_avals, params);
  std::vector<Array> out;
  for (Aval& a : out_avals) {
    int v = program_.new_var(a);
    eqn.outputs.push_back(v);
    out.push_back(make_tracer(std::move(a), Tracer{this, level(), v}));
  }
  program_.eqns.push_back(std::move(eqn));
  return out;
}

ClosedProgram ProgramTrace::finish(std::span<const Array> outputs) {
  for (const Array& x : outputs) program_.outvars.push_back(atom_of(x));
  if (auto err = verify(program_)) PARAX_CHECK(false, "traced program is invalid: " << *err);
  return ClosedProgram{std::make_shared<const Program>(std::move(program_)), std::move(consts_)};
}

std::shared_ptr<const Program> lift_consts(const ClosedProgram& closed) {
  if (closed.program->constvars.empty()) return closed.program;
  Program p = *closed.program;
  p.invars.insert(p.invars.begin(), p.constvars.begin(), p.constvars.end());
  p.constvars.clear();
  return std::make_shared<const Program>(std::move(p));
}

}  // namespace parax::core
