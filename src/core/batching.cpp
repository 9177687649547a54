#include "core/batching.h"

#include <algorithm>

#include "base/check.h"
#include "core/autodiff.h"
#include "core/source_site.h"
#include "core/trace.h"
#include "parax/lax.h"

namespace parax::core {
namespace {

// True when `e` is a collective over the named axis, or holds a program (a loop body, a
// branch) with one: it needs its rule even when no operand is batched (psum of a shared
// value multiplies it by the axis size; axis_index differs per batch element).
bool over_axis(const Eqn& e, const std::string& name) {
  if (name.empty()) return false;
  for (const auto& sub : sub_programs(e)) {
    for (const Eqn& inner : sub->eqns) {
      if (over_axis(inner, name)) return true;
    }
  }
  if (!has_trait(e.prim, kNamedAxes)) return false;
  const auto& axes = e.params.get<std::vector<std::string>>("axes");
  return std::find(axes.begin(), axes.end(), name) != axes.end();
}

Array squeeze_front(const Array& x) { return lax::squeeze(x, {0}); }

Array element(const Array& x, int64_t b) {
  const Shape& shape = x.shape();
  std::vector<int64_t> start(shape.size(), 0), limit(shape.begin(), shape.end());
  start[0] = b;
  limit[0] = b + 1;
  return squeeze_front(lax::slice(x, std::move(start), std::move(limit)));
}

Array stack(const std::vector<Array>& parts) {
  std::vector<Array> expanded;
  for (const Array& p : parts) {
    expanded.push_back(lax::expand_dims(p, {0}));
  }
  if (expanded.size() == 1) return expanded[0];
  return lax::concatenate(expanded, 0);
}

}  // namespace

Array move_batch_dim(const Array& x, int dim, int to, int64_t size) {
  const Shape& shape = x.shape();
  if (dim == kNotMapped) {
    Shape out(shape.begin(), shape.end());
    out.insert(out.begin() + to, size);
    std::vector<int64_t> dims;
    for (int64_t d = 0; d < int64_t(out.size()); ++d) {
      if (d != to) dims.push_back(d);
    }
    return lax::broadcast_in_dim(x, std::move(out), std::move(dims));
  }
  if (dim == to) return x;
  std::vector<int64_t> perm;
  for (int64_t d = 0; d < int64_t(shape.size()); ++d) {
    if (d != dim) perm.push_back(d);
  }
  perm.insert(perm.begin() + to, dim);
  return lax::transpose(x, std::move(perm));
}

Batched batched_at_front(std::vector<Array> outs) {
  std::vector<int> dims(outs.size(), 0);
  return Batched{std::move(outs), std::move(dims)};
}

Batched batch_by_loop(Prim prim, std::span<const Array> in, std::span<const int> dims,
                      const Params& params, const BatchAxis& axis) {
  std::vector<Array> front;
  std::vector<Aval> element_avals;
  for (size_t i = 0; i < in.size(); ++i) {
    front.push_back(dims[i] == kNotMapped ? in[i] : batch_first(in[i], dims[i], axis.size));
    Aval a = aval_of(in[i]);
    if (dims[i] != kNotMapped) a.shape.erase(a.shape.begin() + dims[i]);
    element_avals.push_back(a);
  }
  if (axis.size == 0) {  // nothing to apply it to: empty results of the right types
    std::vector<Array> outs;
    for (Aval a : abstract_eval(prim, element_avals, params)) {
      a.shape.insert(a.shape.begin(), 0);
      outs.push_back(zeros(a));
    }
    return batched_at_front(std::move(outs));
  }
  std::vector<std::vector<Array>> per_output;
  for (int64_t b = 0; b < axis.size; ++b) {
    std::vector<Array> args;
    for (size_t i = 0; i < in.size(); ++i) {
      args.push_back(dims[i] == kNotMapped ? in[i] : element(front[i], b));
    }
    std::vector<Array> outs = bind(prim, args, params);
    per_output.resize(outs.size());
    for (size_t r = 0; r < outs.size(); ++r) per_output[r].push_back(outs[r]);
  }
  std::vector<Array> outs;
  for (const auto& parts : per_output) outs.push_back(stack(parts));
  return batched_at_front(std::move(outs));
}

Batched vmap_program(const Program& p, std::span<const Array> inputs, std::span<const int> dims,
                     const BatchAxis& axis) {
  // Rules that combine the vmapped axis with other names look their sizes up.
  AxisScope scope(AxisFrame{axis.name, axis.size, false});
  std::vector<Array> value(p.avals.size());
  std::vector<int> dim(p.avals.size(), kNotMapped);
  std::vector<int> in_vars(p.constvars);
  in_vars.insert(in_vars.end(), p.invars.begin(), p.invars.end());
  PARAX_CHECK(inputs.size() == in_vars.size() && dims.size() == in_vars.size(),
              "vmap_program: one value and one batch dimension per input");
  for (size_t i = 0; i < in_vars.size(); ++i) {
    value[size_t(in_vars[i])] = inputs[i];
    dim[size_t(in_vars[i])] = dims[i];
  }
  auto val = [&](const Atom& a) {
    return a.is_literal() ? literal_array(*a.literal) : value[size_t(a.var)];
  };
  auto dim_of = [&](const Atom& a) { return a.is_literal() ? kNotMapped : dim[size_t(a.var)]; };
  for (const Eqn& e : p.eqns) {
    const SiteScope at(e.site);
    std::vector<Array> ins;
    std::vector<int> ds;
    bool any = false;
    for (const Atom& a : e.inputs) {
      ins.push_back(val(a));
      ds.push_back(dim_of(a));
      any = any || ds.back() != kNotMapped;
    }
    Batched r;
    if (!any && !over_axis(e, axis.name)) {
      r.outs = bind(e.prim, ins, e.params);
      r.dims.assign(r.outs.size(), kNotMapped);
    } else if (BatchFn rule = rules(e.prim).batch) {
      r = rule(ins, ds, e.params, axis);
    } else {
      r = batch_by_loop(e.prim, ins, ds, e.params, axis);
    }
    PARAX_CHECK(r.outs.size() == e.outputs.size() && r.dims.size() == e.outputs.size(),
                "batching rule of " + std::string(prim_name(e.prim)) + " returned the wrong arity");
    for (size_t k = 0; k < e.outputs.size(); ++k) {
      value[size_t(e.outputs[k])] = r.outs[k];
      dim[size_t(e.outputs[k])] = r.dims[k];
    }
  }
  Batched out;
  for (const Atom& a : p.outvars) {
    out.outs.push_back(val(a));
    out.dims.push_back(dim_of(a));
  }
  return out;
}

namespace {
thread_local std::vector<AxisFrame> axis_stack;
}

AxisScope::AxisScope(AxisFrame frame) {
  if (frame.name.empty()) return;
  axis_stack.push_back(std::move(frame));
  pushed_ = true;
}

AxisScope::~AxisScope() {
  if (pushed_) axis_stack.pop_back();
}

const AxisFrame* lookup_axis(const std::string& name) {
  for (auto it = axis_stack.rbegin(); it != axis_stack.rend(); ++it) {
    if (it->name == name) return &*it;
  }
  return nullptr;
}

const AxisFrame& find_axis(const std::string& name) {
  if (const AxisFrame* f = lookup_axis(name)) return *f;
  std::string names;
  for (const AxisFrame& f : axis_stack) names += (names.empty() ? "'" : ", '") + f.name + "'";
  throw NameError("unbound axis name: " + name +
                  ". The following axis names (e.g. defined by pmap) are available to collective "
                  "operations: [" +
                  names + "]");
}

std::vector<AxisFrame> bound_axes() { return axis_stack; }

}  // namespace parax::core
