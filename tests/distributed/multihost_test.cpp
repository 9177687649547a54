// The multi-host array API in a run of one process with 8 devices, where everything is
// addressable: building arrays from per-device pieces (and JAX's errors), multihost_utils
// as identities and stacks over one process, and the hybrid mesh over one process.
#include <gtest/gtest.h>

#include <sstream>

#include <parax/parax.h>

#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

// The (8, 4) array whose element (i, j) is i * 4 + j, block by block.
std::vector<float> block_of(const Index& index) {
  std::vector<float> block;
  for (int64_t i = index[0].begin(8); i < index[0].end(8); ++i) {
    for (int64_t j = index[1].begin(4); j < index[1].end(4); ++j) block.push_back(float(i * 4 + j));
  }
  return block;
}

std::vector<float> iota(int n) {
  std::vector<float> v(size_t(n), 0.0f);
  for (int i = 0; i < n; ++i) v[size_t(i)] = float(i);
  return v;
}

TEST(MultihostOneProcess, EverythingIsAddressable) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array x = make_array_from_callback(Shape{8, 4}, s, block_of);
  EXPECT_TRUE(x.is_fully_addressable());
  EXPECT_FALSE(x.is_fully_replicated());
  EXPECT_EQ(x.addressable_shards().size(), 8u);
  EXPECT_EQ(x.to_vector<float>(), iota(32));
  std::ostringstream printed;
  printed << x[0];
  EXPECT_EQ(printed.str(), "Array([0., 1., 2., 3.], dtype=float32)");
  EXPECT_TRUE(jnp::arange(3).is_fully_addressable());
}

TEST(MultihostOneProcess, CallbackRunsOnceWhenFullyReplicated) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P());
  int calls = 0;
  Array x = make_array_from_callback(Shape{8, 4}, s, [&](const Index& index) {
    ++calls;
    EXPECT_EQ(index_str(index), index_str(Index(2)));
    return block_of(index);
  });
  EXPECT_EQ(calls, 1);
  EXPECT_TRUE(x.is_fully_replicated());
  EXPECT_EQ(x.addressable_shards().size(), 8u);
  EXPECT_EQ(x.to_vector<float>(), iota(32));
}

TEST(MultihostOneProcess, CallbackDtypeErrors) {
  const NamedSharding s(make_mesh({8}, {"x"}), P("x"));
  auto mixed = [](const Index& index) {
    Array block = jnp::zeros({2});
    return index[0].begin(16) == 0 ? block : block.astype(DType::int32);
  };
  EXPECT_THROW_MSG(make_array_from_callback(Shape{16}, s, mixed), ValueError,
                   "Input buffers to `Array` must have matching dtypes. Got int32, expected "
                   "float32 for buffer: Array([0, 0], dtype=int32)");
  auto floats = [](const Index&) { return jnp::zeros({2}); };
  EXPECT_THROW_MSG(make_array_from_callback(Shape{16}, s, floats, DType::int32), ValueError,
                   "If `dtype` is provided to `parax::make_array_from_callback`, it must match "
                   "the dtype of the addressable shards. Got dtype=int32 and shard "
                   "dtype=float32`.");
  EXPECT_EQ(make_array_from_callback(Shape{16}, s, floats, DType::float32).dtype(), DType::float32);
}

// This process's pieces, one per device of `s`, in reverse order (any order is accepted).
std::vector<Array> pieces_of(const Sharding& s, const Shape& shape, const Array& value) {
  std::vector<Array> out;
  for (const auto& [device, index] : s.devices_indices_map(shape)) {
    out.insert(out.begin(), device_put(value.slice(index), device));
  }
  return out;
}

TEST(MultihostOneProcess, SingleDeviceArraysRoundTrip) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array value = jnp::arange(32.0f).reshape({8, 4});
  Array x = make_array_from_single_device_arrays({8, 4}, s, pieces_of(s, {8, 4}, value));
  EXPECT_EQ(x.sharding(), Sharding(s));
  EXPECT_TRUE(x.is_committed());
  EXPECT_EQ(x.to_vector<float>(), iota(32));
  for (const Shard& shard : x.addressable_shards()) {
    EXPECT_EQ(shard.data.to_vector<float>(), block_of(shard.index));
  }
}

TEST(MultihostOneProcess, SingleDeviceArraysErrors) {
  const std::vector<Device> d = devices();
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array value = jnp::arange(32.0f).reshape({8, 4});
  std::vector<Array> good = pieces_of(s, {8, 4}, value);
  std::vector<Array> fewer(good.begin() + 1, good.end());
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, fewer), ValueError,
                   "Expected 8 per-device arrays (this is how many devices are addressable by "
                   "the sharding), but got 7");
  std::vector<Array> twice = good;
  twice[1] = good[0];
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, twice), ValueError,
                   "When making an array from single-device arrays, the input arrays must be "
                   "from distinct devices, but got device IDs [7, 7, 5, 4, 3, 2, 1, 0]");
  const NamedSharding four(make_mesh({4}, {"x"}), P("x"));
  std::vector<Array> moved = pieces_of(four, {8}, jnp::arange(8.0f));
  moved[0] = device_put(moved[0], d[7]);  // device 3's piece on device 7
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8}, four, moved), ValueError,
                   "Addressable devices and per-device arrays devices do not match. Sharding "
                   "contains devices {3} that are not present in per-device arrays. Per-device "
                   "arrays contain devices {7} that are not present in the sharding.");
  std::vector<Array> sharded = good;
  sharded[0] = device_put(value, s);
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, sharded), ValueError,
                   "When making an array from single-device arrays the input arrays must have "
                   "one shard each. An argument array had 8 shard(s).");
  std::vector<Array> wrong_shape = good;
  wrong_shape[0] = device_put(jnp::zeros({3}), d[7]);
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, wrong_shape), ValueError,
                   "Expected shard shape (2, 2) doesn't match the single device array shape "
                   "(3,). Shape of Array is float32[8,4] with sharding "
                   "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec('x', 'y'))");
  std::vector<Array> wrong_dtype = good;
  wrong_dtype[1] = device_put(jnp::zeros({2, 2}, DType::int32), d[6]);
  EXPECT_THROW_HAS(make_array_from_single_device_arrays({8, 4}, s, wrong_dtype), ValueError,
                   "Input buffers to `Array` must have matching dtypes. Got int32, expected "
                   "float32 for buffer: Array([[0, 0],");
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, {}), ValueError,
                   "If the Array has no addressable shards, `dtype` must be provided via the "
                   "`dtype` argument to `parax::make_array_from_single_device_arrays`.");
  EXPECT_THROW_MSG(make_array_from_single_device_arrays({8, 4}, s, good, DType::int32), ValueError,
                   "If `dtype` is provided to `parax::make_array_from_single_device_arrays`, it "
                   "must match the dtype of the addressable shards. Got dtype=int32 and shard "
                   "dtype=float32`.");
  auto traced = jit([&](const Array& a) {
    return make_array_from_single_device_arrays({2}, SingleDeviceSharding(d[0]), {a});
  });
  EXPECT_THROW_HAS(traced(jnp::zeros({2})), ValueError, "requires a list of concrete arrays");
}

TEST(MultihostOneProcess, ProcessLocalDataIsTheWholeArray) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array local = jnp::arange(32.0f).reshape({8, 4});
  Array x = make_array_from_process_local_data(s, local);
  EXPECT_EQ(x.sharding(), Sharding(s));
  EXPECT_EQ(x.to_vector<float>(), iota(32));
  EXPECT_EQ(make_array_from_process_local_data(s, local, Shape{8, 4}).to_vector<float>(), iota(32));
  EXPECT_THROW_MSG(make_array_from_process_local_data(s, local, Shape{16, 4}), ValueError,
                   "When calling `make_array_from_process_local_data` on a single process, "
                   "global_shape should be None or equal to local_data.shape.Got "
                   "global_shape=(16, 4) and local_data.shape=(8, 4).");
}

TEST(MultihostOneProcess, ProcessAllgatherStacksOrKeepsOneProcess) {
  const NamedSharding s(make_mesh({4, 2}, {"x", "y"}), P("x", "y"));
  Array x = make_array_from_callback(Shape{8, 4}, s, block_of);
  Array stacked = multihost_utils::process_allgather(x);
  EXPECT_EQ(stacked.shape(), (Shape{1, 8, 4}));
  EXPECT_EQ(stacked.to_vector<float>(), iota(32));
  EXPECT_TRUE(stacked.is_fully_addressable());
  EXPECT_FALSE(stacked.is_committed());
  Array tiled = multihost_utils::process_allgather(x, true);
  EXPECT_EQ(tiled.shape(), (Shape{8, 4}));
  EXPECT_EQ(tiled.to_vector<float>(), iota(32));
  Array scalar = jnp::array(5);
  EXPECT_EQ(multihost_utils::process_allgather(scalar).shape(), (Shape{1}));
  EXPECT_EQ(multihost_utils::process_allgather(scalar, true).shape(), (Shape{}));
  EXPECT_EQ(multihost_utils::process_allgather(scalar, true).item<int>(), 5);
}

TEST(MultihostOneProcess, BroadcastSyncAndAssertAreLocal) {
  Array x = device_put(jnp::arange(8.0f), NamedSharding(make_mesh({8}, {"x"}), P("x")));
  Array b = multihost_utils::broadcast_one_to_all(x);
  EXPECT_EQ(b.to_vector<float>(), iota(8));
  EXPECT_EQ(b.shape(), (Shape{8}));
  auto [p, q] = multihost_utils::process_allgather(std::pair{x, jnp::arange(2)});
  EXPECT_EQ(p.shape(), (Shape{1, 8}));
  EXPECT_EQ(q.to_vector<int>(), (std::vector<int>{0, 1}));
  std::vector<Array> both = multihost_utils::broadcast_one_to_all(std::vector<Array>{x, x});
  EXPECT_EQ(both.at(1).to_vector<float>(), iota(8));
  multihost_utils::sync_global_devices("step");
  multihost_utils::assert_equal(x, "same everywhere");
}

TEST(MultihostOneProcess, HybridMeshOverOneProcess) {
  EXPECT_EQ(mesh_utils::create_hybrid_device_mesh({4, 2}, {1, 1}).flat(),
            mesh_utils::create_device_mesh({4, 2}).flat());
  EXPECT_EQ(mesh_utils::create_hybrid_device_mesh({4, 2}, {1, 1}).shape(), (Shape{4, 2}));
  EXPECT_THROW_MSG(mesh_utils::create_hybrid_device_mesh({4, 2}, {2, 1}), ValueError,
                   "Number of slices 1 must equal the product of dcn_mesh_shape (2, 1)");
  EXPECT_THROW_MSG(mesh_utils::create_hybrid_device_mesh({4, 4}, {1, 1}), ValueError,
                   "Number of devices 8 must equal the product of mesh_shape (4, 4)");
  EXPECT_THROW_MSG(mesh_utils::create_hybrid_device_mesh({4, 2}, {1}), ValueError,
                   "[create_hybrid_device_mesh] mesh_shape (4, 2) and dcn_mesh_shape (1,) must "
                   "have the same length");
}

}  // namespace
}  // namespace parax
