#include <algorithm>
#include <ostream>
#include <set>

#include "api/array_impl.h"
#include "api/format.h"
#include "base/config_internal.h"
#include "base/dtype_dispatch.h"
#include "base/promotion.h"
#include "base/sizes.h"
#include "core/backend.h"
#include "parax/device_put.h"
#include "parax/lax.h"
#include "runtime/transfer.h"
#include "sharding/named_sharding_impl.h"
#include "sharding/topology.h"

namespace parax {
namespace detail {

Array array_from_host(const void* data, const core::Aval& aval) {
  return core::backend().from_host(data, aval);
}

namespace {

// Converts n values of dtype `src` into a new host array of dtype `dst`.
std::vector<uint8_t> convert(const void* values, int64_t n, DType src, DType dst) {
  std::vector<uint8_t> out(size_t(n) * size_t(dtype_itemsize(dst)));
  dispatch_dtype(src, [&](auto s) {
    using S = decltype(s);
    const S* in = static_cast<const S*>(values);
    dispatch_dtype(dst, [&](auto d) {
      using D = decltype(d);
      D* o = reinterpret_cast<D*>(out.data());
      for (int64_t i = 0; i < n; ++i) o[i] = scalar_cast<D>(in[i]);
    });
  });
  return out;
}

}  // namespace

void check_host_array(std::string_view api, const Shape& shape, DType dtype,
                      int64_t staging_itemsize) {
  base::check_array_shape(api, shape, dtype);
  // Staging values, their converted copy and the device buffer are all live at once.
  const unsigned __int128 bytes =
      (unsigned __int128)shape_size(shape) * unsigned(staging_itemsize + 2 * dtype_itemsize(dtype));
  base::check_allocation(api, bytes > UINT64_MAX ? UINT64_MAX : uint64_t(bytes));
}

Array array_from_values(const void* values, int64_t n, DType src, Shape shape,
                        std::optional<DType> dtype) {
  for (int64_t d : shape) {
    if (d < 0) throw ValueError("[array] negative dimensions are not allowed: " + shape_str(shape));
  }
  std::optional<int64_t> size = 1;
  for (int64_t d : shape) size = size ? base::mul_exact(*size, d) : size;
  if (size != n) {
    throw ValueError("[array] cannot reshape " + std::to_string(n) + " values into shape " +
                     shape_str(shape));
  }
  DType dst = dtype ? *dtype : canonicalize_dtype(src);
  check_host_array("array", shape, dst, dtype_itemsize(src));
  std::vector<uint8_t> host = convert(values, n, src, dst);
  return array_from_host(host.data(), core::Aval{std::move(shape), dst, false});
}

std::optional<Array> pmap_shard(const ArrayImpl& x, int64_t i) {
  if (!x.sharding) return std::nullopt;
  const auto map = x.sharding->devices_indices_map(x.aval.shape);
  size_t next = 0;
  for (const auto& [device, index] : map) {
    if (!detail::is_local(device)) continue;
    const size_t b = next++;
    const int64_t n = x.aval.shape[0];
    if (index[0].is_full()) return std::nullopt;  // dimension 0 is not mapped
    if (index[0].begin(n) != i || index[0].end(n) != i + 1) continue;
    bool whole = true;
    for (size_t d = 1; d < index.size(); ++d) {
      whole = whole && index[d].begin(x.aval.shape[d]) == 0 &&
              index[d].end(x.aval.shape[d]) == x.aval.shape[d];
    }
    if (!whole) continue;
    core::Aval piece = x.aval;
    piece.shape.erase(piece.shape.begin());  // [1, ...] and [...] share their bytes
    return make_array(piece, SingleDeviceSharding(device), false, {x.buffers[b]});
  }
  return std::nullopt;
}

DType canonicalize_dtype(DType t) { return base::canonicalize_dtype(t); }

bool is_fully_addressable(const Sharding& sharding) {
  const auto& devices = sharding.device_assignment();
  return std::all_of(devices.begin(), devices.end(), is_local);
}

namespace {

// True if this process's devices hold every distinct shard of x (JAX's
// _process_has_full_value_in_mcjax), e.g. an array replicated across processes.
bool has_full_value(const ArrayImpl& x) {
  if (is_fully_addressable(*x.sharding)) return true;
  std::set<std::vector<int64_t>> all, local;
  for (const auto& [device, index] : x.sharding->devices_indices_map(x.aval.shape)) {
    std::vector<int64_t> key;
    for (size_t d = 0; d < index.size(); ++d) {
      key.push_back(index[d].begin(x.aval.shape[d]));
      key.push_back(index[d].end(x.aval.shape[d]));
    }
    if (is_local(device)) local.insert(key);
    all.insert(std::move(key));
  }
  return !local.empty() && local.size() == all.size();
}

}  // namespace

void require_full_value(const ArrayImpl& x) {
  if (x.deleted) throw RuntimeError("Array has been deleted with shape=" + x.aval.str() + ".");
  if (!has_full_value(x)) {
    throw RuntimeError(
        "Fetching value for `parax::Array` that spans non-addressable (non process local) "
        "devices is not possible. You can use `parax::multihost_utils::process_allgather` to "
        "print the global array or use `.addressable_shards()` method of parax::Array to "
        "inspect the addressable (process local) shards.");
  }
}

std::vector<uint8_t> host_bytes(const ArrayImpl& x) {
  require_full_value(x);
  std::vector<uint8_t> bytes(x.aval.nbytes());
  runtime::gather_to_host(x.aval, *x.sharding, x.buffers, bytes.data());
  return bytes;
}

}  // namespace detail

using detail::impl_of;

const Array& Array::block_until_ready() const {
  if (impl_of(*this).deleted) {
    throw RuntimeError(
        "INVALID_ARGUMENT: BlockHostUntilReady() called on deleted or donated buffer");
  }
  detail::concrete_of(*this, "block_until_ready()");
  return *this;
}

void Array::delete_() {
  if (impl_of(*this).deleted) return;  // JAX deletes twice without complaint
  detail::concrete_of(*this, "delete_()");
  impl_->buffers.clear();
  impl_->deleted = true;
}

bool Array::is_deleted() const { return impl_of(*this).deleted; }

Sharding Array::sharding() const {
  // A ShapeDtypeStruct given a sharding has one, as JAX's does, and so does a deleted array.
  if (const detail::ArrayImpl& x = impl_of(*this); (x.abstract || x.deleted) && x.sharding) {
    return *x.sharding;
  }
  return *detail::concrete_of(*this, "Array::sharding()").sharding;
}

std::vector<Device> Array::devices() const { return sharding().device_set(); }

Device Array::device() const {
  const Sharding s = sharding();
  const std::vector<Device> set = s.device_set();
  if (set.size() == 1) return set[0];
  // JAX (0.4.27 on) returns the sharding here, which a Device cannot hold; its earlier
  // x.device() raised this error.
  throw ValueError("Length of devices is greater than 1. Please use `.devices()`. (The array " +
                   shape_str(shape()) + " spans " + std::to_string(set.size()) + " devices as " +
                   s.to_string() + "; sharding() returns that layout.)");
}

Array Array::to_device(const Device& target) const { return device_put(*this, target); }

Array Array::to_device(const Sharding& target) const { return device_put(*this, target); }

bool Array::is_fully_addressable() const { return detail::is_fully_addressable(sharding()); }

bool Array::is_fully_replicated() const { return sharding().is_fully_replicated(); }

std::vector<Shard> Array::addressable_shards() const {
  const detail::ArrayImpl& x = detail::concrete_of(*this, "addressable_shards()");
  std::vector<Shard> out;
  std::vector<Index> seen;
  size_t next = 0;
  for (const auto& [device, index] : x.sharding->devices_indices_map(x.aval.shape)) {
    int replica = int(std::count(seen.begin(), seen.end(), index));
    seen.push_back(index);
    if (!detail::is_local(device)) continue;
    core::Aval piece = x.aval;
    for (size_t d = 0; d < piece.shape.size(); ++d) {
      piece.shape[d] = index[d].end(x.aval.shape[d]) - index[d].begin(x.aval.shape[d]);
    }
    // A shard is committed as its array is (JAX's Shard.data).
    Array data =
        detail::make_array(piece, SingleDeviceSharding(device), x.committed, {x.buffers[next++]});
    out.push_back(Shard{device, index, replica, std::move(data)});
  }
  return out;
}

void Array::copy_to_host(void* out, DType dtype) const {
  const detail::ArrayImpl& x = detail::concrete_of(*this, "to_vector()/item()");
  if (dtype == x.aval.dtype) {  // no conversion: assemble straight into the caller's memory
    detail::require_full_value(x);
    runtime::gather_to_host(x.aval, *x.sharding, x.buffers, out);
    return;
  }
  std::vector<uint8_t> bytes = detail::host_bytes(x);
  const int64_t n = x.aval.size();
  dispatch_dtype(x.aval.dtype, [&](auto src_tag) {
    using Src = decltype(src_tag);
    const Src* src = reinterpret_cast<const Src*>(bytes.data());
    dispatch_dtype(dtype, [&](auto dst_tag) {
      using Dst = decltype(dst_tag);
      Dst* dst = static_cast<Dst*>(out);
      if constexpr (std::is_same_v<Dst, bool>) {
        auto* flags = static_cast<uint8_t*>(out);  // to_vector<bool> passes bytes
        for (int64_t i = 0; i < n; ++i) flags[i] = scalar_cast<bool>(src[i]) ? 1 : 0;
      } else {
        for (int64_t i = 0; i < n; ++i) dst[i] = scalar_cast<Dst>(src[i]);
      }
    });
  });
}

Array Array::operator[](int64_t i) const {
  const Shape& shape = this->shape();
  if (shape.empty()) {
    throw IndexError("Too many indices for array: array is 0-dimensional, but 1 were indexed");
  }
  const int64_t n = shape[0];
  if (i < -n || i >= n) {
    throw IndexError("index " + std::to_string(i) + " is out of bounds for axis 0 with size " +
                     std::to_string(n));
  }
  if (const detail::ArrayImpl& x = impl_of(*this); x.pmapped && i >= 0) {
    // As JAX indexes a pmap result: device i's shard itself, on device i, uncommitted
    // (a negative index takes the general path, as in JAX).
    detail::concrete_of(*this, "operator[]");
    if (auto shard = detail::pmap_shard(x, i)) return *shard;
  }
  if (i < 0) i += n;
  // x[i] is squeeze(slice(x)), as JAX rewrites static indexing; the layout of the other
  // dimensions follows from the primitives' sharding rules.
  std::vector<int64_t> start(shape.size(), 0);
  std::vector<int64_t> limit = shape;
  start[0] = i;
  limit[0] = i + 1;
  return lax::squeeze(lax::slice(*this, std::move(start), std::move(limit)), {0});
}

namespace {
std::string tracer_repr(const detail::ArrayImpl& x) {
  std::string weak = x.aval.weak_type ? ", weak_type=True" : "";
  return "Traced<ShapedArray(" + x.aval.str() + weak + ")>with<DynamicJaxprTrace>";
}

std::string abstract_repr(const detail::ArrayImpl& x) {
  std::string s = "ShapeDtypeStruct(shape=" + shape_str(x.aval.shape) +
                  ", dtype=" + std::string(dtype_name(x.aval.dtype));
  if (x.sharding) s += ", sharding=" + x.sharding->to_string();
  return s + ")";
}

// JAX prints the values of arrays it can read here that are fully addressable or fully
// replicated (with a replica here), and only their type otherwise: printing never fails.
bool prints_value(const detail::ArrayImpl& x) {
  if (detail::is_fully_addressable(*x.sharding)) return true;
  if (!x.sharding->is_fully_replicated()) return false;
  const auto& devices = x.sharding->device_assignment();
  return std::any_of(devices.begin(), devices.end(), detail::is_local);
}
}  // namespace

std::string Array::to_string() const {
  const detail::ArrayImpl& x = impl_of(*this);
  if (x.tracer) return tracer_repr(x);
  if (x.abstract) return abstract_repr(x);
  if (!prints_value(x))
    return detail::array_shape_repr(x.aval.shape, x.aval.dtype, x.aval.weak_type);
  std::vector<uint8_t> bytes = detail::host_bytes(x);
  return detail::array_repr({x.aval.dtype, x.aval.shape, bytes.data()}, x.aval.weak_type);
}

std::string Array::str() const {
  const detail::ArrayImpl& x = impl_of(*this);
  if (x.tracer) return tracer_repr(x);
  if (x.abstract) return abstract_repr(x);
  if (!prints_value(x)) return to_string();
  std::vector<uint8_t> bytes = detail::host_bytes(x);
  return detail::array_str({x.aval.dtype, x.aval.shape, bytes.data()});
}

std::ostream& operator<<(std::ostream& os, const Array& x) { return os << x.to_string(); }

std::ostream& operator<<(std::ostream& os, const Shard& s) {
  return os << "Shard(device=" << s.device << ", index=" << index_str(s.index)
            << ", replica_id=" << s.replica_id << ", data=" << s.data.str() << ")";
}

}  // namespace parax
