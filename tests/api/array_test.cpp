// Arrays on 8 devices: creation, device_put round trips for every dtype and layout,
// shards, commitment, indexing and host copies.
#include <gtest/gtest.h>

#include <cmath>
#include <limits>
#include <sstream>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

Mesh mesh42() { return make_mesh({4, 2}, {"a", "b"}); }

std::vector<Sharding> layouts_2d() {
  auto m = mesh42();
  auto pos = PositionalSharding(devices());
  return {NamedSharding(m, P("a", "b")),
          NamedSharding(m, P("b", "a")),
          NamedSharding(m, P("a", None)),
          NamedSharding(m, P(None, "b")),
          NamedSharding(m, P(None, "a")),
          NamedSharding(m, P({"a", "b"}, None)),
          NamedSharding(m, P({"b", "a"}, None)),
          NamedSharding(m, P()),
          NamedSharding(make_mesh({8}, {"x"}), P("x")),
          NamedSharding(make_mesh({2, 2, 2}, {"p", "q", "r"}), P({"r", "p"}, "q")),
          SingleDeviceSharding(devices()[5]),
          pos.reshape(4, 2),
          pos.reshape(4, 2).replicate(0),
          pos.reshape(1, 8),
          pos.reshape(8, 1)};
}

template <class T>
std::vector<T> sample_values(int64_t n) {
  std::vector<T> v;
  for (int64_t i = 0; i < n; ++i) {
    if constexpr (std::is_same_v<T, bool>)
      v.push_back(i % 3 == 0);
    else if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>)
      v.push_back(T(float(i % 97) - 40.5f));
    else if constexpr (std::is_floating_point_v<T>)
      v.push_back(T(i) * T(0.37) - T(3));
    else if constexpr (std::is_signed_v<T>)
      v.push_back(T(int64_t(i % 101) - 50));
    else
      v.push_back(T(i % 199));
  }
  return v;
}

template <class T>
bool same_values(const std::vector<T>& a, const std::vector<T>& b) {
  if constexpr (std::is_same_v<T, float16_t> || std::is_same_v<T, bfloat16_t>) {
    if (a.size() != b.size()) return false;
    for (size_t i = 0; i < a.size(); ++i) {
      if (a[i].bits != b[i].bits) return false;
    }
    return true;
  } else {
    return a == b;
  }
}

template <class T>
void round_trip_all_layouts() {
  const Shape shape{16, 24};
  auto values = sample_values<T>(shape_size(shape));
  Array x = jnp::array(values, shape, dtype_of<T>());
  ASSERT_EQ(x.dtype(), dtype_of<T>());
  for (const Sharding& s : layouts_2d()) {
    Array y = device_put(x, s);
    EXPECT_TRUE(y.is_committed());
    EXPECT_TRUE(y.sharding() == s);
    auto back = y.to_vector<T>();
    ASSERT_TRUE(same_values(back, values)) << s.to_string();
    // Re-lay an already sharded array under every other layout.
    for (const Sharding& s2 : layouts_2d()) {
      auto again = device_put(y, s2).to_vector<T>();
      ASSERT_TRUE(same_values(again, back)) << s.to_string() << " -> " << s2.to_string();
    }
  }
}

TEST(Array, RoundTripEveryDtypeEveryLayout) {
  round_trip_all_layouts<bool>();
  round_trip_all_layouts<int8_t>();
  round_trip_all_layouts<int16_t>();
  round_trip_all_layouts<int32_t>();
  round_trip_all_layouts<int64_t>();
  round_trip_all_layouts<uint8_t>();
  round_trip_all_layouts<uint16_t>();
  round_trip_all_layouts<uint32_t>();
  round_trip_all_layouts<uint64_t>();
  round_trip_all_layouts<float16_t>();
  round_trip_all_layouts<bfloat16_t>();
  round_trip_all_layouts<float>();
  round_trip_all_layouts<double>();
}

TEST(Array, ShardsHoldTheirSlices) {
  Array x = jnp::reshape(jnp::arange(32), {4, 8});
  Array y = device_put(x, NamedSharding(mesh42(), P("a", "b")));
  auto shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 8u);
  EXPECT_EQ(shards[3].device.id(), 3);
  EXPECT_EQ(index_str(shards[3].index), "(slice(1, 2, None), slice(4, 8, None))");
  EXPECT_EQ(shards[3].data.shape(), (Shape{1, 4}));
  EXPECT_EQ(shards[3].data.to_vector<int>(), (std::vector<int>{12, 13, 14, 15}));
  EXPECT_EQ(shards[3].data.sharding().to_string(), "SingleDeviceSharding(device=CpuDevice(id=3))");
  Array r = device_put(x, NamedSharding(mesh42(), P("a", None)));
  auto rs = r.addressable_shards();
  EXPECT_EQ(rs[0].replica_id, 0);
  EXPECT_EQ(rs[1].replica_id, 1);
  EXPECT_EQ(rs[1].data.to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
}

TEST(Array, CreationFunctionsAreUncommittedOnTheDefaultDevice) {
  for (Array x : {jnp::zeros({3, 4}), jnp::ones({2}), jnp::arange(10), jnp::linspace(0, 1, 5),
                  jnp::eye(3), jnp::full({2, 2}, 7), jnp::array({1.0, 2.0})}) {
    EXPECT_FALSE(x.is_committed());
    EXPECT_EQ(x.sharding().to_string(), "SingleDeviceSharding(device=CpuDevice(id=0))");
    EXPECT_FALSE(x.weak_type());
  }
  EXPECT_TRUE(device_put(jnp::zeros({3}), devices()[2]).is_committed());
  EXPECT_FALSE(device_put(jnp::zeros({3})).is_committed());
}

TEST(Array, CreationValuesAndDtypes) {
  EXPECT_EQ(jnp::zeros({2, 3}).dtype(), float32);
  EXPECT_EQ(jnp::zeros({2}, int8).to_vector<int>(), (std::vector<int>{0, 0}));
  EXPECT_EQ(jnp::ones({2}).to_vector<float>(), (std::vector<float>{1, 1}));
  EXPECT_EQ(jnp::arange(5).dtype(), int32);
  EXPECT_EQ(jnp::arange(5).to_vector<int>(), (std::vector<int>{0, 1, 2, 3, 4}));
  EXPECT_EQ(jnp::arange(1, 10, 3).to_vector<int>(), (std::vector<int>{1, 4, 7}));
  EXPECT_EQ(jnp::arange(0.0, 1.0, 0.25).to_vector<float>(),
            (std::vector<float>{0.f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(jnp::arange(3.0).dtype(), float32);
  EXPECT_EQ(jnp::linspace(0, 1, 5).to_vector<float>(),
            (std::vector<float>{0.f, 0.25f, 0.5f, 0.75f, 1.f}));
  EXPECT_EQ(jnp::linspace(0, 1, 4, false).to_vector<float>(),
            (std::vector<float>{0.f, 0.25f, 0.5f, 0.75f}));
  EXPECT_EQ(jnp::eye(2, 3, 1).to_vector<float>(), (std::vector<float>{0, 1, 0, 0, 0, 1}));
  EXPECT_EQ(jnp::full({2}, 2.5).dtype(), float32);  // a C++ double is JAX's Python float
  EXPECT_EQ(jnp::full({2}, int64_t(3)).dtype(), int32);
  EXPECT_EQ(jnp::full({2}, 3.0f, float64).dtype(), float64);  // explicit dtypes are kept
  EXPECT_EQ(jnp::array({1.0, 2.0}).dtype(), float32);
  EXPECT_EQ(jnp::array(std::vector<double>{1.5}, Shape{1}, float64).to_vector<double>()[0], 1.5);
  EXPECT_EQ(jnp::array({{1, 2}, {3, 4}}).shape(), (Shape{2, 2}));
  EXPECT_EQ(jnp::array(true).dtype(), bool_);
  EXPECT_EQ(jnp::array(3.0f).ndim(), 0);
  EXPECT_EQ(jnp::array(3.0f).item<float>(), 3.0f);
  EXPECT_THROW(jnp::array({1.f, 2.f, 3.f}, Shape{2, 2}), ValueError);
  EXPECT_THROW(jnp::ones({2, 2}).item<float>(), ValueError);
}

TEST(Array, Reshape) {
  Array x = jnp::arange(24);
  EXPECT_EQ(jnp::reshape(x, {4, -1}).shape(), (Shape{4, 6}));
  EXPECT_EQ(jnp::reshape(x, {2, 3, 4}).to_vector<int>(), x.to_vector<int>());
  EXPECT_THROW(jnp::reshape(x, {5, 5}), TypeError);
  Array y = device_put(x, NamedSharding(make_mesh({8}, {"x"}), P("x")));
  Array z = jnp::reshape(y, {4, 6});
  EXPECT_EQ(z.to_vector<int>(), x.to_vector<int>());
  EXPECT_TRUE(z.is_committed());
  EXPECT_EQ(z.sharding().device_set(), devices());
}

TEST(Array, IndexingKeepsTheRemainingSharding) {
  Array x = jnp::reshape(jnp::arange(64), {8, 8});
  Array y = device_put(x, NamedSharding(mesh42(), P("a", "b")));
  Array row = y[5];
  EXPECT_EQ(row.shape(), (Shape{8}));
  EXPECT_EQ(row.to_vector<int>(), (std::vector<int>{40, 41, 42, 43, 44, 45, 46, 47}));
  EXPECT_EQ(row.sharding().to_string(),
            "NamedSharding(mesh=Mesh('a': 4, 'b': 2), spec=PartitionSpec('b',))");
  EXPECT_EQ(y[-1].to_vector<int>()[0], 56);
  EXPECT_EQ(y[2][3].item<int>(), 19);
  EXPECT_EQ(x[1][1].item<int>(), 9);
  EXPECT_THROW(y[8], IndexError);
  EXPECT_THROW(jnp::array(1.0f)[0], IndexError);
}

TEST(Array, ConvertingCopiesAndDeviceGet) {
  Array x = jnp::array({1.5f, -2.0f, 0.0f});
  EXPECT_EQ(x.to_vector<int>(), (std::vector<int>{1, -2, 0}));
  EXPECT_EQ(x.to_vector<bool>(), (std::vector<bool>{true, true, false}));
  EXPECT_EQ(x.to_vector<double>()[0], 1.5);
  HostArray h = device_get(device_put(x, NamedSharding(make_mesh({1}, {"x"}), P("x"))));
  EXPECT_EQ(h.shape, (Shape{3}));
  EXPECT_EQ(h.data<float>()[1], -2.0f);
  EXPECT_THROW(h.data<int>(), TypeError);
}

TEST(Array, ZeroSizeAndScalars) {
  Array e = jnp::zeros({0, 3});
  EXPECT_EQ(e.size(), 0);
  Array es = device_put(jnp::zeros({0, 8}), NamedSharding(mesh42(), P(None, "a")));
  EXPECT_EQ(es.to_vector<float>().size(), 0u);
  Array s = device_put(jnp::array(2.5f), NamedSharding(mesh42(), P()));
  EXPECT_EQ(s.item<float>(), 2.5f);
  EXPECT_EQ(s.addressable_shards().size(), 8u);
}

// JAX's x.device: the one device of a single-device array, committed or not.
TEST(Array, DeviceOfASingleDeviceArray) {
  const Array x = jnp::arange(6.0f);
  EXPECT_EQ(x.device(), devices()[0]);
  EXPECT_EQ(device_put(x, devices()[3]).device(), devices()[3]);
  // A mesh of one device holds it whole too (JAX 0.4.35 returns the NamedSharding here,
  // 0.10.2 and the earlier x.device() the device).
  const Mesh one(std::vector<Device>{devices()[6]}, "q");
  EXPECT_EQ(device_put(x, NamedSharding(one, P("q"))).device(), devices()[6]);
}

// JAX 0.4.35 returns the sharding for an array on several devices, which a Device cannot
// hold: parax raises the error JAX's x.device() raised, naming the layout.
TEST(Array, DeviceOfAShardedArrayRaises) {
  const Array x = jnp::arange(16.0f).reshape({8, 2});
  for (const Sharding& s :
       {Sharding(NamedSharding(mesh42(), P("a"))), Sharding(NamedSharding(mesh42(), P()))}) {
    const Array y = device_put(x, s);
    try {
      (void)y.device();
      ADD_FAILURE() << "no error for " << s;
    } catch (const ValueError& e) {
      const std::string m = e.what();
      EXPECT_NE(m.find("Length of devices is greater than 1. Please use `.devices()`."),
                std::string::npos)
          << m;
      EXPECT_NE(m.find(s.to_string()), std::string::npos) << m;
      EXPECT_NE(m.find("8 devices"), std::string::npos) << m;
    }
  }
  auto f = jit([](const Array& a) { return a + float(a.device().id()); });
  EXPECT_THROW(f(x), ConcretizationError);  // JAX: a tracer has no attribute device
}

// JAX's x.to_device(d) is device_put(x, d): committed to d, values and weak type kept.
TEST(Array, ToDeviceCommitsAsDevicePut) {
  const Array x = jnp::arange(16.0f).reshape({8, 2});
  ASSERT_FALSE(x.is_committed());
  const Array z = x.to_device(devices()[1]);
  EXPECT_TRUE(z.is_committed());
  EXPECT_EQ(z.sharding(), Sharding(SingleDeviceSharding(devices()[1])));
  EXPECT_EQ(z.to_vector<float>(), x.to_vector<float>());

  const Array sharded = device_put(x, NamedSharding(mesh42(), P("a", "b")));
  const Array back = sharded.to_device(devices()[7]);
  EXPECT_TRUE(back.is_committed());
  EXPECT_EQ(back.device(), devices()[7]);
  EXPECT_EQ(back.to_vector<float>(), x.to_vector<float>());

  const NamedSharding rows(mesh42(), P("a"));
  EXPECT_EQ(x.to_device(rows).sharding(), Sharding(rows));
  EXPECT_TRUE(x.to_device(rows).is_committed());

  const Array weak = ArrayLike(3.0).array();
  EXPECT_TRUE(weak.to_device(devices()[2]).weak_type());
  EXPECT_EQ(weak.to_device(devices()[2]).item<float>(), 3.0f);

  auto g = jit([](const Array& a) { return a.to_device(devices()[4]) * 2.0f; });
  EXPECT_EQ(g(x).to_vector<float>(), (x * 2.0f).to_vector<float>());
}

TEST(Array, EmptyHandleRaises) {
  Array a;
  EXPECT_FALSE(a.valid());
  EXPECT_THROW(a.shape(), ValueError);
}

struct Layer {
  Array w, b;
};
PARAX_REGISTER_PYTREE(Layer, w, b)

TEST(DevicePut, Pytrees) {
  auto s = NamedSharding(mesh42(), P("a"));
  std::vector<std::pair<Array, Array>> params = {{jnp::ones({8, 4}), jnp::zeros({8})},
                                                 {jnp::ones({16, 2}), jnp::zeros({4})}};
  auto put = device_put(params, s);
  EXPECT_TRUE(put[1].first.sharding() == s);
  EXPECT_TRUE(put[0].second.is_committed());
  std::map<std::string, Array> dict = {{"x", jnp::arange(8)}, {"y", jnp::arange(16)}};
  auto d2 = device_put(dict, devices()[3]);
  EXPECT_EQ(d2["y"].devices(), (std::vector<Device>{devices()[3]}));
  std::tuple<Array, std::array<Array, 2>, Layer> t{
      jnp::zeros({8}), {jnp::ones({4}), jnp::ones({8})}, Layer{jnp::ones({8, 8}), jnp::zeros({8})}};
  auto t2 = device_put(t, NamedSharding(mesh42(), P()));
  EXPECT_TRUE(std::get<2>(t2).w.sharding().is_fully_replicated());
  EXPECT_EQ(std::get<2>(t2).w.sharding().num_devices(), 8);
}

}  // namespace
}  // namespace parax

namespace parax {
namespace {

TEST(Array, PrintsAsJax) {
  std::ostringstream os;
  os << jnp::arange(10);
  EXPECT_EQ(os.str(), "Array([0, 1, 2, 3, 4, 5, 6, 7, 8, 9], dtype=int32)");
  Array x = device_put(jnp::reshape(jnp::arange(16), {4, 4}),
                       NamedSharding(make_mesh({4, 2}, {"a", "b"}), P("a", "b")));
  EXPECT_EQ(x.to_string(),
            "Array([[ 0,  1,  2,  3],\n"
            "       [ 4,  5,  6,  7],\n"
            "       [ 8,  9, 10, 11],\n"
            "       [12, 13, 14, 15]], dtype=int32)");
  EXPECT_EQ(jnp::array({11.f, 20.f, 29.f}).str(), "[11. 20. 29.]");
  EXPECT_EQ(jnp::array(1.0034581f).to_string(), "Array(1.0034581, dtype=float32)");
  EXPECT_EQ(jnp::array(1.0034581f).str(), "1.0034581");
  EXPECT_EQ(jnp::zeros({0, 3}).to_string(), "Array([], shape=(0, 3), dtype=float32)");
  std::ostringstream shard;
  shard << x.addressable_shards()[1];
  EXPECT_EQ(shard.str(),
            "Shard(device=CpuDevice(id=1), index=(slice(0, 1, None), slice(2, 4, None)), "
            "replica_id=0, data=[[2 3]])");
}

}  // namespace
}  // namespace parax
