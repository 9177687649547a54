// Arrays that span processes: building a global array from each process's pieces, and
// multihost_utils (gathering, broadcasting and synchronizing across processes). Every
// process of the run calls these functions in the same order, as in JAX. In a run of one
// process they need no distributed::initialize and move nothing between processes.
#pragma once

#include <optional>
#include <string>
#include <type_traits>
#include <vector>

#include "parax/array.h"
#include "parax/device_put.h"
#include "parax/tree.h"

namespace parax {

// Returns a committed array of `shape` laid out as `sharding`, made of this process's
// single-device `arrays`, one per addressable device of the sharding in any order (JAX's
// make_array_from_single_device_arrays). The dtype is theirs (`dtype` if given: needed when
// this process holds no shard). Throws JAX's ValueErrors for a wrong count, a device that
// is missing, repeated or not the sharding's, an array on several devices, or a shard of
// another shape or dtype.
Array make_array_from_single_device_arrays(const Shape& shape, const Sharding& sharding,
                                           const std::vector<Array>& arrays,
                                           std::optional<DType> dtype = std::nullopt);

// Returns a global array laid out as `sharding` from this process's slab `local_data`
// (JAX's make_array_from_process_local_data): along each dimension, local_data holds either
// the whole global extent or just the distinct slices this process's devices address, in
// order. `global_shape` defaults to what the sharding implies (each process holding an
// equal slab). In a run of one process, local_data is the whole array.
// Throws ValueError for a local shape that fits neither, or an ambiguous sharding.
Array make_array_from_process_local_data(const Sharding& sharding, const Array& local_data,
                                         OptionalShape global_shape = std::nullopt);

namespace detail {
// A pytree of arrays other than a single Array (which the non-template overloads take).
template <class T>
concept PytreeNotArray = !std::is_convertible_v<const T&, const Array&>;
}  // namespace detail

namespace multihost_utils {

// Returns a fully addressable array (uncommitted, on this process's default device) of:
// - for x spanning processes (not fully addressable): its global value; `tiled` is ignored
//   (JAX raises for tiled=false; the global value is the only sensible answer);
// - for x local to each process: every process's x stacked along a new axis 0
//   ([process_count(), ...]), or concatenated along axis 0 when `tiled` (a 0-d x is
//   stacked either way, as in JAX). Requires: the same shape and dtype on every process
//   (else ValueError).
Array process_allgather(const Array& x, bool tiled = false);

// Returns process 0's value of x on every process (uncommitted, on the default device).
// Requires: x readable here and the same shape and dtype on every process (else
// ValueError).
Array broadcast_one_to_all(const Array& x);

// Applies process_allgather to every leaf of a pytree (as JAX's does), leaf by leaf.
template <detail::PytreeNotArray T>
T process_allgather(const T& tree, bool tiled = false) {
  return tree::map([&](const Array& leaf) { return process_allgather(leaf, tiled); }, tree);
}

// Applies broadcast_one_to_all to every leaf of a pytree.
template <detail::PytreeNotArray T>
T broadcast_one_to_all(const T& tree) {
  return tree::map([](const Array& leaf) { return broadcast_one_to_all(leaf); }, tree);
}

// Waits until every process has called it with the same `name`; raises DistributedError
// if a process arrives with another name.
void sync_global_devices(const std::string& name);

// Raises DistributedError with `fail_message` unless x has the same value on every process
// (for an array spanning processes: unless its first local shard equals the global value).
void assert_equal(const Array& x, const std::string& fail_message = "");

// Returns true on every process at the same step once any process has been sent SIGTERM
// (a preemption notice), false before and after that step (JAX's
// reached_preemption_sync_point): save a checkpoint there and stop. Every process calls it
// at every step with the same `step`; from the first call on, SIGTERM no longer ends the
// process. Each call is one small all-gather; in a run of one process, none. Raises
// DistributedError when the processes pass different steps.
bool reached_preemption_sync_point(int64_t step);

}  // namespace multihost_utils
}  // namespace parax
