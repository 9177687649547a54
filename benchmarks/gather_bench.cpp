// parax_gather_bench: issue 15's embedding-lookup benchmark. A jitted numpy::take of 8192
// rows from a 50k x 1024 float32 table (the lookup of a language model's embedding) moves
// 32 MiB out of the table and 32 MiB into the result; it is judged against this machine's
// memory bandwidth, measured in the same run as a copy of the same volume between
// buffers much larger than the caches with all cores (target >= 80%). Its gradient, a
// scatter-add of the rows into zeros of the table's shape, is timed too.
//
//   parax_gather_bench [--results_md=PATH] [--reps=N] [--only=VARIANT]
#include <parax/parax.h>

#include <cstring>
#include <string>
#include <thread>
#include <vector>

#include "plain_bench.h"

namespace px = parax;
namespace jnp = parax::numpy;
using plain_bench::fixed;
using plain_bench::Row;
using px::Array;

namespace {

constexpr int64_t kVocab = 50000;
constexpr int64_t kWidth = 1024;
constexpr int64_t kRows = 8192;

// Copies `bytes` from src to dst with `threads` threads, each a contiguous part.
void parallel_copy(char* dst, const char* src, size_t bytes, int threads) {
  std::vector<std::thread> pool;
  const size_t part = bytes / size_t(threads);
  for (int t = 0; t < threads; ++t) {
    const size_t begin = size_t(t) * part;
    const size_t len = t + 1 == threads ? bytes - begin : part;
    pool.emplace_back([=] { std::memcpy(dst + begin, src + begin, len); });
  }
  for (std::thread& th : pool) th.join();
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = plain_bench::parse_options(argc, argv, "parax_gather_bench", 9);
  if (!options) return 2;
  const int reps = options->reps;
  const int threads = int(std::max(1u, std::thread::hardware_concurrency()));

  // The limit: copies of 64 MiB (the gather's traffic: 32 MiB read, 32 MiB written) taken
  // in turn from different places of a 512 MiB buffer, so no copy finds its source cached.
  const size_t moved = size_t(kRows * kWidth * 4);
  const size_t pool_bytes = size_t(512) << 20;
  std::vector<char> src(pool_bytes, 1), dst(2 * moved, 2);
  size_t offset = 0;
  auto copy = [&] {
    parallel_copy(dst.data() + (offset % 2) * moved, src.data() + offset % (pool_bytes - moved),
                  moved, threads);
    offset += moved + 4096;
  };

  const Array table = jnp::sin(jnp::arange(kVocab * kWidth, px::DType::float32))
                          .reshape({kVocab, kWidth})
                          .block_until_ready();
  const Array indices =
      px::random::randint(px::random::key(0), {kRows}, 0, kVocab).block_until_ready();
  auto lookup = px::jit([](const Array& t, const Array& i) { return jnp::take(t, i, 0); });
  auto lookup_grad = px::jit([](const Array& t, const Array& i) {
    return px::grad([](const Array& u, const Array& j) { return jnp::sum(jnp::take(u, j, 0)); })(t,
                                                                                                 i);
  });
  lookup(table, indices).block_until_ready();
  lookup_grad(table, indices).block_until_ready();

  const std::vector<double> best = plain_bench::best_interleaved(
      reps,
      {{"copy", copy},
       {"gather", [&] { lookup(table, indices).block_until_ready(); }},
       {"gather_grad", [&] { lookup_grad(table, indices).block_until_ready(); }}},
      options->only);
  const double gib = double(1 << 30);
  // A copy reads and writes `moved` bytes each, as the gather does.
  const double copy_rate = 2.0 * double(moved) / best[0] / gib;
  const double gather_rate = 2.0 * double(moved) / best[1] / gib;
  const double ratio = gather_rate / copy_rate;
  const std::vector<Row> rows = {
      {"memory bandwidth: copy of 32 MiB, " + std::to_string(threads) + " threads (GiB/s)",
       fixed(copy_rate, 2), "", ""},
      {"take(table[50000,1024] f32, 8192 rows), jit (ms)", fixed(best[1] * 1e3, 3), "", ""},
      {"same, GiB/s moved (read + write)", fixed(gather_rate, 2), "", ""},
      {"**gather / memory bandwidth**", fixed(100 * ratio, 1) + "%", ">= 80%",
       plain_bench::verdict(ratio, 0.8, false)},
      {"its gradient (scatter-add into zeros[50000,1024]) (ms)", fixed(best[2] * 1e3, 3),
       "(writes the 195 MiB table)", ""},
  };
  const std::string md = plain_bench::table(
      "Embedding gather (parax_gather_bench: issue 15)", rows,
      "Best of " + std::to_string(reps) + " wall times, the variants interleaved.");
  return plain_bench::report(*options, md, "parax_gather_bench");
}
