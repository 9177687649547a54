// Saving and restoring pytrees (parax/checkpointing.h) in Orbax's layout: the commit
// protocol, the tree's metadata, and the parallel loops over shards and chunks.
#include <algorithm>
#include <atomic>
#include <chrono>
#include <cstring>
#include <functional>
#include <map>
#include <mutex>
#include <nlohmann/json.hpp>
#include <set>

#include "api/array_impl.h"
#include "base/box_copy.h"
#include "base/thread_pool.h"
#include "checkpointing/files.h"
#include "checkpointing/internal.h"
#include "checkpointing/zarr.h"
#include "parax/checkpointing.h"
#include "parax/jit.h"
#include "runtime/buffer.h"
#include "runtime/engine.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"

namespace parax::checkpointing {
namespace {

using nlohmann::json;

constexpr int kFormatVersion = 1;
constexpr const char* kTmpSuffix = ".orbax-checkpoint-tmp";
constexpr const char* kHandler =
    "orbax.checkpoint._src.handlers.pytree_checkpoint_handler.PyTreeCheckpointHandler";

std::mutex stats_mutex;
IoStats stats;
std::function<void(std::string_view)> save_observer;

void observe(std::string_view stage) {
  if (save_observer) save_observer(stage);
}

int64_t now_nsecs() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(
             std::chrono::system_clock::now().time_since_epoch())
      .count();
}

// ----------------------------------------------------------------------------------------
// Names: a leaf's array directory is its path's keys joined with '.', as Orbax names it.

std::string entry_key(const PathEntry& e) {
  return e.kind == PathEntry::Kind::sequence ? std::to_string(e.index) : e.key;
}

std::string param_name(const KeyPath& path) {
  std::string name;
  for (const PathEntry& e : path) {
    const std::string key = entry_key(e);
    if (key.empty() || key == "." || key == ".." || key.find('/') != std::string::npos ||
        key.find('\0') != std::string::npos) {
      throw ValueError("checkpointing: the key '" + key + "' at " + keystr(path) +
                       " cannot name a file (no '/', and not empty, '.' or '..')");
    }
    if (!name.empty()) name += '.';
    name += key;
  }
  if (name.empty()) name = "array";  // a tree that is a single array
  if (name.front() == '_') {
    throw ValueError("checkpointing: the array name '" + name + "' at " + keystr(path) +
                     " starts with '_', which the checkpoint's own files use");
  }
  return name;
}

// Python's repr of a str, as Orbax writes _METADATA's keys.
std::string py_repr(const std::string& s) {
  const char quote =
      s.find('\'') != std::string::npos && s.find('"') == std::string::npos ? '"' : '\'';
  std::string out(1, quote);
  for (unsigned char c : s) {
    if (c == '\\' || c == quote) {
      out += '\\';
      out += char(c);
    } else if (c == '\n') {
      out += "\\n";
    } else if (c == '\t') {
      out += "\\t";
    } else if (c == '\r') {
      out += "\\r";
    } else if (c < 0x20 || c == 0x7f) {
      static const char* hex = "0123456789abcdef";
      out += "\\x";
      out += hex[c >> 4];
      out += hex[c & 15];
    } else {
      out += char(c);
    }
  }
  return out + quote;
}

std::string tuple_repr(const KeyPath& path) {
  std::string out = "(";
  for (size_t i = 0; i < path.size(); ++i) {
    out += (i ? ", " : "") + py_repr(entry_key(path[i]));
  }
  return out + (path.size() == 1 ? ",)" : ")");
}

// ----------------------------------------------------------------------------------------
// Talking to the other processes: every process reaches each step, or all raise.

std::vector<int> everyone() {
  std::vector<int> group(static_cast<size_t>(process_count()));
  for (size_t p = 0; p < group.size(); ++p) group[p] = int(p);
  return group;
}

// Returns when every process reached `step` with ok; throws DistributedError naming the
// processes that failed (or the engine's own error when one died).
void agree(bool ok, const std::string& step, const std::string& dir) {
  if (process_count() == 1) {
    return;
  }
  runtime::Engine* engine = runtime::engine();
  if (engine == nullptr) {
    throw RuntimeError(
        "checkpointing: this process is one of " + std::to_string(process_count()) +
        " but has no collective engine; call parax::distributed::initialize() first");
  }
  const uint8_t mine = ok ? 1 : 0;
  std::vector<uint8_t> all(static_cast<size_t>(process_count()));
  const std::vector<int> group = everyone();
  engine->all_gather(group, &mine, 1, all.data(), "checkpointing " + step);
  std::vector<int> failed;
  for (size_t p = 0; p < all.size(); ++p) {
    if (all[p] == 0) failed.push_back(int(p));
  }
  if (failed.empty() || !ok) return;  // a failing process raises its own error
  std::string list;
  for (int p : failed) list += (list.empty() ? "" : ", ") + std::to_string(p);
  throw DistributedError("checkpointing: process " + list + " failed while " + step + " " + dir);
}

// Runs `body` (this process's part of a step), then agrees with the others; this
// process's own error wins over the others'.
template <class F>
void step_together(const std::string& step, const std::string& dir, F&& body) {
  try {
    body();
  } catch (...) {
    try {
      agree(false, step, dir);
    } catch (...) {
    }
    throw;
  }
  agree(true, step, dir);
}

// ----------------------------------------------------------------------------------------
// Shards.

struct ShardRef {
  Device device;
  Index index;
  int replica_id = 0;
  int local = -1;  // the buffer's position among the addressable devices, or -1
};

std::vector<ShardRef> shards_of(const Sharding& sharding, const Shape& shape) {
  std::vector<ShardRef> out;
  int local = 0;
  for (auto& [device, index] : sharding.devices_indices_map(shape)) {
    ShardRef s{device, index};
    for (const ShardRef& prev : out) {
      if (prev.index == index) ++s.replica_id;
    }
    if (parax::detail::is_local(device)) s.local = local++;
    out.push_back(std::move(s));
  }
  return out;
}

Shape box_start(const Index& index, const Shape& shape) {
  Shape lo(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) lo[d] = index[d].begin(shape[d]);
  return lo;
}

Shape box_size(const Index& index, const Shape& shape) {
  Shape n(shape.size());
  for (size_t d = 0; d < shape.size(); ++d) {
    n[d] = index[d].end(shape[d]) - index[d].begin(shape[d]);
  }
  return n;
}

// The chunk grid parax writes an array in: one chunk per shard (at least 1 per dimension).
Shape chunk_shape_of(const Sharding& sharding, const Shape& shape) {
  Shape c = sharding.shard_shape(shape);
  for (int64_t& d : c) d = std::max<int64_t>(d, 1);
  return c;
}

struct SaveItem {
  std::string name;
  KeyPath path;
  Array array;
  // Its buffers, held until the save is written: a jitted call the array is donated to
  // meanwhile cannot take or overwrite them.
  std::vector<parax::detail::BufferRef> buffers;
  zarr::ArrayMetadata meta;
};

json metadata_json(const std::vector<SaveItem>& items) {
  json tree = json::object();
  for (const SaveItem& it : items) {
    json keys = json::array();
    for (const PathEntry& e : it.path) {
      keys.push_back(
          {{"key", entry_key(e)}, {"key_type", e.kind == PathEntry::Kind::sequence ? 1 : 2}});
    }
    tree[it.path.empty() ? "('array',)" : tuple_repr(it.path)] = {
        {"key_metadata", keys},
        {"value_metadata",
         {{"value_type", "jax.Array"},
          {"skip_deserialize", false},
          {"write_shape", it.meta.chunk_shape}}}};
  }
  return {{"tree_metadata", tree},
          {"use_ocdbt", false},
          {"use_zarr3", true},
          {"store_array_data_equal_to_fill_value", true},
          {"custom_metadata", nullptr}};
}

// The step's metadata: Orbax names the handler of the item (a checkpoint of its own) or of
// each item by name (a CheckpointManager's step).
json checkpoint_metadata(int64_t init, int64_t commit, const std::string& item) {
  return {{"item_handlers", item.empty() ? json(kHandler) : json{{item, kHandler}}},
          {"metrics", json::object()},
          {"performance_metrics", json::object()},
          {"init_timestamp_nsecs", init},
          {"commit_timestamp_nsecs", commit},
          {"custom_metadata", {{"parax_format_version", kFormatVersion}}}};
}

bool is_checkpoint(const std::string& dir) { return files::exists(dir + "/_METADATA"); }

}  // namespace

void set_save_observer(std::function<void(std::string_view)> observer) {
  save_observer = std::move(observer);
}

void record_io(const IoStats& s) {
  std::lock_guard lock(stats_mutex);
  stats = s;
}

IoStats last_io_stats() {
  std::lock_guard lock(stats_mutex);
  return stats;
}

namespace {

std::string array_dir(const std::string& root, const std::string& name) {
  return name.empty() ? root : root + "/" + name;
}

SaveItem save_item(std::string name, KeyPath path, const Array& array, const SaveOptions& options,
                   const char* api) {
  const parax::detail::ArrayImpl& impl = parax::detail::impl_of(array);
  if (impl.tracer || impl.abstract || !impl.sharding) {
    throw ValueError(std::string(api) + ": the " +
                     (path.empty() ? "array" : "leaf at " + keystr(path)) +
                     " is not a concrete array (" +
                     (impl.tracer ? "a traced value" : "a ShapeDtypeStruct") + ")");
  }
  parax::detail::concrete_of(array, api);  // not deleted
  const Shape chunk = chunk_shape_of(*impl.sharding, impl.aval.shape);
  return {std::move(name), std::move(path), array, impl.buffers,
          zarr::metadata_for(impl.aval.shape, impl.aval.dtype, chunk, options.zstd_level)};
}

// The items of a tree's leaves, named by their paths (distinct names, or ValueError).
std::vector<SaveItem> save_items_of(const detail::Leaves& leaves, const SaveOptions& options,
                                    const char* api) {
  std::vector<SaveItem> items;
  std::map<std::string, std::string> seen;  // array name -> keystr
  for (const auto& [path, array] : leaves) {
    const std::string name = param_name(path);
    if (auto [it, fresh] = seen.emplace(name, keystr(path)); !fresh) {
      throw ValueError(std::string(api) + ": the leaves at " + it->second + " and " + keystr(path) +
                       " would both be saved as '" + name + "'");
    }
    items.push_back(save_item(name, path, array, options, api));
  }
  return items;
}

void check_options(const SaveOptions& options, const char* api) {
  if (options.zstd_level && (*options.zstd_level < -7 || *options.zstd_level > 22)) {
    throw ValueError(std::string(api) + ": zstd_level " + std::to_string(*options.zstd_level) +
                     " is out of zstd's range [-7, 22]");
  }
}

// One save by the commit protocol, in three parts so that a manager can write in the
// background between the parts that talk to the other processes:
// - prepare (every process, together): check `dir`, make `<dir>.orbax-checkpoint-tmp`;
// - write (each process alone): the chunks of the shards it holds with replica id 0, and
//   on the primary the arrays' zarr.json;
// - commit (every process, together): the primary writes the tree's metadata and the
//   commit marker, flushes and renames the temporary directory to `dir`.
// `dir` is a checkpoint (`tree`, its tree under `item` or in `dir` itself when `item` is
// empty, as Orbax's CheckpointManager nests its items) or one zarr array.
class CommitSave final : public Save {
 public:
  CommitSave(std::string dir, std::string item, std::vector<SaveItem> items, SaveOptions options,
             bool tree, const char* api)
      : dir_(std::move(dir)),
        tmp_(dir_ + kTmpSuffix),
        item_(std::move(item)),
        items_(std::move(items)),
        options_(options),
        tree_(tree),
        api_(api) {}

  const std::string& dir() const { return dir_; }

  void prepare() {
    t0_ = std::chrono::steady_clock::now();
    const std::string what = tree_ ? "checkpoint" : "zarr array";
    const std::string marker = array_dir(dir_, item_) + (tree_ ? "/_METADATA" : "/zarr.json");
    step_together("checking", dir_, [&] {
      if (!files::exists(dir_)) return;
      if (!files::is_dir(dir_)) throw ValueError(std::string(api_) + ": " + dir_ + " is a file");
      if (files::exists(marker)) {
        if (!options_.force) {
          throw ValueError(std::string(api_) + ": a " + what + " already exists at " + dir_ +
                           "; pass SaveOptions{.force = true} to replace it");
        }
      } else if (!files::list_dir(dir_).empty()) {
        throw ValueError(std::string(api_) + ": refusing to write to " + dir_ +
                         ": it is a directory that is not a previous " + what + ", and not empty");
      }
    });
    init_ = now_nsecs();
    step_together("creating", dir_, [&] {
      if (process_index() != 0) return;
      if (files::exists(tmp_)) files::remove_all(tmp_);  // an unfinished save's
      files::make_dirs(root());
      if (tree_) files::make_dirs(root() + "/array_metadatas");
      for (const SaveItem& it : items_) files::make_dirs(array_dir(root(), it.name));
    });
  }

  // Writes this process's chunks and its array metadata, flushed. Talks to no other process.
  void write() override {
    struct Task {
      const SaveItem* item;
      Shape coords;
      const void* data;
      Shape box;  // the shard's extent (smaller than the chunk at the array's edge)
    };
    std::vector<Task> tasks;
    for (const SaveItem& it : items_) {
      const parax::detail::ArrayImpl& impl = parax::detail::impl_of(it.array);
      if (shape_size(impl.aval.shape) == 0) continue;
      for (const ShardRef& s : shards_of(*impl.sharding, impl.aval.shape)) {
        if (s.replica_id != 0 || s.local < 0) continue;
        const Shape lo = box_start(s.index, impl.aval.shape);
        Shape coords(lo.size());
        for (size_t d = 0; d < lo.size(); ++d) coords[d] = lo[d] / it.meta.chunk_shape[d];
        tasks.push_back({&it, coords, it.buffers.at(size_t(s.local))->data(),
                         box_size(s.index, impl.aval.shape)});
      }
    }
    std::atomic<int64_t> bytes{0};
    std::atomic<int64_t> peak{0};
    // The primary also writes each array's zarr.json here, beside the chunks: creating a
    // file costs the file system about as much as writing a megabyte, and an array's
    // metadata is inert until the commit marker and the rename make the directory a
    // checkpoint.
    const int64_t metas = process_index() == 0 ? int64_t(items_.size()) : 0;
    base::parallel_for_io(int64_t(tasks.size()) + metas, [&](int64_t i) {
      if (i >= int64_t(tasks.size())) {
        const SaveItem& it = items_[size_t(i - int64_t(tasks.size()))];
        files::write_text(array_dir(root(), it.name) + "/zarr.json", it.meta.to_json(), false);
        return;
      }
      const Task& t = tasks[size_t(i)];
      const zarr::ArrayMetadata& meta = t.item->meta;
      zarr::Scratch scratch;
      std::vector<std::byte> padded;  // an edge shard, padded to the chunk's shape
      const void* data = t.data;
      if (t.box != meta.chunk_shape) {
        const int itemsize = dtype_itemsize(meta.dtype);
        padded.resize(size_t(shape_size(meta.chunk_shape)) * size_t(itemsize));
        zarr::fill(meta, padded.data(), shape_size(meta.chunk_shape));
        const Shape origin(t.box.size(), 0);
        base::copy_box(t.data, t.box, origin, padded.data(), meta.chunk_shape, origin, t.box,
                       size_t(itemsize));
        data = padded.data();
      }
      zarr::write_chunk(array_dir(root(), t.item->name), meta, t.coords, data, scratch);
      observe("chunk");
      const int64_t held = int64_t(scratch.peak + padded.capacity());
      note_peak(peak, held);
      bytes += shape_size(meta.chunk_shape) * dtype_itemsize(meta.dtype);
    });
    if (tree_) {
      json metas = json::array();
      for (const SaveItem& it : items_) {
        metas.push_back({{"array_metadata",
                          {{"param_name", it.name},
                           {"write_shape", it.meta.chunk_shape},
                           {"chunk_shape", it.meta.chunk_shape},
                           {"ext_metadata", nullptr}}}});
      }
      files::write_text(root() + "/array_metadatas/process_" + std::to_string(process_index()),
                        json{{"array_metadatas", metas}}.dump(), /*flush=*/false);
    }
    // Every chunk file and directory entry at once: one flush of the filesystem costs
    // about what one file's does, a flush per file as much again per file. Alone, the
    // commit's flush covers them too.
    if (process_count() > 1) files::sync_filesystem(tmp_);
    stats_ = {bytes.load(), int64_t(tasks.size()), peak.load(), 0.0};
  }

  // Agrees that every process wrote (`wrote`: this one did), then commits.
  void commit(bool wrote) override {
    agree(wrote, "writing", dir_);
    if (!wrote) return;  // this process failed: nothing is committed, the caller raises
    step_together("committing", dir_, [&] {
      if (process_index() != 0) return;
      // the tree's metadata, the commit marker last, all flushed before the rename
      if (tree_) {
        files::write_text(root() + "/_METADATA", metadata_json(items_).dump(), false);
        files::write_text(tmp_ + "/_CHECKPOINT_METADATA",
                          checkpoint_metadata(init_, now_nsecs(), item_).dump(), false);
        files::write_text(tmp_ + "/commit_success.txt",
                          "Checkpoint commit was successful to " + dir_, false);
      }
      files::sync_filesystem(tmp_);
      observe("metadata");
      const std::string parent = dir_.substr(0, std::max<size_t>(dir_.rfind('/'), 1));
      const bool replacing = files::exists(dir_);
      if (replacing) {
        files::exchange(tmp_, dir_);  // the old checkpoint (or empty directory) is now at tmp
      } else {
        files::rename(tmp_, dir_);
      }
      files::sync_dir(parent);
      observe("committed");
      if (replacing) files::remove_all(tmp_);
    });
    stats_.seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0_).count();
    record_io(stats_);
  }

  // The whole save, on the calling thread.
  void run() {
    prepare();
    try {
      write();
    } catch (...) {
      try {
        commit(false);
      } catch (...) {
      }
      throw;
    }
    commit(true);
  }

 private:
  std::string root() const { return array_dir(tmp_, item_); }

  std::string dir_, tmp_, item_;
  std::vector<SaveItem> items_;
  SaveOptions options_;
  bool tree_;
  const char* api_;
  std::chrono::steady_clock::time_point t0_;
  int64_t init_ = 0;
  IoStats stats_;
};

}  // namespace

namespace detail {

void save_leaves(const std::string& dir, const Leaves& leaves, const SaveOptions& options) {
  const char* api = "checkpointing::save";
  check_options(options, api);
  CommitSave(files::absolute(dir), "", save_items_of(leaves, options, api), options,
             /*tree=*/true, api)
      .run();
}

}  // namespace detail

std::shared_ptr<Save> prepare_save(const std::string& dir, const std::string& item,
                                   const detail::Leaves& leaves, const SaveOptions& options,
                                   const char* api) {
  check_options(options, api);
  auto save = std::make_shared<CommitSave>(dir, item, save_items_of(leaves, options, api), options,
                                           /*tree=*/true, api);
  save->prepare();
  return save;
}

void write_zarr(const std::string& path, const Array& x, const SaveOptions& options) {
  const char* api = "checkpointing::write_zarr";
  check_options(options, api);
  CommitSave(files::absolute(path), "", {save_item("", {}, x, options, api)}, options,
             /*tree=*/false, api)
      .run();
}

namespace {

// What restore knows of the checkpoint at `dir`: its arrays' names, and whether a missing
// chunk is an error (Orbax and parax write every chunk) or the fill value (plain zarr).
struct Stored {
  std::set<std::string> names;
  bool strict = true;
};

Stored open_checkpoint(const std::string& dir) {
  if (!files::is_dir(dir)) {
    if (files::exists(dir + kTmpSuffix)) {
      throw ValueError("checkpointing::restore: no committed checkpoint at " + dir +
                       ": a save did not finish (its temporary directory " + dir + kTmpSuffix +
                       " is removed by the next save)");
    }
    throw ValueError("checkpointing::restore: no checkpoint at " + dir);
  }
  if (!is_checkpoint(dir)) {
    throw ValueError("checkpointing::restore: " + dir + " is not a checkpoint (no _METADATA)");
  }
  if (files::exists(dir + "/_CHECKPOINT_METADATA")) {
    const std::string path = dir + "/_CHECKPOINT_METADATA";
    const json meta = json::parse(files::read_text(path), nullptr, /*allow_exceptions=*/false);
    if (meta.is_discarded() || !meta.is_object()) {
      throw ValueError("checkpointing::restore: " + path + " is not JSON");
    }
    const json custom = meta.value("custom_metadata", json::object());
    if (custom.is_object() && custom.contains("parax_format_version")) {
      const json& v = custom.at("parax_format_version");
      if (!v.is_number_integer() || v.get<int64_t>() > kFormatVersion || v.get<int64_t>() < 1) {
        throw ValueError("checkpointing::restore: " + dir + " has format version " + v.dump() +
                         "; this parax reads versions 1 to " + std::to_string(kFormatVersion));
      }
    }
  }
  const std::string path = dir + "/_METADATA";
  const json meta = json::parse(files::read_text(path), nullptr, /*allow_exceptions=*/false);
  if (meta.is_discarded() || !meta.is_object() || !meta.contains("tree_metadata") ||
      !meta.at("tree_metadata").is_object()) {
    throw ValueError("checkpointing::restore: " + path + " is not a tree's metadata");
  }
  if (meta.value("use_ocdbt", false)) {
    throw ValueError("checkpointing::restore: " + dir +
                     " keeps its arrays in an OCDBT database (Orbax's use_ocdbt=True), which "
                     "parax does not read; save it with use_ocdbt=False");
  }
  if (!meta.value("use_zarr3", false)) {
    throw ValueError("checkpointing::restore: " + dir +
                     " holds zarr v2 arrays (use_zarr3 is not true); parax reads zarr v3");
  }
  Stored out;
  out.strict = meta.value("store_array_data_equal_to_fill_value", false);
  for (const auto& [key, leaf] : meta.at("tree_metadata").items()) {
    const json value = leaf.value("value_metadata", json::object());
    if (value.value("skip_deserialize", false)) continue;
    std::string name;
    for (const json& k : leaf.value("key_metadata", json::array())) {
      name += (name.empty() ? "" : ".") +
              (k.at("key").is_string() ? k.at("key").get<std::string>() : k.at("key").dump());
    }
    out.names.insert(name.empty() ? "array" : name);
  }
  return out;
}

struct ReadItem {
  std::string name;
  zarr::ArrayMetadata meta;
  core::Aval aval;
  Sharding sharding;
  bool committed = true;
  std::vector<ShardRef> shards;
  std::vector<runtime::BufferRef> buffers;  // one per addressable device
};

// One distinct box of one array, read once and copied to every local device holding it.
struct ReadTask {
  ReadItem* item;
  Shape lo, size;
  std::vector<int> locals;  // positions among the item's addressable devices
};

// JAX's short form of a type: float32[4,2].
std::string type_str(DType dtype, const Shape& shape) {
  std::string s = std::string(dtype_name(dtype)) + "[";
  for (size_t i = 0; i < shape.size(); ++i) s += (i ? "," : "") + std::to_string(shape[i]);
  return s + "]";
}

std::string join(const std::vector<std::string>& names) {
  std::string out;
  for (const std::string& n : names) out += (out.empty() ? "'" : ", '") + n + "'";
  return out;
}

// Reads the box of `t` into `out` (row-major, t.size), chunk by chunk.
void read_box(const ReadTask& t, const std::string& array_dir, bool strict, std::byte* out,
              zarr::Scratch& scratch, std::vector<std::byte>& chunk, int64_t& bytes,
              int64_t& nfiles) {
  const zarr::ArrayMetadata& m = t.item->meta;
  const Shape grid = m.read_shape();
  const size_t ndim = grid.size();
  const int itemsize = dtype_itemsize(m.dtype);
  Shape first(ndim), last(ndim);
  for (size_t d = 0; d < ndim; ++d) {
    first[d] = t.lo[d] / grid[d];
    last[d] = (t.lo[d] + t.size[d] - 1) / grid[d];
  }
  Shape c = first;
  while (true) {
    Shape c_lo(ndim), isect_lo(ndim), isect(ndim);
    bool whole = true;  // the chunk is exactly the box
    for (size_t d = 0; d < ndim; ++d) {
      c_lo[d] = c[d] * grid[d];
      isect_lo[d] = std::max(c_lo[d], t.lo[d]);
      const int64_t hi = std::min({c_lo[d] + grid[d], t.lo[d] + t.size[d], m.shape[d]});
      isect[d] = hi - isect_lo[d];
      whole = whole && c_lo[d] == t.lo[d] && grid[d] == t.size[d];
    }
    const int64_t elements = shape_size(grid);
    std::byte* dst = out;
    if (!whole) {
      chunk.resize(size_t(elements) * size_t(itemsize));
      dst = chunk.data();
    }
    if (!zarr::read_chunk(array_dir, m, c, dst, scratch)) {
      if (strict) {
        throw ValueError("checkpointing::restore: array '" + t.item->name + "': the chunk file " +
                         array_dir + "/" + zarr::chunk_key(m, c) + " is missing");
      }
      zarr::fill(m, dst, elements);
    } else {
      bytes += elements * itemsize;
      ++nfiles;
    }
    if (!whole) {
      Shape src_off(ndim), dst_off(ndim);
      for (size_t d = 0; d < ndim; ++d) {
        src_off[d] = isect_lo[d] - c_lo[d];
        dst_off[d] = isect_lo[d] - t.lo[d];
      }
      base::copy_box(chunk.data(), grid, src_off, out, t.size, dst_off, isect, size_t(itemsize));
    }
    // next chunk coordinates, last dimension fastest
    size_t d = ndim;
    while (d > 0) {
      --d;
      if (++c[d] <= last[d]) break;
      c[d] = first[d];
      if (d == 0) return;
    }
    if (ndim == 0) return;
  }
}

// Returns the item a target leaf asks for: its type, and its sharding (the default device
// when it has none).
ReadItem read_item(std::string name, const Array& target, const std::string& where) {
  const parax::detail::ArrayImpl& impl = parax::detail::impl_of(target);
  if (impl.tracer) {
    throw ValueError(where + " is a traced value; pass an Array or a ShapeDtypeStruct");
  }
  std::optional<Sharding> sharding = impl.sharding;
  if (sharding) {
    sharding = parax::detail::try_resolve_spec(*sharding);
    if (!sharding) {
      throw ValueError(where +
                       " has a bare PartitionSpec and there is no enclosing "
                       "parax::sharding::use_mesh scope");
    }
  }
  const bool committed = sharding.has_value();
  if (!sharding) sharding = SingleDeviceSharding(parax::detail::Topology::get().default_device());
  ReadItem item{std::move(name), {}, impl.aval, *sharding, committed, {}, {}};
  item.aval.weak_type = false;
  return item;
}

// Reads every item under `root`, one task per distinct box on this process's devices, and
// returns the arrays. `load_meta`, when given, sets an item's metadata (or raises) before
// its first box is read: in the same tasks, so that the disk's latency for the small
// metadata files overlaps the large chunks' reads.
std::vector<Array> read_items(std::vector<ReadItem>& items, const std::string& root, bool strict,
                              std::chrono::steady_clock::time_point t0,
                              const std::function<void(ReadItem&)>& load_meta = nullptr) {
  std::vector<ReadTask> tasks;
  for (ReadItem& it : items) {
    it.shards = shards_of(it.sharding, it.aval.shape);
    std::vector<const ShardRef*> locals;
    for (const ShardRef& s : it.shards) {
      if (s.local >= 0) locals.push_back(&s);
    }
    it.buffers.resize(locals.size());
    const size_t first_task = tasks.size();
    for (const ShardRef* s : locals) {
      const Shape lo = box_start(s->index, it.aval.shape);
      auto same = std::find_if(tasks.begin() + long(first_task), tasks.end(),
                               [&](const ReadTask& t) { return t.lo == lo; });
      if (same == tasks.end()) {
        tasks.push_back({&it, lo, box_size(s->index, it.aval.shape), {}});
        same = tasks.end() - 1;
      }
      same->locals.push_back(s->local);
    }
  }
  std::vector<std::once_flag> loaded(items.size());
  auto ensure_meta = [&](ReadItem& it) {
    if (load_meta) std::call_once(loaded[size_t(&it - items.data())], load_meta, it);
  };
  std::atomic<int64_t> bytes{0}, nfiles{0}, peak{0};
  base::parallel_for_io(int64_t(tasks.size()), [&](int64_t i) {
    ReadTask& t = tasks[size_t(i)];
    ReadItem& it = *t.item;
    ensure_meta(it);
    const size_t nbytes = size_t(shape_size(t.size)) * size_t(dtype_itemsize(it.aval.dtype));
    std::vector<Device> devices;
    for (const ShardRef& s : it.shards) {
      if (s.local >= 0) devices.push_back(s.device);
    }
    runtime::BufferRef first = runtime::Buffer::allocate(devices[size_t(t.locals[0])], nbytes);
    if (nbytes > 0) {
      zarr::Scratch scratch;
      std::vector<std::byte> chunk;
      int64_t b = 0, f = 0;
      read_box(t, array_dir(root, it.name), strict, static_cast<std::byte*>(first->data()), scratch,
               chunk, b, f);
      bytes += b;
      nfiles += f;
      const int64_t held = int64_t(scratch.peak + chunk.capacity());
      note_peak(peak, held);
    }
    it.buffers[size_t(t.locals[0])] = first;
    for (size_t k = 1; k < t.locals.size(); ++k) {
      // replicas share the bytes read once (CPU devices share the host's memory)
      it.buffers[size_t(t.locals[k])] = runtime::Buffer::alias(first, devices[size_t(t.locals[k])]);
    }
  });
  for (ReadItem& it : items) ensure_meta(it);  // those with no box on this process
  std::vector<Array> out;
  for (ReadItem& it : items) {
    out.push_back(
        parax::detail::make_array(it.aval, it.sharding, it.committed, std::move(it.buffers)));
  }
  record_io({bytes.load(), nfiles.load(), peak.load(),
             std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count()});
  return out;
}

zarr::ArrayMetadata read_metadata(const std::string& array, const std::string& name,
                                  const char* api) {
  const std::string path = array + "/zarr.json";
  if (!files::exists(path)) {
    throw ValueError(
        std::string(api) + ": " +
        (name.empty() ? array + " is not a zarr array" : "array '" + name + "' has no metadata") +
        ": " + path + " is missing");
  }
  return zarr::parse_metadata(files::read_text(path), path);
}

}  // namespace

namespace detail {

std::vector<Array> restore_leaves(const std::string& dir_arg, const Leaves& targets) {
  const auto t0 = std::chrono::steady_clock::now();
  const std::string dir = files::absolute(dir_arg);
  const Stored stored = open_checkpoint(dir);

  std::vector<ReadItem> items;
  items.reserve(targets.size());
  std::set<std::string> wanted;
  for (const auto& [path, target] : targets) {
    const std::string name = param_name(path);
    wanted.insert(name);
    items.push_back(
        read_item(name, target, "checkpointing::restore: the target leaf at " + keystr(path)));
  }
  std::vector<std::string> missing, extra;
  for (const std::string& n : wanted) {
    if (!stored.names.count(n)) missing.push_back(n);
  }
  for (const std::string& n : stored.names) {
    if (!wanted.count(n)) extra.push_back(n);
  }
  if (!missing.empty() || !extra.empty()) {
    std::string msg =
        "checkpointing::restore: the target's tree does not match the checkpoint at " + dir;
    if (!missing.empty()) msg += "; the checkpoint has no array " + join(missing);
    if (!extra.empty()) msg += "; the target has no leaf for " + join(extra);
    throw ValueError(msg);
  }
  return read_items(items, dir, stored.strict, t0, [&dir](ReadItem& it) {
    it.meta = read_metadata(array_dir(dir, it.name), it.name, "checkpointing::restore");
    if (it.meta.shape != it.aval.shape || it.meta.dtype != it.aval.dtype) {
      throw ValueError("checkpointing::restore: array '" + it.name + "' in " + dir + " is " +
                       type_str(it.meta.dtype, it.meta.shape) + " but the target asks for " +
                       type_str(it.aval.dtype, it.aval.shape));
    }
  });
}

}  // namespace detail

Array read_zarr(const std::string& path_arg, std::optional<Sharding> sharding) {
  const auto t0 = std::chrono::steady_clock::now();
  const char* api = "checkpointing::read_zarr";
  const std::string path = files::absolute(path_arg);
  if (!files::is_dir(path)) {
    throw ValueError(std::string(api) + ": no zarr array at " + path +
                     (files::exists(path + kTmpSuffix) ? " (a write did not finish)" : ""));
  }
  const zarr::ArrayMetadata meta = read_metadata(path, "", api);
  const Array target = ShapeDtypeStruct(meta.shape, meta.dtype, std::move(sharding));
  std::vector<ReadItem> items{read_item("", target, std::string(api) + ": the sharding")};
  items[0].meta = meta;
  // zarr leaves out chunks equal to the fill value: a missing one reads as it
  return read_items(items, path, /*strict=*/false, t0)[0];
}

}  // namespace parax::checkpointing
