// safetensors files (parax/checkpointing.h): an 8-byte little-endian header length, the
// JSON header (tensors in the Python writer's order, padded with spaces to 8 bytes), then
// every tensor's bytes, row-major. Arrays move shard by shard with positioned reads and
// writes, through at most one bounded slab per thread.
#include <fcntl.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cerrno>
#include <cstring>
#include <nlohmann/json.hpp>

#include "api/array_impl.h"
#include "base/box_copy.h"
#include "base/thread_pool.h"
#include "checkpointing/files.h"
#include "checkpointing/internal.h"
#include "parax/checkpointing.h"
#include "parax/jit.h"
#include "runtime/buffer.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"

namespace parax::checkpointing {
namespace {

using ordered_json = nlohmann::ordered_json;

constexpr int64_t kMaxHeader = 100'000'000;  // the Python library's limit
constexpr int64_t kSlabBytes = int64_t(4) << 20;

struct Code {
  DType dtype;
  const char* name;
  int rank;  // the Python writer orders tensors by this, largest first
};
constexpr Code kCodes[] = {
    {DType::bool_, "BOOL", 0},    {DType::uint8, "U8", 1},     {DType::int8, "I8", 2},
    {DType::int16, "I16", 3},     {DType::uint16, "U16", 4},   {DType::float16, "F16", 5},
    {DType::bfloat16, "BF16", 6}, {DType::int32, "I32", 7},    {DType::uint32, "U32", 8},
    {DType::float32, "F32", 9},   {DType::float64, "F64", 10}, {DType::int64, "I64", 11},
    {DType::uint64, "U64", 12},
};

const Code& code_of(DType t) {
  for (const Code& c : kCodes) {
    if (c.dtype == t) return c;
  }
  throw ValueError("safetensors: no code for dtype " + std::string(dtype_name(t)));
}

// One distinct shard box of an array on this process, with a buffer holding it.
struct Box {
  Shape lo, size;
  const void* data = nullptr;  // saving: the shard's buffer
  std::vector<int> locals;     // loading: the addressable devices holding it
};

std::vector<Box> local_boxes(const Sharding& sharding, const Shape& shape) {
  std::vector<Box> boxes;
  for (auto& [device, index] : sharding.devices_indices_map(shape)) {
    if (!parax::detail::is_local(device)) continue;
    Box b{Shape(shape.size()), Shape(shape.size()), nullptr, {}};
    for (size_t d = 0; d < shape.size(); ++d) {
      b.lo[d] = index[d].begin(shape[d]);
      b.size[d] = index[d].end(shape[d]) - b.lo[d];
    }
    boxes.push_back(std::move(b));
  }
  return boxes;
}

// Rows [r0, r1) of dimension 0 of an array of `shape`, as a slab of whole rows.
struct Slab {
  int64_t r0, r1;
};

// Splits `box`'s rows into slabs of at most kSlabBytes (at least one row).
std::vector<Slab> slabs_of(const Shape& shape, const Box& box, int itemsize) {
  if (shape.empty()) return {Slab{0, 1}};
  const int64_t row = shape_size(Shape(shape.begin() + 1, shape.end())) * itemsize;
  const int64_t per = std::max<int64_t>(1, kSlabBytes / std::max<int64_t>(row, 1));
  std::vector<Slab> out;
  for (int64_t r = box.lo[0]; r < box.lo[0] + box.size[0]; r += per) {
    out.push_back({r, std::min(r + per, box.lo[0] + box.size[0])});
  }
  return out;
}

// True when `box` is whole rows of `shape` (full in every dimension but the first), so
// its bytes are one contiguous range of the tensor's.
bool whole_rows(const Shape& shape, const Box& box) {
  for (size_t d = 1; d < shape.size(); ++d) {
    if (box.lo[d] != 0 || box.size[d] != shape[d]) return false;
  }
  return true;
}

void pwrite_all(int fd, const void* data, size_t n, int64_t offset, const std::string& path) {
  const auto* p = static_cast<const char*>(data);
  while (n > 0) {
    const ssize_t put = ::pwrite(fd, p, std::min<size_t>(n, size_t(1) << 30), offset);
    if (put < 0 && errno == EINTR) continue;
    if (put <= 0) throw RuntimeError("cannot write " + path + ": " + std::strerror(errno));
    p += put;
    n -= size_t(put);
    offset += put;
  }
}

struct Entry {
  std::string name;
  const parax::detail::ArrayImpl* impl;
  int64_t begin = 0, end = 0;
};

}  // namespace

void save_safetensors(const std::string& path, const nn::StateDict& state,
                      const std::map<std::string, std::string>& metadata) {
  std::vector<Entry> entries;
  for (const auto& [name, array] : state) {
    const parax::detail::ArrayImpl& impl = parax::detail::concrete_of(array, "save_safetensors");
    if (!parax::detail::is_fully_addressable(*impl.sharding)) {
      throw ValueError("save_safetensors: '" + name +
                       "' spans processes; one process writes a safetensors file, so save "
                       "arrays of this process's devices (or use checkpointing::save)");
    }
    entries.push_back({name, &impl});
  }
  std::stable_sort(entries.begin(), entries.end(), [](const Entry& a, const Entry& b) {
    const int ra = code_of(a.impl->aval.dtype).rank, rb = code_of(b.impl->aval.dtype).rank;
    return ra != rb ? ra > rb : a.name < b.name;
  });
  ordered_json header = ordered_json::object();
  if (!metadata.empty()) header["__metadata__"] = metadata;
  int64_t offset = 0;
  for (Entry& e : entries) {
    e.begin = offset;
    offset += shape_size(e.impl->aval.shape) * dtype_itemsize(e.impl->aval.dtype);
    e.end = offset;
    header[e.name] = {{"dtype", code_of(e.impl->aval.dtype).name},
                      {"shape", e.impl->aval.shape},
                      {"data_offsets", {e.begin, e.end}}};
  }
  std::string text = header.dump();
  text.append((8 - text.size() % 8) % 8, ' ');
  const int64_t data_start = 8 + int64_t(text.size());

  // Written beside the destination, flushed, then renamed over it.
  const std::string tmp = path + ".tmp";
  const int fd = ::open(tmp.c_str(), O_WRONLY | O_CREAT | O_TRUNC | O_CLOEXEC, 0644);
  if (fd < 0) throw RuntimeError("cannot create " + tmp + ": " + std::strerror(errno));
  std::atomic<int64_t> peak{0};
  try {
    const uint64_t n = text.size();
    pwrite_all(fd, &n, 8, 0, tmp);
    pwrite_all(fd, text.data(), text.size(), 8, tmp);
    // One task per distinct shard when shards are whole rows (contiguous in the file);
    // otherwise one per slab of whole rows, assembled from the shards it crosses.
    struct Task {
      const Entry* entry;
      Box box;                   // a shard, or the slab's rows
      std::vector<Box> sources;  // the slab's shards
    };
    std::vector<Task> tasks;
    for (const Entry& e : entries) {
      if (e.end == e.begin) continue;
      const Shape& shape = e.impl->aval.shape;
      std::vector<Box> boxes;
      const std::vector<Box> all = local_boxes(*e.impl->sharding, shape);
      for (size_t i = 0; i < all.size(); ++i) {
        const bool seen = std::any_of(boxes.begin(), boxes.end(),
                                      [&](const Box& b) { return b.lo == all[i].lo; });
        if (seen) continue;
        boxes.push_back(all[i]);
        boxes.back().data = e.impl->buffers.at(i)->data();
      }
      if (std::all_of(boxes.begin(), boxes.end(),
                      [&](const Box& b) { return whole_rows(shape, b); })) {
        for (Box& b : boxes) tasks.push_back({&e, std::move(b), {}});
        continue;
      }
      Box whole{Shape(shape.size(), 0), shape, nullptr, {}};
      for (const Slab& slab : slabs_of(shape, whole, dtype_itemsize(e.impl->aval.dtype))) {
        Box rows = whole;
        rows.lo[0] = slab.r0;
        rows.size[0] = slab.r1 - slab.r0;
        std::vector<Box> sources;
        for (const Box& b : boxes) {
          if (b.lo[0] < slab.r1 && b.lo[0] + b.size[0] > slab.r0) sources.push_back(b);
        }
        tasks.push_back({&e, rows, std::move(sources)});
      }
    }
    base::parallel_for_io(int64_t(tasks.size()), [&](int64_t i) {
      const Task& t = tasks[size_t(i)];
      const Shape& shape = t.entry->impl->aval.shape;
      const int itemsize = dtype_itemsize(t.entry->impl->aval.dtype);
      const int64_t row =
          shape_size(Shape(shape.begin() + std::min<size_t>(1, shape.size()), shape.end())) *
          itemsize;
      const int64_t at = data_start + t.entry->begin + (shape.empty() ? 0 : t.box.lo[0] * row);
      const size_t nbytes = size_t(shape_size(t.box.size) * itemsize);
      if (t.sources.empty()) {
        pwrite_all(fd, t.box.data, nbytes, at, tmp);
        return;
      }
      std::vector<std::byte> slab(nbytes);
      note_peak(peak, int64_t(nbytes));
      for (const Box& b : t.sources) {
        Shape src_off(shape.size(), 0), dst_off = b.lo, isect = b.size;
        const int64_t r0 = std::max(b.lo[0], t.box.lo[0]);
        const int64_t r1 = std::min(b.lo[0] + b.size[0], t.box.lo[0] + t.box.size[0]);
        src_off[0] = r0 - b.lo[0];
        dst_off[0] = r0 - t.box.lo[0];
        isect[0] = r1 - r0;
        base::copy_box(b.data, b.size, src_off, slab.data(), t.box.size, dst_off, isect,
                       size_t(itemsize));
      }
      pwrite_all(fd, slab.data(), nbytes, at, tmp);
    });
    if (::fsync(fd) != 0) throw RuntimeError("cannot flush " + tmp + ": " + std::strerror(errno));
  } catch (...) {
    ::close(fd);
    ::unlink(tmp.c_str());
    throw;
  }
  if (::close(fd) != 0) throw RuntimeError("cannot close " + tmp + ": " + std::strerror(errno));
  files::rename(tmp, path);
  const std::string abs = files::absolute(path);
  files::sync_dir(abs.substr(0, std::max<size_t>(abs.rfind('/'), 1)));
  record_io({offset, int64_t(entries.size()), peak.load(), 0.0});
}

namespace {

struct Tensor {
  std::string name;
  DType dtype;
  Shape shape;
  int64_t begin, end;
};

// Parses and checks the header as the Python library does: known dtypes, sizes that
// match the shapes, offsets that cover the data exactly.
std::vector<Tensor> read_header(const files::Reader& file, int64_t& data_start) {
  const std::string& path = file.path();
  if (file.size() < 8) throw ValueError("load_safetensors: " + path + " is too short for a header");
  uint64_t n = 0;
  file.read_at(0, 8, &n);
  if (n > uint64_t(kMaxHeader) || int64_t(n) > file.size() - 8) {
    throw ValueError("load_safetensors: " + path + " has a header of " + std::to_string(n) +
                     " bytes, longer than the file or than 100,000,000");
  }
  std::string text(size_t(n), '\0');
  file.read_at(8, text.size(), text.data());
  data_start = 8 + int64_t(n);
  const ordered_json header = ordered_json::parse(text, nullptr, /*allow_exceptions=*/false);
  if (header.is_discarded() || !header.is_object()) {
    throw ValueError("load_safetensors: " + path + "'s header is not a JSON object");
  }
  std::vector<Tensor> out;
  for (const auto& [name, entry] : header.items()) {
    if (name == "__metadata__") continue;
    auto fail = [&](const std::string& what) {
      throw ValueError("load_safetensors: tensor '" + name + "' in " + path + ": " + what);
    };
    if (!entry.is_object() || !entry.contains("dtype") || !entry.contains("shape") ||
        !entry.contains("data_offsets")) {
      fail("needs dtype, shape and data_offsets");
    }
    Tensor s{name, DType::float32, {}, 0, 0};
    const std::string code =
        entry.at("dtype").is_string() ? entry.at("dtype").get<std::string>() : "";
    const Code* c = std::find_if(std::begin(kCodes), std::end(kCodes),
                                 [&](const Code& k) { return code == k.name; });
    if (c == std::end(kCodes)) fail("dtype '" + code + "' is not one parax has");
    s.dtype = c->dtype;
    try {
      s.shape = entry.at("shape").get<Shape>();
      const auto offsets = entry.at("data_offsets").get<std::vector<int64_t>>();
      if (offsets.size() != 2) fail("data_offsets must be [begin, end]");
      s.begin = offsets[0];
      s.end = offsets[1];
    } catch (const nlohmann::json::exception&) {
      fail("shape and data_offsets must be lists of integers");
    }
    int64_t elements = 1;
    for (int64_t d : s.shape) {
      if (d < 0) fail("negative dimension");
      elements *= d;
    }
    if (s.begin < 0 || s.end < s.begin || s.end - s.begin != elements * dtype_itemsize(s.dtype)) {
      fail("data_offsets [" + std::to_string(s.begin) + ", " + std::to_string(s.end) +
           "] do not hold " + std::to_string(elements) + " elements of " +
           std::string(dtype_name(s.dtype)));
    }
    out.push_back(std::move(s));
  }
  std::vector<const Tensor*> by_offset;
  for (const Tensor& s : out) by_offset.push_back(&s);
  std::sort(by_offset.begin(), by_offset.end(),
            [](const Tensor* a, const Tensor* b) { return a->begin < b->begin; });
  int64_t covered = 0;
  for (const Tensor* s : by_offset) {
    if (s->begin != covered) {
      throw ValueError("load_safetensors: " + path + ": tensor '" + s->name + "' starts at " +
                       std::to_string(s->begin) + ", not where the one before ends (" +
                       std::to_string(covered) + ")");
    }
    covered = s->end;
  }
  if (data_start + covered != file.size()) {
    throw ValueError("load_safetensors: " + path + " is " + std::to_string(file.size()) +
                     " bytes but its header describes " + std::to_string(data_start + covered) +
                     (data_start + covered > file.size() ? " (truncated)" : ""));
  }
  return out;
}

}  // namespace

nn::StateDict load_safetensors(const std::string& path,
                               const std::map<std::string, Sharding>& shardings) {
  const files::Reader file(path);
  int64_t data_start = 0;
  const std::vector<Tensor> stored = read_header(file, data_start);
  for (const auto& [name, sharding] : shardings) {
    const bool known =
        std::any_of(stored.begin(), stored.end(), [&](const Tensor& s) { return s.name == name; });
    if (!known) {
      throw ValueError("load_safetensors: a sharding is given for '" + name + "', which " + path +
                       " does not hold");
    }
  }
  struct Item {
    const Tensor* stored;
    Sharding sharding;
    bool committed;
    std::vector<runtime::BufferRef> buffers;
    std::vector<Device> devices;  // addressable, in device-assignment order
  };
  std::vector<Item> items;
  items.reserve(stored.size());
  for (const Tensor& s : stored) {
    auto it = shardings.find(s.name);
    std::optional<Sharding> sharding;
    if (it != shardings.end()) {
      sharding = parax::detail::try_resolve_spec(it->second);
      if (!sharding) {
        throw ValueError("load_safetensors: the sharding of '" + s.name +
                         "' is a bare PartitionSpec and there is no enclosing "
                         "parax::sharding::use_mesh scope");
      }
    }
    const bool committed = sharding.has_value();
    if (!sharding) sharding = SingleDeviceSharding(parax::detail::Topology::get().default_device());
    sharding->shard_shape(s.shape);  // raises for a sharding that does not fit the shape
    Item item{&s, *sharding, committed, {}, {}};
    for (const Device& d : sharding->device_assignment()) {
      if (parax::detail::is_local(d)) item.devices.push_back(d);
    }
    item.buffers.resize(item.devices.size());
    items.push_back(std::move(item));
  }
  struct Task {
    Item* item;
    Box box;
  };
  std::vector<Task> tasks;
  for (Item& item : items) {
    const std::vector<Box> boxes = local_boxes(item.sharding, item.stored->shape);
    const size_t first = tasks.size();
    for (size_t i = 0; i < boxes.size(); ++i) {
      auto same = std::find_if(tasks.begin() + long(first), tasks.end(),
                               [&](const Task& t) { return t.box.lo == boxes[i].lo; });
      if (same == tasks.end()) {
        tasks.push_back({&item, boxes[i]});
        same = tasks.end() - 1;
      }
      same->box.locals.push_back(int(i));
    }
  }
  std::atomic<int64_t> peak{0};
  base::parallel_for_io(int64_t(tasks.size()), [&](int64_t i) {
    Task& t = tasks[size_t(i)];
    const Tensor& s = *t.item->stored;
    const int itemsize = dtype_itemsize(s.dtype);
    const size_t nbytes = size_t(shape_size(t.box.size) * itemsize);
    runtime::BufferRef buffer =
        runtime::Buffer::allocate(t.item->devices[size_t(t.box.locals[0])], nbytes);
    auto* out = static_cast<std::byte*>(buffer->data());
    const int64_t row =
        shape_size(Shape(s.shape.begin() + std::min<size_t>(1, s.shape.size()), s.shape.end())) *
        itemsize;
    const int64_t base = data_start + s.begin;
    if (nbytes == 0) {
    } else if (whole_rows(s.shape, t.box)) {
      file.read_at(base + (s.shape.empty() ? 0 : t.box.lo[0] * row), nbytes, out);
    } else {
      std::vector<std::byte> slab;
      for (const Slab& r : slabs_of(s.shape, t.box, itemsize)) {
        slab.resize(size_t((r.r1 - r.r0) * row));
        note_peak(peak, int64_t(slab.capacity()));
        file.read_at(base + r.r0 * row, slab.size(), slab.data());
        Shape slab_shape = s.shape, src_off = t.box.lo, dst_off(s.shape.size(), 0),
              isect = t.box.size;
        slab_shape[0] = r.r1 - r.r0;
        src_off[0] = 0;
        dst_off[0] = r.r0 - t.box.lo[0];
        isect[0] = r.r1 - r.r0;
        base::copy_box(slab.data(), slab_shape, src_off, out, t.box.size, dst_off, isect,
                       size_t(itemsize));
      }
    }
    t.item->buffers[size_t(t.box.locals[0])] = buffer;
    for (size_t k = 1; k < t.box.locals.size(); ++k) {
      // replicas share the bytes read once (CPU devices share the host's memory)
      t.item->buffers[size_t(t.box.locals[k])] =
          runtime::Buffer::alias(buffer, t.item->devices[size_t(t.box.locals[k])]);
    }
  });
  nn::StateDict out;
  for (Item& item : items) {
    out.insert_or_assign(
        item.stored->name,
        parax::detail::make_array(core::Aval{item.stored->shape, item.stored->dtype, false},
                                  item.sharding, item.committed, std::move(item.buffers)));
  }
  record_io({file.size() - data_start, int64_t(stored.size()), peak.load(), 0.0});
  return out;
}

nn::StateDict load_safetensors(const std::string& path) { return load_safetensors(path, {}); }

}  // namespace parax::checkpointing
