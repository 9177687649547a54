// parax_conv_bench: conv2d on a ResNet-style layer (N=8, C=64, 56x56, 3x3 kernel, 64 out,
// stride 1, SAME, NCHW/OIHW, float32), forward alone and forward+backward (the result and
// both operands' gradients from one jitted vjp), on one device, each with the default
// kernel (oneDNN where it has a JIT kernel) and with im2col + OpenBLAS forced
// (parax_conv_implementation = "im2col"); then forward+backward batch-sharded over 8
// virtual devices (one image each, all devices' kernels at once on the shared pool). In
// one run it measures the machine's GEMM rate through parax's dot_general on a product of
// the convolution's size ([64, 576] x [576, N*56*56]: the im2col GEMM), then prints for
// each variant its time, GFLOP/s, the ratio to that GEMM rate and JAX:CPU's time over
// parax's (speedup > 1 means parax is faster), JAX's times read from
// benchmarks/jax_cpu/conv.txt (written by tools/jax_conv_bench.py on the same kind of
// machine). Best of N repetitions. --shapes instead times other layers' forward+backward
// with each kernel.
//
//   parax_conv_bench [--reps=N] [--results_md=PATH] [--shapes]
#include <parax/parax.h>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <fstream>
#include <functional>
#include <map>
#include <sstream>
#include <string>

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

std::map<std::string, double> jax_times_ms() {
  std::map<std::string, double> out;
  std::ifstream in(std::string(PARAX_SOURCE_DIR) + "/benchmarks/jax_cpu/conv.txt");
  std::string line;
  while (std::getline(in, line)) {
    if (line.empty() || line[0] == '#') continue;
    std::istringstream s(line);
    std::string name;
    double ms = 0;
    if (s >> name >> ms) out[name] = ms;
  }
  return out;
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
  int reps = 10;
  std::string md;
  for (int i = 1; i < argc; ++i) {
    const std::string a = argv[i];
    if (a.rfind("--reps=", 0) == 0) reps = std::stoi(a.substr(7));
    if (a.rfind("--results_md=", 0) == 0) md = a.substr(13);
  }
  px::config::set_num_cpu_devices(8);
  if (argc > 1 && std::string(argv[argc - 1]) == "--shapes") {
    shape_sweep(reps);
    return 0;
  }
  px::random::Key keys = px::random::split(px::random::key(0), 3);
  const Array x = px::random::normal(keys[0], {kN, kC, kH, kW});
  const Array w = px::random::normal(keys[1], {kO, kC, kK, kK});
  const Array g = px::random::normal(keys[2], {kN, kO, kH, kW});

  // The GEMM rate of this machine for the convolution's own product.
  const Array a = px::random::normal(keys[0], {kO, kC * kK * kK});
  const Array b = px::random::normal(keys[1], {kC * kK * kK, kN * kH * kW});
  auto matmul = px::jit([](const Array& p, const Array& q) { return jnp::matmul(p, q); });
  const double gemm_s = best_seconds(reps, [&] { matmul(a, b).block_until_ready(); });
  const double flops_fwd = 2.0 * double(kN * kO * kH * kW) * double(kC * kK * kK);
  const double gemm_rate = flops_fwd / gemm_s;

  auto forward = px::jit(conv);
  auto forward_backward = px::jit([](const Array& xx, const Array& ww, const Array& gg) {
    auto [out, pullback] = px::vjp(conv, xx, ww);
    auto [dx, dw] = pullback(gg);
    return std::make_tuple(out, dx, dw);
  });
  const auto time_fwd = [&](const Array& xx, const Array& ww) {
    return best_seconds(reps, [&] { forward(xx, ww).block_until_ready(); });
  };
  const auto time_fb = [&](const Array& xx, const Array& ww, const Array& gg) {
    return best_seconds(reps, [&] {
      auto [out, dx, dw] = forward_backward(xx, ww, gg);
      out.block_until_ready();
      dx.block_until_ready();
      dw.block_until_ready();
    });
  };
  // Data parallel: the batch over 8 devices, the weights replicated.
  const auto mesh = px::make_mesh({8}, {"batch"});
  const Array xs = px::device_put(x, px::NamedSharding(mesh, px::P("batch")));
  const Array gs = px::device_put(g, px::NamedSharding(mesh, px::P("batch")));
  const Array ws = px::device_put(w, px::NamedSharding(mesh, px::P()));
  struct Timing {
    double fwd, fb, fb_dp;
  };
  const auto timings = [&](const char* impl) {
    px::config::update("parax_conv_implementation", impl);
    return Timing{time_fwd(x, w), time_fb(x, w, g), time_fb(xs, ws, gs)};
  };
  const Timing im2col = timings("im2col");
  const Timing best = timings("auto");

  const std::map<std::string, double> jax = jax_times_ms();
  std::ostringstream table;
  table << "\n## Convolution (N=8, C=64, 56x56, 3x3, 64 out, SAME, NCHW, float32; 1 device unless "
           "noted; oneDNN unless noted)\n\n"
        << "| workload | parax ms | GFLOP/s | of GEMM rate | JAX:CPU ms | JAX / parax |\n"
        << "|---|---|---|---|---|---|\n";
  char row[256];
  std::snprintf(row, sizeof row,
                "| sgemm [64,576]x[576,%lld] (parax dot) | %.2f | %.1f | 1.00 | | |\n",
                static_cast<long long>(kN * kH * kW), gemm_s * 1e3, gemm_rate / 1e9);
  table << row;
  struct Entry {
    const char* name;
    const char* key;
    double seconds, flops;
  };
  for (const Entry& e : {
           Entry{"conv2d forward", "conv2d_forward", best.fwd, flops_fwd},
           Entry{"conv2d forward+backward", "conv2d_forward_backward", best.fb, 3 * flops_fwd},
           Entry{"conv2d forward, im2col", "conv2d_forward", im2col.fwd, flops_fwd},
           Entry{"conv2d forward+backward, im2col", "conv2d_forward_backward", im2col.fb,
                 3 * flops_fwd},
           Entry{"conv2d forward+backward, 8 devices DP", "conv2d_forward_backward", best.fb_dp,
                 3 * flops_fwd},
           Entry{"conv2d forward+backward, 8 devices DP, im2col", "conv2d_forward_backward",
                 im2col.fb_dp, 3 * flops_fwd},
       }) {
    const double rate = e.flops / e.seconds;
    const auto it = jax.find(e.key);
    if (it == jax.end()) {
      std::snprintf(row, sizeof row, "| %s | %.2f | %.1f | %.2f | (not recorded) | |\n", e.name,
                    e.seconds * 1e3, rate / 1e9, rate / gemm_rate);
    } else {
      std::snprintf(row, sizeof row, "| %s | %.2f | %.1f | %.2f | %.2f | %.2fx |\n", e.name,
                    e.seconds * 1e3, rate / 1e9, rate / gemm_rate, it->second,
                    it->second / (e.seconds * 1e3));
    }
    table << row;
  }
  std::printf("%s", table.str().c_str());
  if (!md.empty()) std::ofstream(md, std::ios::app) << table.str();
  return 0;
}
