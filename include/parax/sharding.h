// How an array is laid out over devices: meshes, PartitionSpecs and the Sharding kinds of
// JAX (NamedSharding, SingleDeviceSharding, PositionalSharding).
#pragma once

#include <initializer_list>
#include <memory>
#include <optional>
#include <ostream>
#include <string>
#include <utility>
#include <vector>

#include "parax/device.h"
#include "parax/shape.h"

namespace parax {

// How one array dimension is sharded: over no mesh axis (None), one axis, or several
// (the first is major).
class SpecEntry {
 public:
  SpecEntry() : absent_(true) {}  // marks an unused trailing parameter of P(...)
  SpecEntry(None_t) {}
  SpecEntry(const char* axis) : axes_{axis} {}
  SpecEntry(std::string axis) : axes_{std::move(axis)} {}
  SpecEntry(std::initializer_list<std::string> axes) : axes_(axes), grouped_(true) {}
  SpecEntry(std::vector<std::string> axes) : axes_(std::move(axes)), grouped_(true) {}
  static SpecEntry unconstrained();

  const std::vector<std::string>& axes() const { return axes_; }
  bool is_none() const { return axes_.empty() && !unconstrained_; }
  bool is_unconstrained() const { return unconstrained_; }
  bool absent() const { return absent_; }
  // Prints as Python: None, 'a', ('a', 'b'), UNCONSTRAINED.
  std::string to_string() const;
  bool operator==(const SpecEntry& o) const {
    return axes_ == o.axes_ && unconstrained_ == o.unconstrained_ && grouped_ == o.grouped_;
  }

 private:
  std::vector<std::string> axes_;
  bool grouped_ = false;  // written as a tuple, prints as one even with one name
  bool unconstrained_ = false;
  bool absent_ = false;
};

// Which mesh axes shard each array dimension: P("a", None), P({"a", "b"}), P().
// Missing trailing entries mean None.
class PartitionSpec {
 public:
  PartitionSpec(SpecEntry e0 = {}, SpecEntry e1 = {}, SpecEntry e2 = {}, SpecEntry e3 = {},
                SpecEntry e4 = {}, SpecEntry e5 = {}, SpecEntry e6 = {}, SpecEntry e7 = {});
  // One dimension sharded over several axes: P({"a", "b"}). (Write P("a", "b"), with
  // parentheses, for two dimensions; braces make one grouped entry.)
  PartitionSpec(std::initializer_list<std::string> grouped_axes);
  static PartitionSpec from_entries(std::vector<SpecEntry> entries);
  // The entry that leaves a dimension for the compiler to choose (with_sharding_constraint).
  static const SpecEntry UNCONSTRAINED;

  const std::vector<SpecEntry>& entries() const { return entries_; }
  size_t size() const { return entries_.size(); }
  const SpecEntry& operator[](size_t i) const { return entries_[i]; }
  // Returns JAX's (classic) repr: `PartitionSpec('a', None)`, `PartitionSpec('a',)`.
  std::string to_string() const;
  // Returns the IR form used in program dumps: `P('a', None)`.
  std::string to_ir_string() const;
  bool operator==(const PartitionSpec& o) const { return entries_ == o.entries_; }

 private:
  std::vector<SpecEntry> entries_;
};
using P = PartitionSpec;
std::ostream& operator<<(std::ostream& os, const PartitionSpec& p);

// An N-d grid of devices (numpy's object array of devices in JAX), row-major.
class DeviceGrid {
 public:
  DeviceGrid() = default;
  DeviceGrid(std::vector<Device> devices);  // 1-D
  DeviceGrid(std::vector<Device> devices, Shape shape);
  const Shape& shape() const { return shape_; }
  int64_t ndim() const { return int64_t(shape_.size()); }
  int64_t size() const { return int64_t(devices_.size()); }
  const std::vector<Device>& flat() const { return devices_; }
  // Requires: the new shape has the same number of devices.
  DeviceGrid reshape(Shape shape) const;

 private:
  std::vector<Device> devices_;
  Shape shape_;
};

// A named grid of devices; shardings name its axes.
class Mesh {
 public:
  Mesh(const DeviceGrid& devices, std::vector<std::string> axis_names);
  Mesh(std::vector<Device> devices, std::vector<std::string> axis_names);
  Mesh(std::vector<Device> devices, const char* axis_name);

  const std::vector<std::string>& axis_names() const;
  const Shape& axis_sizes() const;
  // Returns the size of a named axis; throws ValueError for an unknown name.
  int64_t axis_size(const std::string& name) const;
  // Returns the position of a named axis, or -1.
  int axis_index(const std::string& name) const;
  // Returns the devices in row-major grid order (the device assignment).
  const std::vector<Device>& devices() const;
  DeviceGrid device_grid() const;
  std::vector<int> device_ids() const;
  int64_t size() const;
  bool empty() const { return size() == 0; }
  std::vector<Device> local_devices() const;
  // Returns JAX's str: `Mesh('a': 4, 'b': 2)`.
  std::string to_string() const;
  // Returns JAX's repr: `Mesh(device_ids=array([[0, 1], ...]), axis_names=('a', 'b'))`.
  std::string repr() const;
  bool operator==(const Mesh& o) const;

 private:
  struct Data;
  std::shared_ptr<const Data> data_;
};
std::ostream& operator<<(std::ostream& os, const Mesh& m);

// Makes a mesh over the first prod(axis_shapes) of `devices` (default: all devices) in
// row-major order, as jax.make_mesh does on CPU.
Mesh make_mesh(std::vector<int64_t> axis_shapes, std::vector<std::string> axis_names,
               std::vector<Device> devices = {});

namespace mesh_utils {
// Arranges exactly prod(mesh_shape) devices (default: all) into a grid of that shape.
DeviceGrid create_device_mesh(Shape mesh_shape, std::vector<Device> devices = {});
// Arranges devices (default: all) for parallelism within and across processes: each
// process's devices form a mesh_shape grid, and these grids tile a dcn_mesh_shape grid in
// process order, giving shape mesh_shape[i] * dcn_mesh_shape[i] (JAX's
// create_hybrid_device_mesh with process_is_granule=True). Throws ValueError unless there
// are prod(dcn_mesh_shape) processes of prod(mesh_shape) devices each.
DeviceGrid create_hybrid_device_mesh(Shape mesh_shape, Shape dcn_mesh_shape,
                                     std::vector<Device> devices = {});
}  // namespace mesh_utils

namespace detail {
struct ShardingImpl;
}

// Any layout of an array over devices. A value type; NamedSharding and the others are
// Shardings with extra accessors.
class Sharding {
 public:
  // A bare PartitionSpec, which jit's in/out_shardings, device_put and
  // with_sharding_constraint read on the mesh of the enclosing sharding::use_mesh scope
  // (outside one they raise JAX's error). Other uses raise RuntimeError.
  Sharding(const PartitionSpec& spec);  // NOLINT(google-explicit-constructor)
  // Returns the devices in device-assignment order (a mesh's flat order).
  const std::vector<Device>& device_assignment() const;
  // Returns the set of devices, sorted by id.
  std::vector<Device> device_set() const;
  int64_t num_devices() const;
  // Returns, for every device in device-assignment order, the index of the shard it
  // holds of an array of `shape`.
  std::vector<std::pair<Device, Index>> devices_indices_map(const Shape& shape) const;
  // Returns the shape of each shard; throws ValueError if the sharding does not divide it.
  Shape shard_shape(const Shape& shape) const;
  bool is_fully_replicated() const;
  // True if both place every shard of a rank-`ndim` array on the same devices.
  bool is_equivalent_to(const Sharding& other, int64_t ndim) const;
  // Returns JAX's repr, e.g. `NamedSharding(mesh=Mesh('a': 4), spec=PartitionSpec('a',))`.
  std::string to_string() const;
  bool operator==(const Sharding& other) const;

  // Returns the NamedSharding view, or nullopt for another kind.
  std::optional<class NamedSharding> as_named() const;
  // Returns the same layout as a NamedSharding over a mesh built from this sharding.
  NamedSharding to_named(int64_t ndim) const;

  // Internal.
  const detail::ShardingImpl& impl() const { return *impl_; }
  explicit Sharding(std::shared_ptr<const detail::ShardingImpl> impl) : impl_(std::move(impl)) {}

 protected:
  std::shared_ptr<const detail::ShardingImpl> impl_;
};
std::ostream& operator<<(std::ostream& os, const Sharding& s);

// Shards array dimensions over named mesh axes, as the PartitionSpec says.
class NamedSharding : public Sharding {
 public:
  // Throws ValueError for an axis that is not in the mesh or is used twice.
  NamedSharding(Mesh mesh, PartitionSpec spec);
  const Mesh& mesh() const;
  const PartitionSpec& spec() const;

 private:
  friend class Sharding;
  explicit NamedSharding(std::shared_ptr<const detail::ShardingImpl> impl) : Sharding(impl) {}
};

// The whole array on one device.
class SingleDeviceSharding : public Sharding {
 public:
  explicit SingleDeviceSharding(Device device);
  Device device() const;
};

// JAX's classic positional sharding: an N-d grid of device sets, one per tile.
class PositionalSharding : public Sharding {
 public:
  PositionalSharding(const DeviceGrid& devices);
  PositionalSharding(std::vector<Device> devices);
  const Shape& shape() const;
  int64_t ndim() const { return int64_t(shape().size()); }
  PositionalSharding reshape(Shape shape) const;
  template <class... Ints>
  PositionalSharding reshape(int64_t d0, Ints... ds) const {
    return reshape(Shape{d0, int64_t(ds)...});
  }
  // Permutes the tile grid (all axes reversed when empty).
  PositionalSharding transpose(std::vector<int> axes = {}) const;
  PositionalSharding T() const { return transpose(); }
  // Merges the device sets along `axis` (all axes if nullopt).
  PositionalSharding replicate(std::optional<int> axis = std::nullopt, bool keepdims = true) const;

 private:
  explicit PositionalSharding(std::shared_ptr<const detail::ShardingImpl> impl)
      : Sharding(std::move(impl)) {}
};

namespace sharding {

// Makes a mesh the context mesh of this thread while it lives (jax.sharding.use_mesh, or
// `with mesh:`); scopes nest, the innermost wins.
class [[nodiscard]] MeshScope {
 public:
  explicit MeshScope(const Mesh& mesh);
  ~MeshScope();
  MeshScope(const MeshScope&) = delete;
  MeshScope& operator=(const MeshScope&) = delete;
};

// Returns a scope under which a bare PartitionSpec means NamedSharding(mesh, spec):
// `auto scope = parax::sharding::use_mesh(mesh);`.
[[nodiscard]] inline MeshScope use_mesh(const Mesh& mesh) { return MeshScope(mesh); }

// Returns the mesh of this thread's innermost use_mesh scope, or nullopt outside any.
std::optional<Mesh> get_mesh();

}  // namespace sharding

}  // namespace parax
