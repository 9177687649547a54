// Host functions that equations name by id: inspect_sharding's callback, which the
// compiler calls with the sharding it chose. Params hold plain data, so the function
// itself lives here; an id stays valid for the life of the process.
#pragma once

#include <cstdint>
#include <functional>

#include "parax/sharding.h"

namespace parax::core {

using ShardingCallback = std::function<void(const Sharding&)>;

// Keeps `f` and returns its id.
int64_t register_sharding_callback(ShardingCallback f);
// Returns the function of `id`. Requires: an id register_sharding_callback returned.
const ShardingCallback& sharding_callback(int64_t id);

}  // namespace parax::core
