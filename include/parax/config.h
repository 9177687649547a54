// Process-wide settings: the number of virtual CPU devices and JAX-style config flags.
#pragma once

#include <string_view>

namespace parax::config {

// Sets how many virtual CPU devices this process has.
// Requires: called before the first use of devices (else parax::RuntimeError).
void set_num_cpu_devices(int n);

// Sets a boolean config flag by JAX's name: "jax_threefry_partitionable" (default true),
// "jax_enable_x64" (default false). Unknown names raise parax::ValueError.
void update(std::string_view name, bool value);

// Returns the current value of a boolean flag.
bool read(std::string_view name);

// Returns a number that changes whenever a flag that affects tracing changes, so compile
// caches can include the configuration in their keys.
unsigned long long epoch();

}  // namespace parax::config
