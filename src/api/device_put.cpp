#include "parax/device_put.h"

#include "api/array_impl.h"
#include "base/sizes.h"
#include "core/trace.h"
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
  return HostArray{src.aval.shape, src.aval.dtype, detail::host_bytes(src)};
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
  return array_from_values(values, n, src, std::move(shape), std::nullopt);
}

DType shards_dtype(const std::vector<Array>& pieces, std::optional<DType> dtype,
                   const char* fname) {
  if (!dtype) {
    if (!pieces.empty()) return pieces.front().dtype();
    throw ValueError(
        "If the Array has no addressable shards, `dtype` must be provided via the `dtype` "
        "argument to `parax::" +
        std::string(fname) + "`.");
  }
  if (!pieces.empty() && pieces.front().dtype() != *dtype) {
    throw ValueError("If `dtype` is provided to `parax::" + std::string(fname) +
                     "`, it must match the dtype of the addressable shards. Got dtype=" +
                     std::string(dtype_name(*dtype)) +
                     " and shard dtype=" + std::string(dtype_name(pieces.front().dtype())) + "`.");
  }
  return *dtype;
}

void validate_shards(const std::vector<Array>& pieces, const core::Aval& aval,
                     const Sharding& sharding, const Shape& block) {
  for (const Array& p : pieces) {
    if (p.dtype() != aval.dtype) {
      throw ValueError("Input buffers to `Array` must have matching dtypes. Got " +
                       std::string(dtype_name(p.dtype())) + ", expected " +
                       std::string(dtype_name(aval.dtype)) + " for buffer: " + p.to_string());
    }
    if (p.shape() != block) {
      throw ValueError("Expected shard shape " + shape_str(block) +
                       " doesn't match the single device array shape " + shape_str(p.shape()) +
                       ". Shape of Array is " + aval.str() + " with sharding " +
                       sharding.to_string());
    }
  }
}

Array make_array_from_shards(const Shape& shape, const Sharding& sharding,
                             const std::function<Array(const Index&, const Shape&)>& callback,
                             std::optional<DType> dtype) {
  // The dtype comes with the first block; a shape no dtype could hold fails before any call.
  base::check_array_shape("make_array_from_callback", shape, DType::bool_);
  const core::Aval probe{shape, DType::float32, false};
  check_fits(probe, sharding);
  const Shape block = sharding.shard_shape(shape);
  // As JAX: one call per addressable device, or a single one with the whole index when
  // every device holds everything.
  std::vector<Device> devices;
  std::vector<Array> pieces;
  for (const auto& [device, index] : sharding.devices_indices_map(shape)) {
    if (!detail::is_local(device)) continue;
    devices.push_back(device);
    if (sharding.is_fully_replicated() && !pieces.empty()) {
      pieces.push_back(pieces.front());
      continue;
    }
    Array piece = callback(sharding.is_fully_replicated() ? Index(shape.size()) : index, block);
    concrete_of(piece, "make_array_from_callback");
    pieces.push_back(std::move(piece));
  }
  const core::Aval aval{shape, shards_dtype(pieces, dtype, "make_array_from_callback"), false};
  validate_shards(pieces, aval, sharding, block);
  std::vector<runtime::BufferRef> buffers;
  for (size_t i = 0; i < pieces.size(); ++i) {
    const ArrayImpl& p = impl_of(pieces[i]);
    auto moved =
        runtime::relayout(p.aval, *p.sharding, p.buffers, SingleDeviceSharding(devices[i]));
    buffers.push_back(std::move(moved.at(0)));
  }
  return make_array(aval, sharding, true, std::move(buffers));
}

}  // namespace detail
}  // namespace parax
