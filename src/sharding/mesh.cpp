#include <algorithm>
#include <map>
#include <set>
#include <sstream>

#include "base/nested_format.h"
#include "parax/errors.h"
#include "parax/sharding.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"

namespace parax {
namespace detail {

std::string names_tuple(const std::vector<std::string>& names) {
  std::string s = "(";
  for (size_t i = 0; i < names.size(); ++i) s += (i ? ", '" : "'") + names[i] + "'";
  return s + (names.size() == 1 ? ",)" : ")");
}

}  // namespace detail

using detail::names_tuple;

namespace {

// Axis sizes are positive (nonnegative where `allow_zero`: an empty grid, which no mesh
// accepts). A negative size whose product matches the device count would otherwise pass
// and leave every shard empty.
void check_axis_sizes(const char* api, const char* arg, const Shape& sizes,
                      bool allow_zero = false) {
  for (int64_t s : sizes) {
    if (s > 0 || (allow_zero && s == 0)) continue;
    throw ValueError(std::string("[") + api + "] mesh axis sizes must be " +
                     (allow_zero ? "nonnegative" : "positive") + "; got " + arg + " " +
                     shape_str(sizes));
  }
  int64_t n = 1;
  for (int64_t s : sizes) {
    if (__builtin_mul_overflow(n, s, &n)) {
      throw ValueError(std::string("[") + api + "] the product of " + arg + " " + shape_str(sizes) +
                       " overflows a 64-bit size");
    }
  }
}

}  // namespace

DeviceGrid::DeviceGrid(std::vector<Device> devices)
    : devices_(std::move(devices)), shape_{int64_t(devices_.size())} {}

DeviceGrid::DeviceGrid(std::vector<Device> devices, Shape shape)
    : devices_(std::move(devices)), shape_(std::move(shape)) {
  check_axis_sizes("DeviceGrid", "shape", shape_, true);
  if (shape_size(shape_) != int64_t(devices_.size())) {
    throw ValueError("cannot arrange " + std::to_string(devices_.size()) + " devices into shape " +
                     shape_str(shape_));
  }
}

DeviceGrid DeviceGrid::reshape(Shape shape) const {
  check_axis_sizes("DeviceGrid.reshape", "shape", shape, true);
  if (shape_size(shape) != size()) {
    throw ValueError("cannot reshape a device grid of size " + std::to_string(size()) +
                     " into shape " + shape_str(shape));
  }
  return DeviceGrid(devices_, std::move(shape));
}

struct Mesh::Data {
  std::vector<Device> devices;
  Shape sizes;
  std::vector<std::string> names;
};

Mesh::Mesh(const DeviceGrid& grid, std::vector<std::string> axis_names) {
  if (grid.size() == 0) {
    throw ValueError(
        "[Mesh] a mesh needs at least one device; got an empty device grid of "
        "shape " +
        shape_str(grid.shape()) + " for axis_names " + names_tuple(axis_names));
  }
  if (grid.ndim() != int64_t(axis_names.size())) {
    throw ValueError(
        "Mesh requires the ndim of its first argument (`devices`) to equal the length of its "
        "second argument (`axis_names`), but got devices.ndim == " +
        std::to_string(grid.ndim()) +
        " and len(axis_names) == " + std::to_string(axis_names.size()) + ".");
  }
  std::set<std::string> unique_names(axis_names.begin(), axis_names.end());
  if (unique_names.size() != axis_names.size()) {
    throw ValueError("Mesh axis names must be unique. Got: " + names_tuple(axis_names));
  }
  std::set<int> ids;
  for (const Device& d : grid.flat()) {
    if (!ids.insert(d.id()).second) {
      throw ValueError("Mesh devices must be distinct; device " + std::to_string(d.id()) +
                       " appears more than once.");
    }
  }
  data_ = std::make_shared<Data>(Data{grid.flat(), grid.shape(), std::move(axis_names)});
}

Mesh::Mesh(std::vector<Device> devices, std::vector<std::string> axis_names)
    : Mesh(DeviceGrid(std::move(devices)), std::move(axis_names)) {}

Mesh::Mesh(std::vector<Device> devices, const char* axis_name)
    : Mesh(DeviceGrid(std::move(devices)), std::vector<std::string>{axis_name}) {}

const std::vector<std::string>& Mesh::axis_names() const { return data_->names; }
const Shape& Mesh::axis_sizes() const { return data_->sizes; }
const std::vector<Device>& Mesh::devices() const { return data_->devices; }
DeviceGrid Mesh::device_grid() const { return DeviceGrid(data_->devices, data_->sizes); }
int64_t Mesh::size() const { return int64_t(data_->devices.size()); }

int Mesh::axis_index(const std::string& name) const {
  const auto& names = data_->names;
  auto it = std::find(names.begin(), names.end(), name);
  return it == names.end() ? -1 : int(it - names.begin());
}

int64_t Mesh::axis_size(const std::string& name) const {
  int i = axis_index(name);
  if (i < 0) {
    throw ValueError("Axis '" + name + "' is not in mesh " + to_string());
  }
  return data_->sizes[size_t(i)];
}

std::vector<int> Mesh::device_ids() const {
  std::vector<int> ids;
  for (const Device& d : data_->devices) ids.push_back(d.id());
  return ids;
}

std::vector<Device> Mesh::local_devices() const {
  std::vector<Device> out;
  for (const Device& d : data_->devices) {
    if (detail::is_local(d)) out.push_back(d);
  }
  return out;
}

std::string Mesh::to_string() const {
  std::string s = "Mesh(";
  for (size_t i = 0; i < data_->names.size(); ++i) {
    s += (i ? ", '" : "'") + data_->names[i] + "': " + std::to_string(data_->sizes[i]);
  }
  return s + ")";
}

std::string Mesh::repr() const {
  std::vector<int> ids = device_ids();
  size_t width = 0;
  for (int id : ids) width = std::max(width, std::to_string(id).size());
  // numpy's repr of the id array, as JAX embeds it: prefix "array(", suffix ")".
  detail::NestedFormat fmt;
  fmt.separator = ", ";
  fmt.prefix_width = 6;
  fmt.line_width = 75 - 1;
  std::string body = detail::format_nested(
      data_->sizes,
      [&](int64_t i, std::string& out) {
        std::string s = std::to_string(ids[size_t(i)]);
        out.append(width - s.size(), ' ');
        out += s;
      },
      fmt);
  return "Mesh(device_ids=array(" + body + "), axis_names=" + names_tuple(data_->names) + ")";
}

bool Mesh::operator==(const Mesh& o) const {
  if (data_ == o.data_) return true;
  return data_->devices == o.data_->devices && data_->sizes == o.data_->sizes &&
         data_->names == o.data_->names;
}

std::ostream& operator<<(std::ostream& os, const Mesh& m) { return os << m.to_string(); }

Mesh make_mesh(std::vector<int64_t> axis_shapes, std::vector<std::string> axis_names,
               std::vector<Device> devices) {
  if (devices.empty()) devices = parax::devices();
  check_axis_sizes("make_mesh", "axis_shapes", axis_shapes);
  int64_t n = shape_size(axis_shapes);
  if (n > int64_t(devices.size())) {
    throw ValueError("Number of devices " + std::to_string(devices.size()) +
                     " must be >= the product of mesh_shape " + shape_str(axis_shapes));
  }
  devices.resize(size_t(n));
  return Mesh(mesh_utils::create_device_mesh(std::move(axis_shapes), std::move(devices)),
              std::move(axis_names));
}

namespace mesh_utils {

DeviceGrid create_device_mesh(Shape mesh_shape, std::vector<Device> devices) {
  if (devices.empty()) devices = parax::devices();
  check_axis_sizes("create_device_mesh", "mesh_shape", mesh_shape);
  if (shape_size(mesh_shape) != int64_t(devices.size())) {
    throw ValueError("Number of devices " + std::to_string(devices.size()) +
                     " must equal the product of mesh_shape " + shape_str(mesh_shape));
  }
  // On CPU, JAX orders devices plainly row-major: there is no topology to follow.
  return DeviceGrid(std::move(devices), std::move(mesh_shape));
}

DeviceGrid create_hybrid_device_mesh(Shape mesh_shape, Shape dcn_mesh_shape,
                                     std::vector<Device> devices) {
  if (devices.empty()) devices = parax::devices();
  check_axis_sizes("create_hybrid_device_mesh", "mesh_shape", mesh_shape);
  check_axis_sizes("create_hybrid_device_mesh", "dcn_mesh_shape", dcn_mesh_shape);
  if (mesh_shape.size() != dcn_mesh_shape.size()) {
    throw ValueError("[create_hybrid_device_mesh] mesh_shape " + shape_str(mesh_shape) +
                     " and dcn_mesh_shape " + shape_str(dcn_mesh_shape) +
                     " must have the same length");
  }
  // Processes are the granules, in process order (JAX's process_is_granule=True: CPU
  // devices have no slice_index).
  std::map<int, std::vector<Device>> by_process;
  for (const Device& d : devices) by_process[d.process_index()].push_back(d);
  if (shape_size(dcn_mesh_shape) != int64_t(by_process.size())) {
    throw ValueError("Number of slices " + std::to_string(by_process.size()) +
                     " must equal the product of dcn_mesh_shape " + shape_str(dcn_mesh_shape));
  }
  std::vector<DeviceGrid> granules;
  for (auto& [process, ds] : by_process) granules.push_back(create_device_mesh(mesh_shape, ds));
  // numpy's block(): granule g's grid fills the block at g's place in the dcn grid.
  Shape shape(mesh_shape.size());
  for (size_t d = 0; d < shape.size(); ++d) shape[d] = mesh_shape[d] * dcn_mesh_shape[d];
  std::vector<Device> out;
  for (int64_t flat = 0; flat < shape_size(shape); ++flat) {
    int64_t rest = flat, granule = 0, inner = 0, granule_stride = 1, inner_stride = 1;
    for (size_t d = shape.size(); d-- > 0;) {
      const int64_t c = rest % shape[d];
      rest /= shape[d];
      granule += c / mesh_shape[d] * granule_stride;
      inner += c % mesh_shape[d] * inner_stride;
      granule_stride *= dcn_mesh_shape[d];
      inner_stride *= mesh_shape[d];
    }
    out.push_back(granules[size_t(granule)].flat()[size_t(inner)]);
  }
  return DeviceGrid(std::move(out), std::move(shape));
}

}  // namespace mesh_utils
}  // namespace parax
