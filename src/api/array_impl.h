// What an Array handle points to. Concrete arrays hold one buffer per addressable device
// of their sharding, in device-assignment order.
#pragma once

#include <optional>
#include <vector>

#include "core/aval.h"
#include "core/trace.h"
#include "parax/array.h"
#include "runtime/buffer.h"

namespace parax::detail {

struct ArrayImpl {
  core::Aval aval;
  std::optional<Sharding> sharding;
  bool committed = false;
  std::vector<runtime::BufferRef> buffers;
  // Set for traced values (then sharding and buffers are empty).
  std::shared_ptr<const core::Tracer> tracer;
  // A ShapeDtypeStruct: a type (and maybe a sharding) without buffers.
  bool abstract = false;
  // A pmap result mapped along dimension 0: x[i] is device i's shard, on that device
  // (JAX's PmapSharding indexing).
  bool pmapped = false;
};

// Returns x's impl, or throws ValueError for an empty handle.
const ArrayImpl& impl_of(const Array& x);

// Returns x's impl; throws ConcretizationError if x is traced and ValueError if it is a
// ShapeDtypeStruct (`what` names the use).
const ArrayImpl& concrete_of(const Array& x, const char* what);

// Makes an uncommitted array on the default device from host data of `dtype`.
Array array_from_host(const void* data, const core::Aval& aval);

// Makes a concrete array from its parts.
Array make_array(core::Aval aval, Sharding sharding, bool committed,
                 std::vector<runtime::BufferRef> buffers);

// Returns device i's shard of a pmap result (dimension 0 mapped) as an uncommitted array
// on that device, without its mapped dimension; nullopt if no device holds exactly [i].
std::optional<Array> pmap_shard(const ArrayImpl& x, int64_t i);

// Returns the dtype an inferred (not explicitly requested) C++ type maps to: 64-bit types
// narrow to 32 bits unless jax_enable_x64 is on, as JAX does for Python and numpy values.
DType canonicalize_dtype(DType t);

}  // namespace parax::detail
