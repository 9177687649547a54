// The training loop the MLP examples run with --checkpoint DIR: 30 SGD steps of 8-way batch
// data parallelism, each step's loss printed, and a CheckpointManager saving every 5th step
// in the background (the newest 2 kept). A run that finds a checkpoint in DIR resumes from
// its latest step on another mesh: the same devices in reverse order, so every shard of the
// batch and every restored parameter lands on another device (and, across processes, on
// another process). `stop_after` ends the run after that step, as a preemption would.
#pragma once

#include <parax/parax.h>

#include <algorithm>
#include <cstdlib>
#include <cstring>
#include <iostream>
#include <string>

// The MLP examples' command line: --small, --checkpoint DIR, --stop-after K.
struct TrainingArgs {
  bool small = false;
  std::string checkpoint;  // empty: no checkpoints
  int stop_after = -1;
};

inline TrainingArgs parse_training_args(int argc, char** argv) {
  TrainingArgs a;
  for (int i = 1; i < argc; ++i) {
    if (std::strcmp(argv[i], "--small") == 0) a.small = true;
    if (std::strcmp(argv[i], "--checkpoint") == 0 && i + 1 < argc) a.checkpoint = argv[++i];
    if (std::strcmp(argv[i], "--stop-after") == 0 && i + 1 < argc) {
      a.stop_after = std::atoi(argv[++i]);
    }
  }
  return a;
}

template <class Params, class Batch, class Step, class Loss>
void train_resumable(const std::string& dir, int stop_after, const Params& params,
                     const Batch& batch, Step&& step, Loss&& loss) {
  namespace px = parax;
  px::checkpointing::CheckpointManager manager(dir, {.max_to_keep = 2, .save_interval_steps = 5});
  const std::optional<int64_t> latest = manager.latest_step();
  std::vector<px::Device> devices = px::devices();
  if (latest) std::reverse(devices.begin(), devices.end());
  const px::Mesh mesh(devices, "batch");
  const Batch dp_batch = px::device_put(batch, px::NamedSharding(mesh, px::P("batch")));
  Params dp_params = px::device_put(params, px::NamedSharding(mesh, px::P()));
  int64_t first = 1;
  if (latest) {
    dp_params = manager.restore(*latest, dp_params);  // laid out as the new mesh's replicas
    first = *latest + 1;
    std::cout << "# resumed after step " << *latest << " on " << mesh.repr() << "\n";
  }
  for (int64_t s = first; s <= 30; ++s) {
    dp_params = step(dp_params, dp_batch);
    std::cout << "step " << s << " loss " << loss(dp_params, dp_batch).str() << "\n";
    manager.save(s, dp_params);
    if (s == stop_after) break;
  }
  manager.wait_until_finished();
}
