// numpy's indexing functions (take, take_along_axis, ...) and the index types of Array::at.
#pragma once

#include "parax/array.h"

namespace parax {}  // namespace parax
