// The device topology: one DeviceState per device (id, process, platform; no memory),
// created once per process. Shardings and meshes name these devices; the runtime keeps
// their buffers.
#pragma once

#include <atomic>
#include <cstdint>
#include <string>
#include <vector>

#include "parax/device.h"

namespace parax::detail {

struct DeviceState {
  int id = 0;
  int local_index = 0;
  int process_index = 0;
  std::string platform = "cpu";
};

// JAX's CPU client numbers process p's k-th device p * 2048 + k: ids are global, process 0's
// devices come first, and a process has at most this many.
inline constexpr int kMaxCpuDevicesPerProcess = 2048;

// Owns the devices of this process (and records of other processes' devices).
class Topology {
 public:
  // Returns the topology, creating the devices on first use.
  static Topology& get();
  // Places this process in a run of several: its index and every process's device count
  // (distributed::initialize, after the processes have met).
  // Requires: devices not created yet (else RuntimeError), counts in [1, 2048].
  static void configure(int process_index, std::vector<int> device_counts);
  // True once the devices exist (any use of devices creates them).
  static bool created();
  const std::vector<Device>& devices() const { return devices_; }
  const std::vector<Device>& local_devices() const { return local_devices_; }
  int process_index() const { return process_index_; }
  int process_count() const { return process_count_; }
  // Returns the device with this id; throws ValueError if there is none.
  Device device(int id) const;
  Device default_device() const { return local_devices_.front(); }

 private:
  Topology();
  std::vector<DeviceState> states_;
  std::vector<Device> devices_;
  std::vector<Device> local_devices_;
  int process_index_ = 0;
  int process_count_ = 1;
};

// The memory a local device's buffers hold (runtime/buffer.cpp counts, Device::memory_stats
// reads). Kept apart from the topology and never destroyed: buffers freed while the process
// exits still count down.
struct MemoryCounters {
  std::atomic<int64_t> bytes_in_use{0};
  std::atomic<int64_t> peak_bytes_in_use{0};
  std::atomic<int64_t> num_allocs{0};
  std::atomic<int64_t> largest_alloc_size{0};
};
// Requires: `d` is a device of this process.
MemoryCounters& memory_counters(const Device& d);

inline bool is_local(const Device& d) {
  return d.process_index() == Topology::get().process_index();
}

}  // namespace parax::detail
