// Config internals shared with the runtime.
#pragma once

namespace parax::detail {
// Decides the CPU device count (set_num_cpu_devices, PARAX_NUM_CPU_DEVICES, XLA_FLAGS, 1)
// and forbids changing it afterwards. Called once, when the devices are created.
int freeze_num_cpu_devices();
bool x64_enabled();
}  // namespace parax::detail
