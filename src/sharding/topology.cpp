#include "sharding/topology.h"

#include <unistd.h>

#include <atomic>
#include <map>
#include <ostream>

#include "base/config_internal.h"
#include "parax/errors.h"

namespace parax {
namespace detail {

MemoryCounters& memory_counters(const Device& d) {
  static auto* counters = new MemoryCounters[kMaxCpuDevicesPerProcess];
  return counters[size_t(d.state()->local_index)];
}

namespace {

struct Placement {
  int process_index = 0;
  std::vector<int> device_counts;  // empty: one process
};

Placement& placement() {
  static Placement p;
  return p;
}

std::atomic<bool>& created_flag() {
  static std::atomic<bool> created{false};
  return created;
}

}  // namespace

Topology& Topology::get() {
  static Topology topology;
  return topology;
}

bool Topology::created() { return created_flag().load(); }

void Topology::configure(int process_index, std::vector<int> device_counts) {
  if (created()) {
    throw RuntimeError(
        "parax::distributed::initialize() must be called before any parax computation: this "
        "process has already created its devices");
  }
  for (int n : device_counts) {
    if (n < 1 || n > kMaxCpuDevicesPerProcess) {
      throw ValueError("a process has " + std::to_string(n) + " CPU devices; each must have 1 to " +
                       std::to_string(kMaxCpuDevicesPerProcess));
    }
  }
  if (process_index < 0 || process_index >= int(device_counts.size())) {
    throw ValueError("process index " + std::to_string(process_index) + " is outside [0, " +
                     std::to_string(device_counts.size()) + ")");
  }
  placement() = {process_index, std::move(device_counts)};
}

Topology::Topology() {
  Placement& p = placement();
  if (p.device_counts.empty()) p.device_counts = {detail::freeze_num_cpu_devices()};
  process_index_ = p.process_index;
  process_count_ = int(p.device_counts.size());
  for (int proc = 0; proc < process_count_; ++proc) {
    for (int k = 0; k < p.device_counts[size_t(proc)]; ++k) {
      states_.push_back({proc * kMaxCpuDevicesPerProcess + k, k, proc, "cpu"});
    }
  }
  for (DeviceState& s : states_) {
    devices_.push_back(Device(&s));
    if (s.process_index == process_index_) local_devices_.push_back(Device(&s));
  }
  created_flag() = true;
}

Device Topology::device(int id) const {
  for (const Device& d : devices_) {
    if (d.id() == id) return d;
  }
  throw ValueError("No device with id " + std::to_string(id) + "; this process has " +
                   std::to_string(devices_.size()) + " devices.");
}

}  // namespace detail

namespace {
const detail::DeviceState& checked(const detail::DeviceState* s) {
  if (!s)
    throw ValueError("use of an empty parax::Device handle; get devices from parax::devices()");
  return *s;
}
}  // namespace

int Device::id() const { return checked(state_).id; }
std::string_view Device::platform() const { return checked(state_).platform; }
int Device::process_index() const { return checked(state_).process_index; }

std::map<std::string, int64_t> Device::memory_stats() const {
  const detail::DeviceState& st = checked(state_);
  if (st.process_index != detail::Topology::get().process_index()) {
    throw ValueError("memory_stats: " + to_string() + " belongs to process " +
                     std::to_string(st.process_index) + "; only this process's devices report");
  }
  const detail::MemoryCounters& c = detail::memory_counters(*this);
  // Virtual CPU devices share the host's memory: each may use all of it.
  const int64_t host = int64_t(::sysconf(_SC_PHYS_PAGES)) * int64_t(::sysconf(_SC_PAGESIZE));
  return {{"bytes_in_use", c.bytes_in_use.load()},
          {"peak_bytes_in_use", c.peak_bytes_in_use.load()},
          {"num_allocs", c.num_allocs.load()},
          {"largest_alloc_size", c.largest_alloc_size.load()},
          {"bytes_limit", host}};
}

std::string Device::to_string() const { return "CpuDevice(id=" + std::to_string(id()) + ")"; }

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

std::ostream& operator<<(std::ostream& os, const std::vector<Device>& ds) {
  os << "[";
  for (size_t i = 0; i < ds.size(); ++i) os << (i ? ", " : "") << ds[i];
  return os << "]";
}

std::vector<Device> devices() { return detail::Topology::get().devices(); }
std::vector<Device> local_devices() { return detail::Topology::get().local_devices(); }
int device_count() { return int(detail::Topology::get().devices().size()); }
int local_device_count() { return int(detail::Topology::get().local_devices().size()); }
int process_index() { return detail::Topology::get().process_index(); }
int process_count() { return detail::Topology::get().process_count(); }

}  // namespace parax
