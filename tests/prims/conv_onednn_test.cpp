// The float32 convolution kernel's two paths agree: every case runs forward and
// forward+backward (one jitted vjp, so the input- and weight-gradient forms of JAX's
// transpose rules reach the kernel) with oneDNN forced (parax_conv_implementation =
// "onednn": any oneDNN implementation, the reference ones included), with the default
// choice ("auto") and with im2col + BLAS forced, compared element by element, and the
// path counters show which oneDNN primitive ran. Then the same on 8 devices with batch-,
// input-feature- and output-feature-sharded operands, and the cases oneDNN leaves to
// im2col (other dtypes, negative padding).
#include <gtest/gtest.h>

#include <cmath>
#include <cstdlib>
#include <fstream>
#include <string>

#include "parax/parax.h"
#include "prims/kernels/conv_dnnl.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using Ints = std::vector<int64_t>;
using prims::kernels::conv_path_counts;
using prims::kernels::ConvPathCounts;

// Small multiples of 1/4, so every sum is exact in float32 whatever its order.
Array gen(const Shape& shape, int seed, DType dtype = DType::float32) {
  const int64_t n = shape_size(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double((i * 37 + seed * 11) % 13 - 6) * 0.25;
  return jnp::detail::array_from_values(v.data(), n, DType::float64, shape, dtype);
}

// Sets the kernel choice for a scope.
struct Implementation {
  explicit Implementation(const char* name) { config::update("parax_conv_implementation", name); }
  ~Implementation() { config::update("parax_conv_implementation", "auto"); }
};

struct Case {
  std::string name;
  Shape lhs, rhs;
  Ints strides;
  lax::Padding padding;
  Ints lhs_dil, rhs_dil;
  lax::ConvDimensions dn;
  int64_t fgc = 1, bgc = 1;
  // The oneDNN primitives expected when forced: forward, backward_data, backward_weights
  // for the forward alone, and for forward+backward.
  ConvPathCounts fwd = {}, fb = {};

  Array operator()(const Array& x, const Array& w) const {
    return lax::conv_general_dilated(x, w, strides, padding, lhs_dil, rhs_dil, dn, fgc, bgc);
  }
};

ConvPathCounts operator-(const ConvPathCounts& a, const ConvPathCounts& b) {
  return {a.forward - b.forward, a.backward_data - b.backward_data,
          a.backward_weights - b.backward_weights, a.im2col - b.im2col};
}

std::string str(const ConvPathCounts& c) {
  return "forward " + std::to_string(c.forward) + ", backward_data " +
         std::to_string(c.backward_data) + ", backward_weights " +
         std::to_string(c.backward_weights) + ", im2col " + std::to_string(c.im2col);
}

void expect_same(const Array& got, const Array& want, const std::string& what) {
  SCOPED_TRACE(what);
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  double scale = 1;
  for (double x : w) scale = std::max(scale, std::abs(x));
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], 1e-6 * scale) << "at " << i;
  }
}

struct Results {
  Array out, fwd_out, dx, dw;
};

// The forward alone and forward+backward of `c` (the cotangent made to the result's shape).
Results run(const Case& c, const Array& x, const Array& w) {
  auto fwd = jit([&c](const Array& a, const Array& b) { return c(a, b); });
  auto fb = jit([&c](const Array& a, const Array& b, const Array& g) {
    auto [out, pullback] = vjp(c, a, b);
    auto [dx, dw] = pullback(g);
    return std::make_tuple(out, dx, dw);
  });
  Results r;
  r.fwd_out = fwd(x, w);
  const Array g = gen(r.fwd_out.shape(), 3);
  std::tie(r.out, r.dx, r.dw) = fb(x, w, device_put(g, r.fwd_out.sharding()));
  return r;
}

std::vector<Case> cases() {
  const lax::ConvDimensions nchw("NCHW", "OIHW", "NCHW");
  // {forward, backward_data, backward_weights, im2col}
  const ConvPathCounts fwd_only{1, 0, 0, 0};
  const ConvPathCounts plain_fb{2, 0, 1, 0};    // dx: a stride-1 convolution
  const ConvPathCounts strided_fb{1, 1, 1, 0};  // dx: lhs-dilated
  std::vector<Case> out = {
      {"3x3 SAME",
       {4, 16, 10, 10},
       {8, 16, 3, 3},
       {1, 1},
       "SAME",
       {},
       {},
       nchw,
       1,
       1,
       fwd_only,
       plain_fb},
      {"stride 2 VALID, odd sizes",
       {3, 8, 11, 9},
       {16, 8, 3, 3},
       {2, 2},
       "VALID",
       {},
       {},
       nchw,
       1,
       1,
       fwd_only,
       strided_fb},
      {"strides 2x3, uneven padding",
       {2, 8, 11, 12},
       {8, 8, 3, 2},
       {2, 3},
       lax::Padding({{1, 2}, {0, 1}}),
       {},
       {},
       nchw,
       1,
       1,
       fwd_only,
       strided_fb},
      {"rhs dilation",
       {2, 8, 12, 12},
       {8, 8, 3, 3},
       {1, 1},
       "SAME",
       {},
       {2, 2},
       nchw,
       1,
       1,
       fwd_only,
       plain_fb},
      {"stride and rhs dilation",
       {2, 4, 13, 11},
       {8, 4, 3, 3},
       {2, 2},
       lax::Padding({{2, 1}, {1, 1}}),
       {},
       {2, 1},
       nchw,
       1,
       1,
       fwd_only,
       strided_fb},
      {"feature groups",
       {2, 8, 9, 9},
       {6, 4, 3, 3},
       {1, 1},
       "SAME",
       {},
       {},
       nchw,
       2,
       1,
       fwd_only,
       plain_fb},
      {"depthwise, strided",
       {3, 8, 9, 9},
       {8, 1, 3, 3},
       {2, 2},
       "SAME",
       {},
       {},
       nchw,
       8,
       1,
       fwd_only,
       strided_fb},
      {"NHWC/HWIO strided",
       {2, 9, 9, 8},
       {3, 3, 8, 16},
       {2, 2},
       "SAME",
       {},
       {},
       lax::ConvDimensions("NHWC", "HWIO", "NHWC"),
       1,
       1,
       fwd_only,
       strided_fb},
      {"NCHW/HWIO/NHWC mixed",
       {2, 8, 7, 7},
       {3, 3, 8, 4},
       {1, 1},
       "SAME",
       {},
       {},
       lax::ConvDimensions("NCHW", "HWIO", "NHWC"),
       1,
       1,
       fwd_only,
       plain_fb},
      // A transposed convolution: its forward is oneDNN's backward_data, its input gradient
      // a strided convolution; its weight gradient is lhs-dilated too (a large window).
      {"lhs dilation",
       {2, 8, 5, 5},
       {4, 8, 3, 3},
       {1, 1},
       lax::Padding({{2, 2}, {2, 2}}),
       {2, 2},
       {},
       nchw,
       1,
       1,
       {0, 1, 0, 0},
       {1, 2, 0, 0}},
      {"1-D strided",
       {3, 4, 20},
       {5, 4, 3},
       {2},
       lax::Padding({{1, 1}}),
       {},
       {},
       lax::ConvDimensions("NCH", "OIH", "NCH"),
       1,
       1,
       fwd_only,
       strided_fb},
      {"3-D",
       {2, 4, 6, 6, 5},
       {4, 4, 3, 3, 3},
       {1, 1, 1},
       "SAME",
       {},
       {},
       lax::ConvDimensions("NCDHW", "OIDHW", "NCDHW"),
       1,
       1,
       fwd_only,
       plain_fb},
      // Batch groups: oneDNN's grouped backward_weights; their own gradients are grouped
      // forward convolutions (dw's with a window as large as the image).
      {"batch groups",
       {4, 6, 7, 7},
       {6, 6, 3, 3},
       {1, 1},
       "SAME",
       {},
       {},
       nchw,
       1,
       2,
       {0, 0, 1, 0},
       {2, 0, 1, 0}},
      // A batch of one: the threads split the output channels (the input's for the
      // strided input gradient), 48 = 32 + 16 and 40 = 32 + 8.
      {"batch 1",
       {1, 40, 9, 9},
       {48, 40, 3, 3},
       {1, 1},
       "SAME",
       {},
       {},
       nchw,
       1,
       1,
       fwd_only,
       plain_fb},
      {"batch 1, strided",
       {1, 40, 9, 9},
       {48, 40, 3, 3},
       {2, 2},
       "SAME",
       {},
       {},
       nchw,
       1,
       1,
       fwd_only,
       strided_fb},
      // Negative low padding: oneDNN has no crop, so the forward and the weight gradient
      // are im2col's; the input gradient has positive padding.
      {"negative padding",
       {2, 4, 10, 10},
       {4, 4, 3, 3},
       {1, 1},
       lax::Padding({{-1, 2}, {0, -1}}),
       {},
       {},
       nchw,
       1,
       1,
       {0, 0, 0, 1},
       {1, 0, 0, 2}},
  };
  return out;
}

TEST(ConvOnednn, EveryFormMatchesIm2col) {
  for (const Case& c : cases()) {
    SCOPED_TRACE(c.name);
    const Array x = gen(c.lhs, 1), w = gen(c.rhs, 2);
    Results want, forced, chosen;
    {
      Implementation im2col("im2col");
      const ConvPathCounts before = conv_path_counts();
      want = run(c, x, w);
      const ConvPathCounts ran = conv_path_counts() - before;
      EXPECT_EQ(ran.forward + ran.backward_data + ran.backward_weights, 0) << str(ran);
    }
    {
      Implementation onednn("onednn");
      ConvPathCounts before = conv_path_counts();
      forced = run(c, x, w);
      const ConvPathCounts ran = conv_path_counts() - before;
      const ConvPathCounts expected = {
          c.fwd.forward + c.fb.forward, c.fwd.backward_data + c.fb.backward_data,
          c.fwd.backward_weights + c.fb.backward_weights, c.fwd.im2col + c.fb.im2col};
      EXPECT_EQ(str(ran), str(expected));
    }
    chosen = run(c, x, w);
    for (const auto& [name, got] : {std::pair{"onednn", &forced}, std::pair{"auto", &chosen}}) {
      expect_same(got->fwd_out, want.fwd_out, std::string(name) + " forward");
      expect_same(got->out, want.out, std::string(name) + " out");
      expect_same(got->dx, want.dx, std::string(name) + " dx");
      expect_same(got->dw, want.dw, std::string(name) + " dw");
    }
  }
}

// Whether oneDNN has JIT kernels for all three forms of a float32 convolution here: from
// AVX2 up (with AVX only its forward ones), unless ONEDNN_MAX_CPU_ISA caps it lower, as
// scripts/test-kernels does.
bool onednn_jits_every_form() {
  const char* cap = std::getenv("ONEDNN_MAX_CPU_ISA");
  if (cap != nullptr && (std::string(cap) == "SSE41" || std::string(cap) == "AVX")) return false;
  return __builtin_cpu_supports("avx2");
}

// The default picks oneDNN's JIT kernels for a ResNet-style layer, and its three forms;
// where oneDNN has no JIT kernel for a form, im2col + BLAS runs it instead.
TEST(ConvOnednn, AutoUsesOnednnForACommonLayer) {
  const Case c{"resnet",
               {4, 32, 14, 14},
               {32, 32, 3, 3},
               {1, 1},
               "SAME",
               {},
               {},
               lax::ConvDimensions("NCHW", "OIHW", "NCHW")};
  Case strided = c;
  strided.strides = {2, 2};
  const Array x = gen(c.lhs, 1), w = gen(c.rhs, 2);
  const ConvPathCounts before = conv_path_counts();
  run(c, x, w);
  run(strided, x, w);
  const ConvPathCounts ran = conv_path_counts() - before;
  if (onednn_jits_every_form()) {
    EXPECT_EQ(str(ran), str({5, 1, 2, 0}));
  } else {
    EXPECT_EQ(ran.backward_data + ran.backward_weights, 0) << str(ran);
    EXPECT_EQ(ran.forward + ran.im2col, 8) << str(ran);
  }
}

// Sharded operands: each device's kernel sees its local shapes (a batch of one, a slice of
// the features) and both paths agree with one device.
TEST(ConvOnednn, ShardedMatchesSingleDeviceIm2col) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Case c{"sharded",
               {8, 16, 9, 9},
               {16, 16, 3, 3},
               {1, 1},
               "SAME",
               {},
               {},
               lax::ConvDimensions("NCHW", "OIHW", "NCHW")};
  Case strided = c;
  strided.name = "sharded strided";
  strided.strides = {2, 2};
  for (const Case& k : {c, strided}) {
    const Array x = gen(k.lhs, 1), w = gen(k.rhs, 2);
    Results want;
    {
      Implementation im2col("im2col");
      want = run(k, x, w);
    }
    const struct {
      const char* name;
      PartitionSpec xs, ws;
    } layouts[] = {{"batch", P("x"), P()},
                   {"input features", P(None, "x"), P(None, "x")},
                   {"output features", P(), P("x")}};
    for (const auto& layout : layouts) {
      for (const char* impl : {"onednn", "auto"}) {
        SCOPED_TRACE(k.name + ", " + layout.name + " sharded, " + impl);
        Implementation choice(impl);
        const ConvPathCounts before = conv_path_counts();
        const Results got = run(k, device_put(x, NamedSharding(mesh, layout.xs)),
                                device_put(w, NamedSharding(mesh, layout.ws)));
        const ConvPathCounts ran = conv_path_counts() - before;
        if (std::string(impl) == "onednn") {
          EXPECT_GE(ran.forward + ran.backward_data + ran.backward_weights, 8 * 4) << str(ran);
        }
        expect_same(got.fwd_out, want.fwd_out, "forward");
        expect_same(got.out, want.out, "out");
        expect_same(got.dx, want.dx, "dx");
        expect_same(got.dw, want.dw, "dw");
      }
    }
  }
}

int process_threads() {
  std::ifstream status("/proc/self/status");
  for (std::string line; std::getline(status, line);) {
    if (line.rfind("Threads:", 0) == 0) return std::stoi(line.substr(8));
  }
  return -1;
}

// oneDNN (built on OpenMP) starts no threads of its own: 8 devices' convolutions at once
// run on the pool's threads, which an im2col run has started already.
TEST(ConvOnednn, StartsNoThreads) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Case c{"threads",
               {16, 32, 12, 12},
               {32, 32, 3, 3},
               {1, 1},
               "SAME",
               {},
               {},
               lax::ConvDimensions("NCHW", "OIHW", "NCHW")};
  const Array x = device_put(gen(c.lhs, 1), NamedSharding(mesh, P("x")));
  const Array w = device_put(gen(c.rhs, 2), NamedSharding(mesh, P()));
  {
    Implementation im2col("im2col");
    run(c, x, w);
  }
  const int before = process_threads();
  const ConvPathCounts counted = conv_path_counts();
  run(c, x, w);
  run(c, gen(c.lhs, 1), gen(c.rhs, 2));  // one device: pieces on both pool threads
  EXPECT_GE((conv_path_counts() - counted).forward, 8);
  EXPECT_EQ(process_threads(), before);
}

// Other dtypes stay on im2col + BLAS, with oneDNN allowed.
TEST(ConvOnednn, OtherDtypesUseIm2col) {
  const Case c{"f16",  {2, 4, 6, 6}, {4, 4, 3, 3}, {1, 1},
               "SAME", {},           {},           lax::ConvDimensions("NCHW", "OIHW", "NCHW")};
  for (DType t : {DType::float16, DType::bfloat16}) {
    const ConvPathCounts before = conv_path_counts();
    const Array y = c(gen(c.lhs, 1, t), gen(c.rhs, 2, t));
    EXPECT_EQ(y.dtype(), t);
    const ConvPathCounts ran = conv_path_counts() - before;
    EXPECT_EQ(str(ran), str({0, 0, 0, 1}));
  }
}

TEST(ConvOnednn, SettingRejectsUnknownNames) {
  EXPECT_EQ(config::read_string("parax_conv_implementation"), "auto");
  try {
    config::update("parax_conv_implementation", "mkl");
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_NE(std::string(e.what()).find("'auto', 'onednn', 'im2col'"), std::string::npos)
        << e.what();
  }
}

}  // namespace
}  // namespace parax
