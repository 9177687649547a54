// Convolution and pooling against JAX: every case of tools/make_conv_goldens.py (its
// configuration is part of the golden record) runs here with the same operands and is
// compared with JAX's values, gradients of both operands, vmaps and errors. Then what
// needs no JAX: grads under jit, the transposes by the dot-product test, and sharded
// convolutions and pooling on 8 devices that stay local and equal single-device values.
#include <gtest/gtest.h>

#include <cmath>
#include <regex>
#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using Ints = std::vector<int64_t>;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("conv_cases.txt"));
  return *records;
}

std::map<std::string, std::string> fields(const std::string& cfg) {
  std::map<std::string, std::string> out;
  std::istringstream in(cfg);
  for (std::string tok; in >> tok;) {
    const size_t eq = tok.find('=');
    out[tok.substr(0, eq)] = tok.substr(eq + 1);
  }
  return out;
}

Ints ints(const std::string& s) {
  Ints out;
  std::stringstream in(s);
  for (std::string tok; std::getline(in, tok, ',');) {
    if (!tok.empty()) out.push_back(std::stoll(tok));
  }
  return out;
}

Shape shape_of(const std::string& s) {
  const Ints v = ints(s);
  return Shape(v.begin(), v.end());
}

lax::Padding padding_of(const std::string& s) {
  if (s.empty() || std::isdigit(static_cast<unsigned char>(s[0])) || s[0] == '-') {
    std::vector<std::pair<int64_t, int64_t>> pairs;
    std::stringstream in(s);
    for (std::string tok; std::getline(in, tok, ';');) {
      const size_t colon = tok.find(':');
      pairs.emplace_back(std::stoll(tok.substr(0, colon)), std::stoll(tok.substr(colon + 1)));
    }
    return lax::Padding(pairs);
  }
  return lax::Padding(s);
}

DType dtype_named(const std::string& name) {
  for (DType t : {DType::bool_, DType::int8, DType::int16, DType::int32, DType::int64, DType::uint8,
                  DType::uint16, DType::uint32, DType::uint64, DType::float16, DType::bfloat16,
                  DType::float32, DType::float64}) {
    if (dtype_name(t) == name) return t;
  }
  throw std::runtime_error("unknown dtype " + name);
}

// The golden script's gen(): small multiples of 1/4 (integers for integer dtypes).
Array gen(const Shape& shape, int seed, DType dtype) {
  const int64_t n = shape_size(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) {
    const double k = double((i * 37 + seed * 11) % 13 - 6);
    v[size_t(i)] = is_integer(dtype) ? k : k * 0.25;
  }
  return jnp::detail::array_from_values(v.data(), n, DType::float64, shape, dtype);
}

// The golden script's gen_ties(): three values, so windows hold ties.
Array gen_ties(const Shape& shape) {
  const int64_t n = shape_size(shape);
  std::vector<double> v(static_cast<size_t>(n));
  for (int64_t i = 0; i < n; ++i) v[size_t(i)] = double((i * 5) % 3 - 1) * 0.5;
  return jnp::detail::array_from_values(v.data(), n, DType::float64, shape, DType::float32);
}

// Compares x with a golden `dtype|shape|values` record (relative tolerance `rtol` of the
// largest magnitude, so exact sums compare exactly and float16 rounds).
void expect_golden(const Array& x, const std::string& key, double rtol = 1e-6) {
  SCOPED_TRACE(key);
  ASSERT_TRUE(goldens().count(key)) << "no golden " << key;
  const std::string& g = goldens().at(key);
  ASSERT_NE(g[0], '!') << g;
  const size_t a = g.find('|'), b = g.find('|', a + 1);
  EXPECT_EQ(std::string(dtype_name(x.dtype())), g.substr(0, a));
  EXPECT_EQ(x.shape(), shape_of(g.substr(a + 1, b - a - 1)));
  std::vector<double> want;
  std::stringstream in(g.substr(b + 1));
  for (std::string tok; std::getline(in, tok, ',');) {
    want.push_back(tok == "inf" ? INFINITY : tok == "-inf" ? -INFINITY : std::stod(tok));
  }
  const std::vector<double> got = x.to_vector<double>();
  ASSERT_EQ(got.size(), want.size());
  double scale = 1e-30;
  for (double w : want) {
    if (std::isfinite(w)) scale = std::max(scale, std::abs(w));
  }
  for (size_t i = 0; i < got.size(); ++i) {
    if (std::isinf(want[i])) {
      EXPECT_EQ(got[i], want[i]) << "at " << i;
    } else {
      EXPECT_NEAR(got[i], want[i], rtol * scale) << "at " << i;
    }
  }
}

// JAX's error text, with numpy's scalar reprs (np.int64(5)) as plain numbers.
void expect_error(const std::function<void()>& f, const std::string& key) {
  SCOPED_TRACE(key);
  const std::string want =
      std::regex_replace(goldens().at(key), std::regex(R"(np\.int64\((-?\d+)\))"), "$1");
  try {
    f();
    ADD_FAILURE() << "no error; JAX raises " << want;
  } catch (const TypeError& e) {
    EXPECT_EQ("!TypeError: " + std::string(e.what()), want);
  } catch (const ValueError& e) {
    EXPECT_EQ("!ValueError: " + std::string(e.what()), want);
  } catch (const NotImplementedError& e) {
    EXPECT_EQ("!NotImplementedError: " + std::string(e.what()), want);
  }
}

double tolerance(DType t) {
  if (t == DType::float16 || t == DType::bfloat16) return 1e-2;
  return t == DType::float64 ? 1e-12 : 2e-6;
}

std::vector<std::string> cases_with_prefix(const std::string& prefix) {
  std::vector<std::string> names;
  for (const auto& [name, text] : goldens()) {
    if (name.rfind(prefix, 0) == 0 && name.find('#') == std::string::npos) names.push_back(name);
  }
  return names;
}

struct X64 {
  explicit X64(bool on) : on(on) {
    if (on) config::update("jax_enable_x64", true);
  }
  ~X64() {
    if (on) config::update("jax_enable_x64", false);
  }
  bool on;
};

// ---- conv_general_dilated ----------------------------------------------------------

struct ConvCase {
  Shape lhs, rhs;
  Ints strides, lhs_dil, rhs_dil;
  std::string padding;
  lax::ConvDimensions dn;
  int64_t fgc, bgc;
  DType dtype;
  DType rhs_dtype;
  std::optional<DType> pref;

  Array operator()(const Array& x, const Array& w) const {
    return lax::conv_general_dilated(x, w, strides, padding_of(padding), lhs_dil, rhs_dil, dn, fgc,
                                     bgc, std::nullopt, pref);
  }
};

ConvCase conv_case(const std::string& name) {
  auto f = fields(goldens().at(name));
  ConvCase c;
  c.lhs = shape_of(f["lhs"]);
  c.rhs = shape_of(f["rhs"]);
  c.strides = ints(f["strides"]);
  c.padding = f["padding"];
  c.lhs_dil = ints(f["lhs_dil"]);
  c.rhs_dil = ints(f["rhs_dil"]);
  if (!f["dn"].empty()) {
    std::vector<std::string> s;
    std::stringstream in(f["dn"]);
    for (std::string tok; std::getline(in, tok, ',');) s.push_back(tok);
    c.dn = lax::ConvDimensions(s[0], s[1], s[2]);
  }
  c.fgc = std::stoll(f["fgc"]);
  c.bgc = std::stoll(f["bgc"]);
  const bool mixed = f["dtype"] == "mixed";
  c.dtype = mixed ? DType::float32 : dtype_named(f["dtype"]);
  c.rhs_dtype = mixed ? DType::int32 : c.dtype;
  if (f.count("pref")) c.pref = dtype_named(f["pref"]);
  return c;
}

Shape batched(const Shape& s) {
  Shape b = s;
  b.insert(b.begin(), 2);
  return b;
}

TEST(ConvGolden, EveryCase) {
  int checked = 0;
  for (const std::string& name : cases_with_prefix("conv/")) {
    SCOPED_TRACE(name);
    const ConvCase c = conv_case(name);
    X64 x64(c.dtype == DType::float64);
    const Array x = gen(c.lhs, 1, c.dtype), w = gen(c.rhs, 2, c.rhs_dtype);
    if (goldens().at(name + "#out")[0] == '!') {
      expect_error([&] { c(x, w); }, name + "#out");
      ++checked;
      continue;
    }
    const double tol = tolerance(c.dtype);
    const Array out = c(x, w);
    expect_golden(out, name + "#out", tol);
    if (goldens().count(name + "#dlhs")) {
      auto fn = [&](const Array& a, const Array& b) { return c(a, b); };
      auto [y, pullback] = vjp(fn, x, w);
      (void)y;
      auto [dx, dw] = pullback(gen(out.shape(), 3, out.dtype()));
      expect_golden(dx, name + "#dlhs", tol);
      expect_golden(dw, name + "#drhs", tol);
    }
    if (goldens().count(name + "#vmap_l")) {
      const Array xb = gen(batched(c.lhs), 1, c.dtype), wb = gen(batched(c.rhs), 2, c.dtype);
      auto fn = [&](const Array& a, const Array& b) { return c(a, b); };
      expect_golden(vmap(fn, {.in_axes = {0, None}})(xb, w), name + "#vmap_l", tol);
      expect_golden(vmap(fn, {.in_axes = {None, 0}})(x, wb), name + "#vmap_r", tol);
      expect_golden(vmap(fn)(xb, wb), name + "#vmap_lr", tol);
    }
    ++checked;
  }
  EXPECT_GE(checked, 50);
}

// ---- reduce_window, pooling, numpy ------------------------------------------------------

lax::WindowComputation computation_named(const std::string& op) {
  if (op == "sum") return &lax::add;
  if (op == "max") return &lax::max;
  return &lax::min;
}

TEST(ReduceWindowGolden, EveryCase) {
  int checked = 0;
  for (const std::string& name : cases_with_prefix("rw/")) {
    SCOPED_TRACE(name);
    auto f = fields(goldens().at(name));
    const DType dtype = dtype_named(f["dtype"]);
    X64 x64(dtype == DType::float64);
    const Ints window = ints(f["window"]), strides = ints(f["strides"]);
    const Ints bdil = ints(f["bdil"]), wdil = ints(f["wdil"]);
    const std::string pad = f["padding"];
    double init = f["init"] == "inf"    ? INFINITY
                  : f["init"] == "-inf" ? -INFINITY
                                        : std::stod(f["init"]);
    if (is_integer(dtype) && std::isinf(init)) {
      init = init > 0 ? double(std::numeric_limits<int32_t>::max())
                      : double(std::numeric_limits<int32_t>::lowest());
    }
    const lax::WindowComputation op = computation_named(f["op"]);
    auto fn = [&](const Array& x) {
      const Array v = jnp::asarray(init, dtype);
      return lax::reduce_window(x, v, op, window, strides, padding_of(pad), bdil, wdil);
    };
    const Array x =
        f["ties"] == "1" ? gen_ties(shape_of(f["shape"])) : gen(shape_of(f["shape"]), 1, dtype);
    if (goldens().at(name + "#out")[0] == '!') {
      expect_error([&] { fn(x); }, name + "#out");
      ++checked;
      continue;
    }
    const Array out = fn(x);
    expect_golden(out, name + "#out", tolerance(dtype));
    if (goldens().count(name + "#grad")) {
      auto [y, pullback] = vjp(fn, x);
      (void)y;
      auto [dx] = pullback(gen(out.shape(), 3, out.dtype()));
      expect_golden(dx, name + "#grad", tolerance(dtype));
    }
    if (goldens().count(name + "#vmap")) {
      expect_golden(vmap(fn)(gen(batched(x.shape()), 1, dtype)), name + "#vmap", tolerance(dtype));
    }
    ++checked;
  }
  EXPECT_GE(checked, 20);
}

TEST(PoolGolden, FlaxPooling) {
  int checked = 0;
  for (const std::string& name : cases_with_prefix("pool/")) {
    SCOPED_TRACE(name);
    auto f = fields(goldens().at(name));
    const Ints window = ints(f["window"]), strides = ints(f["strides"]);
    const std::string pad = f["padding"];
    const bool include = f["count_include_pad"] == "1";
    auto fn = [&](const Array& x) {
      return f["op"] == "max_pool" ? nn::max_pool(x, window, strides, padding_of(pad))
                                   : nn::avg_pool(x, window, strides, padding_of(pad), include);
    };
    const Array x = gen(shape_of(f["shape"]), 1, DType::float32);
    auto [out, pullback] = vjp(fn, x);
    expect_golden(out, name + "#out");
    auto [dx] = pullback(gen(out.shape(), 3, DType::float32));
    expect_golden(dx, name + "#grad");
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

TEST(NumpyGolden, ConvolveCorrelate) {
  int checked = 0;
  for (const std::string& name : cases_with_prefix("np/")) {
    SCOPED_TRACE(name);
    auto f = fields(goldens().at(name));
    const DType dtype = dtype_named(f["dtype"]);
    const Array a = gen({std::stoll(f["a"])}, 1, dtype), v = gen({std::stoll(f["v"])}, 2, dtype);
    auto fn = [&] {
      return f["op"] == "convolve" ? jnp::convolve(a, v, f["mode"])
                                   : jnp::correlate(a, v, f["mode"]);
    };
    if (goldens().at(name + "#out")[0] == '!') {
      expect_error([&] { fn(); }, name + "#out");
    } else {
      const Array out = fn();
      expect_golden(out, name + "#out");
      if (goldens().count(name + "#da")) {
        auto g = [&](const Array& p, const Array& q) {
          return f["op"] == "convolve" ? jnp::convolve(p, q, f["mode"])
                                       : jnp::correlate(p, q, f["mode"]);
        };
        auto [y, pullback] = vjp(g, a, v);
        (void)y;
        auto [da, dv] = pullback(gen(out.shape(), 3, DType::float32));
        expect_golden(da, name + "#da");
        expect_golden(dv, name + "#dv");
      }
    }
    ++checked;
  }
  EXPECT_GE(checked, 16);
}

// ---- what needs no JAX ------------------------------------------------------------------

void expect_equal_values(const Array& got, const Array& want, double tol = 1e-5) {
  ASSERT_EQ(got.shape(), want.shape());
  ASSERT_EQ(got.dtype(), want.dtype());
  const std::vector<double> g = got.to_vector<double>(), w = want.to_vector<double>();
  for (size_t i = 0; i < g.size(); ++i) {
    ASSERT_NEAR(g[i], w[i], tol * (1 + std::abs(w[i]))) << "at " << i;
  }
}

bool has_collective(const std::string& text) {
  for (const char* name :
       {"all-gather", "all-reduce", "reduce-scatter", "all-to-all", "collective-permute"}) {
    if (text.find(name) != std::string::npos) return true;
  }
  return false;
}

Array conv_same(const Array& x, const Array& w) { return lax::conv(x, w, {1, 1}, "SAME"); }

TEST(ConvSharded, BatchShardedImagesStayLocal) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = gen({16, 3, 6, 6}, 1, DType::float32), w = gen({4, 3, 3, 3}, 2, DType::float32);
  auto f = jit(conv_same);
  const Array want = f(x, w);
  const Array xs = device_put(x, NamedSharding(mesh, P("x")));
  const Array ws = device_put(w, NamedSharding(mesh, P()));
  const Array got = f(xs, ws);
  expect_equal_values(got, want);
  EXPECT_TRUE(got.sharding().is_equivalent_to(NamedSharding(mesh, P("x")), 4)) << got.sharding();
  const std::string text = f.lower(xs, ws).compile().as_text();
  EXPECT_FALSE(has_collective(text)) << text;
}

TEST(ConvSharded, OutputFeatureShardedKernelStaysLocal) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = gen({2, 3, 6, 6}, 1, DType::float32), w = gen({16, 3, 3, 3}, 2, DType::float32);
  auto f = jit(conv_same);
  const Array want = f(x, w);
  const Array xs = device_put(x, NamedSharding(mesh, P()));
  const Array ws = device_put(w, NamedSharding(mesh, P("x")));
  const Array got = f(xs, ws);
  expect_equal_values(got, want);
  EXPECT_TRUE(got.sharding().is_equivalent_to(NamedSharding(mesh, P(None, "x")), 4))
      << got.sharding();
  const std::string text = f.lower(xs, ws).compile().as_text();
  EXPECT_FALSE(has_collective(text)) << text;
}

TEST(ConvSharded, BatchAndOutputFeaturesOnTwoAxes) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array x = gen({8, 3, 5, 5}, 1, DType::float32), w = gen({6, 3, 3, 3}, 2, DType::float32);
  auto f = jit(conv_same);
  const Array want = f(x, w);
  const Array got =
      f(device_put(x, NamedSharding(mesh, P("a"))), device_put(w, NamedSharding(mesh, P("b"))));
  expect_equal_values(got, want);
  EXPECT_TRUE(got.sharding().is_equivalent_to(NamedSharding(mesh, P("a", "b")), 4))
      << got.sharding();
  const std::string text = f.lower(device_put(x, NamedSharding(mesh, P("a"))),
                                   device_put(w, NamedSharding(mesh, P("b"))))
                               .compile()
                               .as_text();
  EXPECT_FALSE(has_collective(text)) << text;
}

TEST(ConvSharded, InputFeatureShardedSumsPartialResults) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = gen({2, 8, 5, 5}, 1, DType::float32), w = gen({3, 8, 3, 3}, 2, DType::float32);
  auto f = jit(conv_same);
  const Array want = f(x, w);
  const Array xs = device_put(x, NamedSharding(mesh, P(None, "x")));
  const Array ws = device_put(w, NamedSharding(mesh, P(None, "x")));
  expect_equal_values(f(xs, ws), want);
  const std::string text = f.lower(xs, ws).compile().as_text();
  EXPECT_NE(text.find("all-reduce"), std::string::npos) << text;
  EXPECT_EQ(text.find("all-gather"), std::string::npos) << text;
}

TEST(ConvSharded, MaxPoolOfBatchShardedImagesStaysLocal) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = gen({16, 2, 6, 6}, 1, DType::float32);
  auto pool = jit([](const Array& a) {
    return lax::reduce_window(a, -INFINITY, lax::max, {1, 1, 2, 2}, {1, 1, 2, 2}, "VALID");
  });
  const Array xs = device_put(x, NamedSharding(mesh, P("x")));
  expect_equal_values(pool(xs), pool(x), 0);
  EXPECT_FALSE(has_collective(pool.lower(xs).compile().as_text()));
  // Its gradient too.
  auto loss = [](const Array& a) {
    return jnp::sum(
        lax::reduce_window(a, -INFINITY, lax::max, {1, 1, 2, 2}, {1, 1, 2, 2}, "VALID") *
        lax::reduce_window(a, 0.0, lax::add, {1, 1, 2, 2}, {1, 1, 2, 2}, "VALID"));
  };
  auto g = jit([&](const Array& a) { return grad(loss)(a); });
  expect_equal_values(g(xs), g(x));
  EXPECT_FALSE(has_collective(g.lower(xs).compile().as_text()));
}

// Data-parallel training's step: the weight gradient sums over the sharded batch.
TEST(ConvSharded, DataParallelGradientMatchesSingleDevice) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = gen({16, 3, 6, 6}, 1, DType::float32), w = gen({4, 3, 3, 3}, 2, DType::float32);
  auto loss = [](const Array& ww, const Array& xx) {
    Array y = lax::max(lax::conv(xx, ww, {1, 1}, "SAME"), 0.0f);
    y = lax::reduce_window(y, -INFINITY, lax::max, {1, 1, 2, 2}, {1, 1, 2, 2}, "VALID");
    return jnp::mean(y * y);
  };
  auto step = jit([&](const Array& ww, const Array& xx) { return value_and_grad(loss)(ww, xx); });
  auto [l1, g1] = step(w, x);
  auto [l8, g8] =
      step(device_put(w, NamedSharding(mesh, P())), device_put(x, NamedSharding(mesh, P("x"))));
  expect_equal_values(l8, l1);
  expect_equal_values(g8, g1);
}

// Reverse mode under jit, and of a jitted function, agrees with the eager vjp.
TEST(ConvTransforms, GradUnderJitMatchesEager) {
  const Array x = gen({2, 4, 6, 5}, 1, DType::float32), w = gen({6, 2, 3, 2}, 2, DType::float32);
  auto f = [](const Array& a, const Array& b) {
    return jnp::sum(jnp::sin(lax::conv_general_dilated(a, b, {2, 1}, "SAME", {}, {1, 2}, {}, 2)));
  };
  auto eager = grad(f, argnums<0, 1>);
  auto jitted = jit([&](const Array& a, const Array& b) { return grad(f, argnums<0, 1>)(a, b); });
  auto [ex, ew] = eager(x, w);
  auto [jx, jw] = jitted(x, w);
  expect_equal_values(jx, ex);
  expect_equal_values(jw, ew);
}

// Forward mode over reverse mode: the second derivative of a convolution is the bilinear
// cross term, computed through the transposes' own jvps.
TEST(ConvTransforms, SecondOrder) {
  const Array x = gen({1, 2, 5, 5}, 1, DType::float32), w = gen({3, 2, 2, 2}, 2, DType::float32);
  auto f = [](const Array& a, const Array& b) {
    return jnp::sum(lax::conv(a, b, {1, 1}, "VALID") * lax::conv(a, b, {1, 1}, "VALID"));
  };
  auto dfdx = [&](const Array& b) { return grad(f)(x, b); };
  // d/dw of sum(dfdx) by finite differences along w's direction u.
  const Array u = gen({3, 2, 2, 2}, 5, DType::float32);
  auto [y, t] = jvp([&](const Array& b) { return jnp::sum(dfdx(b)); }, std::make_tuple(w),
                    std::make_tuple(u));
  (void)y;
  const double eps = 1e-2;
  const double fd =
      (jnp::sum(dfdx(w + eps * u)).item<double>() - jnp::sum(dfdx(w - eps * u)).item<double>()) /
      (2 * eps);
  EXPECT_NEAR(t.item<double>(), fd, 1e-3 * (1 + std::abs(fd)));
}

TEST(ConvApi, DefaultsAndWrappers) {
  const Array x = gen({2, 3, 7, 6}, 1, DType::float32), w = gen({4, 3, 3, 2}, 2, DType::float32);
  // conv is conv_general_dilated with NC.../OI.../NC... and no dilation.
  expect_equal_values(
      lax::conv(x, w, {2, 1}, "SAME"),
      lax::conv_general_dilated(x, w, {2, 1}, "SAME", {1, 1}, {1, 1}, {"NCHW", "OIHW", "NCHW"}));
  expect_equal_values(
      lax::conv_with_general_padding(x, w, {1, 1}, {{1, 0}, {2, 1}}, {2, 1}, {1, 2}),
      lax::conv_general_dilated(x, w, {1, 1}, {{1, 0}, {2, 1}}, {2, 1}, {1, 2}));
  const lax::ConvDimensionNumbers dn =
      lax::conv_dimension_numbers(Shape{2, 7, 6, 3}, Shape{3, 2, 3, 4}, {"NHWC", "HWIO", "NHWC"});
  EXPECT_EQ(dn.lhs_spec, (Ints{0, 3, 1, 2}));
  EXPECT_EQ(dn.rhs_spec, (Ints{3, 2, 0, 1}));
  EXPECT_EQ(dn.out_spec, (Ints{0, 3, 1, 2}));
  EXPECT_EQ(lax::padtype_to_pads({7, 6}, {3, 2}, {2, 1}, "SAME"),
            (std::vector<std::pair<int64_t, int64_t>>{{1, 1}, {0, 1}}));
  EXPECT_EQ(lax::padtype_to_pads({7}, {4}, {2}, "SAME_LOWER"),
            (std::vector<std::pair<int64_t, int64_t>>{{2, 1}}));
  EXPECT_THROW(lax::padtype_to_pads({7}, {4}, {2}, "FULL"), ValueError);
  // Any other callable is refused by name.
  auto other = [](const ArrayLike& a, const ArrayLike& b) { return lax::mul(a, b); };
  EXPECT_THROW(lax::reduce_window(x, 1.0, other, {1, 1, 2, 2}), NotImplementedError);
  // The pooling helpers are reduce_window with the identity.
  expect_equal_values(lax::reduce_window_max(x, {1, 1, 2, 2}, {1, 1, 2, 2}),
                      lax::reduce_window(x, -INFINITY, lax::max, {1, 1, 2, 2}, {1, 1, 2, 2}), 0);
  expect_equal_values(lax::reduce_window_min(x, {1, 2, 2, 1}, {}, "SAME"),
                      lax::reduce_window(x, INFINITY, lax::min, {1, 2, 2, 1}, {}, "SAME"), 0);
  expect_equal_values(lax::reduce_window_sum(x, {1, 1, 3, 3}, {1, 1, 2, 2}, "SAME"),
                      lax::reduce_window(x, 0.0, lax::add, {1, 1, 3, 3}, {1, 1, 2, 2}, "SAME"), 0);
}

// JAX's conv_transpose against JAX (NHWC/HWIO, strides, both padding modes, a flipped
// kernel): recorded as convolutions with lhs dilation, which the goldens check; here the
// wrapper must build the same ones.
TEST(ConvApi, ConvTransposeIsTheDilatedConvolution) {
  const Array x = gen({1, 4, 5, 2}, 1, DType::float32), w = gen({3, 3, 2, 3}, 2, DType::float32);
  // strides (2, 2), SAME: k=3, s=2 -> pads (2, 1) per dimension (_conv_transpose_padding).
  expect_equal_values(lax::conv_transpose(x, w, {2, 2}, "SAME"),
                      lax::conv_general_dilated(x, w, {1, 1}, {{2, 1}, {2, 1}}, {2, 2}, {1, 1},
                                                {"NHWC", "HWIO", "NHWC"}));
  // VALID: pads (k - 1, k + s - 2 + max(k - s, 0) - (k - 1)) = (2, 2).
  expect_equal_values(lax::conv_transpose(x, w, {2, 2}, "VALID"),
                      lax::conv_general_dilated(x, w, {1, 1}, {{2, 2}, {2, 2}}, {2, 2}, {1, 1},
                                                {"NHWC", "HWIO", "NHWC"}));
  const Array wt = gen({3, 3, 3, 2}, 2, DType::float32);
  const Array t = lax::conv_transpose(x, wt, {2, 1}, "SAME", {}, {}, /*transpose_kernel=*/true);
  EXPECT_EQ(t.shape(), (Shape{1, 8, 5, 3}));
}

TEST(ConvTransposeGolden, EveryCase) {
  int checked = 0;
  for (const std::string& name : cases_with_prefix("ct/")) {
    SCOPED_TRACE(name);
    auto f = fields(goldens().at(name));
    lax::ConvDimensions dn;
    if (!f["dn"].empty()) {
      std::vector<std::string> s;
      std::stringstream in(f["dn"]);
      for (std::string tok; std::getline(in, tok, ',');) s.push_back(tok);
      dn = lax::ConvDimensions(s[0], s[1], s[2]);
    }
    const Array x = gen(shape_of(f["lhs"]), 1, DType::float32);
    const Array w = gen(shape_of(f["rhs"]), 2, DType::float32);
    const Array out = lax::conv_transpose(x, w, ints(f["strides"]), padding_of(f["padding"]),
                                          ints(f["rhs_dil"]), dn, f["tk"] == "1");
    expect_golden(out, name + "#out");
    ++checked;
  }
  EXPECT_GE(checked, 6);
}

}  // namespace
}  // namespace parax
