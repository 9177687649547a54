#include "core/array_value.h"

namespace parax::detail {

const ArrayImpl& impl_of(const Array& x) {
  if (!x.impl()) throw ValueError("use of an empty parax::Array handle (default-constructed)");
  return *x.impl();
}

const ArrayImpl& concrete_of(const Array& x, const char* what) {
  const ArrayImpl& impl = impl_of(x);
  if (!impl.tracer && !impl.sharding) {
    throw ValueError(std::string("[autodiff] the value of a linear operand was used by ") + what +
                     "; a transpose rule may read only its type");
  }
  if (impl.abstract) {
    throw ValueError(std::string(what) + " needs data, but the array is a ShapeDtypeStruct of " +
                     "type " + impl.aval.str() +
                     " (a shape and dtype only); pass a concrete "
                     "array");
  }
  if (impl.deleted)
    throw RuntimeError("Array has been deleted with shape=" + impl.aval.str() + ".");
  if (impl.tracer) {
    throw ConcretizationError(
        "Abstract tracer value encountered where concrete value is expected: traced array "
        "with shape " +
        impl.aval.str() + ".\nThe problem arose with " + what +
        ", which needs data; inside jit only shapes and dtypes are known.");
  }
  return impl;
}

Array make_abstract(core::Aval aval) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->abstract = true;
  return Array(std::move(impl));
}

Array make_array(core::Aval aval, Sharding sharding, bool committed,
                 std::vector<BufferRef> buffers) {
  auto impl = std::make_shared<ArrayImpl>();
  impl->aval = std::move(aval);
  impl->sharding = std::move(sharding);
  impl->committed = committed;
  impl->buffers = std::move(buffers);
  return Array(std::move(impl));
}

}  // namespace parax::detail

namespace parax {

// The type queries read the value's aval: the same for traced, abstract and concrete arrays.
const Shape& Array::shape() const { return detail::impl_of(*this).aval.shape; }
int64_t Array::ndim() const { return int64_t(shape().size()); }
int64_t Array::size() const { return shape_size(shape()); }
DType Array::dtype() const { return detail::impl_of(*this).aval.dtype; }
bool Array::weak_type() const { return detail::impl_of(*this).aval.weak_type; }
bool Array::is_committed() const { return detail::impl_of(*this).committed; }

}  // namespace parax
