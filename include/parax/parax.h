// The whole public API of parax: JAX's distributed arrays and automatic parallelization
// for C++.
#pragma once

#include "parax/array.h"
#include "parax/collectives.h"
#include "parax/config.h"
#include "parax/debug.h"
#include "parax/device.h"
#include "parax/device_put.h"
#include "parax/distributed.h"
#include "parax/dtype.h"
#include "parax/errors.h"
#include "parax/grad.h"
#include "parax/jit.h"
#include "parax/lax.h"
#include "parax/multihost.h"
#include "parax/numpy.h"
#include "parax/random.h"
#include "parax/shape.h"
#include "parax/shard_map.h"
#include "parax/sharding.h"
#include "parax/tree.h"
#include "parax/vmap.h"
