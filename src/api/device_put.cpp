#include "parax/device_put.h"

#include "api/array_impl.h"
#include "base/sizes.h"
#include "core/trace.h"
#include "parax/numpy.h"
#include "runtime/transfer.h"
#include "sharding/named_sharding_impl.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"
#include "transforms/map_util.h"

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

std::string sharding_str(const Sharding& s) { return s.to_string(); }

}  // namespace

Array device_put(const Array& x, const Sharding& target) {
  const detail::ArrayImpl& src = detail::impl_of(x);
  if (!src.tracer) detail::concrete_of(x, "device_put");
  const std::optional<Sharding> resolved = detail::try_resolve_spec(target);
  if (!resolved) {
    throw ValueError(
        "`jax.device_put` only accepts `None`, `jax.sharding.Sharding`, "
        "`jax.Device`, `Layout` or a pytree of these values. Received invalid "
        "value: " +
        target.to_string() +
        " (a bare PartitionSpec needs an "
        "enclosing parax::sharding::use_mesh scope)");
  }
  const Sharding& sharding = *resolved;
  check_fits(src.aval, sharding);
  // A primitive, so that grad, jvp and vmap see through it: eagerly it moves the data
  // (between any devices); traced, it is a layout constraint, as in JAX.
  return core::bind1(core::Prim::device_put, {x},
                     {{"sharding", std::make_shared<const Sharding>(sharding)}});
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

ShardingTree::ShardingTree(const std::map<std::string, ShardingTree>& children) {
  for (const auto& [key, child] : children) children_.push_back(child);
}

std::vector<Sharding> ShardingTree::leaves(const TreeDef& tree) const {
  const detail::PrefixError err{.what = "device_put device", .spec_form = true, .note = {}};
  return detail::expand_prefix(*this, tree, err, sharding_str);
}

namespace detail {

Array host_vector_array(const void* values, int64_t n, DType src, const Shape& block) {
  Shape shape = shape_size(block) == n ? block : Shape{n};
  return numpy::detail::array_from_values(values, n, src, std::move(shape), std::nullopt);
}

Array make_array_from_shards(const Shape& shape, const Sharding& sharding,
                             const std::function<Array(const Index&, const Shape&)>& callback) {
  // The dtype comes with the first block; a shape no dtype could hold fails before any call.
  base::check_array_shape("make_array_from_callback", shape, DType::bool_);
  const core::Aval probe{shape, DType::float32, false};
  check_fits(probe, sharding);
  const Shape block = sharding.shard_shape(shape);
  std::vector<runtime::BufferRef> buffers;
  std::optional<DType> dtype;
  for (const auto& [device, index] : sharding.devices_indices_map(shape)) {
    if (!detail::is_local(device)) continue;
    Array piece = callback(index, block);
    const ArrayImpl& p = concrete_of(piece, "make_array_from_callback");
    if (p.aval.shape != block) {
      throw ValueError("Expected shard shape " + shape_str(block) +
                       " doesn't match the single device array shape " + shape_str(p.aval.shape) +
                       ". Shape of Array is " + core::Aval{shape, p.aval.dtype, false}.str() +
                       " with sharding " + sharding.to_string());
    }
    if (dtype && *dtype != p.aval.dtype) {
      throw TypeError(
          "make_array_from_callback: the callback returned blocks of different "
          "dtypes (" +
          std::string(dtype_name(*dtype)) + " and " + std::string(dtype_name(p.aval.dtype)) +
          "); expected one dtype");
    }
    dtype = p.aval.dtype;
    auto moved = runtime::relayout(p.aval, *p.sharding, p.buffers, SingleDeviceSharding(device));
    buffers.push_back(std::move(moved.at(0)));
  }
  core::Aval aval{shape, dtype.value_or(DType::float32), false};
  return make_array(aval, sharding, true, std::move(buffers));
}

}  // namespace detail

namespace numpy::detail {
Array place(const Array& x, const Sharding& sharding) { return device_put(x, sharding); }
}  // namespace numpy::detail

}  // namespace parax
