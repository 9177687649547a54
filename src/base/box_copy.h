// Copying a rectangular box between row-major arrays: the one primitive every data
// movement (collectives, transfers, shard slicing) reduces to.
#pragma once

#include <cstddef>

#include "parax/shape.h"

namespace parax::base {

// Copies the box `box` at `src_off` of a row-major `src_shape` array to `dst_off` of a
// row-major `dst_shape` array (elements of `itemsize` bytes).
void copy_box(const void* src, const Shape& src_shape, const Shape& src_off, void* dst,
              const Shape& dst_shape, const Shape& dst_off, const Shape& box, size_t itemsize);

}  // namespace parax::base
