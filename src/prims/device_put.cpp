// device_put: the identity, with the layout (param `sharding`) its result must have. On
// concrete arrays it moves the data, between any devices (its eager rule: one compiled
// program runs on one mesh); traced, the compiler treats it as a layout constraint.
// Its tangent is device_put of the tangent, and its cotangent moves back to where the
// operand was, as JAX's transpose of device_put does. parax's grad traces f before it sees
// data, so the tangent equation carries the primal operand as a second operand, whose
// value is never read: the transpose takes the source layout from it.
#include "core/array_value.h"
#include "core/backend.h"
#include "prims/batching_util.h"
#include "prims/prim_util.h"
#include "sharding/sharding_impl.h"

namespace parax::prims {
namespace {
namespace device_put_impl {

using core::Prim;

std::vector<Aval> shape_rule(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1 || in.size() == 2, "device_put takes an operand (and its source)");
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  PARAX_CHECK(s != nullptr, "device_put needs a sharding");
  s->impl().check_rank(int64_t(in[0].shape.size()));
  return {in[0]};
}

std::vector<Array> eager(std::span<const Array> in, const Params& params) {
  const Sharding& target = *params.get<std::shared_ptr<const Sharding>>("sharding");
  const parax::detail::ArrayImpl& src = parax::detail::concrete_of(in[0], "device_put");
  if (*src.sharding == target) {  // data is immutable: share it
    return {parax::detail::make_array(src.aval, target, true, src.buffers)};
  }
  return {core::backend().relayout(in[0], target)};  // the runtime moves the data
}

// The primal operand rides along (see the file comment).
std::vector<Array> jvp(std::span<const Array> primals, std::span<const Array> tangents,
                       std::span<const Array>, const Params& params) {
  if (!tangents[0].valid()) return {Array()};
  return {core::bind1(Prim::device_put, {tangents[0], primals.back()}, params)};
}

std::vector<Array> transpose(std::span<const Array> cts, std::span<const Array> operands,
                             std::span<const bool> linear, const Params&) {
  std::vector<Array> out(operands.size());
  if (!cts[0].valid()) return out;
  out[0] = cts[0];
  // Back to the source's layout when it is known (concrete); traced, the cotangent's
  // layout is left to the compiler, as JAX's is.
  if (operands.size() == 2 && !linear[1] && core::tracer_of(operands[1]) == nullptr &&
      core::tracer_of(cts[0]) == nullptr) {
    const auto& src = parax::detail::impl_of(operands[1]);
    if (src.sharding && !src.abstract) {
      out[0] = core::bind1(Prim::device_put, {cts[0]},
                           {{"sharding", std::make_shared<const Sharding>(*src.sharding)}});
    }
  }
  return out;
}

// The batch dimension is laid out unsharded (the source operand is dropped: a batched
// value's source layout is not known).
Batched batch(std::span<const Array> in, std::span<const int> dims, const Params& params,
              const BatchAxis&) {
  const int d = dims[0];
  Array x = in[0];
  if (d == core::kNotMapped) return Batched{{core::bind1(Prim::device_put, {x}, params)}, {d}};
  const auto& s = params.get<std::shared_ptr<const Sharding>>("sharding");
  const NamedSharding named = s->to_named(x.ndim() - 1);
  std::vector<SpecEntry> entries = named.spec().entries();
  while (entries.size() < size_t(d)) entries.emplace_back(None);
  entries.insert(entries.begin() + d, SpecEntry(None));
  Params p = params;
  p.set("sharding", std::make_shared<const Sharding>(
                        NamedSharding(named.mesh(), PartitionSpec::from_entries(entries))));
  return Batched{{core::bind1(Prim::device_put, {x}, p)}, {d}};
}

}  // namespace device_put_impl
}  // namespace

extern const PrimRules device_put_rules = {
    .abstract_eval = device_put_impl::shape_rule,
    .sharding_rule = elementwise_sharding_rule,
    .eager = device_put_impl::eager,
    .jvp = device_put_impl::jvp,
    .transpose = device_put_impl::transpose,
    .batch = device_put_impl::batch,
};

}  // namespace parax::prims
