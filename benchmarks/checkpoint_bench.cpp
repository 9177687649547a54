// Checkpoints of the 1024-wide MLP's parameters and Adam state (bench.h's MLP) on
// 8 devices, against this disk's sequential bandwidth measured in the same run: a file of
// the same size written with one write stream and flushed (fsync), and read back after its
// pages are dropped from the cache (posix_fadvise DONTNEED), as the checkpoint's are before
// each restore, through the page cache and with O_DIRECT, the faster way counting; and the
// plain reads of the checkpoint's own files (the layout's cost on this disk). Also: the time a
// background save (CheckpointManager) adds to a training step, and the most host memory a save and
// a restore hold beyond the arrays.
//   parax_checkpoint_bench [--results_md=PATH] [--reps=N]
#include <fcntl.h>
#include <unistd.h>

#include <atomic>
#include <cstdlib>
#include <cstring>
#include <filesystem>
#include <functional>
#include <iostream>
#include <memory>
#include <thread>
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

struct DiskSeconds {
  double write[2] = {1e300, 1e300};  // flushed: through the page cache, and O_DIRECT
  double read[2] = {1e300, 1e300};   // uncached, the same two ways
};

// This disk's sequential write (flushed) and read (uncached) seconds for `bytes`: one stream
// of 4 MiB requests, through the page cache and straight from memory (O_DIRECT, as a
// checkpoint writes its large chunks).
void time_disk(const fs::path& file, int64_t bytes, DiskSeconds& best) {
  constexpr size_t kBlock = size_t(4) << 20;
  std::unique_ptr<char, decltype(&std::free)> block(
      static_cast<char*>(std::aligned_alloc(4096, kBlock)), &std::free);
  std::memset(block.get(), 'x', kBlock);
  const int64_t rounded = (bytes + 4095) / 4096 * 4096;  // O_DIRECT's whole blocks
  for (const int way : {0, 1}) {
    const int direct = way ? O_DIRECT : 0;
    const auto t0 = std::chrono::steady_clock::now();
    const int fd = ::open(file.c_str(), O_WRONLY | O_CREAT | O_TRUNC | direct, 0644);
    if (fd < 0) continue;  // a file system without O_DIRECT
    for (int64_t done = 0; done < rounded; done += int64_t(kBlock)) {
      const size_t n = size_t(std::min<int64_t>(int64_t(kBlock), rounded - done));
      if (::write(fd, block.get(), n) != ssize_t(n)) std::abort();
    }
    ::fsync(fd);
    ::close(fd);
    best.write[way] = std::min(best.write[way], seconds_since(t0));
    drop_cache(file);
    const auto t1 = std::chrono::steady_clock::now();
    const int rd = ::open(file.c_str(), O_RDONLY | direct);
    while (::read(rd, block.get(), kBlock) > 0) {
    }
    ::close(rd);
    best.read[way] = std::min(best.read[way], seconds_since(t1));
    fs::remove(file);
  }
}

// Runs body(i) for i in [0, n) on 8 threads, taking indices in order (as parax's disk work
// does).
void on_eight_threads(size_t n, const std::function<void(size_t)>& body) {
  std::atomic<size_t> next{0};
  auto work = [&] {
    for (size_t i = next++; i < n; i = next++) body(i);
  };
  std::vector<std::thread> threads;
  for (int t = 0; t < 7; ++t) threads.emplace_back(work);
  work();
  for (std::thread& t : threads) t.join();
}

// Seconds to read every file under `dir` whole (uncached), 8 at a time: what the file system
// asks of a checkpoint in this layout, before any parsing, checksum or copy.
double plain_read_seconds(const fs::path& dir) {
  std::vector<fs::path> paths;
  for (const auto& e : fs::recursive_directory_iterator(dir)) {
    if (e.is_regular_file()) paths.push_back(e.path());
  }
  drop_cache(dir);
  const auto t0 = std::chrono::steady_clock::now();
  on_eight_threads(paths.size(), [&](size_t i) {
    thread_local std::vector<char> buffer;  // reused, as a reader's would be
    const int fd = ::open(paths[i].c_str(), O_RDONLY);
    buffer.resize(size_t(fs::file_size(paths[i])));
    if (::pread(fd, buffer.data(), buffer.size(), 0) != ssize_t(buffer.size())) std::abort();
    ::close(fd);
  });
  return seconds_since(t0);
}

// Seconds to write files of the sizes of those under `like` into the same tree under `dir`
// and flush them (syncfs), 8 at a time, large ones with O_DIRECT as a save does: what the
// file system asks of a save in this layout, before any checksum, metadata or commit.
double plain_write_seconds(const fs::path& like, const fs::path& dir) {
  std::vector<std::pair<fs::path, size_t>> files;
  size_t largest = 0;
  for (const auto& e : fs::recursive_directory_iterator(like)) {
    if (!e.is_regular_file()) continue;
    files.emplace_back(fs::relative(e.path(), like), size_t(e.file_size()));
    largest = std::max(largest, files.back().second);
  }
  std::unique_ptr<char, decltype(&std::free)> data(
      static_cast<char*>(std::aligned_alloc(4096, (largest + 4095) / 4096 * 4096 + 4096)),
      &std::free);
  std::memset(data.get(), 'x', largest);
  fs::remove_all(dir);
  ::sync();
  const auto t0 = std::chrono::steady_clock::now();
  for (const auto& [rel, size] : files) fs::create_directories((dir / rel).parent_path());
  on_eight_threads(files.size(), [&](size_t i) {
    const auto& [rel, size] = files[i];
    const size_t direct = size >= (size_t(256) << 10) ? size / 4096 * 4096 : 0;
    const int fd =
        ::open((dir / rel).c_str(), O_WRONLY | O_CREAT | O_TRUNC | (direct ? O_DIRECT : 0), 0644);
    if (direct && ::write(fd, data.get(), direct) != ssize_t(direct)) std::abort();
    if (direct) ::fcntl(fd, F_SETFL, ::fcntl(fd, F_GETFL) & ~O_DIRECT);
    if (::write(fd, data.get() + direct, size - direct) != ssize_t(size - direct)) std::abort();
    ::close(fd);
  });
  const int fd = ::open(dir.c_str(), O_RDONLY | O_DIRECTORY);
  ::syncfs(fd);
  ::close(fd);
  const double seconds = seconds_since(t0);
  fs::remove_all(dir);
  return seconds;
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
  for (size_t i = 0; i + 1 < kMlpLayers.size(); ++i) {
    const bool split = i == 1 || i == 2;
    const auto seed = uint32_t(2 * i + 1);
    params.emplace_back(px::device_put(normal_array({kMlpLayers[i], kMlpLayers[i + 1]}, seed),
                                       split ? (i == 1 ? cols : rows) : rep),
                        px::device_put(normal_array({kMlpLayers[i + 1]}, seed + 1), rep));
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
  double save_s = 1e300, restore_s = 1e300, plain_s = 1e300, plain_write_s = 1e300, one_s = 1e300;
  DiskSeconds disk;
  const TrainState on_one = px::device_put(state, px::devices()[0]);  // the one-device target
  int64_t save_peak = 0, restore_peak = 0;
  for (int r = 0; r < options->reps; ++r) {
    time_disk(dir / "sequential", bytes, disk);
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
    plain_s = std::min(plain_s, plain_read_seconds(dir / "ckpt"));
    plain_write_s = std::min(plain_write_s, plain_write_seconds(dir / "ckpt", dir / "plain"));
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
  // The disk's limits: the faster way of each.
  const double write_s = std::min(disk.write[0], disk.write[1]);
  const double read_s = std::min(disk.read[0], disk.read[1]);
  const double save_ratio = write_s / save_s, restore_ratio = read_s / restore_s;
  auto both_ways = [&](const double(&t)[2]) {
    return fixed(bytes / mib / t[0], 0) + " / " +
           (t[1] < 1e300 ? fixed(bytes / mib / t[1], 0) : std::string("-")) + " MiB/s";
  };
  const double overhead = with_save / alone - 1.0;
  const int64_t chunk = int64_t(kMlpLayers[1]) * kMlpLayers[2] / 2 * 4;  // a 1024x512 shard
  std::vector<Row> rows_out = {
      {"state size (params + Adam)", fixed(bytes / mib, 1) + " MiB", "", ""},
      {"disk: sequential write, flushed (page cache / O_DIRECT)", both_ways(disk.write), "", ""},
      {"disk: sequential read, uncached (page cache / O_DIRECT)", both_ways(disk.read), "", ""},
      {"save / sequential write", fixed(save_ratio, 2) + " (" + fixed(save_s * 1e3, 1) + " ms)",
       ">= 0.70", plain_bench::verdict(save_ratio, 0.70, false)},
      {"restore / sequential read",
       fixed(restore_ratio, 2) + " (" + fixed(restore_s * 1e3, 1) + " ms)", ">= 0.70",
       plain_bench::verdict(restore_ratio, 0.70, false)},
      {"plain writes of the checkpoint's files / sequential write",
       fixed(write_s / plain_write_s, 2) + " (" + fixed(plain_write_s * 1e3, 1) + " ms)", "", ""},
      {"plain reads of the checkpoint's files / sequential read",
       fixed(read_s / plain_s, 2) + " (" + fixed(plain_s * 1e3, 1) + " ms)", "", ""},
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
                             "same filesystem, in the same run, the ratios against the faster "
                             "way.");
  std::cout << md;
  if (!options->results_md.empty()) std::ofstream(options->results_md, std::ios::app) << md << "\n";
  return 0;
}
