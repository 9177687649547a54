// CheckpointManager (parax/checkpointing.h): steps as `<directory>/<step>/default`, saved
// in the background between the parts of a save that talk to the other processes.
#include <algorithm>
#include <exception>
#include <future>
#include <iostream>

#include "checkpointing/files.h"
#include "checkpointing/internal.h"
#include "parax/device.h"

namespace parax::checkpointing {
namespace {

constexpr const char* kItem = "default";  // Orbax's name for a manager's only item
constexpr const char* kTmpMarker = ".orbax-checkpoint-tmp";

bool is_step_name(const std::string& name) {
  return !name.empty() && name.size() < 19 &&
         std::all_of(name.begin(), name.end(), [](char c) { return c >= '0' && c <= '9'; });
}

}  // namespace

struct CheckpointManager::State {
  std::string directory;
  ManagerOptions options;
  // The save in flight: written (and, on one process, committed) by `writing`.
  std::shared_ptr<Save> pending;
  std::future<void> writing;
  bool commit_in_background = false;

  std::string step_dir(int64_t step) const { return directory + "/" + std::to_string(step); }

  // Keeps the newest max_to_keep steps: older ones are renamed out of the step names first,
  // so a crash while deleting never leaves a step half there.
  void collect_garbage() const {
    if (options.max_to_keep <= 0 || process_index() != 0) return;
    std::vector<int64_t> steps = list_steps();
    while (int64_t(steps.size()) > options.max_to_keep) {
      const std::string old = step_dir(steps.front());
      const std::string doomed = old + kTmpMarker + "-deleting";
      files::rename(old, doomed);
      files::remove_all(doomed);
      steps.erase(steps.begin());
    }
  }

  std::vector<int64_t> list_steps() const {
    std::vector<int64_t> steps;
    if (!files::is_dir(directory)) return steps;
    for (const std::string& name : files::list_dir(directory)) {
      if (is_step_name(name) && files::is_dir(directory + "/" + name))
        steps.push_back(std::stoll(name));
    }
    std::sort(steps.begin(), steps.end());
    return steps;
  }

  // Finishes the save in flight: waits for its writes, then (several processes) commits it
  // with the others. Raises its failure.
  void finish() {
    if (!pending) return;
    const std::shared_ptr<Save> save = std::move(pending);
    std::exception_ptr failure;
    try {
      writing.get();
    } catch (...) {
      failure = std::current_exception();
    }
    if (!commit_in_background) {
      try {
        save->commit(failure == nullptr);
      } catch (...) {
        if (!failure) failure = std::current_exception();
      }
      if (!failure) collect_garbage();
    }
    if (failure) std::rethrow_exception(failure);
  }
};

CheckpointManager::CheckpointManager(std::string directory, ManagerOptions options)
    : state_(std::make_unique<State>()) {
  if (options.save_interval_steps < 1) {
    throw ValueError("CheckpointManager: save_interval_steps must be at least 1, got " +
                     std::to_string(options.save_interval_steps));
  }
  if (options.max_to_keep < 0) {
    throw ValueError("CheckpointManager: max_to_keep must be 0 (keep all) or more, got " +
                     std::to_string(options.max_to_keep));
  }
  state_->directory = files::absolute(directory);
  state_->options = options;
  if (files::exists(state_->directory) && !files::is_dir(state_->directory)) {
    throw ValueError("CheckpointManager: " + state_->directory + " is a file");
  }
  if (process_index() == 0) {
    files::make_dirs(state_->directory);
    // what saves that did not finish left (their steps were never committed)
    for (const std::string& name : files::list_dir(state_->directory)) {
      if (name.find(kTmpMarker) != std::string::npos) {
        files::remove_all(state_->directory + "/" + name);
      }
    }
  }
}

CheckpointManager::~CheckpointManager() {
  try {
    state_->finish();
  } catch (const std::exception& e) {
    std::cerr << "CheckpointManager: the last save of " << state_->directory
              << " failed: " << e.what() << "\n";
  }
}

bool CheckpointManager::should_save(int64_t step) const {
  if (step % state_->options.save_interval_steps != 0) return false;
  const std::optional<int64_t> latest = latest_step();
  return !latest || step > *latest;
}

void CheckpointManager::save_leaves(int64_t step, const detail::Leaves& leaves) {
  State& s = *state_;
  s.finish();
  if (step < 0)
    throw ValueError("CheckpointManager::save: step " + std::to_string(step) + " is negative");
  const std::string dir = s.step_dir(step);
  std::shared_ptr<Save> save =
      prepare_save(dir, kItem, leaves, s.options.save_options, "CheckpointManager::save");
  s.commit_in_background = process_count() == 1;
  auto work = [&s, save, one = s.commit_in_background] {
    save->write();
    if (one) {
      save->commit(true);
      s.collect_garbage();
    }
  };
  if (!s.options.enable_async_checkpointing) {
    std::promise<void> done;
    s.pending = save;
    try {
      work();
      done.set_value();
    } catch (...) {
      done.set_exception(std::current_exception());
    }
    s.writing = done.get_future();
    s.finish();
    return;
  }
  s.pending = save;
  s.writing = std::async(std::launch::async, work);
}

void CheckpointManager::wait_until_finished() { state_->finish(); }

std::vector<int64_t> CheckpointManager::all_steps() const { return state_->list_steps(); }

std::optional<int64_t> CheckpointManager::latest_step() const {
  const std::vector<int64_t> steps = all_steps();
  if (steps.empty()) return std::nullopt;
  return steps.back();
}

const std::string& CheckpointManager::directory() const { return state_->directory; }

std::string CheckpointManager::item_directory(int64_t step) const {
  const std::vector<int64_t> steps = all_steps();
  if (std::find(steps.begin(), steps.end(), step) == steps.end()) {
    std::string list;
    for (int64_t s : steps) list += (list.empty() ? "" : ", ") + std::to_string(s);
    throw ValueError("CheckpointManager::restore: no step " + std::to_string(step) + " in " +
                     state_->directory + " (its steps: [" + list + "])");
  }
  return state_->step_dir(step) + "/" + kItem;
}

}  // namespace parax::checkpointing
