// What the checkpointing files share beyond their public header: a save in parts (the
// manager writes in the background between the parts that talk to the other processes),
// the statistics every call records, and the seam through which tests stop a save at a
// chosen point (the crash tests kill their child process there).
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

#include "parax/checkpointing.h"

namespace parax::checkpointing {

// One save of a checkpoint, by the commit protocol pytree.cpp describes.
class Save {
 public:
  virtual ~Save() = default;
  // Writes this process's chunks, flushed; talks to no other process.
  virtual void write() = 0;
  // With every process: agrees that all wrote (`wrote`: this one did), then commits.
  virtual void commit(bool wrote) = 0;
};

// Checks `dir` and makes the temporary directory, with every process; returns the save of
// `leaves` as a checkpoint at `dir` (its tree under `item`, or in `dir` when empty).
std::shared_ptr<Save> prepare_save(const std::string& dir, const std::string& item,
                                   const detail::Leaves& leaves, const SaveOptions& options,
                                   const char* api);

// `observer(stage)` runs after each chunk file ("chunk"), after the metadata and commit
// marker ("metadata") and after the rename ("committed").
void set_save_observer(std::function<void(std::string_view stage)> observer);

// Sets what last_io_stats() returns.
void record_io(const IoStats& stats);

// Raises `peak` to `held` if that is more (from any thread).
inline void note_peak(std::atomic<int64_t>& peak, int64_t held) {
  int64_t prev = peak.load();
  while (held > prev && !peak.compare_exchange_weak(prev, held)) {
  }
}

}  // namespace parax::checkpointing
