// parax_conv_bench: conv2d on a ResNet-style layer (N=8, C=64, 56x56, 3x3 kernel, 64 out,
// stride 1, SAME, NCHW/OIHW, float32), forward alone and forward+backward (the result and
// both operands' gradients from one jitted vjp), on one device, each with the default
// kernel (oneDNN where it has a JIT kernel) and with im2col + OpenBLAS forced
// (parax_conv_implementation = "im2col"); then forward+backward batch-sharded over 8
// virtual devices (one image each, all devices' kernels at once on the shared pool). In
// the same run it measures the machine's GEMM rate through parax's dot_general on a
// product of the convolution's size ([64, 576] x [576, N*56*56]: the im2col GEMM) and
// JAX:CPU's forward and forward+backward on the same layer (tools/jax_conv_bench.py
// --serve in a child process), all variants interleaved, best of N repetitions. It prints
// for each variant its time, GFLOP/s, the ratio to that GEMM rate and JAX:CPU's time over
// parax's (speedup > 1 means parax is faster; target >= 1.5x for forward+backward on one
// device). Without an importable JAX (--jax_python, default python3) it says so and
// prints no JAX ratio. --shapes instead times other layers' forward+backward with each
// kernel.
//
//   parax_conv_bench [--reps=N] [--results_md=PATH] [--jax_python=PATH] [--shapes]
#include <parax/parax.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <functional>
#include <sstream>
#include <string>

#include "plain_bench.h"

namespace px = parax;
namespace jnp = parax::numpy;
namespace lax = parax::lax;
using px::Array;

namespace {

constexpr int64_t kN = 8, kC = 64, kH = 56, kW = 56, kO = 64, kK = 3;

double best_seconds(int reps, const std::function<void()>& f) {
  f();  // compile and warm up
  double best = 1e30;
  for (int i = 0; i < reps; ++i) {
    const auto t0 = std::chrono::steady_clock::now();
    f();
    best = std::min(best,
                    std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count());
  }
  return best;
}

Array conv(const Array& x, const Array& w) {
  return lax::conv_general_dilated(x, w, {1, 1}, "SAME", {}, {}, {"NCHW", "OIHW", "NCHW"});
}

// Other layers' forward+backward with each kernel (--shapes): where oneDNN's JIT kernels
// stand against im2col + OpenBLAS beyond the ResNet layer.
void shape_sweep(int reps) {
  struct Layer {
    const char* name;
    int64_t n, c, side, o, k, stride, groups;
  };
  std::printf(
      "\n| layer (NCHW, SAME, fwd+bwd, 1 device) | oneDNN ms | im2col ms | im2col / oneDNN |\n"
      "|---|---|---|---|\n");
  for (const Layer& l : {Layer{"convnet conv1: 32x1x16x16, 16 out 3x3", 32, 1, 16, 16, 3, 1, 1},
                         Layer{"convnet conv2: 32x16x8x8, 32 out 3x3", 32, 16, 8, 32, 3, 1, 1},
                         Layer{"stem: 8x3x112x112, 64 out 7x7 stride 2", 8, 3, 112, 64, 7, 2, 1},
                         Layer{"8x256x14x14, 256 out 3x3", 8, 256, 14, 256, 3, 1, 1},
                         Layer{"8x64x56x56, 256 out 1x1", 8, 64, 56, 256, 1, 1, 1},
                         Layer{"depthwise 8x128x28x28 3x3", 8, 128, 28, 128, 3, 1, 128},
                         Layer{"8x128x28x28, 128 out 3x3 stride 2", 8, 128, 28, 128, 3, 2, 1},
                         Layer{"batch 1: 1x64x56x56, 64 out 3x3", 1, 64, 56, 64, 3, 1, 1}}) {
    px::random::Key keys = px::random::split(px::random::key(1), 2);
    const Array x = px::random::normal(keys[0], {l.n, l.c, l.side, l.side});
    const Array w = px::random::normal(keys[1], {l.o, l.c / l.groups, l.k, l.k});
    auto layer = [&l](const Array& a, const Array& b) {
      return lax::conv_general_dilated(a, b, {l.stride, l.stride}, "SAME", {}, {},
                                       {"NCHW", "OIHW", "NCHW"}, l.groups);
    };
    auto fb = px::jit([&](const Array& a, const Array& b) {
      auto [out, pullback] = px::vjp(layer, a, b);
      auto [da, db] = pullback(jnp::ones_like(out));
      return std::make_tuple(out, da, db);
    });
    double ms[2];
    for (int i = 0; i < 2; ++i) {
      px::config::update("parax_conv_implementation", i == 0 ? "auto" : "im2col");
      ms[i] = 1e3 * best_seconds(reps, [&] {
                auto [out, da, db] = fb(x, w);
                out.block_until_ready();
                da.block_until_ready();
                db.block_until_ready();
              });
    }
    px::config::update("parax_conv_implementation", "auto");
    std::printf("| %s | %.2f | %.2f | %.2fx |\n", l.name, ms[0], ms[1], ms[1] / ms[0]);
  }
}

}  // namespace

int main(int argc, char** argv) {
  const auto options = plain_bench::parse_options(argc, argv, "parax_conv_bench", 10, {"--shapes"});
  if (!options) return 2;
  const int reps = options->reps;
  px::config::set_num_cpu_devices(8);
  if (!options->switches.empty()) {
    shape_sweep(reps);
    return 0;
  }
  // Started first, so that its import and compile do not overlap parax's timing.
  plain_bench::JaxPeer jax(options->jax_python,
                           std::string(PARAX_BENCH_DIR) + "/../tools/jax_conv_bench.py");
  px::random::Key keys = px::random::split(px::random::key(0), 3);
  const Array x = px::random::normal(keys[0], {kN, kC, kH, kW});
  const Array w = px::random::normal(keys[1], {kO, kC, kK, kK});
  const Array g = px::random::normal(keys[2], {kN, kO, kH, kW});

  // The GEMM rate of this machine for the convolution's own product.
  const Array a = px::random::normal(keys[0], {kO, kC * kK * kK});
  const Array b = px::random::normal(keys[1], {kC * kK * kK, kN * kH * kW});
  auto matmul = px::jit([](const Array& p, const Array& q) { return jnp::matmul(p, q); });
  const double flops_fwd = 2.0 * double(kN * kO * kH * kW) * double(kC * kK * kK);

  auto forward = px::jit(conv);
  auto forward_backward = px::jit([](const Array& xx, const Array& ww, const Array& gg) {
    auto [out, pullback] = px::vjp(conv, xx, ww);
    auto [dx, dw] = pullback(gg);
    return std::make_tuple(out, dx, dw);
  });
  // Data parallel: the batch over 8 devices, the weights replicated.
  const auto mesh = px::make_mesh({8}, {"batch"});
  const Array xs = px::device_put(x, px::NamedSharding(mesh, px::P("batch")));
  const Array gs = px::device_put(g, px::NamedSharding(mesh, px::P("batch")));
  const Array ws = px::device_put(w, px::NamedSharding(mesh, px::P()));
  const auto run_fb = [&](const Array& xx, const Array& ww, const Array& gg) {
    auto [out, dx, dw] = forward_backward(xx, ww, gg);
    out.block_until_ready();
    dx.block_until_ready();
    dw.block_until_ready();
  };
  // The kernel is chosen when the program runs, so one compiled program serves both.
  const auto with_im2col = [](const std::function<void()>& f) {
    return [f] {
      px::config::update("parax_conv_implementation", "im2col");
      const auto t0 = std::chrono::steady_clock::now();
      f();
      const double s = plain_bench::seconds_since(t0);
      px::config::update("parax_conv_implementation", "auto");
      return s;
    };
  };
  const std::function<void()> fwd = [&] { forward(x, w).block_until_ready(); };
  const std::function<void()> fb = [&] { run_fb(x, w, g); };
  const std::function<void()> fb_dp = [&] { run_fb(xs, ws, gs); };
  std::vector<plain_bench::Variant> variants = {
      {"gemm", [&] { matmul(a, b).block_until_ready(); }},
      {"forward", fwd},
      {"forward_backward", fb},
      {"forward_backward_dp8", fb_dp},
      {"forward_im2col", {}, with_im2col(fwd)},
      {"forward_backward_im2col", {}, with_im2col(fb)},
      {"forward_backward_dp8_im2col", {}, with_im2col(fb_dp)},
  };
  for (const plain_bench::Variant& v : variants) {  // compile and warm up
    if (v.run) v.run();
    if (v.seconds) v.seconds();
  }
  if (jax.ready()) {
    variants.push_back(plain_bench::jax_variant(jax, "forward"));
    variants.push_back(plain_bench::jax_variant(jax, "forward_backward"));
  }
  const std::vector<double> best =
      plain_bench::best_interleaved(reps, variants, options->only, options->settle_ms);
  if (!options->only.empty()) {
    for (size_t v = 0; v < variants.size(); ++v) {
      if (variants[v].name == options->only)
        std::printf("%s: %.2f ms\n", variants[v].name.c_str(), 1e3 * best[v]);
    }
    return 0;
  }
  const double gemm_rate = flops_fwd / best[0];

  std::ostringstream table;
  table << "## Convolution (N=8, C=64, 56x56, 3x3, 64 out, SAME, NCHW, float32; 1 device unless "
           "noted; oneDNN unless noted)\n\n"
        << "| workload | parax ms | GFLOP/s | of GEMM rate | JAX:CPU ms (1 device) | "
           "JAX / parax | target |\n"
        << "|---|---|---|---|---|---|---|\n";
  char row[320];
  std::snprintf(row, sizeof row,
                "| sgemm [64,576]x[576,%lld] (parax dot) | %.2f | %.1f | 1.00 | | | |\n",
                static_cast<long long>(kN * kH * kW), best[0] * 1e3, gemm_rate / 1e9);
  table << row;
  struct Entry {
    const char* name;
    size_t variant;
    size_t jax_variant;  // 7: JAX forward, 8: JAX forward+backward
    double flops;
    bool target;
  };
  for (const Entry& e : {
           Entry{"conv2d forward", 1, 7, flops_fwd, false},
           Entry{"conv2d forward+backward", 2, 8, 3 * flops_fwd, true},
           Entry{"conv2d forward, im2col", 4, 7, flops_fwd, false},
           Entry{"conv2d forward+backward, im2col", 5, 8, 3 * flops_fwd, false},
           Entry{"conv2d forward+backward, 8 devices DP", 3, 8, 3 * flops_fwd, false},
           Entry{"conv2d forward+backward, 8 devices DP, im2col", 6, 8, 3 * flops_fwd, false},
       }) {
    const double seconds = best[e.variant];
    const double rate = e.flops / seconds;
    const std::string target = e.target ? ">= 1.5x" : "";
    if (!jax.ready()) {
      std::snprintf(row, sizeof row, "| %s | %.2f | %.1f | %.2f | not importable | | %s |\n",
                    e.name, seconds * 1e3, rate / 1e9, rate / gemm_rate, target.c_str());
    } else {
      const double speedup = best[e.jax_variant] / seconds;
      const std::string verdict =
          e.target ? target + ": " + plain_bench::verdict(speedup, 1.5, false) : "";
      std::snprintf(row, sizeof row, "| %s | %.2f | %.1f | %.2f | %.2f | %.2fx | %s |\n", e.name,
                    seconds * 1e3, rate / 1e9, rate / gemm_rate, best[e.jax_variant] * 1e3, speedup,
                    verdict.c_str());
    }
    table << row;
  }
  table << "\nBest of " << reps << " wall times, the variants interleaved. "
        << plain_bench::jax_note(jax) << "\n";
  return plain_bench::report(*options, table.str(), "parax_conv_bench");
}
