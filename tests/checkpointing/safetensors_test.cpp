// safetensors files: every dtype round trip, shards written and read in place on 8
// devices (whole rows straight, other layouts through bounded slabs), the file the
// Python library writes for the same tensors byte for byte, and the Python library's
// checks on what it reads.
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <random>

#include <parax/checkpointing.h>
#include <parax/parax.h>

#include "api/array_impl.h"
#include "core/array_value.h"
#include "support/checkpoint_data.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace fs = std::filesystem;
namespace jnp = numpy;
namespace ckpt = checkpointing;

std::string temp_path(const std::string& name) {
  return (fs::temp_directory_path() / ("parax-st-" + std::to_string(::getpid()) + "-" + name))
      .string();
}

using testing_support::bytes_of;

std::string file_text(const std::string& path) {
  std::ifstream in(path, std::ios::binary);
  return std::string(std::istreambuf_iterator<char>(in), {});
}

void write_file(const std::string& path, const std::string& bytes) {
  std::ofstream(path, std::ios::binary) << bytes;
}

Array random_array(const Shape& shape, DType dtype, uint32_t seed) {
  return testing_support::random_bits(shape, dtype, seed);
}

// A file of the given header text and `data_bytes` zero bytes of data.
std::string safetensors_file(const std::string& header, size_t data_bytes) {
  std::string out(8, '\0');
  const uint64_t n = header.size();
  std::memcpy(out.data(), &n, 8);
  return out + header + std::string(data_bytes, '\0');
}

TEST(Safetensors, EveryDtypeRoundTrips) {
  nn::StateDict state;
  for (int t = 0; t < kNumDTypes; ++t) {
    state.insert_or_assign("t" + std::to_string(t), random_array({3, 2}, DType(t), uint32_t(t)));
  }
  state.insert_or_assign("scalar", random_array({}, DType::float64, 40));
  state.insert_or_assign("empty", jnp::zeros({0, 3}));
  const std::string path = temp_path("all.safetensors");
  ckpt::save_safetensors(path, state, {{"format", "pt"}});
  const nn::StateDict back = ckpt::load_safetensors(path);
  ASSERT_EQ(back.size(), state.size());
  for (const auto& [name, x] : state) {
    EXPECT_EQ(back.at(name).dtype(), x.dtype()) << name;
    EXPECT_EQ(back.at(name).shape(), x.shape()) << name;
    EXPECT_EQ(bytes_of(back.at(name)), bytes_of(x)) << name;
  }
  // the header: 8-byte aligned, the metadata first, tensors by dtype (largest code first)
  const std::string bytes = file_text(path);
  uint64_t n = 0;
  std::memcpy(&n, bytes.data(), 8);
  EXPECT_EQ(n % 8, 0u);
  EXPECT_EQ(bytes.substr(8, 34), R"({"__metadata__":{"format":"pt"},"t)");
  fs::remove(path);
}

// The header as the Python library orders it: metadata first, then tensors by dtype code
// (largest first) and name, offsets in that order. (CheckpointGoldens compares a whole
// file the Python library wrote.)
TEST(Safetensors, HeaderInThePythonLibrarysOrder) {
  nn::StateDict state;
  state.insert_or_assign("w", jnp::arange(6.0).astype(DType::float32).reshape({2, 3}));
  state.insert_or_assign("step", jnp::asarray(int64_t(7)).astype(DType::int64));
  const std::string path = temp_path("tiny.safetensors");
  ckpt::save_safetensors(path, state, {{"format", "np"}});
  const std::string header =
      R"({"__metadata__":{"format":"np"},"step":{"dtype":"I64","shape":[],"data_offsets":[0,8]},)"
      R"("w":{"dtype":"F32","shape":[2,3],"data_offsets":[8,32]}})";
  const std::string bytes = file_text(path);
  ASSERT_GE(bytes.size(), 8 + header.size());
  EXPECT_EQ(bytes.substr(8, header.size()), header);
  fs::remove(path);
}

TEST(Safetensors, ShardsAreWrittenAndReadInPlace) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array x = random_array({64, 32}, DType::float32, 7);
  const std::string path = temp_path("sharded.safetensors");
  for (const PartitionSpec& save_spec : {P("a", "b"), P(None, "a"), P("a"), P()}) {
    nn::StateDict state;
    state.insert_or_assign("x", device_put(x, NamedSharding(mesh, save_spec)));
    ckpt::save_safetensors(path, state);
    for (const PartitionSpec& load_spec : {P("a", "b"), P(None, "a"), P("b", None), P()}) {
      const NamedSharding s(mesh, load_spec);
      const nn::StateDict back = ckpt::load_safetensors(path, {{"x", s}});
      EXPECT_EQ(back.at("x").sharding(), Sharding(s));
      EXPECT_TRUE(back.at("x").is_committed());
      EXPECT_EQ(bytes_of(back.at("x")), bytes_of(x));
      for (const Shard& shard : back.at("x").addressable_shards()) {
        EXPECT_EQ(bytes_of(shard.data), bytes_of(x.slice(shard.index)));
      }
      EXPECT_LE(ckpt::last_io_stats().peak_staging_bytes, 64 * 32 * 4);
    }
  }
  fs::remove(path);
}

TEST(SafetensorsErrors, WhatThePythonLibraryRejects) {
  const std::string path = temp_path("bad.safetensors");
  write_file(path, "abc");
  EXPECT_THROW_MSG(ckpt::load_safetensors(path), ValueError,
                   "load_safetensors: " + path + " is too short for a header");
  write_file(path, safetensors_file("{\"a\":1}", 0).substr(0, 12));
  EXPECT_THROW_MSG(ckpt::load_safetensors(path), ValueError,
                   "load_safetensors: " + path +
                       " has a header of 7 bytes, longer than the file or than 100,000,000");
  write_file(path,
             safetensors_file(R"({"x":{"dtype":"F8_E4M3","shape":[2],"data_offsets":[0,2]}})", 2));
  EXPECT_THROW_MSG(
      ckpt::load_safetensors(path), ValueError,
      "load_safetensors: tensor 'x' in " + path + ": dtype 'F8_E4M3' is not one parax has");
  write_file(path,
             safetensors_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,4]}})", 4));
  EXPECT_THROW_MSG(ckpt::load_safetensors(path), ValueError,
                   "load_safetensors: tensor 'x' in " + path +
                       ": data_offsets [0, 4] do not hold 2 elements of float32");
  write_file(path,
             safetensors_file(R"({"x":{"dtype":"F32","shape":[1],"data_offsets":[4,8]}})", 8));
  EXPECT_THROW_MSG(
      ckpt::load_safetensors(path), ValueError,
      "load_safetensors: " + path + ": tensor 'x' starts at 4, not where the one before ends (0)");
  const std::string header = R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})";
  write_file(path, safetensors_file(header, 5));
  EXPECT_THROW_MSG(ckpt::load_safetensors(path), ValueError,
                   "load_safetensors: " + path + " is " + std::to_string(8 + header.size() + 5) +
                       " bytes but its header describes " + std::to_string(8 + header.size() + 8) +
                       " (truncated)");
  write_file(path,
             safetensors_file(R"({"x":{"dtype":"F32","shape":[2],"data_offsets":[0,8]}})", 8));
  EXPECT_THROW_MSG(
      ckpt::load_safetensors(path, {{"y", Sharding(SingleDeviceSharding(devices()[0]))}}),
      ValueError,
      "load_safetensors: a sharding is given for 'y', which " + path + " does not hold");
  fs::remove(path);
}

}  // namespace
}  // namespace parax
