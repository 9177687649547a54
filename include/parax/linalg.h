// numpy::linalg beyond norm: solve, inv, det, cholesky, qr, svd, eigh, lstsq, ...
#pragma once

#include "parax/array.h"

namespace parax {}  // namespace parax
