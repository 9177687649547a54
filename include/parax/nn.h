// parax::nn: jax.nn's functions (activations, softmax, one_hot, ...).
#pragma once

#include "parax/array.h"

namespace parax {}  // namespace parax
