// One process's view of a run of two processes with 4 devices each, without the other
// process or an engine: the topology is placed as process PARAX_TEST_PROCESS_INDEX (0 or 1)
// of two, so everything that needs no communication can be checked in one process:
// addressability, shards, printing and the read error, building global arrays from this
// process's pieces, the hybrid mesh, and multihost_utils' clear error without an engine.
#include <gtest/gtest.h>

#include <cstdlib>
#include <sstream>

#include <parax/parax.h>

#include "sharding/topology.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

int me() {
  const char* p = std::getenv("PARAX_TEST_PROCESS_INDEX");
  return p ? std::atoi(p) : 0;
}

class TwoProcessView : public ::testing::Environment {
 public:
  void SetUp() override { detail::Topology::configure(me(), {4, 4}); }
};
const auto* const kView = ::testing::AddGlobalTestEnvironment(new TwoProcessView);

const char* const kReadError =
    "Fetching value for `parax::Array` that spans non-addressable (non process local) devices "
    "is not possible. You can use `parax::multihost_utils::process_allgather` to print the "
    "global array or use `.addressable_shards()` method of parax::Array to inspect the "
    "addressable (process local) shards.";

std::vector<float> block_of(const Index& index) {
  std::vector<float> block;
  for (int64_t i = index[0].begin(8); i < index[0].end(8); ++i) {
    for (int64_t j = index[1].begin(4); j < index[1].end(4); ++j) block.push_back(float(i * 4 + j));
  }
  return block;
}

TEST(MultihostView, DevicesAreNumberedAsJax) {
  ASSERT_EQ(devices().size(), 8u);
  EXPECT_EQ(devices()[4].id(), 2048);
  EXPECT_EQ(process_count(), 2);
  EXPECT_EQ(local_devices().front().id(), me() * 2048);
}

TEST(MultihostView, ShardedArraySpansProcesses) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  std::vector<Index> asked;
  Array x = make_array_from_callback(Shape{8, 4}, s, [&](const Index& index) {
    asked.push_back(index);
    return block_of(index);
  });
  EXPECT_EQ(asked.size(), 4u);  // this process's devices only
  EXPECT_FALSE(x.is_fully_addressable());
  EXPECT_FALSE(x.is_fully_replicated());
  const std::vector<Shard> shards = x.addressable_shards();
  ASSERT_EQ(shards.size(), 4u);
  for (size_t k = 0; k < shards.size(); ++k) {
    EXPECT_EQ(shards[k].device, local_devices()[k]);
    EXPECT_EQ(shards[k].index[0].begin(8), 4 * me() + 2 * int64_t(k / 2));
    EXPECT_EQ(shards[k].data.to_vector<float>(), block_of(shards[k].index));
  }
  EXPECT_EQ(x.to_string(), "Array(shape=(8, 4), dtype=float32)");
  EXPECT_EQ(x.str(), "Array(shape=(8, 4), dtype=float32)");
  std::ostringstream printed;
  printed << x;
  EXPECT_EQ(printed.str(), "Array(shape=(8, 4), dtype=float32)");
  EXPECT_THROW_MSG(x.to_vector<float>(), RuntimeError, kReadError);
  EXPECT_THROW_MSG(x.to_vector<double>(), RuntimeError, kReadError);
  EXPECT_THROW_MSG(device_get(x), RuntimeError, kReadError);
  EXPECT_THROW_HAS(multihost_utils::process_allgather(x), RuntimeError,
                   "[process_allgather] this process is one of 2 but has no collective engine; "
                   "call parax::distributed::initialize() first");
}

TEST(MultihostView, ReplicatedArrayReadsTheLocalReplica) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P());
  Array x = make_array_from_callback(Shape{8, 4}, s, block_of);
  EXPECT_FALSE(x.is_fully_addressable());
  EXPECT_TRUE(x.is_fully_replicated());
  EXPECT_EQ(x.to_vector<float>()[5], 5.0f);
  EXPECT_EQ(x.to_string().rfind("Array([[ 0.,  1.,  2.,  3.],", 0), 0u);
  // Every process holds the whole value: gathering needs no engine.
  EXPECT_EQ(multihost_utils::process_allgather(x).to_vector<float>(), x.to_vector<float>());
}

TEST(MultihostView, ArrayWhollyOnTheOtherProcess) {
  // A mesh of the other process's devices: this process holds nothing of the array.
  std::vector<Device> theirs;
  for (const Device& d : devices()) {
    if (d.process_index() != me()) theirs.push_back(d);
  }
  const NamedSharding s(Mesh(theirs, "x"), P());
  auto never = [](const Index&) -> std::vector<float> {
    ADD_FAILURE() << "called for another process's device";
    return {};
  };
  EXPECT_THROW_MSG(make_array_from_callback(Shape{8}, s, never), ValueError,
                   "If the Array has no addressable shards, `dtype` must be provided via the "
                   "`dtype` argument to `parax::make_array_from_callback`.");
  Array x = make_array_from_callback(Shape{8}, s, never, DType::int32);
  EXPECT_EQ(x.dtype(), DType::int32);
  EXPECT_TRUE(x.addressable_shards().empty());
  EXPECT_EQ(x.to_string(), "Array(shape=(8,), dtype=int32)");
  EXPECT_THROW_MSG(x.to_vector<int>(), RuntimeError, kReadError);
}

TEST(MultihostView, LocallyCompleteArrayReadsButPrintsItsType) {
  // Sharded over 'y' only, which is within each process: this process holds every
  // distinct block, so JAX reads the value, but prints only the type (not replicated).
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P(None, "y"));
  Array x = make_array_from_callback(Shape{8, 4}, s, block_of);
  EXPECT_FALSE(x.is_fully_addressable());
  EXPECT_EQ(x.to_vector<float>()[31], 31.0f);
  EXPECT_EQ(x.to_string(), "Array(shape=(8, 4), dtype=float32)");
}

TEST(MultihostView, ProcessLocalDataIsThisProcessSlab) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array local = jnp::arange(16.0f).reshape({4, 4}) + float(100 * me());
  Array x = make_array_from_process_local_data(s, local);
  EXPECT_EQ(x.shape(), (Shape{8, 4}));
  for (const Shard& shard : x.addressable_shards()) {
    const int64_t r = shard.index[0].begin(8) - 4 * me(), c = shard.index[1].begin(4);
    std::vector<float> want;
    for (int64_t i = r; i < r + 2; ++i) {
      for (int64_t j = c; j < c + 2; ++j) want.push_back(float(i * 4 + j + 100 * me()));
    }
    EXPECT_EQ(shard.data.to_vector<float>(), want);
  }
  // Columns whole: the slab's rows are this process's, its columns the global ones.
  EXPECT_EQ(make_array_from_process_local_data(s, local, Shape{8, 4}).shape(), (Shape{8, 4}));
  EXPECT_THROW_MSG(make_array_from_process_local_data(s, jnp::zeros({3, 4}), Shape{8, 4}),
                   ValueError,
                   "Invalid host data, each dimension should match either global or process "
                   "shape. In dimension 0, the process data has 3 elements. Process addresses 4 "
                   "elements and global_shape=(8, 4).");
  // Both processes hold x slices 0 and 1, each one more: neither equal nor disjoint.
  const std::vector<Device> d = devices();
  Mesh odd(DeviceGrid({d[0], d[4], d[1], d[5], d[2], d[3], d[6], d[7]}, {4, 2}), {"x", "y"});
  EXPECT_THROW_MSG(make_array_from_process_local_data(NamedSharding(odd, P("x")), local),
                   ValueError,
                   "Unable to compute global_shape due to non-uniform sharding. Specify global "
                   "shape directly. Partially computed global_shape=(None, 4).");
}

TEST(MultihostView, SingleDeviceArraysAreThisProcessOnes) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  std::vector<Array> pieces;
  for (const auto& [device, index] : s.devices_indices_map({8, 4})) {
    if (device.process_index() != me()) continue;
    pieces.push_back(device_put(jnp::array(block_of(index)).reshape({2, 2}), device));
  }
  Array x = make_array_from_single_device_arrays({8, 4}, s, pieces);
  EXPECT_FALSE(x.is_fully_addressable());
  for (const Shard& shard : x.addressable_shards()) {
    EXPECT_EQ(shard.data.to_vector<float>(), block_of(shard.index));
  }
  pieces.pop_back();
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, pieces), ValueError,
                   "Expected 4 per-device arrays (this is how many devices are addressable by "
                   "the sharding), but got 3");
}

TEST(MultihostView, HybridMeshTilesProcesses) {
  auto ids = [](const DeviceGrid& g) {
    std::vector<int> out;
    for (const Device& d : g.flat()) out.push_back(d.id());
    return out;
  };
  const DeviceGrid rows = mesh_utils::create_hybrid_device_mesh({2, 2}, {2, 1});
  EXPECT_EQ(rows.shape(), (Shape{4, 2}));
  EXPECT_EQ(ids(rows), (std::vector<int>{0, 1, 2, 3, 2048, 2049, 2050, 2051}));
  const DeviceGrid cols = mesh_utils::create_hybrid_device_mesh({2, 2}, {1, 2});
  EXPECT_EQ(cols.shape(), (Shape{2, 4}));
  EXPECT_EQ(ids(cols), (std::vector<int>{0, 1, 2048, 2049, 2, 3, 2050, 2051}));
  EXPECT_THROW_MSG(mesh_utils::create_hybrid_device_mesh({2, 2}, {1, 1}), ValueError,
                   "Number of slices 2 must equal the product of dcn_mesh_shape (1, 1)");
  EXPECT_THROW_MSG(mesh_utils::create_hybrid_device_mesh({2, 1}, {2, 1}), ValueError,
                   "Number of devices 4 must equal the product of mesh_shape (2, 1)");
}

TEST(MultihostView, UtilsNeedTheEngine) {
  Array a = jnp::arange(3.0f);
  EXPECT_TRUE(a.is_fully_addressable());
  EXPECT_THROW_HAS(multihost_utils::process_allgather(a), RuntimeError,
                   "call parax::distributed::initialize() first");
  EXPECT_THROW_HAS(multihost_utils::broadcast_one_to_all(a), RuntimeError,
                   "call parax::distributed::initialize() first");
  EXPECT_THROW_HAS(multihost_utils::sync_global_devices("x"), RuntimeError,
                   "call parax::distributed::initialize() first");
}

}  // namespace
}  // namespace parax
