// Devices: virtual CPU devices of this process (and, after distributed::initialize, of
// other processes), and the queries JAX offers about them.
#pragma once

#include <compare>
#include <cstdint>
#include <map>
#include <ostream>
#include <string>
#include <string_view>
#include <vector>

namespace parax {
namespace detail {
struct DeviceState;
}

// A handle to one device. Cheap to copy; compares by id.
class Device {
 public:
  Device() = default;  // an invalid handle; use parax::devices() to get real ones
  int id() const;
  std::string_view platform() const;  // "cpu"
  int process_index() const;
  // Returns JAX's repr: `CpuDevice(id=3)`.
  std::string to_string() const;
  // Returns what this device's buffers hold, with JAX's keys: "bytes_in_use",
  // "peak_bytes_in_use", "num_allocs", "largest_alloc_size" and "bytes_limit" (the host's
  // memory, which all virtual CPU devices share). A buffer shared by replicas counts once,
  // on the device that allocated it. Throws ValueError for another process's device.
  std::map<std::string, int64_t> memory_stats() const;
  bool valid() const { return state_ != nullptr; }

  bool operator==(const Device& o) const { return id() == o.id(); }
  std::strong_ordering operator<=>(const Device& o) const { return id() <=> o.id(); }

  // Internal: the topology's record of this device.
  detail::DeviceState* state() const { return state_; }
  explicit Device(detail::DeviceState* s) : state_(s) {}

 private:
  detail::DeviceState* state_ = nullptr;
};

std::ostream& operator<<(std::ostream& os, const Device& d);
// Prints a device list as Python does: `[CpuDevice(id=0), CpuDevice(id=1)]`.
std::ostream& operator<<(std::ostream& os, const std::vector<Device>& ds);

// Returns all devices of all processes, ordered by id. Creates them on first use.
std::vector<Device> devices();
// Returns the devices of this process.
std::vector<Device> local_devices();
int device_count();
int local_device_count();
int process_index();
int process_count();

}  // namespace parax
