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
  for (DType t : {DType::bool_, DType::int8, DType::int16, DType::int32, DType::int64,
                  DType::uint8, DType::uint16, DType::uint32, DType::uint64, DType::float16,
                  DType::bfloat16, DType::float32, DType::float64}) {
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
    double init = f["init"] == "inf" ? INFINITY : f["init"] == "-inf" ? -INFINITY : std::stod(f["init"]);
    if (is_integer(dtype) && std::isinf(init)) {
      init = init > 0 ? double(std::numeric_limits<int32_t>::max())
                      : double(std::numeric_limits<int32_t>::lowest());
    }
    const lax::WindowComputation op = computation_named(f["op"]);
    auto fn = [&](const Array& x) {
      const Array v = jnp::asarray(init, dtype);
      return lax::reduce_window(x, v, op, window, strides, padding_of(pad), bdil, wdil);
    };
    const Array x = gen(shape_of(f["shape"]), 1, dtype);
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
      return f["op"] == "convolve" ? jnp::convolve(a, v, f["mode"]) : jnp::correlate(a, v, f["mode"]);
    };
    if (goldens().at(name + "#out")[0] == '!') {
      expect_error([&] { fn(); }, name + "#out");
    } else {
      expect_golden(fn(), name + "#out");
    }
    ++checked;
  }
  EXPECT_GE(checked, 16);
}

}  // namespace
}  // namespace parax
