// Python's zarr (3.x) and safetensors read what parax writes, and parax reads what they
// write, values equal: through tests/checkpointing/interop.py, run by the interpreter of
// the virtualenv scripts/setup makes. Without it (or its packages) every case is skipped,
// saying why.
#include <gtest/gtest.h>

#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <random>

#include <parax/checkpointing.h>
#include <parax/parax.h>

#include "support/checkpoint_data.h"

namespace parax {
namespace {

namespace fs = std::filesystem;
namespace jnp = numpy;
namespace ckpt = checkpointing;
using testing_support::values_of;

struct Outcome {
  int status = -1;
  std::string out;
};

Outcome python(const std::string& args) {
  const fs::path log = fs::temp_directory_path() / ("parax-interop-" + std::to_string(::getpid()));
  const std::string line = std::string("timeout -k 5 120 ") + PARAX_INTEROP_PYTHON + " " +
                           PARAX_INTEROP_SCRIPT + " " + args + " > " + log.string() + " 2>&1";
  Outcome r;
  const int raw = std::system(line.c_str());
  r.status = WIFEXITED(raw) ? WEXITSTATUS(raw) : -1;
  std::ifstream in(log);
  r.out.assign(std::istreambuf_iterator<char>(in), {});
  fs::remove(log);
  return r;
}

// Returns why the interop cases cannot run here, or "".
std::string unavailable() {
  static const std::string why = [] {
    if (!fs::exists(PARAX_INTEROP_PYTHON)) {
      return std::string("no interop virtualenv at ") + PARAX_INTEROP_PYTHON +
             " (scripts/setup makes it when pip can reach PyPI)";
    }
    const Outcome r = python("check-deps");
    return r.status == 0 ? std::string() : r.out;
  }();
  return why;
}

#define SKIP_WITHOUT_PYTHON()                                  \
  do {                                                         \
    if (const std::string why = unavailable(); !why.empty()) { \
      GTEST_SKIP() << "skipped: " << why;                      \
    }                                                          \
  } while (0)

using testing_support::TempDir;

Array random_array(const Shape& shape, DType dtype, uint32_t seed) {
  std::mt19937 gen(seed);
  std::uniform_real_distribution<float> dist(-100.0f, 100.0f);
  std::vector<float> v(size_t(shape_size(shape)));
  for (float& x : v) x = dist(gen);
  return jnp::array(v, shape).astype(dtype);
}

nlohmann::json entry(const std::string& name, const Array& x) {
  return {{"name", name},
          {"dtype", std::string(dtype_name(x.dtype()))},
          {"shape", x.shape()},
          {"values", values_of(x)}};
}

TEST(InteropPython, ZarrReadsParaxCheckpoints) {
  SKIP_WITHOUT_PYTHON();
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  std::map<std::string, Array> tree;
  uint32_t seed = 1;
  for (DType t : {DType::bool_, DType::int8, DType::uint16, DType::int32, DType::uint64,
                  DType::float16, DType::bfloat16, DType::float32, DType::float64}) {
    tree[std::string(dtype_name(t))] =
        device_put(random_array({8, 6}, t, seed++), NamedSharding(mesh, P("a", "b")));
  }
  tree["scalar"] = jnp::asarray(2.5f);
  for (const std::optional<int> level : {std::optional<int>(), std::optional<int>(3)}) {
    TempDir tmp;
    ckpt::save(tmp / "c", tree, {.zstd_level = level});
    nlohmann::json expected = {{"arrays", nlohmann::json::array()}};
    for (const auto& [name, x] : tree) expected["arrays"].push_back(entry(name, x));
    std::ofstream(tmp / "expected.json") << expected.dump();
    const Outcome r = python("read-checkpoint " + (tmp / "c") + " " + (tmp / "expected.json"));
    EXPECT_EQ(r.status, 0) << r.out;
  }
}

TEST(InteropPython, ParaxReadsZarrPythonArrays) {
  SKIP_WITHOUT_PYTHON();
  TempDir tmp;
  const Outcome r = python("write-zarr " + (tmp / "z"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(tmp / "z/expected.json");
  const nlohmann::json expected = nlohmann::json::parse(in);
  ASSERT_FALSE(expected.at("arrays").empty());
  for (const nlohmann::json& a : expected.at("arrays")) {
    const Array x = ckpt::read_zarr(tmp / ("z/" + a.at("name").get<std::string>()));
    EXPECT_EQ(x.shape(), a.at("shape").get<Shape>()) << a.at("name");
    EXPECT_EQ(std::string(dtype_name(x.dtype())), a.at("dtype")) << a.at("name");
    EXPECT_EQ(values_of(x), a.at("values")) << a.at("name");
  }
}

TEST(InteropPython, SafetensorsBothWays) {
  SKIP_WITHOUT_PYTHON();
  TempDir tmp;
  nn::StateDict state;
  uint32_t seed = 10;
  for (DType t : {DType::bool_, DType::uint8, DType::int16, DType::int64, DType::float16,
                  DType::bfloat16, DType::float32, DType::float64}) {
    state.insert_or_assign(std::string("t_") + std::string(dtype_name(t)),
                           random_array({5, 3}, t, seed++));
  }
  const Mesh mesh = make_mesh({2}, {"x"});
  state.insert_or_assign("sharded", device_put(random_array({4, 6}, DType::float32, 99),
                                               NamedSharding(mesh, P(None, "x"))));
  ckpt::save_safetensors(tmp / "p.safetensors", state, {{"format", "pt"}});
  nlohmann::json expected = {{"arrays", nlohmann::json::array()}, {"metadata", {{"format", "pt"}}}};
  for (const auto& [name, x] : state) {
    nlohmann::json e = entry(name, x);
    e["kind"] = "safetensors";
    expected["arrays"].push_back(e);
  }
  std::ofstream(tmp / "expected.json") << expected.dump();
  Outcome r = python("read-safetensors " + (tmp / "p.safetensors") + " " + (tmp / "expected.json"));
  EXPECT_EQ(r.status, 0) << r.out;

  r = python("write-safetensors " + (tmp / "py.safetensors"));
  ASSERT_EQ(r.status, 0) << r.out;
  std::ifstream in(tmp / "py.safetensors.expected.json");
  const nlohmann::json theirs = nlohmann::json::parse(in);
  const nn::StateDict loaded = ckpt::load_safetensors(tmp / "py.safetensors");
  for (const nlohmann::json& a : theirs.at("arrays")) {
    const Array& x = loaded.at(a.at("name"));
    EXPECT_EQ(x.shape(), a.at("shape").get<Shape>()) << a.at("name");
    EXPECT_EQ(values_of(x), a.at("values")) << a.at("name");
  }
}

}  // namespace
}  // namespace parax
