// parax_transformer_bench: the training-step benchmark. The tiny transformer of
// examples/transformer_model.h in the configuration tools/jax_transformer.py holds too
// (vocab 8192, d_model 256, 8 heads, 4 layers, sequence 128, batch 16): one jitted
// value_and_grad + SGD step on one device, against the same step in JAX:CPU, which
// tools/jax_transformer.py --serve times in a child process interleaved with parax's
// repetitions (target: parax >= 1.5x as fast), and against OpenBLAS's sgemm rate measured
// in the same run (the step's flops, as cost_analysis counts them, over its time). The
// 8-way data-parallel step on 8 virtual devices is timed too, as a ratio to the
// single-device one. Without an importable JAX (--jax_python, default python3) it says
// so and prints no JAX ratio.
//
//   parax_transformer_bench [--results_md=PATH] [--reps=N] [--only=VARIANT]
//                           [--jax_python=PATH]
#include <cblas.h>

#include <string>
#include <thread>
#include <vector>

#include "plain_bench.h"
#include "transformer_model.h"

using namespace transformer;
using plain_bench::fixed;
using plain_bench::Row;

namespace {

// OpenBLAS's own threads for the limit only (parax keeps it at one and splits GEMMs over
// its pool).
void sgemm_all_cores(int64_t n, const std::vector<float>& a, const std::vector<float>& b,
                     std::vector<float>& c) {
  const int in = int(n);
  openblas_set_num_threads(int(std::thread::hardware_concurrency()));
  cblas_sgemm(CblasRowMajor, CblasNoTrans, CblasNoTrans, in, in, in, 1.0f, a.data(), in, b.data(),
              in, 0.0f, c.data(), in);
  openblas_set_num_threads(1);
}

}  // namespace

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  const auto options = plain_bench::parse_options(argc, argv, "parax_transformer_bench", 7);
  if (!options) return 2;
  const int reps = options->reps;
  const Config c{8192, 256, 8, 4, 128, 16, 0, 0.1f};

  jr::Key keys = jr::split(jr::key(0));
  const Params params = init_params(keys[0], c);
  const Array tokens = jr::randint(keys[1], {c.batch, c.seq}, 0, c.vocab);
  const Array labels = jnp::remainder(tokens + 1, c.vocab);
  auto step = make_step(c.heads, c.lr);
  // Started first, so that its import and compile do not overlap parax's timing.
  plain_bench::JaxPeer jax(options->jax_python,
                           std::string(PARAX_BENCH_DIR) + "/../tools/jax_transformer.py");

  const px::Device d0 = px::devices()[0];
  const Params p1 = px::device_put(params, d0);
  const Array t1 = px::device_put(tokens, d0), l1 = px::device_put(labels, d0);
  auto mesh = px::make_mesh({8}, {"data"});
  const px::NamedSharding rows8(mesh, P("data"));
  const Params p8 = place(params, mesh, false);
  const Array t8 = px::device_put(tokens, rows8), l8 = px::device_put(labels, rows8);
  const double flops = step.lower(p1, t1, l1).compile().cost_analysis().flops;
  // Every output, as the JAX side blocks on the whole result.
  const auto run_step = [&step](const Params& p, const Array& t, const Array& l) {
    for (const Array& a : px::tree::leaves(step(p, t, l))) a.block_until_ready();
  };
  run_step(p1, t1, l1);
  run_step(p8, t8, l8);

  const int64_t n = 1024;
  std::vector<float> a(size_t(n * n), 0.5f), b(size_t(n * n), 0.25f), out(size_t(n * n));
  sgemm_all_cores(n, a, b, out);
  std::vector<plain_bench::Variant> variants = {{"sgemm", [&] { sgemm_all_cores(n, a, b, out); }},
                                                {"step", [&] { run_step(p1, t1, l1); }},
                                                {"step_dp8", [&] { run_step(p8, t8, l8); }}};
  if (jax.ready()) variants.push_back(plain_bench::jax_variant(jax, "step"));
  const std::vector<double> best =
      plain_bench::best_interleaved(reps, variants, options->only, options->settle_ms);
  const double sgemm_rate = 2.0 * double(n * n * n) / best[0] / 1e9;
  const double step_rate = flops / best[1] / 1e9;
  std::vector<Row> rows = {
      {"OpenBLAS sgemm 1024^3, all cores (GFLOP/s)", fixed(sgemm_rate, 1), "", ""},
      {"training step, one device (ms)", fixed(best[1] * 1e3, 2), "", ""},
      {"its flops (cost_analysis) / time (GFLOP/s)", fixed(step_rate, 1), "", ""},
      {"**step rate / sgemm rate**", fixed(100 * step_rate / sgemm_rate, 1) + "%", "", ""},
      {"8-way data parallel step, 8 virtual devices (ms)", fixed(best[2] * 1e3, 2), "", ""},
      {"**data parallel / one device**", fixed(best[2] / best[1], 3) + "x", "", ""},
  };
  if (jax.ready()) {
    const double speedup = best[3] / best[1];
    rows.push_back({"JAX:CPU step, same run (ms)", fixed(best[3] * 1e3, 2), "", ""});
    rows.push_back({"**JAX:CPU time / parax time**", fixed(speedup, 2) + "x", ">= 1.5x",
                    plain_bench::verdict(speedup, 1.5, false)});
  } else {
    rows.push_back({"JAX:CPU step", "JAX not importable: no same-run comparison", ">= 1.5x", ""});
  }
  const std::string md = plain_bench::table(
      "Tiny transformer training step (parax_transformer_bench)", rows,
      "Best of " + std::to_string(reps) + " wall times, the variants interleaved. " +
          plain_bench::jax_note(jax));
  return plain_bench::report(*options, md, "parax_transformer_bench");
}
