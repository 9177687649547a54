#include "runtime/client.h"

#include <ostream>

#include "base/config_internal.h"
#include "parax/errors.h"

namespace parax {
namespace runtime {

Client& Client::get() {
  static Client client;
  return client;
}

Client::Client() {
  int n = detail::freeze_num_cpu_devices();
  states_.resize(size_t(n));
  for (int i = 0; i < n; ++i) {
    states_[size_t(i)].id = i;
    states_[size_t(i)].local_index = i;
  }
  for (DeviceState& s : states_) devices_.push_back(Device(&s));
  local_devices_ = devices_;
}

Device Client::device(int id) const {
  for (const Device& d : devices_) {
    if (d.id() == id) return d;
  }
  throw ValueError("No device with id " + std::to_string(id) + "; this process has " +
                   std::to_string(devices_.size()) + " devices.");
}

}  // namespace runtime

namespace {
const runtime::DeviceState& checked(const runtime::DeviceState* s) {
  if (!s) throw ValueError("use of an empty parax::Device handle; get devices from parax::devices()");
  return *s;
}
}  // namespace

int Device::id() const { return checked(state_).id; }
std::string_view Device::platform() const { return checked(state_).platform; }
int Device::process_index() const { return checked(state_).process_index; }

std::string Device::to_string() const {
  return "CpuDevice(id=" + std::to_string(id()) + ")";
}

std::ostream& operator<<(std::ostream& os, const Device& d) { return os << d.to_string(); }

std::ostream& operator<<(std::ostream& os, const std::vector<Device>& ds) {
  os << "[";
  for (size_t i = 0; i < ds.size(); ++i) os << (i ? ", " : "") << ds[i];
  return os << "]";
}

std::vector<Device> devices() { return runtime::Client::get().devices(); }
std::vector<Device> local_devices() { return runtime::Client::get().local_devices(); }
int device_count() { return int(runtime::Client::get().devices().size()); }
int local_device_count() { return int(runtime::Client::get().local_devices().size()); }
int process_index() { return runtime::Client::get().process_index(); }
int process_count() { return runtime::Client::get().process_count(); }

}  // namespace parax
