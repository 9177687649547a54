// Convolution and pooling: lax::conv_general_dilated, lax::conv, lax::reduce_window, numpy::convolve.
#pragma once

#include "parax/array.h"

namespace parax {}  // namespace parax
