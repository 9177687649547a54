#include "sharding/topology.h"

#include <ostream>

#include "base/config_internal.h"
#include "parax/errors.h"

namespace parax {
namespace detail {

Topology& Topology::get() {
  static Topology topology;
  return topology;
}

Topology::Topology() {
  int n = detail::freeze_num_cpu_devices();
  states_.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    states_[size_t(i)].id = i;
    states_[size_t(i)].local_index = i;
  }
  for (DeviceState& s : states_) devices_.push_back(Device(&s));
  local_devices_ = devices_;
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
