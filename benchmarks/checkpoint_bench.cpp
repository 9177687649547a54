// Checkpoints of the 1024-wide MLP's parameters and Adam state (bench.h's MLP) on
// 8 devices, against this disk's sequential bandwidth measured in the same run: a file of
// the same size written with one write stream and flushed (fsync), and read back after its
// pages are dropped from the cache (posix_fadvise DONTNEED), as the checkpoint's are before
// each restore. Also: the time a background save (CheckpointManager) adds to a training
// step, and the most host memory a save and a restore hold beyond the arrays.
//   parax_checkpoint_bench [--results_md=PATH] [--reps=N]
#include <fcntl.h>
#include <unistd.h>

#include <filesystem>
#include <iostream>
#include <vector>

#include <parax/parax.h>

#include "plain_bench.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace fs = std::filesystem;
using plain_bench::fixed;
using plain_bench::Row;
using plain_bench::seconds_since;
using px::Array;
using px::P;

namespace {

namespace jr = parax::random;
const std::vector<int64_t> kMlpLayers = {784, 1024, 1024, 1024, 10};  // as bench.h's
constexpr int64_t kMlpBatch = 8192;

Array normal_array(const px::Shape& shape, uint32_t seed) {
  return jr::normal(jr::key(seed), shape);
}

using Params = std::vector<std::pair<Array, Array>>;
struct TrainState {
  Params params;
  px::optax::OptState opt;
};
PARAX_REGISTER_PYTREE(TrainState, params, opt)

int64_t tree_bytes(const TrainState& s) {
  int64_t n = 0;
  for (const Array& a : px::tree::leaves(s)) n += a.size() * px::dtype_itemsize(a.dtype());
  return n;
}

// Drops a file's (or every file's under a directory) pages from the page cache.
void drop_cache(const fs::path& path) {
  auto drop = [](const fs::path& file) {
    const int fd = ::open(file.c_str(), O_RDONLY);
    if (fd < 0) return;
    ::fdatasync(fd);
    ::posix_fadvise(fd, 0, 0, POSIX_FADV_DONTNEED);
    ::close(fd);
  };
  if (fs::is_directory(path)) {
    for (const auto& e : fs::recursive_directory_iterator(path)) {
      if (e.is_regular_file()) drop(e.path());
    }
  } else {
    drop(path);
  }
}

// This disk's sequential write (flushed) and read (uncached) seconds for `bytes`.
std::pair<double, double> disk_seconds(const fs::path& file, int64_t bytes) {
  std::vector<char> block(size_t(4) << 20, 'x');
  const auto t0 = std::chrono::steady_clock::now();
  const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0644);
  for (int64_t done = 0; done < bytes; done += int64_t(block.size())) {
    const size_t n = size_t(std::min<int64_t>(int64_t(block.size()), bytes - done));
    if (::write(fd, block.data(), n) != ssize_t(n)) std::abort();
  }
  ::fsync(fd);
  ::close(fd);
  const double write = seconds_since(t0);
  drop_cache(file);
  const auto t1 = std::chrono::steady_clock::now();
  const int rd = ::open(file.c_str(), O_RDONLY);
  while (::read(rd, block.data(), block.size()) > 0) {
  }
  ::close(rd);
  const double read = seconds_since(t1);
  fs::remove(file);
  return {write, read};
}

}  // namespace

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const auto options = plain_bench::parse_options(argc, argv, "parax_checkpoint_bench", 5);
  if (!options) return 2;
  const fs::path dir =
      fs::temp_directory_path() / ("parax-ckpt-bench-" + std::to_string(::getpid()));
  fs::remove_all(dir);
  fs::create_directories(dir);

  // The state, laid out as the tutorial's tensor-parallel MLP (4 x 2).
  const px::Mesh mesh = px::make_mesh({4, 2}, {"batch", "model"});
  const px::NamedSharding rep(mesh, P()), cols(mesh, P(px::None, "model")), rows(mesh, P("model"));
  Params params;
  uint32_t seed = 1;
  for (size_t i = 0; i + 1 < kMlpLayers.size(); ++i) {
    const bool split = i == 1 || i == 2;
    params.emplace_back(px::device_put(normal_array({kMlpLayers[i], kMlpLayers[i + 1]}, seed++),
                                       split ? (i == 1 ? cols : rows) : rep),
                        px::device_put(normal_array({kMlpLayers[i + 1]}, seed++), rep));
  }
  const auto adam = px::optax::adam(1e-3);
  TrainState state{params, adam.init(params)};
  const int64_t bytes = tree_bytes(state);

  if (options->only == "restore" || options->only == "save") {  // one part alone, to profile
    px::checkpointing::save((dir / "ckpt").string(), state, {.force = true});
    for (int r = 0; r < 10 * options->reps; ++r) {
      if (options->only == "save") {
        px::checkpointing::save((dir / "ckpt").string(), state, {.force = true});
      } else {
        drop_cache(dir / "ckpt");
        px::checkpointing::restore((dir / "ckpt").string(), state);
      }
    }
    fs::remove_all(dir);
    return 0;
  }
  double save_s = 1e300, restore_s = 1e300, write_s = 1e300, read_s = 1e300, one_s = 1e300;
  const TrainState on_one = px::device_put(state, px::devices()[0]);  // the one-device target
  int64_t save_peak = 0, restore_peak = 0;
  for (int r = 0; r < options->reps; ++r) {
    const auto [w, rd] = disk_seconds(dir / "sequential", bytes);
    write_s = std::min(write_s, w);
    read_s = std::min(read_s, rd);
    fs::remove_all(dir / "ckpt");  // a fresh save (replacing one also deletes the old)
    ::sync();
    auto t0 = std::chrono::steady_clock::now();
    px::checkpointing::save((dir / "ckpt").string(), state);
    save_s = std::min(save_s, seconds_since(t0));
    save_peak = std::max(save_peak, px::checkpointing::last_io_stats().peak_staging_bytes);
    drop_cache(dir / "ckpt");
    t0 = std::chrono::steady_clock::now();
    const TrainState back = px::checkpointing::restore((dir / "ckpt").string(), state);
    restore_s = std::min(restore_s, seconds_since(t0));
    restore_peak = std::max(restore_peak, px::checkpointing::last_io_stats().peak_staging_bytes);
    drop_cache(dir / "ckpt");
    t0 = std::chrono::steady_clock::now();
    const TrainState single = px::checkpointing::restore((dir / "ckpt").string(), on_one);
    one_s = std::min(one_s, seconds_since(t0));
  }

  // A training step alone, and with a background save of every 4th step in flight.
  const Array x = px::device_put(normal_array({kMlpBatch / 8, kMlpLayers.front()}, 90),
                                 px::NamedSharding(mesh, P("batch")));
  const Array y = px::device_put(normal_array({kMlpBatch / 8, kMlpLayers.back()}, 91),
                                 px::NamedSharding(mesh, P("batch")));
  auto loss = [](const Params& p, const Array& in, const Array& out) {
    Array h = in;
    for (size_t l = 0; l < p.size(); ++l) {
      h = jnp::dot(h, p[l].first) + p[l].second;
      if (l + 1 < p.size()) h = jnp::maximum(h, 0.0f);
    }
    return jnp::mean(jnp::square(h - out));
  };
  auto step = px::jit([&](const TrainState& s) {
    const Params g = px::grad(loss)(s.params, x, y);
    auto [updates, opt] = adam.update(g, s.opt, s.params);
    return TrainState{px::optax::apply_updates(s.params, updates), opt};
  });
  auto run_steps = [&](int n, px::checkpointing::CheckpointManager* mgr) {
    TrainState s = state;
    const auto t0 = std::chrono::steady_clock::now();
    for (int i = 1; i <= n; ++i) {
      s = step(s);
      if (mgr) mgr->save(i, s);
    }
    px::tree::leaves(s).front().block_until_ready();
    const double t = seconds_since(t0) / n;
    if (mgr) mgr->wait_until_finished();
    return t;
  };
  run_steps(2, nullptr);  // compile
  double alone = 1e300, with_save = 1e300;
  for (int r = 0; r < options->reps; ++r) {
    alone = std::min(alone, run_steps(12, nullptr));
    fs::remove_all(dir / "mgr");
    px::checkpointing::CheckpointManager mgr((dir / "mgr").string(),
                                             {.max_to_keep = 1, .save_interval_steps = 4});
    with_save = std::min(with_save, run_steps(12, &mgr));
  }
  fs::remove_all(dir);

  const double mib = 1024.0 * 1024.0;
  const double save_ratio = write_s / save_s, restore_ratio = read_s / restore_s;
  const double overhead = with_save / alone - 1.0;
  const int64_t chunk = int64_t(kMlpLayers[1]) * kMlpLayers[2] / 2 * 4;  // a 1024x512 shard
  std::vector<Row> rows_out = {
      {"state size (params + Adam)", fixed(bytes / mib, 1) + " MiB", "", ""},
      {"disk: sequential write, flushed", fixed(bytes / mib / write_s, 0) + " MiB/s", "", ""},
      {"disk: sequential read, uncached", fixed(bytes / mib / read_s, 0) + " MiB/s", "", ""},
      {"save / sequential write", fixed(save_ratio, 2) + " (" + fixed(save_s * 1e3, 1) + " ms)",
       ">= 0.70", plain_bench::verdict(save_ratio, 0.70, false)},
      {"restore / sequential read",
       fixed(restore_ratio, 2) + " (" + fixed(restore_s * 1e3, 1) + " ms)", ">= 0.70",
       plain_bench::verdict(restore_ratio, 0.70, false)},
      {"restore onto one device / sequential read",
       fixed(read_s / one_s, 2) + " (" + fixed(one_s * 1e3, 1) + " ms)", "", ""},
      {"training step with a background save every 4th step",
       "+" + fixed(overhead * 100, 1) + " % (" + fixed(alone * 1e3, 1) + " ms alone)", "<= +5 %",
       plain_bench::verdict(overhead, 0.05, true)},
      {"peak extra host memory: save / restore",
       fixed(save_peak / mib, 2) + " / " + fixed(restore_peak / mib, 2) + " MiB",
       "<= 2 chunks/thread",
       plain_bench::verdict(double(std::max(save_peak, restore_peak)), double(2 * chunk), true)},
  };
  const std::string md =
      plain_bench::table("Checkpoints (parax_checkpoint_bench)", rows_out,
                         "The 1024-wide MLP's parameters and Adam state on a 4x2 mesh; best of " +
                             std::to_string(options->reps) +
                             "; disk figures from a file of the same size on the "
                             "same filesystem, in the same run.");
  std::cout << md;
  if (!options->results_md.empty()) std::ofstream(options->results_md, std::ios::app) << md << "\n";
  return 0;
}
