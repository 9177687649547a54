// parax_gather_bench: the embedding-lookup benchmark. A jitted numpy::take of 8192
// rows from a 50k x 1024 float32 table (the lookup of a language model's embedding) moves
// 32 MiB out of the table and 32 MiB into the result; it is judged against this machine's
// memory bandwidth, measured in the same run as copies of the same volume (memcpy, and
// non-temporal stores as STREAM's copy_nt) out of a buffer much larger than the caches,
// with all cores (target >= 80% of the faster). Its gradient, a
// scatter-add of the rows into zeros of the table's shape, is timed too.
//
//   parax_gather_bench [--results_md=PATH] [--reps=N] [--only=VARIANT]
#include <parax/parax.h>

#include <immintrin.h>

#include <algorithm>
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

// The same with non-temporal stores (STREAM's copy_nt, the fastest way this machine moves
// memory): 16-byte aligned float copies, one contiguous part per thread.
void parallel_copy_nt(float* dst, const float* src, size_t floats, int threads) {
  std::vector<std::thread> pool;
  const size_t part = floats / size_t(threads) / 4 * 4;
  for (int t = 0; t < threads; ++t) {
    const size_t begin = size_t(t) * part;
    const size_t len = t + 1 == threads ? floats - begin : part;
    pool.emplace_back([=] {
      for (size_t i = 0; i + 4 <= len; i += 4) {
        _mm_stream_ps(dst + begin + i, _mm_loadu_ps(src + begin + i));
      }
      _mm_sfence();
    });
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

  std::vector<float> nt_src(pool_bytes / 4, 1.0f), nt_dst(2 * moved / 4 + 16, 2.0f);
  float* nt_out = nt_dst.data() + (16 - (reinterpret_cast<uintptr_t>(nt_dst.data()) / 4) % 4) % 4;
  size_t nt_offset = 0;
  auto copy_nt = [&] {
    const size_t floats = moved / 4;
    parallel_copy_nt(nt_out + (nt_offset % 2) * floats,
                     nt_src.data() + nt_offset % (nt_src.size() - floats), floats, threads);
    nt_offset += floats + 1024;
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
       {"copy_nt", copy_nt},
       {"gather", [&] { lookup(table, indices).block_until_ready(); }},
       {"gather_grad", [&] { lookup_grad(table, indices).block_until_ready(); }}},
      options->only);
  const double gb = 1e9;
  // A copy reads and writes `moved` bytes each, as the gather does; the limit is the faster
  // of the two copies.
  const double memcpy_rate = 2.0 * double(moved) / best[0] / gb;
  const double nt_rate = 2.0 * double(moved) / best[1] / gb;
  const double limit = std::max(memcpy_rate, nt_rate);
  const double gather_rate = 2.0 * double(moved) / best[2] / gb;
  const double ratio = gather_rate / limit;
  const std::string t = std::to_string(threads) + " threads";
  const std::vector<Row> rows = {
      {"memory bandwidth: memcpy of 32 MiB, " + t + " (GB/s)", fixed(memcpy_rate, 2), "", ""},
      {"same with non-temporal stores (STREAM copy_nt) (GB/s)", fixed(nt_rate, 2), "", ""},
      {"take(table[50000,1024] f32, 8192 rows), jit (ms)", fixed(best[2] * 1e3, 3), "", ""},
      {"same, GB/s moved (read + write)", fixed(gather_rate, 2), "", ""},
      {"**gather / the faster copy**", fixed(100 * ratio, 1) + "%", ">= 80%",
       plain_bench::verdict(ratio, 0.8, false)},
      {"its gradient (scatter-add into zeros[50000,1024]) (ms)", fixed(best[3] * 1e3, 3),
       "(writes the 205 MB table)", ""},
  };
  const std::string md = plain_bench::table(
      "Embedding gather (parax_gather_bench)", rows,
      "Best of " + std::to_string(reps) + " wall times, the variants interleaved.");
  return plain_bench::report(*options, md, "parax_gather_bench");
}
