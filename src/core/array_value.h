// The value behind an Array handle: its type and one of a tracer (a traced value), a
// sharding with one buffer per addressable device (a concrete value), or neither (a
// ShapeDtypeStruct, or a transpose's placeholder). Core holds buffers without knowing
// them: runtime::Buffer is defined by the runtime, and core only shares ownership.
#pragma once

#include <memory>
#include <optional>
#include <vector>

#include "core/aval.h"
#include "core/trace.h"
#include "parax/array.h"

namespace parax::runtime {
class Buffer;
}

namespace parax::detail {

// One device's bytes of a concrete array, opaque above the runtime.
using BufferRef = std::shared_ptr<runtime::Buffer>;

struct ArrayImpl {
  core::Aval aval;
  std::optional<Sharding> sharding;
  bool committed = false;
  // In the sharding's device-assignment order, addressable devices only.
  std::vector<BufferRef> buffers;
  // Set for traced values (then sharding and buffers are empty).
  std::shared_ptr<const core::Tracer> tracer;
  // A ShapeDtypeStruct: a type (and maybe a sharding) without buffers.
  bool abstract = false;
  // A pmap result mapped along dimension 0: x[i] is device i's shard, on that device
  // (JAX's PmapSharding indexing).
  bool pmapped = false;
  // Deleted, or donated to a jitted call: its buffers are gone, its type and sharding stay.
  bool deleted = false;
};

// Returns x's impl, or throws ValueError for an empty handle.
const ArrayImpl& impl_of(const Array& x);

// Returns x's impl; throws ConcretizationError if x is traced, ValueError if it is a
// ShapeDtypeStruct (`what` names the use) and RuntimeError if it was deleted or donated.
const ArrayImpl& concrete_of(const Array& x, const char* what);

// Makes an abstract array (a ShapeDtypeStruct's value: a type, no data, no sharding).
Array make_abstract(core::Aval aval);

// Makes a concrete array from its parts.
Array make_array(core::Aval aval, Sharding sharding, bool committed,
                 std::vector<BufferRef> buffers);

}  // namespace parax::detail
