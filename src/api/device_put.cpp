#include "parax/device_put.h"

#include "api/array_impl.h"
#include "core/trace.h"
#include "runtime/transfer.h"
#include "sharding/sharding_impl.h"
#include "sharding/named_sharding_impl.h"

namespace parax {
namespace {

// Checks that `sharding` can lay out x, with the messages JAX's device_put gives.
void check_fits(const core::Aval& aval, const Sharding& sharding) {
  if (auto named = sharding.as_named()) {
    for (const SpecEntry& e : named->spec().entries()) {
      if (e.is_unconstrained()) {
        throw ValueError("Unconstrained dims are not allowed: " + sharding.to_string());
      }
    }
  }
  const auto& impl = sharding.impl();
  try {
    impl.check_rank(int64_t(aval.shape.size()));
  } catch (const ValueError& e) {
    throw ValueError("One of device_put args is incompatible with its sharding annotation " +
                     sharding.to_string() + ": " + e.what());
  }
  detail::TileLayout layout = impl.layout(int64_t(aval.shape.size()));
  for (size_t d = 0; d < aval.shape.size(); ++d) {
    if (aval.shape[d] % layout.tiles[d] == 0) continue;
    throw ValueError("One of device_put args was given the sharding of " + sharding.to_string() +
                     ", which implies that the global size of its dimension " + std::to_string(d) +
                     " should be divisible by " + std::to_string(layout.tiles[d]) +
                     ", but it is equal to " + std::to_string(aval.shape[d]) +
                     " (full shape: " + shape_str(aval.shape) + ")");
  }
}

}  // namespace

Array device_put(const Array& x, const Sharding& sharding) {
  const detail::ArrayImpl& src = detail::impl_of(x);
  check_fits(src.aval, sharding);
  if (src.tracer) {  // inside a trace, device_put is a layout constraint (as in JAX)
    return core::bind1(core::Prim::sharding_constraint, {x},
                       {{"sharding", std::make_shared<const Sharding>(sharding)}});
  }
  if (*src.sharding == sharding) {
    return detail::make_array(src.aval, sharding, true, src.buffers);  // data is immutable
  }
  auto buffers = runtime::relayout(src.aval, *src.sharding, src.buffers, sharding);
  return detail::make_array(src.aval, sharding, true, std::move(buffers));
}

Array device_put(const Array& x, const Device& device) {
  return device_put(x, SingleDeviceSharding(device));
}

Array device_put(const Array& x) {
  detail::impl_of(x);
  return x;
}

HostArray device_get(const Array& x) {
  const detail::ArrayImpl& src = detail::concrete_of(x, "device_get");
  HostArray out{src.aval.shape, src.aval.dtype, std::vector<uint8_t>(src.aval.nbytes())};
  runtime::gather_to_host(src.aval, *src.sharding, src.buffers, out.bytes.data());
  return out;
}

}  // namespace parax
