// Checkpoints on one process of 8 devices: every dtype round trip bit for bit, restores
// onto every layout of the tutorial's mesh (and onto fewer devices), the layout's files,
// the commit protocol, and the errors for what is not a committed, intact checkpoint.
// Cases after JAX's and Orbax's serialization tests (resharding, odd resharding, 0-d and
// zero-size arrays, refusing foreign directories, existing checkpoints).
#include <gtest/gtest.h>

#include <cstring>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <random>

#include <parax/checkpointing.h>
#include <parax/parax.h>

#include "api/array_impl.h"
#include "checkpointing/crc32c.h"
#include "core/array_value.h"
#include "support/checkpoint_data.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace fs = std::filesystem;
namespace jnp = numpy;
namespace ckpt = checkpointing;

struct Layer {
  Array w, b;
};
PARAX_REGISTER_PYTREE(Layer, w, b)

using testing_support::bytes_of;
using testing_support::TempDir;

Array random_array(const Shape& shape, DType dtype, uint32_t seed) {
  return testing_support::random_bits(shape, dtype, seed);
}

Array arange_f32(const Shape& shape) {
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return jnp::arange(double(n)).astype(DType::float32).reshape(shape);
}

NamedSharding named(const Mesh& mesh, const PartitionSpec& spec) {
  return NamedSharding(mesh, spec);
}

// CRC-32C's check value (RFC 3720's "123456789"), and a checksum continued over pieces
// equals the one over the whole, against the bitwise definition.
TEST(Checkpoint, Crc32cMatchesTheBitwiseDefinition) {
  EXPECT_EQ(ckpt::crc32c("123456789", 9), 0xE3069283u);
  EXPECT_EQ(ckpt::crc32c("", 0), 0u);
  std::vector<unsigned char> data(10000);
  std::mt19937 gen(7);
  for (unsigned char& b : data) b = static_cast<unsigned char>(gen());
  auto bitwise = [](const unsigned char* p, size_t n) {
    uint32_t c = ~0u;
    for (size_t i = 0; i < n; ++i) {
      c ^= p[i];
      for (int k = 0; k < 8; ++k) c = (c & 1) ? (c >> 1) ^ 0x82F63B78u : c >> 1;
    }
    return ~c;
  };
  for (size_t n : {1, 7, 8, 63, 64, 255, 256, 1000, 4097, 10000}) {
    const uint32_t whole = bitwise(data.data(), n);
    EXPECT_EQ(ckpt::crc32c(data.data(), n), whole) << n;
    const size_t cut = n / 3;
    EXPECT_EQ(ckpt::crc32c(data.data() + cut, n - cut, ckpt::crc32c(data.data(), cut)), whole) << n;
  }
}

TEST(Checkpoint, EveryDtypeRoundTripsBitForBitInANestedTree) {
  TempDir tmp;
  std::map<std::string, Array> by_dtype;
  uint32_t seed = 1;
  for (int t = 0; t < kNumDTypes; ++t) {
    const DType dtype = DType(t);
    by_dtype[std::string(dtype_name(dtype))] = random_array({3, 5}, dtype, seed++);
  }
  using Tree = std::tuple<std::map<std::string, Array>, std::vector<Layer>, Array>;
  const Tree tree{
      by_dtype,
      {Layer{random_array({4, 2}, DType::float32, 99), random_array({2}, DType::bfloat16, 98)}},
      random_array({}, DType::int64, 97)};
  ckpt::save(tmp / "ckpt", tree);
  const Tree back = ckpt::restore(tmp / "ckpt", tree);
  for (const auto& [name, x] : std::get<0>(tree)) {
    const Array& y = std::get<0>(back).at(name);
    EXPECT_EQ(y.dtype(), x.dtype()) << name;
    EXPECT_EQ(y.shape(), x.shape()) << name;
    EXPECT_EQ(bytes_of(y), bytes_of(x)) << name;
  }
  EXPECT_EQ(bytes_of(std::get<1>(back)[0].w), bytes_of(std::get<1>(tree)[0].w));
  EXPECT_EQ(bytes_of(std::get<1>(back)[0].b), bytes_of(std::get<1>(tree)[0].b));
  EXPECT_EQ(bytes_of(std::get<2>(back)), bytes_of(std::get<2>(tree)));
  // Orbax's names: the keys of the path joined with '.'
  for (const char* name : {"0.float32", "0.bool", "1.0.w", "1.0.b", "2"}) {
    EXPECT_TRUE(fs::exists(tmp / "ckpt" + "/" + name + "/zarr.json")) << name;
  }
}

// The tutorial's mesh and every layout of an (8, 4) array on it, and a few more meshes.
std::vector<NamedSharding> layouts() {
  const Mesh m42 = make_mesh({4, 2}, {"a", "b"});
  const Mesh m24 = make_mesh({2, 4}, {"a", "b"});
  const Mesh m8 = make_mesh({8}, {"x"});
  std::vector<NamedSharding> out;
  for (const Mesh& m : {m42, m24}) {
    for (const PartitionSpec& spec :
         {P("a", "b"), P("b", "a"), P("a", None), P(None, "a"), P("b", None), P(None, "b"), P(),
          P(std::vector<std::string>{"a", "b"}, None), P(std::vector<std::string>{"b", "a"})}) {
      out.push_back(named(m, spec));
    }
  }
  out.push_back(named(m8, P("x")));
  out.push_back(named(make_mesh({2}, {"x"}), P(None, "x")));
  return out;
}

TEST(Checkpoint, RestoresOntoEveryLayoutOfTheTutorialMesh) {
  TempDir tmp;
  const Array x = device_put(arange_f32({8, 4}), named(make_mesh({4, 2}, {"a", "b"}), P("a", "b")));
  ckpt::save(tmp / "x", std::map<std::string, Array>{{"x", x}});
  for (const NamedSharding& s : layouts()) {
    const std::map<std::string, Array> target{{"x", ShapeDtypeStruct({8, 4}, DType::float32, s)}};
    const Array y = ckpt::restore(tmp / "x", target).at("x");
    EXPECT_EQ(y.sharding(), Sharding(s)) << s.to_string();
    EXPECT_TRUE(y.is_committed());
    EXPECT_EQ(bytes_of(y), bytes_of(x)) << s.to_string();
    for (const Shard& shard : y.addressable_shards()) {  // every device's own bytes
      EXPECT_EQ(bytes_of(shard.data), bytes_of(x.slice(shard.index))) << s.to_string();
    }
  }
  // onto one device, and onto the default device (a ShapeDtypeStruct without sharding)
  const Device d3 = devices()[3];
  const Array one =
      ckpt::restore(tmp / "x",
                    std::map<std::string, Array>{
                        {"x", ShapeDtypeStruct({8, 4}, DType::float32, SingleDeviceSharding(d3))}})
          .at("x");
  EXPECT_EQ(one.device(), d3);
  EXPECT_EQ(bytes_of(one), bytes_of(x));
  const Array dflt =
      ckpt::restore(tmp / "x",
                    std::map<std::string, Array>{{"x", ShapeDtypeStruct({8, 4}, DType::float32)}})
          .at("x");
  EXPECT_FALSE(dflt.is_committed());
  EXPECT_EQ(bytes_of(dflt), bytes_of(x));
}

TEST(Checkpoint, SavesFromEveryLayout) {
  const Array x = random_array({8, 4}, DType::int16, 5);
  for (const NamedSharding& s : layouts()) {
    TempDir tmp;
    ckpt::save(tmp / "c", std::vector<Array>{device_put(x, s)});
    const Array y = ckpt::restore(
        tmp / "c", std::vector<Array>{ShapeDtypeStruct({8, 4}, DType::int16,
                                                       named(make_mesh({8}, {"x"}), P("x")))})[0];
    EXPECT_EQ(bytes_of(y), bytes_of(x)) << s.to_string();
  }
}

// Orbax's test_odd_resharding: 12 elements from 2 devices onto 3.
TEST(Checkpoint, OddResharding) {
  TempDir tmp;
  const std::vector<Device> all = devices();
  const Array x =
      device_put(jnp::arange(12.0).astype(DType::float32),
                 named(Mesh(std::vector<Device>(all.begin(), all.begin() + 2), "x"), P("x")));
  ckpt::save(tmp / "c", std::vector<Array>{x});
  const NamedSharding three(Mesh(std::vector<Device>(all.begin(), all.begin() + 3), "x"), P("x"));
  const Array y = ckpt::restore(
      tmp / "c", std::vector<Array>{ShapeDtypeStruct({12}, DType::float32, three)})[0];
  const std::vector<Shard> shards = y.addressable_shards();
  ASSERT_EQ(shards.size(), 3u);
  EXPECT_EQ(shards[0].data.to_vector<float>(), (std::vector<float>{0, 1, 2, 3}));
  EXPECT_EQ(shards[1].data.to_vector<float>(), (std::vector<float>{4, 5, 6, 7}));
  EXPECT_EQ(shards[2].data.to_vector<float>(), (std::vector<float>{8, 9, 10, 11}));
}

// JAX's test_checkpointing_jax_array's zero-size and scalar cases.
TEST(Checkpoint, ZeroSizeAndScalarArrays) {
  TempDir tmp;
  const NamedSharding rep(make_mesh({8}, {"x"}), P());
  const Array empty = device_put(jnp::zeros({0}), rep);
  const Array scalar = device_put(Array(jnp::asarray(3.5f)), named(make_mesh({2}, {"x"}), P()));
  ckpt::save(tmp / "c", std::make_pair(empty, scalar));
  const auto back = ckpt::restore(tmp / "c", std::make_pair(empty, scalar));
  EXPECT_EQ(back.first.shape(), Shape{0});
  EXPECT_EQ(back.first.addressable_shards().size(), 8u);
  for (const Shard& s : back.first.addressable_shards()) EXPECT_EQ(s.data.size(), 0);
  EXPECT_EQ(back.second.item<float>(), 3.5f);
  EXPECT_EQ(back.second.sharding(), Sharding(named(make_mesh({2}, {"x"}), P())));
  EXPECT_TRUE(fs::exists(tmp / "c" + "/1/c"));  // a 0-d array's one chunk
}

TEST(Checkpoint, WritesOrbaxLayoutAndZarrMetadata) {
  TempDir tmp;
  const Array w = device_put(arange_f32({8, 4}), named(make_mesh({2, 2}, {"x", "y"}), P("x", "y")));
  const Array b = device_put(jnp::arange(4.0).astype(DType::bfloat16),
                             named(make_mesh({2, 2}, {"x", "y"}), P()));
  ckpt::save(tmp / "c",
             std::map<std::string, std::map<std::string, Array>>{{"params", {{"w", w}, {"b", b}}}});
  const std::string dir = tmp / "c";
  for (const char* f :
       {"_METADATA", "_CHECKPOINT_METADATA", "commit_success.txt", "array_metadatas/process_0",
        "params.w/c/0/0", "params.w/c/1/1", "params.b/c/0"}) {
    EXPECT_TRUE(fs::exists(dir + "/" + f)) << f;
  }
  EXPECT_FALSE(fs::exists(dir + "/params.b/c/1"));  // replicas are written once
  EXPECT_FALSE(fs::exists(dir + ".orbax-checkpoint-tmp"));
  auto text = [&](const std::string& f) {
    std::ifstream in(dir + "/" + f);
    return std::string(std::istreambuf_iterator<char>(in), {});
  };
  EXPECT_EQ(text("params.w/zarr.json"),
            R"({"chunk_grid":{"configuration":{"chunk_shape":[4,2]},"name":"regular"},)"
            R"("chunk_key_encoding":{"name":"default"},"codecs":[{"configuration":{"endian":)"
            R"("little"},"name":"bytes"},{"name":"crc32c"}],"data_type":"float32",)"
            R"("fill_value":0.0,"node_type":"array","shape":[8,4],"zarr_format":3})");
  EXPECT_EQ(
      text("_METADATA"),
      R"j({"custom_metadata":null,"store_array_data_equal_to_fill_value":true,)j"
      R"j("tree_metadata":{"('params', 'b')":{"key_metadata":[{"key":"params","key_type":2},)j"
      R"j({"key":"b","key_type":2}],"value_metadata":{"skip_deserialize":false,)j"
      R"j("value_type":"jax.Array","write_shape":[4]}},"('params', 'w')":{"key_metadata":)j"
      R"j([{"key":"params","key_type":2},{"key":"w","key_type":2}],"value_metadata":)j"
      R"j({"skip_deserialize":false,"value_type":"jax.Array","write_shape":[4,2]}}},)j"
      R"j("use_ocdbt":false,"use_zarr3":true})j");
  // a chunk is the shard's bytes and their crc32c: w[0:4, 0:2]
  const std::string chunk = text("params.w/c/0/0");
  ASSERT_EQ(chunk.size(), 8 * 4 + 4u);
  float first[8];
  std::memcpy(first, chunk.data(), 32);
  EXPECT_EQ(std::vector<float>(first, first + 8), (std::vector<float>{0, 1, 4, 5, 8, 9, 12, 13}));
}

TEST(Checkpoint, ZstdChunksRoundTrip) {
  TempDir tmp;
  const Array x =
      device_put(arange_f32({64, 16}), named(make_mesh({4, 2}, {"a", "b"}), P("a", "b")));
  ckpt::save(tmp / "c", std::vector<Array>{x}, {.zstd_level = 3});
  EXPECT_LT(fs::file_size(tmp / "c" + "/0/c/0/0"), 16u * 8 * 4);
  const Array y = ckpt::restore(tmp / "c", std::vector<Array>{x})[0];
  EXPECT_EQ(bytes_of(y), bytes_of(x));
  EXPECT_THROW_MSG(ckpt::save(tmp / "d", std::vector<Array>{x}, {.zstd_level = 40}), ValueError,
                   "checkpointing::save: zstd_level 40 is out of zstd's range [-7, 22]");
}

TEST(Checkpoint, StagingStaysWithinTwoChunksPerThread) {
  TempDir tmp;
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array x = device_put(arange_f32({256, 64}), named(mesh, P("a", "b")));
  const int64_t chunk_bytes = 64 * 32 * 4;
  ckpt::save(tmp / "c", std::vector<Array>{x}, {.zstd_level = 1});
  EXPECT_LE(ckpt::last_io_stats().peak_staging_bytes, 2 * chunk_bytes);
  EXPECT_EQ(ckpt::last_io_stats().files, 8);
  // the same layout reads every chunk straight into its device buffer
  ckpt::save(tmp / "raw", std::vector<Array>{x});
  ckpt::restore(tmp / "raw", std::vector<Array>{x});
  EXPECT_LE(ckpt::last_io_stats().peak_staging_bytes, 16);
  // another layout stages one chunk at a time
  ckpt::restore(tmp / "c", std::vector<Array>{ShapeDtypeStruct({256, 64}, DType::float32,
                                                               named(mesh, P(None, "a")))});
  EXPECT_LE(ckpt::last_io_stats().peak_staging_bytes, 2 * chunk_bytes);
}

// Seeded random trees: shapes of rank 0 to 3, every dtype, saved from one random layout of
// the 8 devices (with or without zstd) and restored onto another, bit for bit.
TEST(Checkpoint, RandomTreesRoundTripAcrossRandomLayouts) {
  std::mt19937 gen(20261129);
  const std::vector<Mesh> meshes = {make_mesh({4, 2}, {"a", "b"}), make_mesh({2, 4}, {"a", "b"}),
                                    make_mesh({8, 1}, {"a", "b"}), make_mesh({2, 2}, {"a", "b"})};
  auto pick = [&](int n) { return int(gen() % uint32_t(n)); };
  // A spec for `shape` on `mesh` whose axes divide the dimensions they shard.
  auto random_spec = [&](const Mesh& mesh, const Shape& shape) {
    std::vector<std::optional<std::string>> dims(shape.size());
    for (const std::string axis : {"a", "b"}) {
      if (pick(3) == 0 || shape.empty()) continue;
      const size_t d = size_t(pick(int(shape.size())));
      if (!dims[d] && shape[d] % mesh.axis_size(axis) == 0) dims[d] = axis;
    }
    std::vector<SpecEntry> entries;
    for (const auto& d : dims) entries.push_back(d ? SpecEntry(*d) : SpecEntry(None));
    return PartitionSpec::from_entries(entries);
  };
  for (int round = 0; round < 12; ++round) {
    TempDir tmp;
    std::map<std::string, Array> tree, target;
    for (int leaf = 0; leaf < 4; ++leaf) {
      Shape shape(size_t(pick(4)));
      for (int64_t& d : shape) d = std::vector<int64_t>{1, 2, 3, 4, 6, 8}[size_t(pick(6))];
      const DType dtype = DType(pick(kNumDTypes));
      const Mesh& save_mesh = meshes[size_t(pick(4))];
      const Mesh& load_mesh = meshes[size_t(pick(4))];
      const std::string name = "l" + std::to_string(leaf);
      tree[name] = device_put(random_array(shape, dtype, gen()),
                              NamedSharding(save_mesh, random_spec(save_mesh, shape)));
      target[name] =
          ShapeDtypeStruct(shape, dtype, NamedSharding(load_mesh, random_spec(load_mesh, shape)));
    }
    const ckpt::SaveOptions options{.zstd_level = pick(2) ? std::optional<int>(1) : std::nullopt};
    ckpt::save(tmp / "c", tree, options);
    const std::map<std::string, Array> back = ckpt::restore(tmp / "c", target);
    for (const auto& [name, x] : tree) {
      const Array& y = back.at(name);
      EXPECT_EQ(y.sharding(), target.at(name).sharding()) << round << " " << name;
      for (const Shard& shard : y.addressable_shards()) {
        EXPECT_EQ(bytes_of(shard.data), bytes_of(x.slice(shard.index)))
            << "round " << round << " " << name << " " << x.sharding().to_string() << " -> "
            << y.sharding().to_string();
      }
    }
  }
}

// ---------------------------------------------------------------------------------------
// What is not there, not finished, not the same or not intact.

std::map<std::string, Array> small_tree() {
  return {{"w", arange_f32({4, 2})}, {"n", jnp::arange(3)}};
}

TEST(CheckpointErrors, TargetsThatDoNotMatch) {
  TempDir tmp;
  const std::string dir = tmp / "c";
  ckpt::save(dir, small_tree());
  std::map<std::string, Array> wrong_shape = small_tree();
  wrong_shape["w"] = ShapeDtypeStruct({2, 4}, DType::float32);
  EXPECT_THROW_MSG(ckpt::restore(dir, wrong_shape), ValueError,
                   "checkpointing::restore: array 'w' in " + dir +
                       " is float32[4,2] but the target asks for float32[2,4]");
  std::map<std::string, Array> wrong_dtype = small_tree();
  wrong_dtype["n"] = ShapeDtypeStruct({3}, DType::int64);
  EXPECT_THROW_MSG(ckpt::restore(dir, wrong_dtype), ValueError,
                   "checkpointing::restore: array 'n' in " + dir +
                       " is int32[3] but the target asks for int64[3]");
  std::map<std::string, Array> other = small_tree();
  other.erase("n");
  other["m"] = jnp::arange(3);
  EXPECT_THROW_MSG(ckpt::restore(dir, other), ValueError,
                   "checkpointing::restore: the target's tree does not match the checkpoint at " +
                       dir + "; the checkpoint has no array 'm'; the target has no leaf for 'n'");
}

TEST(CheckpointErrors, DirectoriesThatAreNotCommittedCheckpoints) {
  TempDir tmp;
  EXPECT_THROW_MSG(ckpt::restore(tmp / "none", small_tree()), ValueError,
                   "checkpointing::restore: no checkpoint at " + (tmp / "none"));
  fs::create_directories(tmp / "plain");
  std::ofstream(tmp / "plain" + "/notes.txt") << "mine";
  EXPECT_THROW_MSG(
      ckpt::restore(tmp / "plain", small_tree()), ValueError,
      "checkpointing::restore: " + (tmp / "plain") + " is not a checkpoint (no _METADATA)");
  // JAX's test_do_not_overwrite_noncheckpoint_directories
  EXPECT_THROW_MSG(ckpt::save(tmp / "plain", small_tree()), ValueError,
                   "checkpointing::save: refusing to write to " + (tmp / "plain") +
                       ": it is a directory that is not a previous checkpoint, and not empty");
  EXPECT_TRUE(fs::exists(tmp / "plain" + "/notes.txt"));
  // an empty directory is fine
  fs::create_directories(tmp / "empty");
  ckpt::save(tmp / "empty", small_tree());
  EXPECT_EQ(bytes_of(ckpt::restore(tmp / "empty", small_tree()).at("w")),
            bytes_of(arange_f32({4, 2})));
  // an unfinished save: only its temporary directory exists
  fs::create_directories(tmp / "half.orbax-checkpoint-tmp");
  EXPECT_THROW_MSG(ckpt::restore(tmp / "half", small_tree()), ValueError,
                   "checkpointing::restore: no committed checkpoint at " + (tmp / "half") +
                       ": a save did not finish (its temporary directory " + (tmp / "half") +
                       ".orbax-checkpoint-tmp is removed by the next save)");
  ckpt::save(tmp / "half", small_tree());
  EXPECT_FALSE(fs::exists(tmp / "half.orbax-checkpoint-tmp"));
}

// JAX's test_checkpoint_exists, and replacing one on request.
TEST(CheckpointErrors, ExistingCheckpointIsReplacedOnlyOnRequest) {
  TempDir tmp;
  const std::string dir = tmp / "c";
  ckpt::save(dir, small_tree());
  std::map<std::string, Array> next = small_tree();
  next["w"] = next["w"] + 1.0f;
  EXPECT_THROW_MSG(ckpt::save(dir, next), ValueError,
                   "checkpointing::save: a checkpoint already exists at " + dir +
                       "; pass SaveOptions{.force = true} to replace it");
  EXPECT_EQ(bytes_of(ckpt::restore(dir, small_tree()).at("w")), bytes_of(small_tree().at("w")));
  ckpt::save(dir, next, {.force = true});
  EXPECT_EQ(bytes_of(ckpt::restore(dir, small_tree()).at("w")), bytes_of(next.at("w")));
  EXPECT_FALSE(fs::exists(dir + ".orbax-checkpoint-tmp"));
}

TEST(CheckpointErrors, CorruptTruncatedAndMissingChunks) {
  TempDir tmp;
  const std::string dir = tmp / "c";
  ckpt::save(dir, small_tree());
  const std::string chunk = dir + "/w/c/0/0";
  {
    std::fstream f(chunk, std::ios::in | std::ios::out | std::ios::binary);
    f.seekp(5);
    f.put('\x7f');
  }
  EXPECT_THROW_MSG(ckpt::restore(dir, small_tree()), ValueError,
                   chunk + " is corrupt: its crc32c checksum does not match");
  fs::resize_file(chunk, 20);
  EXPECT_THROW_MSG(ckpt::restore(dir, small_tree()), ValueError,
                   chunk + " is truncated: it holds 20 bytes of a chunk encoded in 36");
  fs::remove(chunk);
  EXPECT_THROW_MSG(ckpt::restore(dir, small_tree()), ValueError,
                   "checkpointing::restore: array 'w': the chunk file " + chunk + " is missing");
  ckpt::save(tmp / "z", small_tree(), {.zstd_level = 3});
  fs::resize_file(tmp / "z" + "/w/c/0/0", 10);
  EXPECT_THROW(ckpt::restore(tmp / "z", small_tree()), ValueError);
}

TEST(CheckpointErrors, UnknownFormatVersionAndForeignMetadata) {
  TempDir tmp;
  const std::string dir = tmp / "c";
  ckpt::save(dir, small_tree());
  std::ofstream(dir + "/_CHECKPOINT_METADATA")
      << R"({"custom_metadata": {"parax_format_version": 7}})";
  EXPECT_THROW_MSG(
      ckpt::restore(dir, small_tree()), ValueError,
      "checkpointing::restore: " + dir + " has format version 7; this parax reads versions 1 to 1");
  std::ofstream(dir + "/_CHECKPOINT_METADATA") << "{}";
  std::ofstream(dir + "/w/zarr.json") << R"({"zarr_format": 2})";
  EXPECT_THROW_MSG(ckpt::restore(dir, small_tree()), ValueError,
                   dir + "/w/zarr.json: zarr_format 2 is not supported (parax reads 3)");
  std::ofstream(dir + "/_METADATA") << R"({"tree_metadata": {}, "use_ocdbt": true})";
  EXPECT_THROW_MSG(ckpt::restore(dir, small_tree()), ValueError,
                   "checkpointing::restore: " + dir +
                       " keeps its arrays in an OCDBT database (Orbax's use_ocdbt=True), which "
                       "parax does not read; save it with use_ocdbt=False");
}

TEST(CheckpointErrors, LeavesThatCannotBeSaved) {
  TempDir tmp;
  EXPECT_THROW_MSG(ckpt::save(tmp / "a", std::map<std::string, Array>{{"a/b", jnp::zeros({2})}}),
                   ValueError,
                   "checkpointing: the key 'a/b' at ['a/b'] cannot name a file (no '/', and not "
                   "empty, '.' or '..')");
  const std::map<std::string, std::map<std::string, Array>> clash{
      {"a", {{"b.c", jnp::zeros({2})}}}, {"a.b", {{"c", jnp::zeros({2})}}}};
  EXPECT_THROW_MSG(ckpt::save(tmp / "b", clash), ValueError,
                   "checkpointing::save: the leaves at ['a']['b.c'] and ['a.b']['c'] would both "
                   "be saved as 'a.b.c'");
  EXPECT_THROW_MSG(
      ckpt::save(tmp / "c", std::vector<Array>{ShapeDtypeStruct({2}, DType::float32)}), ValueError,
      "checkpointing::save: the leaf at [0] is not a concrete array (a ShapeDtypeStruct)");
  EXPECT_FALSE(fs::exists(tmp / "a"));
  EXPECT_FALSE(fs::exists(tmp / "c.orbax-checkpoint-tmp"));
}

// ---------------------------------------------------------------------------------------
// What other libraries wrote (tests/golden/checkpointing, made by
// tools/checkpoint_goldens.py with Orbax 0.12.8, tensorstore 0.1.86, zarr 3.1.6 and
// safetensors 0.8.0): Orbax's sharded chunk files (sharding_indexed, zstd, crc32c), its
// replica-parallel slices, zarr-python's shards with an empty slot, chunks never written,
// '.'-separated keys, big-endian bytes.

const std::string kGoldens = std::string(PARAX_GOLDEN_DIR) + "/checkpointing";

using testing_support::values_of;

nlohmann::json expected_arrays() {
  std::ifstream in(kGoldens + "/expected.json");
  return nlohmann::json::parse(in).at("arrays");
}

// A layout of the 8 devices that divides `shape` (sharded along its first dimension when
// it can be).
Sharding layout_for(const Shape& shape) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  if (!shape.empty() && shape[0] % 4 == 0) return NamedSharding(mesh, P("a"));
  if (!shape.empty() && shape[0] % 2 == 0) return NamedSharding(mesh, P("b"));
  return NamedSharding(mesh, P());
}

TEST(CheckpointGoldens, ReadsOrbaxCheckpointsOntoOtherLayouts) {
  for (const char* container : {"orbax_zarr3", "orbax_zarr3_zstd_chunked"}) {
    ckpt::detail::Leaves targets;
    std::vector<nlohmann::json> want;
    for (const nlohmann::json& a : expected_arrays()) {
      if (a.at("container") != container) continue;
      KeyPath path;
      std::string name = a.at("name");
      for (size_t dot; (dot = name.find('.')) != std::string::npos; name = name.substr(dot + 1)) {
        path.push_back({PathEntry::Kind::dict, name.substr(0, dot), 0});
      }
      path.push_back({PathEntry::Kind::dict, name, 0});
      const Shape shape = a.at("shape").get<Shape>();
      targets.emplace_back(
          path, ShapeDtypeStruct(shape, dtype_from_name(a.at("dtype").get<std::string>()),
                                 layout_for(shape)));
      want.push_back(a);
    }
    ASSERT_EQ(targets.size(), 7u) << container;
    const std::vector<Array> got =
        ckpt::detail::restore_leaves(kGoldens + "/" + container, targets);
    for (size_t i = 0; i < got.size(); ++i) {
      EXPECT_EQ(values_of(got[i]), want[i].at("values")) << container << " " << want[i].at("name");
      EXPECT_EQ(got[i].sharding(), targets[i].second.sharding());
    }
  }
}

TEST(CheckpointGoldens, ReadsZarrPythonAndTensorstoreArrays) {
  for (const nlohmann::json& a : expected_arrays()) {
    if (a.at("kind") != "zarr3" || a.at("name") != "") continue;
    const std::string path = kGoldens + "/" + a.at("path").get<std::string>();
    const Array x = ckpt::read_zarr(path);
    EXPECT_EQ(x.shape(), a.at("shape").get<Shape>()) << path;
    EXPECT_EQ(values_of(x), a.at("values")) << path;
    const Array y = ckpt::read_zarr(path, layout_for(x.shape()));
    EXPECT_EQ(values_of(y), a.at("values")) << path;
    for (const Shard& s : y.addressable_shards()) {
      EXPECT_EQ(bytes_of(s.data), bytes_of(x.slice(s.index))) << path;
    }
  }
}

TEST(CheckpointGoldens, SafetensorsOfThePythonLibrary) {
  const std::string path = kGoldens + "/safetensors/tiny.safetensors";
  const nn::StateDict state = ckpt::load_safetensors(path);
  std::vector<std::string> names;
  for (const nlohmann::json& a : expected_arrays()) {
    if (a.at("kind") != "safetensors") continue;
    const Array& x = state.at(a.at("name"));
    EXPECT_EQ(x.shape(), a.at("shape").get<Shape>());
    EXPECT_EQ(values_of(x), a.at("values")) << a.at("name");
    names.push_back(a.at("name"));
  }
  EXPECT_EQ(state.size(), names.size());
  // parax writes the same tensors as the same bytes
  const std::string mine =
      (fs::temp_directory_path() / ("parax-st-golden-" + std::to_string(::getpid()))).string();
  ckpt::save_safetensors(mine, state, {{"format", "np"}});
  std::ifstream a(path, std::ios::binary), b(mine, std::ios::binary);
  EXPECT_EQ(std::string(std::istreambuf_iterator<char>(a), {}),
            std::string(std::istreambuf_iterator<char>(b), {}));
  fs::remove(mine);
}

}  // namespace
}  // namespace parax
