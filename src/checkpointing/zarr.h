// zarr v3 arrays on a POSIX filesystem: the array's metadata (zarr.json) and its chunks,
// each a file encoded by the array's codec chain. parax writes chunks as
// [bytes (little-endian), zstd (optional), crc32c]: what tensorstore, Orbax and zarr-python
// read. It reads those codecs and sharding_indexed (Orbax's and zarr-python's sharded
// chunks), one inner chunk at a time.
#pragma once

#include <array>
#include <cstddef>
#include <cstdint>
#include <optional>
#include <span>
#include <string>
#include <vector>

#include "parax/dtype.h"
#include "parax/shape.h"

namespace parax::checkpointing::zarr {

// One step of the codec chain ("codecs" in zarr.json).
struct Codec {
  enum class Kind { bytes, zstd, crc32c, sharding_indexed };
  Kind kind = Kind::bytes;
  bool big_endian = false;  // bytes
  int level = 0;            // zstd (a frame's own checksum, if any, zstd checks itself)
  // sharding_indexed: each chunk file holds inner chunks of `inner_shape` encoded by
  // `inner`, and an index (offset, size per inner chunk) encoded by `index_codecs`.
  Shape inner_shape;
  std::vector<Codec> inner;
  std::vector<Codec> index_codecs;
  bool index_at_end = true;
};

struct ArrayMetadata {
  Shape shape;
  DType dtype = DType::float32;
  Shape chunk_shape;     // the regular grid of chunk files
  char separator = '/';  // chunk keys "c/0/1" (default encoding) or "0.1" (v2)
  bool v2_keys = false;
  std::vector<Codec> codecs;
  std::array<std::byte, 8> fill{};  // one element, native byte order

  // The grid reads go by: the inner chunks when chunk files are sharded, else the chunks.
  Shape read_shape() const;
  // Returns zarr.json's text: compact, keys sorted (as tensorstore writes it).
  std::string to_json() const;
};

// Returns the metadata parax writes for an array of `shape` and `dtype` in chunks of
// `chunk_shape`: fill value zero; codecs bytes, zstd at `zstd_level` if given, crc32c.
ArrayMetadata metadata_for(const Shape& shape, DType dtype, const Shape& chunk_shape,
                           std::optional<int> zstd_level);

// Parses zarr.json's text; `path` names it in errors (ValueError for what is not a zarr v3
// array parax can read, naming the field).
ArrayMetadata parse_metadata(const std::string& text, const std::string& path);

// Returns the key (path under the array's directory) of the chunk file at `coords`.
std::string chunk_key(const ArrayMetadata& m, std::span<const int64_t> coords);

// Per-thread scratch for encoding and decoding, reused between chunks; `peak` is the most
// it has held (bytes).
struct Scratch {
  std::vector<std::byte> packed;
  size_t peak = 0;
  void note() { peak = std::max(peak, packed.capacity()); }
};

// Encodes the chunk at `coords` (`data`: chunk_shape elements, row-major, little-endian)
// and writes it to its file under `dir`, not yet flushed (files::sync_filesystem does it
// for all the chunks of a save). Requires: m as metadata_for made it.
void write_chunk(const std::string& dir, const ArrayMetadata& m, std::span<const int64_t> coords,
                 const void* data, Scratch& scratch);

// Reads the chunk of the read grid at `coords` into `out` (read_shape() elements,
// row-major). Returns false, leaving `out` untouched, when it was never written (no file,
// or an empty slot of a sharded file). Throws ValueError for a truncated or corrupt chunk
// (a checksum that does not match, a stream that does not decode to the chunk's size).
bool read_chunk(const std::string& dir, const ArrayMetadata& m, std::span<const int64_t> coords,
                void* out, Scratch& scratch);

// Fills `n` elements at `out` with the fill value.
void fill(const ArrayMetadata& m, void* out, int64_t n);

}  // namespace parax::checkpointing::zarr
