#include "checkpointing/zarr.h"

#include <zstd.h>

#include <algorithm>
#include <cmath>
#include <cstring>
#include <limits>
#include <nlohmann/json.hpp>

#include "checkpointing/crc32c.h"
#include "checkpointing/files.h"
#include "parax/errors.h"

namespace parax::checkpointing::zarr {
namespace {

using nlohmann::json;

[[noreturn]] void bad(const std::string& path, const std::string& what) {
  throw ValueError(path + ": " + what);
}

// ----------------------------------------------------------------------------------------
// Metadata to and from JSON.

json fill_json(DType t, const std::array<std::byte, 8>& fill) {
  switch (t) {
    case DType::bool_:
      return bool(fill[0] != std::byte{0});
    case DType::float16:
    case DType::bfloat16:
    case DType::float32:
    case DType::float64: {
      double v = 0;
      if (t == DType::float64) {
        std::memcpy(&v, fill.data(), 8);
      } else if (t == DType::float32) {
        float f;
        std::memcpy(&f, fill.data(), 4);
        v = f;
      } else {
        uint16_t b;
        std::memcpy(&b, fill.data(), 2);
        v = t == DType::float16 ? double(float16_t::to_float(b))
                                : double(float(bfloat16_t::from_bits(b)));
      }
      if (std::isnan(v)) return "NaN";
      if (std::isinf(v)) return v > 0 ? "Infinity" : "-Infinity";
      return v;
    }
    default: {
      if (is_unsigned_integer(t)) {
        uint64_t u = 0;
        std::memcpy(&u, fill.data(), size_t(dtype_itemsize(t)));
        return u;
      }
      int64_t i = 0;
      std::memcpy(&i, fill.data(), size_t(dtype_itemsize(t)));
      const int shift = 64 - 8 * dtype_itemsize(t);  // sign-extend
      return shift > 0 ? (i << shift) >> shift : i;
    }
  }
}

std::array<std::byte, 8> parse_fill(const json& j, DType t, const std::string& path) {
  std::array<std::byte, 8> out{};
  const auto put = [&](auto v) { std::memcpy(out.data(), &v, sizeof v); };
  if (t == DType::bool_) {
    if (!j.is_boolean()) bad(path, "fill_value of a bool array must be true or false");
    put(uint8_t(j.get<bool>()));
    return out;
  }
  if (is_integer(t)) {
    if (!j.is_number_integer()) bad(path, "fill_value of an integer array must be an integer");
    if (is_unsigned_integer(t)) {
      put(j.get<uint64_t>());
    } else {
      put(j.get<int64_t>());
    }
    return out;
  }
  const int size = dtype_itemsize(t);
  double v = 0;
  if (j.is_number()) {
    v = j.get<double>();
  } else if (j.is_string()) {
    const std::string s = j.get<std::string>();
    if (s == "NaN") {
      v = std::numeric_limits<double>::quiet_NaN();
    } else if (s == "Infinity") {
      v = std::numeric_limits<double>::infinity();
    } else if (s == "-Infinity") {
      v = -std::numeric_limits<double>::infinity();
    } else if (s.size() > 2 && s.compare(0, 2, "0x") == 0) {
      const uint64_t bits = std::stoull(s.substr(2), nullptr, 16);  // the exact bits
      std::memcpy(out.data(), &bits, size_t(size));
      return out;
    } else {
      bad(path, "fill_value '" + s + "' is not a number");
    }
  } else {
    bad(path, "fill_value of a floating array must be a number or a string");
  }
  switch (t) {
    case DType::float64:
      put(v);
      break;
    case DType::float32:
      put(float(v));
      break;
    case DType::float16:
      put(float16_t::from_float(float(v)));
      break;
    default:
      put(bfloat16_t::from_float(float(v)));
      break;
  }
  return out;
}

json codecs_json(const std::vector<Codec>& codecs, int itemsize) {
  json out = json::array();
  for (const Codec& c : codecs) {
    switch (c.kind) {
      case Codec::Kind::bytes:
        // tensorstore leaves out the byte order of one-byte elements
        out.push_back(itemsize == 1
                          ? json{{"name", "bytes"}}
                          : json{{"name", "bytes"},
                                 {"configuration", {{"endian", c.big_endian ? "big" : "little"}}}});
        break;
      case Codec::Kind::zstd:
        out.push_back(
            {{"name", "zstd"}, {"configuration", {{"level", c.level}, {"checksum", false}}}});
        break;
      case Codec::Kind::crc32c:
        out.push_back({{"name", "crc32c"}});
        break;
      case Codec::Kind::sharding_indexed:
        out.push_back({{"name", "sharding_indexed"},
                       {"configuration",
                        {{"chunk_shape", c.inner_shape},
                         {"codecs", codecs_json(c.inner, itemsize)},
                         {"index_codecs", codecs_json(c.index_codecs, 8)},
                         {"index_location", c.index_at_end ? "end" : "start"}}}});
        break;
    }
  }
  return out;
}

std::vector<Codec> parse_codecs(const json& list, const std::string& path, size_t ndim,
                                bool is_index) {
  if (!list.is_array() || list.empty()) bad(path, "codecs must be a non-empty list");
  std::vector<Codec> out;
  bool seen_array_to_bytes = false;
  for (const json& j : list) {
    const std::string name = j.is_string() ? j.get<std::string>() : j.value("name", "");
    const json config = j.is_object() ? j.value("configuration", json::object()) : json::object();
    Codec c;
    if (name == "bytes") {
      c.kind = Codec::Kind::bytes;
      const std::string endian = config.value("endian", "little");
      if (endian != "little" && endian != "big") bad(path, "bytes codec endian '" + endian + "'");
      c.big_endian = endian == "big";
    } else if (name == "zstd") {
      c.kind = Codec::Kind::zstd;
      c.level = config.value("level", 0);
    } else if (name == "crc32c") {
      c.kind = Codec::Kind::crc32c;
    } else if (name == "sharding_indexed" && !is_index) {
      c.kind = Codec::Kind::sharding_indexed;
      c.inner_shape = config.at("chunk_shape").get<Shape>();
      if (c.inner_shape.size() != ndim)
        bad(path, "sharding_indexed chunk_shape has the wrong rank");
      c.inner = parse_codecs(config.at("codecs"), path, ndim, false);
      c.index_codecs = parse_codecs(
          config.value("index_codecs",
                       json::array({json{{"name", "bytes"}}, json{{"name", "crc32c"}}})),
          path, 1, true);
      const std::string where = config.value("index_location", "end");
      if (where != "end" && where != "start") bad(path, "index_location '" + where + "'");
      c.index_at_end = where == "end";
    } else if (name == "transpose" && config.contains("order")) {
      // the identity order changes nothing; another is a layout parax does not read
      const auto order = config.at("order").get<std::vector<int64_t>>();
      for (size_t i = 0; i < order.size(); ++i) {
        if (order[i] != int64_t(i))
          bad(path, "the transpose codec (order not the identity) is not supported");
      }
      continue;
    } else {
      bad(path, "codec '" + name +
                    "' is not supported (parax reads bytes, zstd, crc32c and sharding_indexed)");
    }
    const bool array_to_bytes =
        c.kind == Codec::Kind::bytes || c.kind == Codec::Kind::sharding_indexed;
    if (array_to_bytes == seen_array_to_bytes) {
      bad(path, array_to_bytes ? "codecs name more than one array-to-bytes codec"
                               : "codec '" + name + "' comes before the array-to-bytes codec");
    }
    seen_array_to_bytes = seen_array_to_bytes || array_to_bytes;
    out.push_back(std::move(c));
  }
  if (out.front().kind == Codec::Kind::sharding_indexed && out.size() > 1) {
    bad(path, "codecs after sharding_indexed are not supported");
  }
  return out;
}

// ----------------------------------------------------------------------------------------
// Chunks.

// Decodes the bytes-to-bytes codecs (after the first) of `codecs` in reverse: `data` holds
// `n` encoded bytes; returns the decoded bytes, in `data` or in `out` (`out_size` bytes).
// Returns the pointer and the size.
std::pair<const std::byte*, size_t> decode_bytes(const std::vector<Codec>& codecs,
                                                 const std::byte* data, size_t n, void* out,
                                                 size_t out_size, const std::string& path) {
  for (size_t i = codecs.size(); i-- > 1;) {
    const Codec& c = codecs[i];
    if (c.kind == Codec::Kind::crc32c) {
      if (n < 4) throw ValueError(path + " is truncated: no room for its crc32c checksum");
      uint32_t stored;
      std::memcpy(&stored, data + n - 4, 4);
      n -= 4;
      if (crc32c(data, n) != stored) {
        throw ValueError(path + " is corrupt: its crc32c checksum does not match");
      }
    } else {  // zstd: only ever last before bytes, so it decodes into `out`
      const size_t got = ZSTD_decompress(out, out_size, data, n);
      if (ZSTD_isError(got)) {
        throw ValueError(path + " is corrupt: zstd: " + ZSTD_getErrorName(got));
      }
      if (got != out_size) {
        throw ValueError(path + " is corrupt: it decompresses to " + std::to_string(got) +
                         " bytes, not the chunk's " + std::to_string(out_size));
      }
      data = static_cast<const std::byte*>(out);
      n = got;
    }
  }
  return {data, n};
}

bool has_zstd(const std::vector<Codec>& codecs) {
  return std::any_of(codecs.begin(), codecs.end(),
                     [](const Codec& c) { return c.kind == Codec::Kind::zstd; });
}

void swap_bytes(void* data, int64_t n, int itemsize) {
  auto* p = static_cast<std::byte*>(data);
  for (int64_t i = 0; i < n; ++i, p += itemsize) std::reverse(p, p + itemsize);
}

// Reads one chunk encoded by `codecs` from bytes [offset, offset + nbytes) of `file` into
// `out` (`elements` elements of `itemsize`).
void read_encoded(const files::Reader& file, int64_t offset, size_t nbytes,
                  const std::vector<Codec>& codecs, void* out, int64_t elements, int itemsize,
                  Scratch& scratch) {
  const size_t out_size = size_t(elements) * size_t(itemsize);
  const std::byte* data;
  size_t n;
  if (!has_zstd(codecs)) {
    // uncompressed: the chunk's bytes go straight to `out`, the checksums after them
    const size_t trailer = 4 * (codecs.size() - 1);  // crc32c codecs only
    if (nbytes != out_size + trailer) {
      throw ValueError(file.path() +
                       (nbytes < out_size + trailer ? " is truncated" : " is corrupt") +
                       ": it holds " + std::to_string(nbytes) + " bytes of a chunk encoded in " +
                       std::to_string(out_size + trailer));
    }
    file.read_at(offset, out_size, out);
    scratch.packed.resize(trailer);
    file.read_at(offset + int64_t(out_size), trailer, scratch.packed.data());
    // each checksum covers the data and the checksums before it
    for (size_t k = 0; k < trailer; k += 4) {
      uint32_t stored;
      std::memcpy(&stored, scratch.packed.data() + k, 4);
      uint32_t crc = crc32c(out, out_size);
      if (k > 0) crc = crc32c(scratch.packed.data(), k, crc);
      if (crc != stored) {
        throw ValueError(file.path() + " is corrupt: its crc32c checksum does not match");
      }
    }
    data = static_cast<const std::byte*>(out);
    n = out_size;
  } else {
    scratch.packed.resize(nbytes);
    scratch.note();
    file.read_at(offset, nbytes, scratch.packed.data());
    std::tie(data, n) =
        decode_bytes(codecs, scratch.packed.data(), nbytes, out, out_size, file.path());
    if (n != out_size) {
      throw ValueError(file.path() + " is truncated: it holds " + std::to_string(n) +
                       " bytes of a " + std::to_string(out_size) + "-byte chunk");
    }
    if (data != out) std::memcpy(out, data, n);
  }
  if (codecs.front().big_endian && itemsize > 1) swap_bytes(out, elements, itemsize);
}

}  // namespace

Shape ArrayMetadata::read_shape() const {
  return codecs.front().kind == Codec::Kind::sharding_indexed ? codecs.front().inner_shape
                                                              : chunk_shape;
}

std::string ArrayMetadata::to_json() const {
  json key_encoding = {{"name", v2_keys ? "v2" : "default"}};
  if (separator != (v2_keys ? '.' : '/')) {
    key_encoding["configuration"] = {{"separator", std::string(1, separator)}};
  }
  const json j = {
      {"zarr_format", 3},
      {"node_type", "array"},
      {"shape", shape},
      {"data_type", std::string(dtype_name(dtype))},
      {"chunk_grid", {{"name", "regular"}, {"configuration", {{"chunk_shape", chunk_shape}}}}},
      {"chunk_key_encoding", key_encoding},
      {"codecs", codecs_json(codecs, dtype_itemsize(dtype))},
      {"fill_value", fill_json(dtype, fill)},
  };
  return j.dump();
}

ArrayMetadata metadata_for(const Shape& shape, DType dtype, const Shape& chunk_shape,
                           std::optional<int> zstd_level) {
  ArrayMetadata m;
  m.shape = shape;
  m.dtype = dtype;
  m.chunk_shape = chunk_shape;
  auto codec = [](Codec::Kind kind, int level = 0) {
    Codec c;
    c.kind = kind;
    c.level = level;
    return c;
  };
  m.codecs.push_back(codec(Codec::Kind::bytes));
  if (zstd_level) m.codecs.push_back(codec(Codec::Kind::zstd, *zstd_level));
  m.codecs.push_back(codec(Codec::Kind::crc32c));
  return m;
}

ArrayMetadata parse_metadata(const std::string& text, const std::string& path) {
  json j;
  try {
    j = json::parse(text);
  } catch (const json::exception& e) {
    bad(path, std::string("not JSON: ") + e.what());
  }
  try {
    if (!j.is_object()) bad(path, "not a JSON object");
    if (!j.contains("zarr_format")) {
      bad(path, "no zarr_format: not zarr v3 metadata");
    }
    if (j.at("zarr_format") != 3) {
      bad(path, "zarr_format " + j.at("zarr_format").dump() + " is not supported (parax reads 3)");
    }
    if (j.value("node_type", "") != "array") bad(path, "node_type is not 'array'");
    ArrayMetadata m;
    m.shape = j.at("shape").get<Shape>();
    const std::string type = j.at("data_type").is_string() ? j.at("data_type").get<std::string>()
                                                           : j.at("data_type").dump();
    try {
      m.dtype = dtype_from_name(type);
    } catch (const TypeError&) {
      bad(path, "data_type '" + type + "' is not supported");
    }
    const json& grid = j.at("chunk_grid");
    if (grid.value("name", "") != "regular")
      bad(path,
          "chunk_grid '" + grid.value("name", "") + "' is not supported (parax reads regular)");
    m.chunk_shape = grid.at("configuration").at("chunk_shape").get<Shape>();
    if (m.chunk_shape.size() != m.shape.size()) bad(path, "chunk_shape and shape differ in rank");
    for (int64_t c : m.chunk_shape) {
      if (c <= 0) bad(path, "chunk_shape entries must be positive");
    }
    const json enc = j.value("chunk_key_encoding", json{{"name", "default"}});
    const std::string enc_name = enc.value("name", "");
    if (enc_name != "default" && enc_name != "v2")
      bad(path, "chunk_key_encoding '" + enc_name + "'");
    m.v2_keys = enc_name == "v2";
    const std::string sep =
        enc.value("configuration", json::object()).value("separator", m.v2_keys ? "." : "/");
    if (sep != "/" && sep != ".") bad(path, "chunk key separator '" + sep + "'");
    m.separator = sep[0];
    m.codecs = parse_codecs(j.at("codecs"), path, m.shape.size(), false);
    const Codec& first = m.codecs.front();
    if (first.kind == Codec::Kind::sharding_indexed) {
      for (size_t d = 0; d < m.shape.size(); ++d) {
        if (m.chunk_shape[d] % first.inner_shape[d] != 0) {
          bad(path, "sharding_indexed chunk_shape does not divide the chunk shape");
        }
      }
    }
    m.fill = parse_fill(j.at("fill_value"), m.dtype, path);
    return m;
  } catch (const json::exception& e) {
    bad(path, std::string("malformed zarr metadata: ") + e.what());
  }
}

std::string chunk_key(const ArrayMetadata& m, std::span<const int64_t> coords) {
  std::string key = m.v2_keys ? "" : "c";
  for (size_t i = 0; i < coords.size(); ++i) {
    if (!key.empty()) key += m.separator;
    key += std::to_string(coords[i]);
  }
  if (key.empty()) key = "0";  // v2's key of a 0-d array
  return key;
}

void write_chunk(const std::string& dir, const ArrayMetadata& m, std::span<const int64_t> coords,
                 const void* data, Scratch& scratch) {
  const size_t raw = size_t(shape_size(m.chunk_shape)) * size_t(dtype_itemsize(m.dtype));
  std::span<const std::byte> body(static_cast<const std::byte*>(data), raw);
  for (const Codec& c : m.codecs) {
    if (c.kind != Codec::Kind::zstd) continue;
    scratch.packed.resize(ZSTD_compressBound(raw));
    scratch.note();
    const size_t n =
        ZSTD_compress(scratch.packed.data(), scratch.packed.size(), data, raw, c.level);
    if (ZSTD_isError(n)) throw RuntimeError(std::string("zstd: ") + ZSTD_getErrorName(n));
    body = std::span<const std::byte>(scratch.packed.data(), n);
  }
  const uint32_t crc = crc32c(body.data(), body.size());
  const std::span<const std::byte> pieces[2] = {
      body, std::span<const std::byte>(reinterpret_cast<const std::byte*>(&crc), 4)};
  const std::string path = dir + "/" + chunk_key(m, coords);
  const size_t slash = path.rfind('/');
  if (slash > dir.size()) files::make_dirs(path.substr(0, slash));
  files::write_file(path, pieces, /*flush=*/false);
}

bool read_chunk(const std::string& dir, const ArrayMetadata& m, std::span<const int64_t> coords,
                void* out, Scratch& scratch) {
  const int itemsize = dtype_itemsize(m.dtype);
  const Codec& first = m.codecs.front();
  if (first.kind != Codec::Kind::sharding_indexed) {
    files::Reader file(dir + "/" + chunk_key(m, coords), /*missing_ok=*/true);
    if (!file.valid()) return false;
    read_encoded(file, 0, size_t(file.size()), m.codecs, out, shape_size(m.chunk_shape), itemsize,
                 scratch);
    return true;
  }
  // The chunk file holding this inner chunk, and the inner chunk's slot in its index.
  const size_t ndim = coords.size();
  std::vector<int64_t> outer(ndim);
  int64_t slot = 0;
  int64_t slots = 1;
  for (size_t d = 0; d < ndim; ++d) {
    const int64_t per = m.chunk_shape[d] / first.inner_shape[d];
    outer[d] = coords[d] / per;
    slot = slot * per + coords[d] % per;
    slots *= per;
  }
  files::Reader file(dir + "/" + chunk_key(m, outer), /*missing_ok=*/true);
  if (!file.valid()) return false;
  size_t index_bytes = size_t(slots) * 16;
  for (size_t i = 1; i < first.index_codecs.size(); ++i) {
    if (first.index_codecs[i].kind != Codec::Kind::crc32c) {
      bad(file.path(), "index codecs other than bytes and crc32c are not supported");
    }
    index_bytes += 4;
  }
  std::vector<uint64_t> index(size_t(slots) * 2);
  read_encoded(file, first.index_at_end ? file.size() - int64_t(index_bytes) : 0, index_bytes,
               first.index_codecs, index.data(), slots * 2, 8, scratch);
  const uint64_t offset = index[size_t(slot) * 2];
  const uint64_t nbytes = index[size_t(slot) * 2 + 1];
  if (offset == ~uint64_t{0} && nbytes == ~uint64_t{0}) return false;
  if (offset > uint64_t(file.size()) || nbytes > uint64_t(file.size()) - offset) {
    throw ValueError(file.path() + " is truncated: its index points past its end");
  }
  read_encoded(file, int64_t(offset), size_t(nbytes), first.inner, out,
               shape_size(first.inner_shape), itemsize, scratch);
  return true;
}

void fill(const ArrayMetadata& m, void* out, int64_t n) {
  const int itemsize = dtype_itemsize(m.dtype);
  auto* p = static_cast<std::byte*>(out);
  const bool zero = std::all_of(m.fill.begin(), m.fill.begin() + itemsize,
                                [](std::byte b) { return b == std::byte{0}; });
  if (zero) {
    std::memset(p, 0, size_t(n) * size_t(itemsize));
    return;
  }
  for (int64_t i = 0; i < n; ++i) std::memcpy(p + i * itemsize, m.fill.data(), size_t(itemsize));
}

}  // namespace parax::checkpointing::zarr
