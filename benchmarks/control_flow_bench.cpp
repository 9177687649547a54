// parax_cf_bench: the control-flow benchmarks, each a ratio of two variants timed in
// the same run (their repetitions interleaved, best of N, so a noisy spell of the shared
// host hits both alike), printed as a markdown table with their targets:
//   scan vs unrolled: a 10-layer MLP (tanh(h W + b)) written with lax::scan over stacked
//       weights [10, D, D] against the same MLP unrolled in C++: run time of the jitted
//       forward pass (target <= 1.05x) and trace + compile time, jit(f).lower(args)
//       .compile() on a fresh jit (target: scan >= 5x shorter);
//   checkpoint: the gradient step of a 10-layer MLP whose layers are each wrapped in
//       checkpoint(nothing_saveable) against the unsaved step: peak live bytes by the
//       runtime's accounting (target <= 0.6x) at run time (target <= 1.4x). The batch is
//       large, so activations dominate the parameters.
//   donation: an optax adam training step of an MLP whose parameters and optimizer state
//       dominate its memory (kDonateLayers [D, D] layers, a small batch), jitted with the
//       parameters and state donated (donate_argnums {0, 1}) against the same step
//       without: peak live bytes during a step, the state it holds included (target
//       <= 0.6x), and run time.
//
//   parax_cf_bench [--results_md=PATH] [--reps=N] [--only=VARIANT]
// appends the table to PATH when given. PARAX_PROFILE=1 prints the time spent per primitive
// at exit; with --only=VARIANT (scan_run, unrolled_run, scan_compile, unrolled_compile,
// unsaved_step, checkpoint_step) it is that variant's alone (the table is then partial).
#include <parax/parax.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <fstream>
#include <functional>
#include <iostream>
#include <optional>
#include <sstream>
#include <string>
#include <vector>

#include "plain_bench.h"
#include "runtime/buffer.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace lax = parax::lax;
using px::Array;

namespace {

constexpr int kLayers = 10;
// scan vs unrolled: D x D layers over a batch of kScanBatch.
constexpr int64_t kScanWidth = 512;
constexpr int64_t kScanBatch = 512;
// checkpoint: activations [kCkptBatch, kCkptWidth] are 32x the size of a weight matrix.
constexpr int64_t kCkptWidth = 256;
constexpr int64_t kCkptBatch = 8192;

using plain_bench::fixed;
using plain_bench::Row;

// donation: kDonateLayers [kDonateWidth, kDonateWidth] layers, batch kDonateBatch.
constexpr int kDonateLayers = 8;
constexpr int64_t kDonateWidth = 1024;
constexpr int64_t kDonateBatch = 64;

// --only=NAME: run that variant alone (its repetitions only), so PARAX_PROFILE=1 says
// where its time goes.
std::string g_only;

std::vector<double> best_interleaved(int reps, const std::vector<plain_bench::Variant>& variants) {
  return plain_bench::best_interleaved(reps, variants, g_only);
}

Array weight(int64_t width, int layer) {
  return jnp::sin(jnp::arange(width * width, px::DType::float32).reshape({width, width}) +
                  float(layer)) /
         float(std::sqrt(double(width)));
}

Array bias(int64_t width, int layer) {
  return jnp::cos(jnp::arange(width, px::DType::float32) + float(layer)) * 0.1f;
}

Array input(int64_t batch, int64_t width) {
  return jnp::cos(jnp::arange(batch * width, px::DType::float32)).reshape({batch, width});
}

Array layer(const Array& w, const Array& b, const Array& h) {
  return jnp::tanh(jnp::dot(h, w) + b);
}

// The MLP over stacked weights [L, D, D] and biases [L, D], one traced layer for all.
Array mlp_scan(const Array& ws, const Array& bs, const Array& x) {
  auto step = [](const Array& h, const std::pair<Array, Array>& wb) {
    return std::pair{layer(wb.first, wb.second, h), std::vector<Array>{}};
  };
  return lax::scan(step, x, std::pair{ws, bs}).first;
}

// The same MLP unrolled: every layer traced and compiled on its own.
Array mlp_unrolled(const std::vector<Array>& ws, const std::vector<Array>& bs, const Array& x) {
  Array h = x;
  for (size_t i = 0; i < ws.size(); ++i) h = layer(ws[i], bs[i], h);
  return h;
}

std::vector<Row> scan_vs_unrolled(int reps) {
  std::vector<Array> ws, bs;
  for (int i = 0; i < kLayers; ++i) {
    ws.push_back(weight(kScanWidth, i));
    bs.push_back(bias(kScanWidth, i));
  }
  const Array stacked_w = jnp::stack(ws), stacked_b = jnp::stack(bs);
  const Array x = input(kScanBatch, kScanWidth);
  // Trace + compile, each time on a fresh jit object (no trace or executable cache).
  const std::vector<double> compile = best_interleaved(
      reps, {{"scan_compile", [&] { px::jit(mlp_scan).lower(stacked_w, stacked_b, x).compile(); }},
             {"unrolled_compile", [&] { px::jit(mlp_unrolled).lower(ws, bs, x).compile(); }}});
  // Of which tracing (lower) alone.
  const std::vector<double> trace = best_interleaved(
      reps, {{"scan_compile", [&] { px::jit(mlp_scan).lower(stacked_w, stacked_b, x); }},
             {"unrolled_compile", [&] { px::jit(mlp_unrolled).lower(ws, bs, x); }}});
  // Run time of the compiled forward passes.
  auto scan_fn = px::jit(mlp_scan);
  auto unrolled_fn = px::jit(mlp_unrolled);
  const Array a = scan_fn(stacked_w, stacked_b, x), b = unrolled_fn(ws, bs, x);
  const double diff = jnp::max(jnp::abs(a - b)).item<float>();
  const std::vector<double> run = best_interleaved(
      reps, {{"scan_run", [&] { scan_fn(stacked_w, stacked_b, x).block_until_ready(); }},
             {"unrolled_run", [&] { unrolled_fn(ws, bs, x).block_until_ready(); }}});
  const double run_ratio = run[0] / run[1];
  const double compile_speedup = compile[1] / compile[0];
  const std::string shape = std::to_string(kLayers) + " layers [" + std::to_string(kScanBatch) +
                            "," + std::to_string(kScanWidth) + "]x[" + std::to_string(kScanWidth) +
                            "," + std::to_string(kScanWidth) + "]";
  return {
      {"MLP " + shape + " forward, scan (ms)", fixed(run[0] * 1e3, 2), "", ""},
      {"same, unrolled (ms)", fixed(run[1] * 1e3, 2), "", ""},
      {"**run time scan / unrolled**", fixed(run_ratio, 3) + "x", "<= 1.05x",
       plain_bench::verdict(run_ratio, 1.05, true)},
      {"trace + compile, scan (ms)", fixed(compile[0] * 1e3, 3), "", ""},
      {"trace + compile, unrolled (ms)", fixed(compile[1] * 1e3, 3), "", ""},
      {"of which trace (jit(f).lower), scan / unrolled (ms)",
       fixed(trace[0] * 1e3, 3) + " / " + fixed(trace[1] * 1e3, 3), "", ""},
      {"**trace + compile unrolled / scan**", fixed(compile_speedup, 2) + "x", ">= 5x",
       plain_bench::verdict(compile_speedup, 5.0, false)},
      {"max |scan - unrolled|", fixed(diff, 7), "", ""},
  };
}

Array ckpt_loss(const std::vector<Array>& ws, const std::vector<Array>& bs, const Array& x,
                bool remat) {
  Array h = x;
  for (size_t i = 0; i < ws.size(); ++i) {
    h = remat ? px::checkpoint(layer, px::CheckpointPolicy::nothing_saveable)(ws[i], bs[i], h)
              : layer(ws[i], bs[i], h);
  }
  return jnp::mean(jnp::square(h));
}

auto grad_step(bool remat) {
  return px::jit(
      [remat](const std::vector<Array>& ws, const std::vector<Array>& bs, const Array& x) {
        return px::grad([remat](const std::vector<Array>& w, const std::vector<Array>& b,
                                const Array& v) { return ckpt_loss(w, b, v, remat); },
                        px::argnums<0, 1>)(ws, bs, x);
      });
}

std::vector<Row> checkpoint_mlp(int reps) {
  std::vector<Array> ws, bs;
  for (int i = 0; i < kLayers; ++i) {
    ws.push_back(weight(kCkptWidth, i));
    bs.push_back(bias(kCkptWidth, i));
  }
  const Array x = input(kCkptBatch, kCkptWidth);
  auto plain = grad_step(false);
  auto remat = grad_step(true);
  // The peak of live bytes during one steady call (compiled, first-call allocations made).
  auto peak = [&](auto& step) {
    std::get<0>(step(ws, bs, x)).back().block_until_ready();
    px::runtime::reset_peak_memory();
    const int64_t before = px::runtime::memory_stats().live_bytes;
    {
      auto grads = step(ws, bs, x);
      std::get<0>(grads).back().block_until_ready();
    }
    return double(px::runtime::memory_stats().peak_bytes - before);
  };
  const double peak_plain = g_only.empty() ? peak(plain) : 0;
  const double peak_remat = g_only.empty() ? peak(remat) : 0;
  const std::vector<double> run = best_interleaved(
      reps,
      {{"unsaved_step", [&] { std::get<0>(plain(ws, bs, x)).back().block_until_ready(); }},
       {"checkpoint_step", [&] { std::get<0>(remat(ws, bs, x)).back().block_until_ready(); }}});
  const double mem_ratio = peak_remat / peak_plain;
  const double time_ratio = run[1] / run[0];
  const double mib = 1024.0 * 1024.0;
  const double activation = double(kCkptBatch * kCkptWidth * 4) / mib;
  const std::string shape = std::to_string(kLayers) + " layers [" + std::to_string(kCkptBatch) +
                            "," + std::to_string(kCkptWidth) + "]x[" + std::to_string(kCkptWidth) +
                            "," + std::to_string(kCkptWidth) + "]";
  return {
      {"MLP gradient step " + shape + ": peak live MiB, unsaved", fixed(peak_plain / mib, 1),
       "(one activation: " + fixed(activation, 1) + " MiB)", ""},
      {"same, each layer checkpoint(nothing_saveable)", fixed(peak_remat / mib, 1), "", ""},
      {"**peak live bytes checkpoint / unsaved**", fixed(mem_ratio, 3) + "x", "<= 0.6x",
       plain_bench::verdict(mem_ratio, 0.6, true)},
      {"gradient step, unsaved (ms)", fixed(run[0] * 1e3, 2), "", ""},
      {"gradient step, checkpoint (ms)", fixed(run[1] * 1e3, 2), "", ""},
      {"**time checkpoint / unsaved**", fixed(time_ratio, 3) + "x", "<= 1.4x",
       plain_bench::verdict(time_ratio, 1.4, true)},
  };
}

// The adam step of a tanh MLP with a mean-squared-error loss: (params, state, x) ->
// (loss, new params, new state), jitted with `donate` as its donate_argnums.
using DonateParams = std::vector<Array>;
auto adam_step(const px::optax::GradientTransformation& opt, std::vector<int> donate) {
  auto loss = [](const DonateParams& w, const Array& x) {
    Array h = x;
    for (const Array& wi : w) h = jnp::tanh(jnp::dot(h, wi));
    return jnp::mean(jnp::square(h - 0.5f));
  };
  return px::jit(
      [opt, loss](const DonateParams& w, const px::optax::OptState& s, const Array& x) {
        auto [l, g] = px::value_and_grad(loss)(w, x);
        auto [updates, s2] = opt.update(g, s, w);
        return std::make_tuple(l, px::optax::apply_updates(w, updates), s2);
      },
      px::JitOptions{.donate_argnums = std::move(donate)});
}

std::vector<Row> donation(int reps) {
  const auto opt = px::optax::adam(1e-3);
  auto donating = adam_step(opt, {0, 1});
  auto keeping = adam_step(opt, {});
  const Array x = input(kDonateBatch, kDonateWidth);
  auto fresh = [&] {
    DonateParams w;
    for (int i = 0; i < kDonateLayers; ++i) w.push_back(weight(kDonateWidth, i));
    return w;
  };
  // Each variant trains its own copy; a step's outputs replace its inputs, as in a loop.
  DonateParams w_d = fresh(), w_k = fresh();
  px::optax::OptState s_d = opt.init(w_d), s_k = opt.init(w_k);
  float loss_d = 0, loss_k = 0;
  auto step = [&](auto& f, DonateParams& w, px::optax::OptState& s, float& loss) {
    auto [l, w2, s2] = f(w, s, x);
    w = w2;
    s = s2;
    loss = l.template item<float>();
  };
  auto bytes_of = [](const DonateParams& w, const px::optax::OptState& s) {
    double n = 0;
    for (const Array& a : px::tree::leaves(w)) n += double(a.size()) * 4;
    for (const Array& a : px::tree::leaves(s)) n += double(a.size()) * 4;
    return n;
  };
  // The step's peak with its own state, less the other variant's state held meanwhile.
  auto peak = [&](auto& f, DonateParams& w, px::optax::OptState& s, float& loss, double others) {
    step(f, w, s, loss);  // compiled and warm
    px::runtime::reset_peak_memory();
    step(f, w, s, loss);
    return double(px::runtime::memory_stats().peak_bytes) - others;
  };
  const double peak_keep = g_only.empty() ? peak(keeping, w_k, s_k, loss_k, bytes_of(w_d, s_d)) : 0;
  const double peak_donate =
      g_only.empty() ? peak(donating, w_d, s_d, loss_d, bytes_of(w_k, s_k)) : 0;
  const std::vector<double> run =
      best_interleaved(reps, {{"undonated_step", [&] { step(keeping, w_k, s_k, loss_k); }},
                              {"donated_step", [&] { step(donating, w_d, s_d, loss_d); }}});
  if (g_only.empty() && loss_d != loss_k) {
    std::cerr << "donation changed the losses: " << loss_d << " vs " << loss_k << "\n";
  }
  const double mib = 1024.0 * 1024.0;
  const double params = double(kDonateLayers * kDonateWidth * kDonateWidth * 4) / mib;
  const double mem_ratio = peak_donate / peak_keep;
  const double time_ratio = run[1] / run[0];
  const std::string shape = "adam step, " + std::to_string(kDonateLayers) + " layers [" +
                            std::to_string(kDonateWidth) + "," + std::to_string(kDonateWidth) +
                            "], batch " + std::to_string(kDonateBatch);
  return {
      {shape + ": peak live MiB, undonated", fixed(peak_keep / mib, 1),
       "(parameters " + fixed(params, 1) + " MiB, state 2x that)", ""},
      {"same, parameters and state donated", fixed(peak_donate / mib, 1), "", ""},
      {"**peak live bytes donated / undonated**", fixed(mem_ratio, 3) + "x", "<= 0.6x",
       plain_bench::verdict(mem_ratio, 0.6, true)},
      {"adam step, undonated (ms)", fixed(run[0] * 1e3, 2), "", ""},
      {"adam step, donated (ms)", fixed(run[1] * 1e3, 2), "", ""},
  };
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = plain_bench::parse_options(argc, argv, "parax_cf_bench", 7);
  if (!options) return 2;
  g_only = options->only;
  const int reps = options->reps;
  const bool only_steps = g_only.ends_with("_step");
  std::vector<Row> rows;
  if (g_only.empty() || !only_steps) rows = scan_vs_unrolled(reps);
  if (g_only.empty() || only_steps) {
    std::vector<Row> ckpt = checkpoint_mlp(reps);
    rows.insert(rows.end(), ckpt.begin(), ckpt.end());
    std::vector<Row> donate = donation(reps);
    rows.insert(rows.end(), donate.begin(), donate.end());
  }
  const std::string md =
      plain_bench::table("Control flow and memory (parax_cf_bench)", rows,
                         "Best of " + std::to_string(reps) +
                             " wall times, the two variants of each ratio interleaved.");
  return plain_bench::report(*options, md, "parax_cf_bench");
}
