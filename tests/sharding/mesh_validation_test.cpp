// Meshes of no devices and negative or overflowing axis sizes are rejected with a
// ValueError naming the shape, by every way of making a mesh, a device grid or a positional
// sharding; valid ones still work.
#include <gtest/gtest.h>

#include <cstdint>
#include <vector>

#include "parax/parax.h"
#include "support/errors.h"

namespace parax {
namespace {

constexpr int64_t k31 = int64_t(1) << 31;

TEST(SizesMesh, EmptyMeshIsRejected) {
  EXPECT_THROW_HAS(Mesh(std::vector<Device>{}, "a"), ValueError,
                   "[Mesh] a mesh needs at least one device; got an empty device grid of "
                   "shape (0,) for axis_names ('a',)");
  EXPECT_THROW_HAS(Mesh(DeviceGrid({}, {0, 4}), {"a", "b"}), ValueError,
                   "[Mesh] a mesh needs at least one device; got an empty device grid of "
                   "shape (0, 4) for axis_names ('a', 'b')");
  EXPECT_THROW_HAS(make_mesh({0}, {"a"}), ValueError,
                   "[make_mesh] mesh axis sizes must be positive; got axis_shapes (0,)");
  EXPECT_THROW_HAS(PositionalSharding(std::vector<Device>{}), ValueError,
                   "requires at least one device");
}

TEST(SizesMesh, NegativeAxisSizesAreRejected) {
  EXPECT_THROW_HAS(make_mesh({-2, -4}, {"a", "b"}), ValueError,
                   "[make_mesh] mesh axis sizes must be positive; got axis_shapes (-2, -4)");
  EXPECT_THROW_HAS(make_mesh({8, -1}, {"a", "b"}), ValueError,
                   "[make_mesh] mesh axis sizes must be positive; got axis_shapes (8, -1)");
  EXPECT_THROW_HAS(mesh_utils::create_device_mesh({-2, -4}), ValueError,
                   "[create_device_mesh] mesh axis sizes must be positive; got mesh_shape "
                   "(-2, -4)");
  EXPECT_THROW_HAS(DeviceGrid(devices(), {-2, -4}), ValueError,
                   "[DeviceGrid] mesh axis sizes must be nonnegative; got shape (-2, -4)");
  EXPECT_THROW_HAS(DeviceGrid(devices()).reshape({-2, -4}), ValueError,
                   "[DeviceGrid.reshape] mesh axis sizes must be nonnegative");
  EXPECT_THROW_HAS(PositionalSharding(devices()).reshape({-2, -4}), ValueError,
                   "cannot reshape array of size 8 into shape (-2, -4): sizes must be "
                   "nonnegative, with at most one -1");
  EXPECT_THROW_HAS(PositionalSharding(devices()).reshape({k31 * k31, 4, 0}), ValueError,
                   "cannot reshape array of size 8");
  EXPECT_THROW_HAS(make_mesh({k31 * 2, k31 * 2, 2}, {"a", "b", "c"}), ValueError,
                   "[make_mesh] the product of axis_shapes");
  // Valid ones still work, -1 included where numpy allows it.
  EXPECT_EQ(PositionalSharding(devices()).reshape({-1, 2}).shape(), (Shape{4, 2}));
  EXPECT_EQ(make_mesh({4, 2}, {"a", "b"}).size(), 8);
  EXPECT_EQ(make_mesh({2}, {"a"}).size(), 2);
}

}  // namespace
}  // namespace parax
