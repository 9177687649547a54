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

std::vector<int64_t> ints(const std::string& s) {
  std::vector<int64_t> out;
  if (s.empty()) return out;
  for (const std::string& p : testing::split_fields(s, ',')) out.push_back(std::stoll(p));
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
  for (const std::string& item : testing::split_fields(text, ';')) {
    const size_t eq = item.find('=');
    const std::string key = item.substr(0, eq);
    const std::string value = item.substr(eq + 1);
    if (key == "op") {
      s.op = value;
    } else if (key == "operand" || key == "updates") {
      const auto parts = testing::split_fields(value, ':');
      (key == "operand" ? s.dtype : s.update_dtype) = dtype_from_name(parts[0]);
      (key == "operand" ? s.shape : s.update_shape) = ints(parts[1]);
    } else if (key == "indices") {
      const auto parts = testing::split_fields(value, ':');
      s.index_dtype = dtype_from_name(parts[0]);
      s.index_shape = ints(parts[1]);
      s.index_values = ints(parts[2]);
    } else if (key == "dnums") {
      for (const std::string& d : testing::split_fields(value, '/')) s.dnums.push_back(ints(d));
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
  const std::vector<std::string> parts = testing::split_fields(record, '|');
  ASSERT_EQ(parts.size(), 4u) << name;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << name;
  EXPECT_EQ(x.weak_type() ? "w" : "s", parts[1]) << name;
  EXPECT_EQ(x.shape(), ints(parts[2])) << name;
  const std::vector<std::string> want =
      parts[3].empty() ? std::vector<std::string>{} : testing::split_fields(parts[3], ',');
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
    if (name.find('#') != std::string::npos || name.starts_with("shard/")) continue;
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
    if (name.find('#') != std::string::npos || name.starts_with("shard/")) continue;
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

// Sharded gathers and scatters on a (data=2, model=4) mesh against JAX's: the values of
// the unsharded computation, JAX's result layout, and the collectives of the program (a
// table split on its vocabulary gathers locally, then one all-reduce adds the partial
// rows; batch-split indices need none).
constexpr int64_t kV = 64, kD = 16, kN = 32;

std::function<Array(const std::vector<Array>&)> shard_fn(const std::string& kind) {
  const GatherDimensionNumbers gd{{1}, {0}, {0}};
  const ScatterDimensionNumbers sd{{1}, {0}, {0}};
  if (kind.starts_with("gather")) {
    std::optional<GatherScatterMode> mode;
    if (kind == "gather_clip") mode = GatherScatterMode::CLIP;
    if (kind == "gather_fill") mode = GatherScatterMode::FILL_OR_DROP;
    return [=](const std::vector<Array>& a) {
      return lax::gather(a[0], a[1].reshape({kN, 1}), gd, {1, kD}, false, false, mode);
    };
  }
  auto op = kind == "scatter_add"   ? &lax::scatter_add
            : kind == "scatter_mul" ? &lax::scatter_mul
            : kind == "scatter_min" ? &lax::scatter_min
            : kind == "scatter_max" ? &lax::scatter_max
                                    : &lax::scatter;
  return [=](const std::vector<Array>& a) {
    return op(a[0], a[1].reshape({kN, 1}), a[2], sd, false, false, std::nullopt);
  };
}

PartitionSpec spec_of(const std::string& text) {
  std::vector<SpecEntry> entries;
  for (const std::string& e : testing::split_fields(text, ',')) {
    if (e == "-") {
      entries.emplace_back(None);
    } else if (e.find('+') != std::string::npos) {
      entries.emplace_back(testing::split_fields(e, '+'));
    } else {
      entries.emplace_back(e);
    }
  }
  return PartitionSpec::from_entries(entries);
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

struct ShardCase {
  std::string name, kind;
  std::vector<PartitionSpec> specs;
};

const std::vector<ShardCase>& shard_cases() {
  static const std::vector<ShardCase> cases = {
      {"gather_vocab_model_idx_data", "gather", {P("model", None), P("data")}},
      {"gather_vocab_model_idx_data_clip", "gather_clip", {P("model", None), P("data")}},
      {"gather_vocab_model_idx_data_fill", "gather_fill", {P("model", None), P("data")}},
      {"gather_vocab_model_idx_repl", "gather", {P("model", None), P()}},
      {"gather_repl_idx_data", "gather", {P(), P("data")}},
      {"gather_cols_model_idx_data", "gather", {P(None, "model"), P("data")}},
      {"scatter_add_batch", "scatter_add", {P(), P("data"), P("data", None)}},
      {"scatter_add_vocab", "scatter_add", {P("model", None), P(), P()}},
      {"scatter_add_vocab_batch", "scatter_add", {P("model", None), P("data"), P("data", None)}},
      {"scatter_add_cols", "scatter_add", {P(None, "model"), P(), P(None, "model")}},
      {"scatter_mul_batch", "scatter_mul", {P(), P("data"), P("data", None)}},
      {"scatter_min_batch", "scatter_min", {P(), P("data"), P("data", None)}},
      {"scatter_max_vocab_batch", "scatter_max", {P("model", None), P("data"), P("data", None)}},
      {"scatter_vocab", "scatter", {P("model", None), P(), P()}},
      {"scatter_cols", "scatter", {P(None, "model"), P(), P(None, "model")}},
  };
  return cases;
}

// The golden script's shard_args.
std::vector<Array> shard_args(const std::string& kind) {
  const Array table =
      (jnp::arange(kV * kD).reshape({kV, kD}) % 37).astype(DType::float32) * 0.5f - 4.0f;
  const Array idx = (jnp::arange(kN) * 7) % (kV + 8) - 5;
  const Array upd =
      (jnp::arange(kN * kD).reshape({kN, kD}) % 11).astype(DType::float32) * 0.25f - 1.0f;
  if (kind.starts_with("gather")) return {table, idx};
  return {table * 0.0f + 1.5f, idx, upd};
}

TEST(GatherSharding, MatchesJaxLayoutsAndCollectives) {
  const Mesh mesh = make_mesh({2, 4}, {"data", "model"});
  int checked = 0;
  for (const ShardCase& c : shard_cases()) {
    SCOPED_TRACE(c.name);
    const std::vector<std::string> want =
        testing::split_fields(goldens().at("shard/" + c.name), '|');
    std::vector<Array> args = shard_args(c.kind);
    for (size_t i = 0; i < args.size(); ++i) {
      args[i] = device_put(args[i], NamedSharding(mesh, c.specs[i]));
    }
    auto f = jit(shard_fn(c.kind));
    const Array out = f(args);
    expect_record(c.name, out, goldens().at("shard/" + c.name + "#out"), 1e-6);
    EXPECT_TRUE(out.sharding().is_equivalent_to(NamedSharding(mesh, spec_of(want[0])), out.ndim()))
        << out.sharding().to_string() << " vs JAX's " << want[0];
    const std::string text = f.lower(args).compile().as_text();
    EXPECT_EQ(count(text, "all-reduce["), std::stoi(want[1])) << text;
    EXPECT_EQ(count(text, "all-gather["), std::stoi(want[2])) << text;
    ++checked;
  }
  EXPECT_EQ(checked, 15);
}

// An embedding table split on its vocabulary ('model') looked up with
// batch-split indices ('data') gathers locally and adds the partial rows with exactly one
// all-reduce; the table is never gathered.
TEST(GatherSharding, VocabularySplitTableIsOneAllReduce) {
  const Mesh mesh = make_mesh({2, 4}, {"data", "model"});
  const Array table = jnp::arange(kV * kD).reshape({kV, kD}).astype(DType::float32);
  const Array idx = (jnp::arange(kN) * 13) % kV;
  auto take = [](const Array& t, const Array& i) {
    return lax::gather(t, i.reshape({kN, 1}), {{1}, {0}, {0}}, {1, kD});
  };
  const Array t = device_put(table, NamedSharding(mesh, P("model", None)));
  const Array i = device_put(idx, NamedSharding(mesh, P("data")));
  const Array out = jit(take)(t, i);
  EXPECT_TRUE(jnp::array_equal(out, take(table, idx)).item<bool>());
  EXPECT_TRUE(out.sharding().is_equivalent_to(NamedSharding(mesh, P("data", None)), 2));
  const std::string text = jit(take).lower(t, i).compile().as_text();
  EXPECT_EQ(count(text, "all-reduce["), 1) << text;
  EXPECT_EQ(count(text, "all-gather["), 0) << text;
  EXPECT_EQ(count(text, "all-to-all["), 0) << text;
  // Indices split over the batch with a whole table: no collective at all.
  const Array whole = device_put(table, NamedSharding(mesh, P()));
  const std::string local = jit(take).lower(whole, i).compile().as_text();
  for (const char* c :
       {"all-reduce[", "all-gather[", "all-to-all[", "collective-permute[", "reduce-scatter["}) {
    EXPECT_EQ(count(local, c), 0) << local;
  }
  // Its gradient: the cotangent's rows scatter-added into each device's own shard.
  auto loss = [&](const Array& tt) { return jnp::sum(take(tt, i) * take(tt, i)); };
  const Array g = jit(grad(loss))(t);
  const Array want =
      grad([&](const Array& tt) { return jnp::sum(take(tt, idx) * take(tt, idx)); })(table);
  EXPECT_TRUE(jnp::allclose(g, want).item<bool>());
}

// vmap of gather and scatter-add through the public API (JAX's lax_vmap_test cases, with
// the operand, the indices and the updates mapped in turn and together, on several axes)
// against a loop of unbatched calls.
Array stack_of(const std::vector<Array>& xs, int64_t axis) {
  std::vector<Array> expanded;
  for (const Array& x : xs) expanded.push_back(lax::expand_dims(x, {axis}));
  return lax::concatenate(expanded, axis);
}

TEST(GatherVmap, MatchesLoopForEveryMappedOperand) {
  constexpr int64_t kB = 3;
  struct GatherCfg {
    Shape shape;
    Shape index_shape;
    int64_t hi;
    GatherDimensionNumbers d;
    Shape slice;
  };
  const GatherCfg cfgs[] = {
      {{5}, {2, 1}, 4, {{}, {0}, {0}}, {1}},
      {{10}, {3, 1}, 9, {{1}, {}, {0}}, {2}},
      {{10, 5}, {3, 1}, 9, {{1}, {0}, {0}}, {1, 3}},
      {{10, 5}, {2, 2}, 4, {{1}, {0}, {0, 1}}, {1, 3}},
      {{2, 5}, {2, 2, 1}, 4, {{}, {1}, {1}, {0}, {0}}, {1, 1}},
      {{2, 3, 10}, {3, 2, 1}, 9, {{2}, {}, {2}, {0, 1}, {1, 0}}, {1, 1, 3}},
  };
  int checked = 0;
  for (const GatherCfg& g : cfgs) {
    for (int xa : {-1, 0, 1}) {
      for (int ia : {-1, 0, 1}) {
        if (xa < 0 && ia < 0) continue;
        if (xa > int(g.shape.size()) || ia > int(g.index_shape.size())) continue;
        SCOPED_TRACE(shape_str(g.shape) + " axes " + std::to_string(xa) + "," + std::to_string(ia));
        std::vector<Array> xs, is, want;
        for (int64_t b = 0; b < kB; ++b) {
          xs.push_back(make('x', g.shape, DType::float32) * float(b + 1));
          is.push_back(((jnp::arange(shape_size(g.index_shape)) * (3 + b)) % (g.hi + 3) - 1)
                           .reshape(g.index_shape));
          want.push_back(lax::gather(xa < 0 ? xs[0] : xs.back(), ia < 0 ? is[0] : is.back(), g.d,
                                     g.slice, false, false, GatherScatterMode::FILL_OR_DROP, -7.0));
        }
        const Array x = xa < 0 ? xs[0] : stack_of(xs, xa);
        const Array i = ia < 0 ? is[0] : stack_of(is, ia);
        auto f = [&](const Array& a, const Array& b) {
          return lax::gather(a, b, g.d, g.slice, false, false, GatherScatterMode::FILL_OR_DROP,
                             -7.0);
        };
        MapAxes x_axis = xa < 0 ? MapAxes(None) : MapAxes(xa);
        MapAxes i_axis = ia < 0 ? MapAxes(None) : MapAxes(ia);
        const Array got = vmap(f, {.in_axes = {x_axis, i_axis}})(x, i);
        EXPECT_TRUE(jnp::array_equal(got, stack_of(want, 0)).item<bool>());
        const Array jitted = jit(vmap(f, {.in_axes = {x_axis, i_axis}}))(x, i);
        EXPECT_TRUE(jnp::array_equal(jitted, stack_of(want, 0)).item<bool>());
        ++checked;
      }
    }
  }
  EXPECT_GT(checked, 40);
}

TEST(GatherVmap, ScatterAddMatchesLoopForEveryMappedOperand) {
  constexpr int64_t kB = 3;
  struct ScatterCfg {
    Shape shape;
    Shape index_shape;
    Shape update_shape;
    int64_t hi;
    ScatterDimensionNumbers d;
  };
  const ScatterCfg cfgs[] = {
      {{5}, {2, 1}, {2}, 4, {{}, {0}, {0}}},
      {{10}, {3, 1}, {3, 2}, 9, {{1}, {}, {0}}},
      {{10, 5}, {3, 1}, {3, 3}, 9, {{1}, {0}, {0}}},
      {{2, 5}, {2, 2, 1}, {2, 2}, 4, {{}, {1}, {1}, {0}, {0}}},
      {{2, 3, 10}, {3, 2, 1}, {3, 2, 3}, 9, {{2}, {}, {2}, {0, 1}, {1, 0}}},
  };
  int checked = 0;
  for (const ScatterCfg& g : cfgs) {
    for (int mask = 1; mask < 8; ++mask) {
      const bool bx = mask & 1, bi = mask & 2, bu = mask & 4;
      SCOPED_TRACE(shape_str(g.shape) + " mapped " + std::to_string(mask));
      std::vector<Array> xs, is, us, want;
      for (int64_t b = 0; b < kB; ++b) {
        xs.push_back(make('x', g.shape, DType::float32) * float(b + 1));
        is.push_back(((jnp::arange(shape_size(g.index_shape)) * (3 + b)) % (g.hi + 3) - 1)
                         .reshape(g.index_shape));
        us.push_back(make('u', g.update_shape, DType::float32) - float(b));
        want.push_back(lax::scatter_add(bx ? xs.back() : xs[0], bi ? is.back() : is[0],
                                        bu ? us.back() : us[0], g.d));
      }
      // The last axis of each mapped argument, so every rule moves a batch dimension.
      const int64_t xa = int64_t(g.shape.size()), ia = 0, ua = int64_t(g.update_shape.size());
      const Array x = bx ? stack_of(xs, xa) : xs[0];
      const Array i = bi ? stack_of(is, ia) : is[0];
      const Array u = bu ? stack_of(us, ua) : us[0];
      auto f = [&](const Array& a, const Array& b, const Array& c) {
        return lax::scatter_add(a, b, c, g.d);
      };
      const VmapOptions options{.in_axes = {bx ? MapAxes(int(xa)) : MapAxes(None),
                                            bi ? MapAxes(int(ia)) : MapAxes(None),
                                            bu ? MapAxes(int(ua)) : MapAxes(None)}};
      const Array got = vmap(f, options)(x, i, u);
      EXPECT_TRUE(jnp::allclose(got, stack_of(want, 0)).item<bool>());
      ++checked;
    }
  }
  EXPECT_EQ(checked, 35);
}

// The front end's own behaviour: JAX's defaults for a missing mode (gather: promise, so
// clamped; scatters: fill-or-drop), ONE_HOT (jnp's; lax.gather cannot lower it, the
// scatters treat it as PROMISE_IN_BOUNDS), a C++ scalar update taking the operand's dtype,
// and the printed equation.
TEST(GatherApi, ModesDefaultsAndScalars) {
  const Array x = jnp::arange(6).astype(DType::float32);
  const Array idx = jnp::array({7, -1, 2}).reshape({3, 1});
  const GatherDimensionNumbers g{{}, {0}, {0}};
  EXPECT_EQ(lax::gather(x, idx, g, {1}).to_vector<float>(), (std::vector<float>{5, 0, 2}));
  const auto filled =
      lax::gather(x, idx, g, {1}, false, false, GatherScatterMode::FILL_OR_DROP).to_vector<float>();
  EXPECT_TRUE(std::isnan(filled[0]) && std::isnan(filled[1]));
  EXPECT_EQ(filled[2], 2.0f);
  try {
    lax::gather(x, idx, g, {1}, false, false, GatherScatterMode::ONE_HOT);
    ADD_FAILURE() << "ONE_HOT gather did not raise";
  } catch (const NotImplementedError& e) {
    EXPECT_NE(std::string(e.what()).find("ONE_HOT"), std::string::npos) << e.what();
  }
  const ScatterDimensionNumbers sd{{}, {0}, {0}};
  const Array u = jnp::array({10.0f, 20.0f, 30.0f});
  // Out-of-bounds updates are dropped by default, clamped under CLIP.
  EXPECT_EQ(lax::scatter_add(x, idx, u, sd).to_vector<float>(),
            (std::vector<float>{0, 1, 32, 3, 4, 5}));
  EXPECT_EQ(
      lax::scatter_add(x, idx, u, sd, false, false, GatherScatterMode::CLIP).to_vector<float>(),
      (std::vector<float>{20, 1, 32, 3, 4, 15}));
  EXPECT_EQ(
      lax::scatter_add(x, idx, u, sd, false, false, GatherScatterMode::ONE_HOT).to_vector<float>(),
      (std::vector<float>{0, 1, 32, 3, 4, 5}));
  // A C++ scalar update for a single index vector.
  const Array one = jnp::array({4}).reshape({1});
  const Array y = lax::scatter_mul(x, one, 2.5, sd);
  EXPECT_EQ(y.dtype(), DType::float32);
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1, 2, 3, 10, 5}));
  // Repeated indices: the last write wins; the combining scatters combine in order.
  const Array rep = jnp::array({1, 1, 1}).reshape({3, 1});
  EXPECT_EQ(lax::scatter(x, rep, u, sd).to_vector<float>()[1], 30.0f);
  EXPECT_EQ(lax::scatter_max(x, rep, u, sd).to_vector<float>()[1], 30.0f);
  EXPECT_EQ(lax::scatter_min(x, rep, u, sd).to_vector<float>()[1], 1.0f);
  const std::string text =
      make_jaxpr([&](const Array& a) { return lax::gather(a, idx, g, {1}); })(x).to_string();
  EXPECT_NE(text.find("gather["), std::string::npos) << text;
  EXPECT_NE(text.find("mode=GatherScatterMode.PROMISE_IN_BOUNDS"), std::string::npos) << text;
  EXPECT_NE(text.find("slice_sizes=(1,)"), std::string::npos) << text;
}

}  // namespace
}  // namespace parax
