// Checkpoints: pytrees of arrays saved from every process at once and restored onto any
// mesh, in the layout Orbax writes (use_ocdbt=False, zarr v3): a directory per array
// named by its path in the tree (`params.w`), chunk files of one shard each, and the
// tree's structure in `_METADATA`. tensorstore, Orbax and zarr-python read what parax
// writes, and parax reads theirs. (parax::checkpoint is rematerialization, in grad.h.)
#pragma once

#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <utility>
#include <vector>

#include "parax/array.h"
#include "parax/module.h"
#include "parax/sharding.h"
#include "parax/tree.h"

namespace parax::checkpointing {

struct SaveOptions {
  // Compress every chunk with zstd at this level (zarr's zstd codec); none when absent.
  std::optional<int> zstd_level = std::nullopt;
  // Replace a checkpoint already at the directory, in one step; without it, that raises.
  bool force = false;
};

// What this process's last save or restore did.
struct IoStats {
  int64_t bytes = 0;               // chunk file bytes written or read
  int64_t files = 0;               // chunk files written or read
  int64_t peak_staging_bytes = 0;  // the most host memory held at once for encoding,
                                   // decoding and partial chunks (beyond the arrays)
  double seconds = 0;
};
IoStats last_io_stats();

namespace detail {
using Leaves = std::vector<std::pair<KeyPath, Array>>;
void save_leaves(const std::string& dir, const Leaves& leaves, const SaveOptions& options);
std::vector<Array> restore_leaves(const std::string& dir, const Leaves& targets);
}  // namespace detail

// Saves every leaf of `tree` (nested std::maps, nn::StateDict, optax states, registered
// structs; concrete arrays of any sharding) as the checkpoint directory `dir`. Every
// process of a multi-process run calls it with the same tree; each writes the distinct
// shards its devices hold (one writer per shard, replicas skipped), in parallel. The
// checkpoint appears at `dir` only once complete: it is written under
// `<dir>.orbax-checkpoint-tmp`, flushed to the disk and renamed, so a crash at any point
// leaves whatever was at `dir` before.
// Throws ValueError when `dir` holds a checkpoint (unless options.force) or anything else
// but an empty directory, for a leaf that is traced or abstract, and for paths that map to
// the same array name; DistributedError when another process fails or dies.
template <class T>
void save(const std::string& dir, const T& tree, const SaveOptions& options = {}) {
  detail::save_leaves(dir, tree::leaves_with_path(tree), options);
}

// Returns the checkpoint at `dir` as a tree of `target`'s structure, each array laid out as
// the target leaf says: an Array's sharding, or a ShapeDtypeStruct's (the default device
// when it has none). Each process reads only the chunks its devices' shards need.
// Throws ValueError when `dir` is not a committed checkpoint, when an array is missing or
// its shape or dtype differs from the target's, and for chunks that are missing,
// truncated or fail their checksum, naming the array and the file.
template <class T>
T restore(const std::string& dir, const T& target) {
  std::vector<Array> leaves = detail::restore_leaves(dir, tree::leaves_with_path(target));
  return tree::unflatten<T>(tree::structure(target), leaves);
}

struct ManagerOptions {
  // Keep the newest this many steps, deleting older ones after each save (0: keep all).
  int max_to_keep = 0;
  // save() writes a step only when this divides it (unless forced).
  int64_t save_interval_steps = 1;
  // save() returns once the save is under way and writes in the background; it holds the
  // arrays (parax arrays never change, so nothing is copied) until they are written.
  bool enable_async_checkpointing = true;
  SaveOptions save_options = {};
};

// Steps of one training run as checkpoints `<directory>/<step>/default` (Orbax's
// CheckpointManager layout): saved every few steps, in the background, the newest few kept.
// Every process of a run makes one with the same options and calls its functions in the
// same order; what crosses processes happens inside those calls, in that order.
class CheckpointManager {
 public:
  explicit CheckpointManager(std::string directory, ManagerOptions options = {});
  // Waits for a save in flight (reporting its failure on stderr; call
  // wait_until_finished() to have it raised).
  ~CheckpointManager();
  CheckpointManager(const CheckpointManager&) = delete;
  CheckpointManager& operator=(const CheckpointManager&) = delete;

  // True when save(step, ...) would write: save_interval_steps divides the step and it is
  // newer than every saved step.
  bool should_save(int64_t step) const;
  // Saves `tree` as `step` when should_save(step) or `force`, and returns whether it did.
  // First finishes the previous save (raising its failure). With async checkpointing the
  // new save is committed in the background (one process), or by the next save(),
  // wait_until_finished() or the destructor (several processes, which commit together).
  template <class T>
  bool save(int64_t step, const T& tree, bool force = false) {
    if (!force && !should_save(step)) return false;
    save_leaves(step, tree::leaves_with_path(tree));
    return true;
  }
  // Returns when every save is committed; raises the failure of one that was not.
  void wait_until_finished();
  // The committed steps, oldest first, and the newest of them.
  std::vector<int64_t> all_steps() const;
  std::optional<int64_t> latest_step() const;
  // Returns step `step` laid out as `target` says (as checkpointing::restore).
  template <class T>
  T restore(int64_t step, const T& target) const {
    std::vector<Array> leaves =
        detail::restore_leaves(item_directory(step), tree::leaves_with_path(target));
    return tree::unflatten<T>(tree::structure(target), leaves);
  }
  const std::string& directory() const;

 private:
  void save_leaves(int64_t step, const detail::Leaves& leaves);
  // Returns the item directory of a committed step; ValueError naming the steps there when
  // it is not one.
  std::string item_directory(int64_t step) const;
  struct State;
  std::unique_ptr<State> state_;
};

// Writes x as the zarr v3 array directory `path` (zarr.json and one chunk file per
// distinct shard, codecs bytes, zstd if asked, crc32c), by the same protocol as save: from
// every process, committed by a rename. zarr-python and tensorstore open it.
void write_zarr(const std::string& path, const Array& x, const SaveOptions& options = {});

// Reads the zarr v3 array at `path` (a directory holding zarr.json: parax's, tensorstore's,
// zarr-python's, an array of an Orbax checkpoint) laid out as `sharding` (the default device
// when absent). Reads the codecs bytes (either byte order), zstd, crc32c and
// sharding_indexed; a chunk never written reads as the fill value.
// Throws ValueError for what is not such an array, or a chunk that is corrupt or truncated.
Array read_zarr(const std::string& path, std::optional<Sharding> sharding = std::nullopt);

// Writes `state` as one safetensors file at `path` (torch's and Hugging Face's weight
// format): tensors in the Python library's order (by dtype, then name), `metadata` as the
// header's "__metadata__". Shards go straight to their place in the file; the file is
// written beside `path`, flushed and renamed over it.
// Throws ValueError for an array that spans processes (one process writes the file).
void save_safetensors(const std::string& path, const nn::StateDict& state,
                      const std::map<std::string, std::string>& metadata = {});

// Reads a safetensors file into a StateDict in the file's order, each tensor on the default
// device, or laid out as `shardings` gives for its name (each device reads its shard's bytes
// only). Throws ValueError for what the Python library rejects (a header that is not JSON or
// too long, sizes that do not match shapes, offsets with holes, a truncated file), for a
// dtype parax lacks (F8_E4M3, C64, ...), and for a sharding naming no tensor.
nn::StateDict load_safetensors(const std::string& path);
nn::StateDict load_safetensors(const std::string& path,
                               const std::map<std::string, Sharding>& shardings);

}  // namespace parax::checkpointing
