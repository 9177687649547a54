// Process-wide settings: the number of virtual CPU devices and JAX-style config flags.
#pragma once

#include <concepts>
#include <cstdint>
#include <string>
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

// Sets an integer setting (non-negative, else ValueError; a boolean flag's name raises
// TypeError). Each starts from the environment variable in brackets when it is set:
//   "parax_eager_cache_size"   [PARAX_EAGER_CACHE_SIZE]   executables of eager operations
//                                                          kept, least recently used evicted
//                                                          (default 4096)
//   "parax_jit_cache_size"     [PARAX_JIT_CACHE_SIZE]     traces per jit object, and
//                                                          executables per traced program
//                                                          (default 1024)
//   "parax_buffer_cache_bytes" [PARAX_BUFFER_CACHE_BYTES] bytes of freed large buffers kept
//                                                          for reuse (default 1 GiB)
//   "parax_distributed_timeout" [PARAX_DISTRIBUTED_TIMEOUT] seconds a process waits for the
//                                                          others (start-up, each collective)
//                                                          before DistributedError (default 10)
// A smaller bound takes effect at the cache's next insertion.
void update(std::string_view name, int64_t value);
template <std::integral T>
requires(!std::same_as<T, bool> && !std::same_as<T, int64_t>) void update(std::string_view name,
                                                                          T value) {
  update(name, static_cast<int64_t>(value));
}

// Returns the current value of an integer setting.
int64_t read_int(std::string_view name);

// Sets a string setting to one of its choices (others raise ValueError listing them):
//   "jax_cpu_collectives_implementation" [PARAX_CPU_COLLECTIVES] the engine between
//       processes: "gloo" (default) or "mpi"; read by distributed::initialize
//   "parax_conv_implementation" [PARAX_CONV_IMPLEMENTATION] float32 convolutions' kernel:
//       "auto" (default: oneDNN where it has a JIT kernel for the shape, else im2col +
//       BLAS), "onednn" (wherever oneDNN accepts the shape) or "im2col"; read per call
//   "parax_implicit_reshard" [PARAX_IMPLICIT_RESHARD] what compiling does with a collective
//       the program did not ask for (asking is parax::reshard, shard_map's specs and the
//       named collectives; everything the compiler adds to reconcile layouts, a
//       with_sharding_constraint's and jit's in/out_shardings' included, is implicit):
//       "allow" (default), "warn" (each printed to stderr, once per compile, with the
//       explainer's line) or "error" (ShardingError naming the line)
void update(std::string_view name, std::string_view value);
// A string literal would otherwise convert to bool.
inline void update(std::string_view name, const char* value) {
  update(name, std::string_view(value));
}

// Returns the current value of a string setting.
std::string read_string(std::string_view name);

// Returns a number that changes whenever a flag that affects tracing changes, so compile
// caches can include the configuration in their keys.
unsigned long long epoch();

}  // namespace parax::config
