// Config internals shared with the runtime.
#pragma once

#include <cstdint>

namespace parax::detail {
// Decides the CPU device count (set_num_cpu_devices, PARAX_NUM_CPU_DEVICES, XLA_FLAGS, 1)
// and forbids changing it afterwards. Called once, when the devices are created.
int freeze_num_cpu_devices();
bool x64_enabled();

// The integer settings, in config.cpp's table order.
enum class IntSettingId {
  kEagerCacheSize,
  kJitCacheSize,
  kBufferCacheBytes,
  kDistributedTimeout,
  kCount
};
// Returns a setting's current value (cheap: an atomic load once read).
int64_t int_setting(IntSettingId id);

// config parax_implicit_reshard: what compiling does with a collective the user did not ask
// for (cheap: an atomic load once read).
enum class ReshardPolicy { kAllow, kWarn, kError };
ReshardPolicy implicit_reshard_policy();
}  // namespace parax::detail
