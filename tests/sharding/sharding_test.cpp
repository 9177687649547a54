// Meshes, PartitionSpecs and shardings on 8 devices, against JAX 0.4.35's own answers
// (tests/golden/sharding_cases.txt, made by tools/make_sharding_goldens.py).
#include <gtest/gtest.h>

#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

const std::map<std::string, std::string>& golden() {
  static auto g = testing::read_golden("sharding_cases.txt");
  return g;
}

const std::string& expect(const std::string& name) {
  auto it = golden().find(name);
  if (it == golden().end()) throw std::runtime_error("no golden record " + name);
  return it->second;
}

std::string indices_text(const Sharding& s, const Shape& shape) {
  std::ostringstream os;
  bool first = true;
  for (const auto& [device, index] : s.devices_indices_map(shape)) {
    os << (first ? "" : "\n") << device.id() << " " << index_str(index);
    first = false;
  }
  return os.str();
}

template <class F>
std::string error_text(F&& f) {
  try {
    f();
  } catch (const ValueError& e) {
    return std::string("ValueError: ") + e.what();
  } catch (const Error& e) {
    return std::string("Error: ") + e.what();
  }
  return "NO ERROR";
}

std::string py_bool(bool b) { return b ? "True" : "False"; }

Mesh mesh42() { return make_mesh({4, 2}, {"a", "b"}); }

const std::vector<std::pair<std::string, P>>& specs42() {
  static std::vector<std::pair<std::string, P>> s = {
      {"P(a,b)", P("a", "b")},
      {"P(b,a)", P("b", "a")},
      {"P(a,None)", P("a", None)},
      {"P(None,b)", P(None, "b")},
      {"P(None,a)", P(None, "a")},
      {"P((a,b),None)", P({"a", "b"}, None)},
      {"P((b,a),None)", P({"b", "a"}, None)},
      {"P()", P()},
      {"P(a)", P("a")},
      {"P(b)", P("b")},
      {"P(None,(a,b))", P(None, {"a", "b"})},
  };
  return s;
}

TEST(Devices, EightVirtualCpuDevices) {
  ASSERT_EQ(device_count(), 8);
  EXPECT_EQ(local_device_count(), 8);
  EXPECT_EQ(process_count(), 1);
  EXPECT_EQ(process_index(), 0);
  EXPECT_EQ(devices()[3].to_string(), expect("device"));
  EXPECT_EQ(devices()[3].platform(), "cpu");
  EXPECT_EQ(devices()[5].id(), 5);
}

TEST(Devices, ChangingTheCountAfterCreationFails) {
  devices();
  EXPECT_THROW(config::set_num_cpu_devices(4), RuntimeError);
}

TEST(Mesh, PrintsAsJax) {
  EXPECT_EQ(mesh42().to_string(), expect("mesh42_str"));
  EXPECT_EQ(mesh42().repr(), expect("mesh42_repr"));
  auto mesh8 = make_mesh({8}, {"x"});
  EXPECT_EQ(mesh8.to_string(), expect("mesh8_str"));
  EXPECT_EQ(mesh8.repr(), expect("mesh8_repr"));
  std::ostringstream os;
  os << mesh42();
  EXPECT_EQ(os.str(), "Mesh('a': 4, 'b': 2)");
}

TEST(Mesh, DeviceOrderIsRowMajor) {
  EXPECT_EQ(mesh42().device_ids(), (std::vector<int>{0, 1, 2, 3, 4, 5, 6, 7}));
  EXPECT_EQ(mesh42().axis_size("b"), 2);
  Mesh m(devices(), "x");
  EXPECT_EQ(m.to_string(), "Mesh('x': 8)");
  Mesh m2(mesh_utils::create_device_mesh({4, 2}), {"a", "b"});
  EXPECT_TRUE(m2 == mesh42());
}

TEST(PartitionSpec, PrintsAsJax) {
  for (const auto& [name, spec] : specs42()) {
    EXPECT_EQ(spec.to_string(), expect("spec_repr " + name)) << name;
  }
  EXPECT_EQ(P("a", None).to_ir_string(), "P('a', None)");
  EXPECT_EQ(P(PartitionSpec::UNCONSTRAINED, "b").to_string(), "PartitionSpec(UNCONSTRAINED, 'b')");
}

TEST(NamedSharding, IndicesShapesAndReprOnMesh4x2) {
  for (const auto& [name, spec] : specs42()) {
    NamedSharding s(mesh42(), spec);
    EXPECT_EQ(s.to_string(), expect("named_repr " + name)) << name;
    EXPECT_EQ(py_bool(s.is_fully_replicated()), expect("replicated 4x2 " + name)) << name;
    for (Shape shape : {Shape{8192, 8192}, Shape{16, 24}, Shape{8, 8}}) {
      std::string key = name + " " + shape_str(shape);
      EXPECT_EQ(indices_text(s, shape), expect("indices 4x2 " + key)) << key;
      EXPECT_EQ(shape_str(s.shard_shape(shape)), expect("shard_shape 4x2 " + key)) << key;
    }
  }
}

TEST(NamedSharding, IndicesOnMesh8) {
  auto mesh8 = make_mesh({8}, {"x"});
  std::vector<std::pair<std::string, P>> specs = {
      {"P(x)", P("x")}, {"P(x,None)", P("x", None)}, {"P(None,x)", P(None, "x")}, {"P()", P()}};
  for (const auto& [name, spec] : specs) {
    NamedSharding s(mesh8, spec);
    EXPECT_EQ(s.to_string(), expect("named_repr8 " + name));
    std::vector<Shape> shapes = {Shape{8, 16}, Shape{16, 8}};
    if (name == "P(x)" || name == "P()") shapes.insert(shapes.begin(), Shape{24});
    for (const Shape& shape : shapes) {
      std::string key = name + " " + shape_str(shape);
      EXPECT_EQ(indices_text(s, shape), expect("indices 8 " + key)) << key;
    }
  }
}

TEST(SingleDeviceSharding, ReprAndIndices) {
  SingleDeviceSharding s(devices()[0]);
  EXPECT_EQ(s.to_string(), expect("single_repr"));
  EXPECT_EQ(indices_text(s, {4, 6}), expect("single_indices"));
  EXPECT_TRUE(s.is_fully_replicated());
}

TEST(PositionalSharding, PrintsAsTheCpuNotebook) {
  PositionalSharding s(mesh_utils::create_device_mesh({8}));
  EXPECT_EQ(s.to_string(), expect("pos8"));
  EXPECT_EQ(s.reshape(8, 1).to_string(), expect("pos8x1"));
  EXPECT_EQ(s.reshape(4, 2).to_string(), expect("pos4x2"));
  EXPECT_EQ(s.reshape(1, 8).to_string(), expect("pos1x8"));
  auto s42 = s.reshape(4, 2);
  EXPECT_EQ(s42.replicate(0, true).to_string(), expect("pos_rep0_keep"));
  EXPECT_EQ(s42.replicate(1).to_string(), expect("pos_rep1"));
  EXPECT_EQ(s42.replicate().to_string(), expect("pos_rep_all"));
  EXPECT_EQ(s42.replicate(0, false).to_string(), expect("pos_rep0_nokeep"));
  EXPECT_EQ(s42.T().to_string(), expect("pos_T"));
  EXPECT_EQ(s.reshape(2, 2, 2).to_string(), expect("pos2x2x2"));
}

TEST(PositionalSharding, TransposedGrid) {
  PositionalSharding s(devices());
  EXPECT_EQ(s.reshape(2, 4).T().to_string(),
            "PositionalSharding([[{CPU 0} {CPU 4}]\n"
            "                    [{CPU 1} {CPU 5}]\n"
            "                    [{CPU 2} {CPU 6}]\n"
            "                    [{CPU 3} {CPU 7}]], shape=(4, 2))");
}

TEST(PositionalSharding, Indices) {
  PositionalSharding s(mesh_utils::create_device_mesh({8}));
  auto s42 = s.reshape(4, 2);
  std::vector<std::pair<std::string, PositionalSharding>> cases = {{"4x2", s42},
                                                                   {"rep0", s42.replicate(0, true)},
                                                                   {"8x1", s.reshape(8, 1)},
                                                                   {"1x8", s.reshape(1, 8)},
                                                                   {"T", s42.T()},
                                                                   {"rep1", s42.replicate(1)}};
  for (const auto& [name, ps] : cases) {
    EXPECT_EQ(indices_text(ps, {8192, 8192}), expect("pos_indices " + name)) << name;
    EXPECT_EQ(py_bool(ps.is_fully_replicated()), expect("pos_replicated " + name)) << name;
  }
  EXPECT_EQ(py_bool(s42.replicate().is_fully_replicated()), expect("pos_replicated all"));
}

TEST(Sharding, Equivalence) {
  NamedSharding a(mesh42(), P("a"));
  NamedSharding b(mesh42(), P("a", None));
  auto s42 = PositionalSharding(mesh_utils::create_device_mesh({8})).reshape(4, 2);
  EXPECT_EQ(py_bool(a.is_equivalent_to(b, 2)), expect("equiv P(a) P(a,None) 2"));
  EXPECT_EQ(py_bool(a == b), expect("eq P(a) P(a,None)"));
  EXPECT_EQ(py_bool(NamedSharding(mesh42(), P("a", "b")).is_equivalent_to(s42, 2)),
            expect("equiv P(a,b) pos4x2 2"));
  EXPECT_EQ(py_bool(b.is_equivalent_to(s42.replicate(1), 2)), expect("equiv P(a,None) pos_rep1 2"));
  EXPECT_EQ(
      py_bool(NamedSharding(mesh42(), P()).is_equivalent_to(SingleDeviceSharding(devices()[0]), 2)),
      expect("equiv P() single"));
  EXPECT_TRUE(a == NamedSharding(mesh42(), P("a")));
}

TEST(Sharding, ErrorsMatchJax) {
  auto x10 = numpy::arange(10.0f);
  const std::vector<Device> d = devices();
  Mesh mesh4(std::vector<Device>(d.begin(), d.begin() + 4), "x");
  auto s42 = PositionalSharding(mesh_utils::create_device_mesh({8})).reshape(4, 2);
  EXPECT_EQ(error_text([&] { NamedSharding(mesh42(), P("c")); }), expect("err_unknown_axis"));
  EXPECT_EQ(error_text([&] { NamedSharding(mesh42(), P("a", "a")); }),
            expect("err_duplicate_axis"));
  EXPECT_EQ(error_text([&] {
              NamedSharding(mesh42(), P({"a", "b"}, "a"));
            }),
            expect("err_duplicate_axis_tuple"));
  EXPECT_EQ(error_text([&] { device_put(x10, NamedSharding(mesh42(), P("a", "b"))); }),
            expect("err_rank"));
  EXPECT_EQ(error_text([&] { device_put(numpy::array(1.0f), NamedSharding(mesh42(), P("a"))); }),
            expect("err_rank_scalar"));
  EXPECT_EQ(error_text([&] { device_put(x10, NamedSharding(mesh4, P("x"))); }),
            expect("err_indivisible"));
  EXPECT_EQ(error_text([&] {
              device_put(numpy::zeros({6, 10}), NamedSharding(mesh42(), P("a", "b")));
            }),
            expect("err_indivisible_2d"));
  EXPECT_EQ(error_text([&] { NamedSharding(mesh4, P("x")).shard_shape({10}); }),
            expect("err_shard_shape"));
  EXPECT_EQ(error_text([&] { make_mesh({4, 4}, {"a", "b"}); }), expect("err_make_mesh_too_big"));
  EXPECT_EQ(error_text([&] {
              mesh_utils::create_device_mesh({4, 2}, std::vector<Device>(d.begin(), d.begin() + 6));
            }),
            expect("err_create_device_mesh"));
  EXPECT_EQ(error_text([&] {
              Mesh(mesh_utils::create_device_mesh({4, 2}), {"a"});
            }),
            expect("err_mesh_rank"));
  EXPECT_EQ(error_text([&] { PositionalSharding(std::vector<Device>{}); }),
            expect("err_pos_empty"));
  EXPECT_EQ(error_text([&] { device_put(x10, s42); }), expect("err_pos_rank"));
  EXPECT_EQ(error_text([&] { make_mesh({4, 2}, {"a"}); }), expect("err_make_mesh_names"));
}

TEST(Sharding, MoreErrors) {
  EXPECT_THROW(Mesh(devices(), {"a", "a"}), ValueError);
  auto d = devices();
  EXPECT_THROW(Mesh(std::vector<Device>{d[0], d[0]}, "x"), ValueError);
  EXPECT_THROW(device_put(numpy::zeros({8}), NamedSharding(mesh42(), P(P::UNCONSTRAINED))),
               ValueError);
  EXPECT_THROW(PositionalSharding(devices()).reshape(3, 3), ValueError);
}

}  // namespace
}  // namespace parax
