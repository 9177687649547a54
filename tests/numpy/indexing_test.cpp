// numpy indexing, x.at(...) updates, take, take_along_axis and put_along_axis against JAX:
// every case of tools/make_indexing_goldens.py (JAX's lax_numpy_indexing_test.py tables,
// and lax_numpy_test.py's take tests) is rebuilt here from its recorded operand, index and
// options, computed with parax (eagerly, and a share of them under jit), and compared with
// JAX's dtype, weak type, shape and values, or its error kind and text. Gradients and vmap
// are checked the same way; a sharded operand with sharded indices against the unsharded
// result; and the primitives basic indexing lowers to, as JAX's tests check them.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <regex>
#include <sstream>
#include <string>
#include <vector>

#include "core/parse.h"
#include "core/program.h"
#include "parax/parax.h"
#include "support/errors.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("indexing_cases.txt"));
  return *records;
}

Shape parse_shape(const std::string& s) {
  Shape shape;
  if (s.empty()) return shape;
  for (const std::string& d : testing::split_fields(s, ',')) shape.push_back(std::stoll(d));
  return shape;
}

std::vector<double> parse_values(const std::string& s) {
  std::vector<double> v;
  if (s.empty()) return v;
  for (const std::string& x : testing::split_fields(s, ',')) v.push_back(std::stod(x));
  return v;
}

Array make_array(const std::string& dtype, const std::string& shape, const std::string& vals) {
  return jnp::array(parse_values(vals), parse_shape(shape), dtype_from_name(dtype));
}

// `dtype|shape|values`, or a C++ scalar `lit|int|3`, `lit|float|2.5`, `lit|bool|1`.
ArrayLike parse_operand(const std::string& rec) {
  std::vector<std::string> p = testing::split_fields(rec, '|');
  if (p[0] == "lit") {
    if (p[1] == "float") return ArrayLike(std::stod(p[2]));
    if (p[1] == "bool") return ArrayLike(p[2] == "1");
    const int64_t v = std::stoll(p[2]);
    if (v >= INT32_MIN && v <= INT32_MAX) return ArrayLike(int(v));
    return ArrayLike(v);
  }
  return make_array(p[0], p[1], p[2]);
}

bool has_float_item(const std::string& text) {
  for (const std::string& item : testing::split_fields(text, ';')) {
    if (!item.empty() && item[0] == 'f') return true;
  }
  return false;
}

NumpyIndex parse_index(const std::string& text) {
  std::vector<IndexItem> items;
  if (text.empty()) return NumpyIndex(items);
  for (const std::string& item : testing::split_fields(text, ';')) {
    const char kind = item[0];
    const std::string rest = item.substr(1);
    if (kind == 'i') {
      items.emplace_back(std::stoll(rest));
    } else if (kind == 'N') {
      items.emplace_back(None);
    } else if (kind == 'E') {
      items.emplace_back(Ellipsis);
    } else if (kind == 'B') {
      items.emplace_back(rest == "1");
    } else if (kind == 's') {
      std::vector<std::string> b = testing::split_fields(rest, ',');
      auto bound = [](const std::string& s) -> SliceBound {
        if (s == "_") return None;
        return std::stoll(s);
      };
      items.emplace_back(slice(bound(b[0]), bound(b[1]), bound(b[2])));
    } else if (kind == 'a') {
      std::vector<std::string> p = testing::split_fields(rest, ':');
      items.emplace_back(make_array(p[0], p[1], p.size() > 2 ? p[2] : ""));
    } else {
      ADD_FAILURE() << "unknown index item " << item;
    }
  }
  return NumpyIndex(items);
}

struct Options {
  AtOptions at;
  std::optional<int64_t> axis;
  std::optional<std::string> mode;
  std::optional<bool> wrap;  // given explicitly
  std::string fn;            // apply's function, by name
};

// `at_mode`: the mode is x.at's (else take's own strings).
Options parse_options(const std::string& name, bool at_mode = true) {
  Options o;
  auto it = goldens().find(name + "#opt");
  if (it == goldens().end()) return o;
  for (const std::string& kv : testing::split_fields(it->second, ',')) {
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "mode") {
      o.mode = v;
      if (at_mode) o.at.mode = v;  // may throw Unknown gather mode, inside run()
    } else if (k == "fill") {
      o.at.fill_value = std::stod(v);
    } else if (k == "sorted") {
      o.at.indices_are_sorted = v == "1";
    } else if (k == "unique") {
      o.at.unique_indices = v == "1";
    } else if (k == "wrap") {
      o.at.wrap_negative_indices = v == "1";
      o.wrap = v == "1";
    } else if (k == "fn") {
      o.fn = v;
    } else if (k == "axis") {
      o.axis = std::stoll(v);
    }
  }
  return o;
}

std::string error_text(const std::exception& e) {
  const char* kind = "Error";
  if (dynamic_cast<const NotImplementedError*>(&e))
    kind = "NotImplementedError";
  else if (dynamic_cast<const IndexError*>(&e))
    kind = "IndexError";
  else if (dynamic_cast<const TypeError*>(&e))
    kind = "TypeError";
  else if (dynamic_cast<const ValueError*>(&e))
    kind = "ValueError";
  return std::string("!") + kind + ": " + e.what();
}

void expect_matches(const std::string& name, const Array& x, const std::string& record,
                    double rtol) {
  std::vector<std::string> p = testing::split_fields(record, '|');
  ASSERT_EQ(p.size(), 4u) << name << ": " << record;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), p[0]) << name;
  EXPECT_EQ(x.weak_type() ? "w" : "s", p[1]) << name;
  EXPECT_EQ(shape_str(x.shape()), shape_str(parse_shape(p[2]))) << name;
  if (shape_str(x.shape()) != shape_str(parse_shape(p[2]))) return;
  const std::vector<double> want = parse_values(p[3]);
  const std::vector<double> got = x.to_vector<double>();
  ASSERT_EQ(got.size(), want.size()) << name;
  const bool half = x.dtype() == DType::float16 || x.dtype() == DType::bfloat16;
  const double tol = half ? std::max(rtol, 4e-3) : rtol;
  int reported = 0;
  for (size_t k = 0; k < got.size(); ++k) {
    const double w = want[k], g = got[k];
    const bool ok = std::isnan(w)   ? std::isnan(g)
                    : std::isinf(w) ? g == w
                                    : std::abs(g - w) <= tol * std::abs(w) + tol;
    if (!ok && reported++ < 4) ADD_FAILURE() << name << "[" << k << "]: " << g << " vs " << w;
  }
}

using Fn = std::function<std::vector<Array>(const Array& x, const std::optional<Array>& y)>;

// The same computation eagerly, or jitted with the operand (and array updates) as traced
// arguments.
std::vector<Array> run(const Fn& f, const Array& x, const std::optional<Array>& y, bool jitted) {
  if (!jitted) return f(x, y);
  if (y) {
    return jit([&](const Array& a, const Array& b) { return f(a, b); })(x, *y);
  }
  return jit([&](const Array& a) { return f(a, std::nullopt); })(x);
}

Array cotangent(const Shape& shape) {
  const int64_t n = shape_size(shape);
  std::vector<float> v(static_cast<size_t>(n));
  for (int64_t k = 0; k < n; ++k) v[size_t(k)] = float(k % 7 - 3) / 2.0f;
  return jnp::array(v, shape);
}

Array loss(const Array& y) { return jnp::sum(jnp::sin(y) * cotangent(y.shape())); }

Array apply_update(const IndexUpdateRef& ref, const std::string& op, const ArrayLike& y,
                   const AtOptions& o) {
  if (op == "set") return ref.set(y, o);
  if (op == "add") return ref.add(y, o);
  if (op == "subtract") return ref.subtract(y, o);
  if (op == "multiply") return ref.multiply(y, o);
  if (op == "divide") return ref.divide(y, o);
  if (op == "power") return ref.power(y, o);
  if (op == "min") return ref.min(y, o);
  if (op == "max") return ref.max(y, o);
  throw std::runtime_error("unknown update " + op);
}

// The unary functions of the apply cases, by the goldens' names.
std::function<Array(const Array&)> apply_fn(const std::string& name) {
  if (name == "affine") return [](const Array& v) { return v * 2 + 1; };
  if (name == "square") return [](const Array& v) { return v * v; };
  if (name == "neg") return [](const Array& v) { return -v; };
  if (name == "sin") return [](const Array& v) { return jnp::sin(v); };
  if (name == "cos") return [](const Array& v) { return jnp::cos(v); };
  if (name == "sqrt") return [](const Array& v) { return jnp::sqrt(v); };
  if (name == "log") return [](const Array& v) { return jnp::log(v); };
  if (name == "exp") return [](const Array& v) { return jnp::exp(v); };
  if (name == "negative") return [](const Array& v) { return jnp::negative(v); };
  if (name == "minus_one") return [](const Array& v) { return v - 1; };
  throw std::runtime_error("unknown apply function " + name);
}

// Builds the computation a case records; nullopt when C++ cannot spell its index (a float
// index does not compile in C++).
std::optional<Fn> computation(const std::string& name, const std::string& op) {
  const auto& g = goldens();
  const std::string idx_text = g.count(name + "#idx") ? g.at(name + "#idx") : "";
  if (has_float_item(idx_text)) return std::nullopt;
  if (op == "getitem" || op == "jit_getitem") {
    return [idx_text](const Array& x, const std::optional<Array>&) {
      return std::vector<Array>{x[parse_index(idx_text)]};
    };
  }
  if (op == "get") {
    return [name, idx_text](const Array& x, const std::optional<Array>&) {
      return std::vector<Array>{x.at(parse_index(idx_text)).get(parse_options(name).at)};
    };
  }
  if (op == "take") {
    return [name](const Array& x, const std::optional<Array>& i) {
      Options o = parse_options(name, false);
      std::optional<std::string_view> mode;
      if (o.mode) mode = *o.mode;
      return std::vector<Array>{jnp::take(x, *i, o.axis, mode, o.at.fill_value, o.at.unique_indices,
                                          o.at.indices_are_sorted)};
    };
  }
  if (op == "take_along_axis") {
    return [name](const Array& x, const std::optional<Array>& i) {
      Options o = parse_options(name);
      return std::vector<Array>{
          jnp::take_along_axis(x, *i, o.axis, o.at.mode, o.at.fill_value, o.wrap)};
    };
  }
  if (op == "vmap_take_along_axis") {
    return [name](const Array& xs, const std::optional<Array>& i) {
      Options o = parse_options(name);
      auto f = [&](const Array& x) { return jnp::take_along_axis(x, *i, o.axis, o.at.mode); };
      return std::vector<Array>{vmap(f)(xs)};
    };
  }
  if (op == "apply") {
    return [name, idx_text](const Array& x, const std::optional<Array>&) {
      Options o = parse_options(name);
      return std::vector<Array>{x.at(parse_index(idx_text)).apply(apply_fn(o.fn), o.at)};
    };
  }
  if (op == "mul_jvp") {
    return [idx_text](const Array& x, const std::optional<Array>& z) {
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& a, const Array& b) { return a.at(idx).multiply(b); };
      return std::vector<Array>{jvp(f, std::tuple{x, *z}, std::tuple{x, *z}).second};
    };
  }
  if (op == "jacrev_clip" || op == "jacrev_vmap_clip") {
    const bool mapped = op == "jacrev_vmap_clip";
    return [mapped](const Array& x, const std::optional<Array>& i) {
      auto get = [](const Array& a, const Array& j) { return a.at(j).get({.mode = "clip"}); };
      if (!mapped) return std::vector<Array>{jacrev([&](const Array& a) { return get(a, *i); })(x)};
      auto mapped_get = [&](const Array& a) {
        return vmap([&](const Array& j) { return get(a, j); })(*i);
      };
      return std::vector<Array>{jacrev(mapped_get)(x)};
    };
  }
  if (op == "lax_scatter_apply") {
    return [name](const Array& x, const std::optional<Array>& i) {
      using S = lax::ScatterDimensionNumbers;
      using M = lax::GatherScatterMode;
      struct Case {
        S dnums;
        Shape update_shape;
        std::optional<M> mode;
      };
      // tools/make_indexing_goldens.py's LAX_APPLY.
      const std::vector<Case> cases = {
          {S{{}, {0}, {0}}, {3}, std::nullopt},           {S{{}, {0}, {0}}, {3}, M::CLIP},
          {S{{}, {0}, {0}}, {3}, M::PROMISE_IN_BOUNDS},   {S{{1}, {0}, {0}}, {2, 4}, std::nullopt},
          {S{{}, {1}, {1}, {0}, {0}}, {3}, std::nullopt}, {S{{1}, {0}, {0}}, {2, 5}, std::nullopt},
      };
      const Case& c = cases.at(size_t(std::stoi(name.substr(name.rfind('/') + 1))));
      return std::vector<Array>{lax::scatter_apply(x, *i, apply_fn("affine"), c.dnums,
                                                   c.update_shape, false, false, c.mode)};
    };
  }
  if (op == "apply_i") {
    return [name](const Array& x, const std::optional<Array>& i) {
      Options o = parse_options(name);
      return std::vector<Array>{x.at(*i).apply(apply_fn(o.fn), o.at)};
    };
  }
  if (op == "vmap_xi_apply") {
    return [](const Array& xs, const std::optional<Array>& is) {
      auto f = [](const Array& x, const Array& i) { return x.at(i).apply(apply_fn("minus_one")); };
      return std::vector<Array>{vmap(f)(xs, *is)};
    };
  }
  if (op == "grad_apply") {
    return [idx_text](const Array& x, const std::optional<Array>&) {
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& a) { return jnp::sum(a.at(idx).apply(apply_fn("sin"))); };
      return std::vector<Array>{grad(f)(x)};
    };
  }
  if (op == "grad_apply_other") {
    return [idx_text](const Array& x, const std::optional<Array>& w) {
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& b) { return jnp::sum(x.at(idx).apply(apply_fn("sin")) * b); };
      return std::vector<Array>{grad(f)(*w)};
    };
  }
  if (op == "vmap_x_apply") {
    return [idx_text](const Array& xs, const std::optional<Array>&) {
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& x) { return x.at(idx).apply(apply_fn("affine")); };
      return std::vector<Array>{vmap(f)(xs)};
    };
  }
  if (op == "vmap_i_apply") {
    return [](const Array& x, const std::optional<Array>& is) {
      auto f = [&](const Array& i) { return x.at(i).apply(apply_fn("affine")); };
      return std::vector<Array>{vmap(f)(*is)};
    };
  }
  if (op == "put_along_axis") {
    return [name](const Array& x, const std::optional<Array>&) {
      std::vector<std::string> parts = testing::split_fields(goldens().at(name + "#y"), '#');
      Options o = parse_options(name);
      return std::vector<Array>{jnp::put_along_axis(x, parse_operand(parts[0]),
                                                    parse_operand(parts[1]), o.axis, o.at.mode)};
    };
  }
  if (op == "grad_get") {
    return [name, idx_text](const Array& x, const std::optional<Array>&) {
      AtOptions o = parse_options(name).at;
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& a) { return loss(a.at(idx).get(o)); };
      auto [value, grad] = value_and_grad(f)(x);
      return std::vector<Array>{value, grad};
    };
  }
  if (op == "grad_take" || op == "grad_take_along_axis") {
    const bool along = op == "grad_take_along_axis";
    return [name, along](const Array& x, const std::optional<Array>& i) {
      Options o = parse_options(name, !along ? false : true);
      auto f = [&](const Array& a) {
        if (along) return loss(jnp::take_along_axis(a, *i, o.axis, o.at.mode));
        std::optional<std::string_view> mode;
        if (o.mode) mode = *o.mode;
        return loss(jnp::take(a, *i, o.axis, mode, o.at.fill_value));
      };
      auto [value, grad] = value_and_grad(f)(x);
      return std::vector<Array>{value, grad};
    };
  }
  if (op.starts_with("grad_")) {
    const std::string update = op.substr(5);
    return [name, idx_text, update](const Array& x, const std::optional<Array>& y) {
      AtOptions o = parse_options(name).at;
      NumpyIndex idx = parse_index(idx_text);
      auto f = [&](const Array& a, const Array& b) {
        return loss(apply_update(a.at(idx), update, b, o));
      };
      auto [value, grads] = value_and_grad(f, Argnums<0, 1>{})(x, *y);
      return std::vector<Array>{value, std::get<0>(grads), std::get<1>(grads)};
    };
  }
  if (op == "vmap_x") {
    return [idx_text](const Array& xs, const std::optional<Array>&) {
      NumpyIndex idx = parse_index(idx_text);
      return std::vector<Array>{vmap([&](const Array& x) { return x[idx]; })(xs)};
    };
  }
  if (op == "vmap_x_add") {
    return [idx_text](const Array& xs, const std::optional<Array>& y) {
      NumpyIndex idx = parse_index(idx_text);
      return std::vector<Array>{vmap([&](const Array& x) { return x.at(idx).add(*y); })(xs)};
    };
  }
  if (op == "vmap_i") {
    return [](const Array& x, const std::optional<Array>& is) {
      return std::vector<Array>{vmap([&](const Array& i) { return x[i]; })(*is)};
    };
  }
  if (op == "vmap_i_set") {
    return [](const Array& x, const std::optional<Array>& is) {
      return std::vector<Array>{vmap([&](const Array& i) { return x.at(i).set(9.0); })(*is)};
    };
  }
  // x.at[idx].<op>(y)
  return [name, idx_text, op](const Array& x, const std::optional<Array>& y) {
    const std::string& rec = goldens().at(name + "#y");
    ArrayLike values = y ? ArrayLike(*y) : parse_operand(rec);
    return std::vector<Array>{
        apply_update(x.at(parse_index(idx_text)), op, values, parse_options(name).at)};
  };
}

struct Tally {
  int checked = 0;
  int skipped = 0;
};

// Runs every case whose name starts with one of `prefixes`; every `jit_every`-th also
// under jit.
Tally check_cases(const std::vector<std::string>& prefixes, int jit_every, double rtol = 1e-6) {
  const auto& g = goldens();
  Tally tally;
  int n = 0;
  for (const auto& [key, op] : g) {
    if (!key.ends_with("#op")) continue;
    const std::string name = key.substr(0, key.size() - 3);
    bool selected = false;
    for (const std::string& p : prefixes) selected = selected || name.starts_with(p);
    if (!selected) continue;
    SCOPED_TRACE(name);
    std::optional<Fn> f = computation(name, op);
    if (!f) {
      ++tally.skipped;
      continue;
    }
    const Array x = parse_operand(g.at(name + "#x"));
    std::optional<Array> y;
    if (g.count(name + "#y") && !g.at(name + "#y").starts_with("lit|") && op != "put_along_axis") {
      y = parse_operand(g.at(name + "#y")).array();
    }
    const std::string& want = g.at(name);
    const double tol = op == "power" || op.starts_with("grad") ? std::max(rtol, 2e-5) : rtol;
    for (bool jitted : {false, jit_every > 0 && n % jit_every == 0}) {
      if (jitted && op == "jit_getitem") continue;
      std::vector<Array> out;
      std::string error;
      try {
        out = run(*f, x, y, jitted);
      } catch (const Error& e) {
        error = error_text(e);
      }
      if (want.starts_with("!")) {
        EXPECT_EQ(error, want) << (jitted ? "jit" : "eager");
      } else if (!error.empty()) {
        ADD_FAILURE() << (jitted ? "jit: " : "eager: ") << error << "; JAX gives " << want;
      } else {
        expect_matches(name, out[0], want, tol);
        for (size_t k = 1; k < out.size(); ++k) {
          expect_matches(name + "#g" + std::to_string(k - 1), out[k],
                         g.at(name + "#g" + std::to_string(k - 1)), tol);
        }
      }
      if (!jitted) break;
    }
    ++n;
    ++tally.checked;
  }
  return tally;
}

TEST(Indexing, GetitemMatchesJax) {
  Tally t = check_cases({"getitem/"}, 3);
  EXPECT_GT(t.checked, 450);
  EXPECT_LT(t.skipped, 10);
}

TEST(Indexing, AtGetMatchesJax) {
  Tally t = check_cases({"get/", "get_clip/", "get_fill/", "get_promise_in_bounds/", "get_oob/",
                         "get_static/", "get_err/"},
                        4);
  EXPECT_GT(t.checked, 250);
}

TEST(Indexing, UpdatesMatchJax) {
  Tally t = check_cases({"upd_", "types/"}, 4);
  EXPECT_GT(t.checked, 350);
}

TEST(Indexing, TakeMatchesJax) {
  Tally t = check_cases({"take/"}, 5);
  EXPECT_GT(t.checked, 150);
}

TEST(Indexing, TakeAlongAxisMatchesJax) {
  Tally t = check_cases({"take_along_axis/"}, 4);
  EXPECT_GT(t.checked, 30);
}

TEST(Indexing, TakeAlongAxisOneHotMatchesJax) {
  Tally t = check_cases({"take_along_axis_one_hot/"}, 3);
  EXPECT_GT(t.checked, 40);
}

// x.at[i].apply(f): JAX's IndexedUpdateTest index tables, repeated and out-of-bound
// indices under every mode, windows; eagerly and under jit (grad and vmap: below).
TEST(Indexing, ApplyMatchesJax) {
  Tally t = check_cases({"apply"}, 4);
  EXPECT_GT(t.checked, 150);
}

// testIndexMulGradFailsIfNotUnique, testScatterValuesCastToTargetDType,
// testSegmentSumBehavior, testGradOfVmapOfScatter.
TEST(Indexing, IndexedUpdateSingleTestsMatchJax) {
  Tally t = check_cases({"misc/"}, 1);
  EXPECT_EQ(t.checked, 5);
}

TEST(Indexing, LaxScatterApplyMatchesJax) {
  Tally t = check_cases({"lax_scatter_apply/"}, 1);
  EXPECT_EQ(t.checked, 6);
  const Array x = jnp::ones({3});
  auto f = [](const Array& a) {
    return jnp::sum(lax::scatter_apply(a, jnp::array({0, 0}).reshape({2, 1}),
                                       [](const Array& v) { return jnp::sin(v); },
                                       lax::ScatterDimensionNumbers{{}, {0}, {0}}, {2}));
  };
  EXPECT_THROW_HAS(grad(f)(x), NotImplementedError, "scatter_apply JVP not implemented");
}

TEST(Indexing, ApplyNeedsAScalarFunctionOfTheSameType) {
  const Array v = jnp::arange(5);
  EXPECT_THROW_HAS(v.at(1).apply([](const Array& a) { return a * 1.5; }), TypeError,
                   "[at.apply] func must map a scalar to one of the same type: it maps int32[] "
                   "to float32[]");
  EXPECT_THROW_HAS(v.at(1).apply([](const Array& a) {
    return jnp::stack({a, a});
  }),
                   TypeError, "it maps int32[] to int32[2]");
  // A derivative raises where it is needed: under jit too, and through jvp.
  auto f = [](const Array& x) {
    return jnp::sum(x.at(jnp::array({0, 0})).apply([](const Array& a) { return jnp::sin(a); }));
  };
  const Array x = jnp::ones({3});
  EXPECT_THROW_HAS(grad(jit(f))(x), NotImplementedError, "scatter_apply JVP not implemented");
  EXPECT_THROW_HAS(jvp(f, std::tuple{x}, std::tuple{x}), NotImplementedError,
                   "scatter_apply JVP not implemented");
  EXPECT_FLOAT_EQ(jit(f)(x).item<float>(), std::sin(std::sin(1.0f)) + 2);
  // Differentiating a value func closes over raises the same (JAX: its update_consts).
  auto g = [&](const Array& w) {
    return jnp::sum(x.at(jnp::array({1, 1})).apply([&](const Array& v) { return v * w; }));
  };
  EXPECT_THROW_HAS(grad(g)(jnp::array(3.0f)), NotImplementedError,
                   "scatter_apply JVP not implemented");
  EXPECT_FLOAT_EQ(jit(g)(jnp::array(3.0f)).item<float>(), 11.0f);
}

// ---- printing -------------------------------------------------------------------------------

// The gather and scatter equations of a printed program: whitespace collapsed, variables
// renamed in order of appearance (the programs around them need not be JAX's).
std::vector<std::string> indexing_eqns(const std::string& text) {
  std::vector<std::string> out;
  std::istringstream lines(text);
  std::string line, eqn;
  bool inside = false;
  static const std::regex head(
      R"( = (gather|scatter|scatter-add|scatter-mul|scatter-min|scatter-max)\[)");
  while (std::getline(lines, line)) {
    if (!inside && !std::regex_search(line, head)) continue;
    eqn += " " + line;
    inside = true;
    const size_t first = line.find_first_not_of(' ');
    if (first != std::string::npos && line[first] == ']') {
      eqn = std::regex_replace(eqn, std::regex(R"(\s+)"), " ");
      std::map<std::string, std::string> names;
      std::string renamed;
      static const std::regex var(R"(\b[a-z]{1,2}\b)");
      auto end = std::sregex_iterator();
      size_t at = 0;
      for (auto it = std::sregex_iterator(eqn.begin(), eqn.end(), var); it != end; ++it) {
        const std::string v = it->str();
        renamed += eqn.substr(at, size_t(it->position()) - at);
        at = size_t(it->position()) + v.size();
        if (v == "in") {
          renamed += v;
          continue;
        }
        if (!names.count(v)) names[v] = "v" + std::to_string(names.size());
        renamed += names[v];
      }
      out.push_back(renamed + eqn.substr(at));
      eqn.clear();
      inside = false;
    }
  }
  return out;
}

// make_jaxpr's gather and scatter equations print as JAX's do: one dimension-numbers
// record, fill_value written out, a scatter's update_jaxpr and update_consts, JAX's order.
TEST(Indexing, GatherAndScatterPrintAsJax) {
  const Array x34 = jnp::zeros({3, 4});
  const Array i2 = jnp::zeros({2}, DType::int32);
  const Array y24 = jnp::zeros({2, 4});
  using Args = std::vector<Array>;
  using G = lax::GatherDimensionNumbers;
  using S = lax::ScatterDimensionNumbers;
  const std::map<std::string, std::pair<std::function<Array(const Args&)>, Args>> cases = {
      {"getitem", {[](const Args& a) { return a[0][a[1]]; }, {x34, i2}}},
      {"getitem_2d",
       {[](const Args& a) {
          return a[0][{a[1], slice(), a[2]}];
        },
        {jnp::zeros({2, 3, 4}), jnp::zeros({5}, DType::int32), jnp::zeros({5}, DType::int32)}}},
      {"get_fill", {[](const Args& a) { return a[0].at(a[1]).get({.mode = "fill"}); }, {x34, i2}}},
      {"get_fill_int",
       {[](const Args& a) { return a[0].at(a[1]).get({.mode = "fill"}); },
        {jnp::zeros({3, 4}, DType::int32), i2}}},
      {"get_fill_uint8",
       {[](const Args& a) { return a[0].at(a[1]).get({.mode = "fill"}); },
        {jnp::zeros({6}, DType::uint8), i2}}},
      {"get_fill_bool",
       {[](const Args& a) { return a[0].at(a[1]).get({.mode = "fill"}); },
        {jnp::zeros({6}, DType::bool_), i2}}},
      {"get_fill_value",
       {[](const Args& a) { return a[0].at(a[1]).get({.mode = "fill", .fill_value = 2.5}); },
        {x34, i2}}},
      {"get_clip", {[](const Args& a) { return a[0].at(a[1]).get({.mode = "clip"}); }, {x34, i2}}},
      {"get_sorted",
       {[](const Args& a) {
          return a[0].at(a[1]).get({.indices_are_sorted = true, .unique_indices = true});
        },
        {x34, i2}}},
      {"set", {[](const Args& a) { return a[0].at(a[1]).set(a[2]); }, {x34, i2, y24}}},
      {"add", {[](const Args& a) { return a[0].at(a[1]).add(a[2]); }, {x34, i2, y24}}},
      {"multiply", {[](const Args& a) { return a[0].at(a[1]).multiply(a[2]); }, {x34, i2, y24}}},
      {"min",
       {[](const Args& a) { return a[0].at(a[1]).min(a[2], {.mode = "clip"}); }, {x34, i2, y24}}},
      {"max",
       {[](const Args& a) { return a[0].at(a[1]).max(a[2], {.mode = "promise_in_bounds"}); },
        {x34, i2, y24}}},
      {"add_int",
       {[](const Args& a) { return a[0].at(a[1]).add(a[2]); },
        {jnp::zeros({3, 4}, DType::int32), i2, jnp::zeros({2, 4}, DType::int32)}}},
      {"take_along_axis",
       {[](const Args& a) { return jnp::take_along_axis(a[0], a[1], 1); },
        {x34, jnp::zeros({3, 2}, DType::int32)}}},
      {"lax_gather_batching",
       {[](const Args& a) {
          return lax::gather(a[0], a[1], G{{1}, {1}, {1}, {0}, {0}}, {1, 1, 5}, false, false,
                             lax::GatherScatterMode::CLIP);
        },
        {jnp::zeros({3, 4, 5}), jnp::zeros({3, 1}, DType::int32)}}},
      {"lax_scatter_add_batching",
       {[](const Args& a) {
          return lax::scatter_add(a[0], a[1], a[2], S{{1}, {1}, {1}, {0}, {0}}, false, false,
                                  lax::GatherScatterMode::FILL_OR_DROP);
        },
        {jnp::zeros({3, 4, 5}), jnp::zeros({3, 1}, DType::int32), jnp::zeros({3, 5})}}},
      {"grad_getitem",
       {[](const Args& a) { return grad([&](const Array& x) { return jnp::sum(x[a[1]]); })(a[0]); },
        {x34, i2}}},
  };
  for (const auto& [name, c] : cases) {
    SCOPED_TRACE(name);
    const auto& [fn, args] = c;
    const std::string text = make_jaxpr(fn)(args).to_string();
    const std::vector<std::string> got = indexing_eqns(text);
    const std::vector<std::string> want = indexing_eqns(goldens().at("jaxpr/" + name));
    ASSERT_FALSE(want.empty());
    EXPECT_EQ(got, want) << text << "\nJAX:\n" << goldens().at("jaxpr/" + name);
  }
}

// The printed params parse back to the same equations.
TEST(Indexing, PrintedGatherAndScatterParseBack) {
  auto f = [](const Array& x, const Array& i) {
    Array y = x.at(i).get({.mode = "fill"}) + x.at(i).get({.mode = "fill", .fill_value = 2.5});
    return x.at(i).add(y).at(i).set(y, {.mode = "clip"}).at(i).max(y);
  };
  const std::string text =
      make_jaxpr(f)(jnp::zeros({3, 4}), jnp::zeros({2}, DType::int32)).to_string();
  const std::string again = core::to_string(core::parse_program(text));
  EXPECT_EQ(again, text);
  EXPECT_THROW_HAS(
      core::parse_program(std::regex_replace(text, std::regex("offset_dims"), "offset_dimz")),
      Error, "dimension_numbers: expected GatherDimensionNumbers(offset_dims=(...)");
}

TEST(Indexing, PutAlongAxisMatchesJax) {
  Tally t = check_cases({"put_along_axis/"}, 4);
  EXPECT_GT(t.checked, 30);
}

TEST(Indexing, GradsMatchJax) {
  Tally t = check_cases({"grad_"}, 6);
  EXPECT_GT(t.checked, 100);
}

TEST(Indexing, VmapMatchesJax) {
  Tally t = check_cases({"vmap_"}, 2);
  EXPECT_GT(t.checked, 15);
}

// The getitem cases again with their integer index arrays as traced jit arguments (JAX's
// testAdvancedIntegerIndexing passes the indexer through jit the same way).
TEST(Indexing, TracedIndexArraysMatchJax) {
  const auto& g = goldens();
  int checked = 0;
  for (const auto& [key, op] : g) {
    if (!key.starts_with("getitem/") || !key.ends_with("/float32#op")) continue;
    const std::string name = key.substr(0, key.size() - 3);
    const std::string& text = g.at(name + "#idx");
    if (has_float_item(text)) continue;
    const std::vector<IndexItem> items = parse_index(text).items();
    std::vector<Array> arrays;
    for (const IndexItem& item : items) {
      const Array* a = std::get_if<Array>(&item.value());
      if (a && a->dtype() != DType::bool_) arrays.push_back(*a);
    }
    if (arrays.empty()) continue;
    SCOPED_TRACE(name);
    auto f = [&](const Array& x, const std::vector<Array>& traced) {
      std::vector<IndexItem> rebuilt;
      size_t k = 0;
      for (const IndexItem& item : items) {
        const Array* a = std::get_if<Array>(&item.value());
        rebuilt.push_back(a && a->dtype() != DType::bool_ ? IndexItem(traced[k++]) : item);
      }
      return x[NumpyIndex(rebuilt)];
    };
    std::string error;
    std::optional<Array> out;
    try {
      out = jit(f)(parse_operand(g.at(name + "#x")).array(), arrays);
    } catch (const Error& e) {
      error = error_text(e);
    }
    const std::string& want = g.at(name);
    if (want.starts_with("!")) {
      EXPECT_EQ(error, want);
    } else if (!out) {
      ADD_FAILURE() << error << "; JAX gives " << want;
    } else {
      expect_matches(name, *out, want, 0);
    }
    ++checked;
  }
  EXPECT_GT(checked, 40);
}

TEST(Indexing, TracedBooleanMaskRaises) {
  Array x = jnp::zeros({3});
  Array m = jnp::array({true, true, false});
  try {
    jit([](const Array& a, const Array& mask) { return a[mask]; })(x, m);
    FAIL() << "expected IndexError";
  } catch (const IndexError& e) {
    EXPECT_EQ(std::string("!IndexError: ") + e.what(), goldens().at("jit/bool"));
  }
  // A concrete mask captured by the traced function is a constant: it works.
  Array y = jit([&](const Array& a) { return a[m]; })(jnp::arange(3, DType::float32));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0.0f, 1.0f}));
}

TEST(Indexing, WeakTypesKept) {
  // testIndexingWeakTypes: x.at[...] keeps a weakly typed operand's dtype and weak type.
  Array wx = jnp::arange(5) * 1.0;  // JAX: int32 * a Python float is a weak float32
  ASSERT_TRUE(wx.weak_type());
  expect_matches("weak/set", wx.at(0).set(1.0), goldens().at("weak/set"), 0);
  expect_matches("weak/add", wx.at(0).add(1.0), goldens().at("weak/add"), 0);
  expect_matches("weak/multiply", wx.at(0).multiply(1.0), goldens().at("weak/multiply"), 0);
}

// ---- the C++ spellings ---------------------------------------------------------------------

TEST(Indexing, SpellingsReadLikeNumpy) {
  Array x = jnp::arange(24, DType::float32).reshape({2, 3, 4});
  auto values = [](const Array& a) { return a.to_vector<float>(); };
  // An integer still picks Array::operator[](int64_t); a braced list is a tuple.
  EXPECT_EQ(shape_str(x[1].shape()), "(3, 4)");
  EXPECT_EQ(values(x[-1]), values(x[{1}]));
  EXPECT_EQ(values(x[{1, 2}]), (std::vector<float>{20, 21, 22, 23}));
  EXPECT_EQ((x[{1, 2, 3}].item<float>()), 23.0f);
  // x[0, 1::-1] and slice(stop), slice(start, stop, step), slice() as `:`.
  EXPECT_EQ(values(x[{0, slice(1, None, -1), 0}]), (std::vector<float>{4, 0}));
  EXPECT_EQ(values(x[{1, slice(2), slice()}]), values(x[1].slice({Slice{0, 2}})));
  EXPECT_EQ(values(x[{0, 0, slice(None, None, 2)}]), (std::vector<float>{0, 2}));
  // A shard's parax::Slice works as the slice it spells.
  EXPECT_EQ(values(x[{0, Slice{1, 3}, 0}]), (std::vector<float>{4, 8}));
  // newaxis (= None), Ellipsis.
  EXPECT_EQ(shape_str(x[{Ellipsis, newaxis, 0}].shape()), "(2, 3, 1)");
  EXPECT_EQ(shape_str(x[None].shape()), "(1, 2, 3, 4)");
  EXPECT_EQ(shape_str(x[NumpyIndex{}].shape()), "(2, 3, 4)");
  // Integer and boolean arrays, alone and mixed; scalar booleans.
  Array i = jnp::array({2, 0});
  EXPECT_EQ(shape_str(x[i].shape()), "(2, 3, 4)");
  EXPECT_EQ(shape_str(x[{slice(), i, i}].shape()), "(2, 2)");
  EXPECT_EQ(shape_str(x[{i, slice(), i}].shape()), "(2, 3)");
  // numpy's rule: advanced indices (integers count) apart put their dimensions first.
  EXPECT_EQ(shape_str(x[{0, slice(), i}].shape()), "(2, 3)");
  EXPECT_EQ(shape_str(x[{i.reshape({2, 1}), Ellipsis, i}].shape()), "(2, 2, 3)");
  // Lists of integers inside a tuple: numpy's x[[1, 0], 2, [3, 3]].
  EXPECT_EQ(values(x[{{1, 0}, 2, {3, 3}}]), (std::vector<float>{23, 11}));
  EXPECT_EQ(values(x[{{1, 0}}]), values(x[jnp::array({1, 0})]));
  EXPECT_EQ(values(x[{1, std::vector<int64_t>{2, 0}}]), values(x[{1, jnp::array({2, 0})}]));
  Array mask = x[{0, 0}] > 1.5f;
  EXPECT_EQ(values(x[{1, 1, mask}]), (std::vector<float>{18, 19}));
  // A lone bool converts to int64 (x[true] is x[1]): spell numpy's x[True] explicitly.
  EXPECT_EQ(shape_str(x[NumpyIndex(true)].shape()), "(1, 2, 3, 4)");
  EXPECT_EQ(shape_str(x[{Ellipsis, false}].shape()), "(2, 3, 4, 0)");
  // x.at(...): updates and get with keyword options.
  Array v = jnp::arange(5, DType::float32);
  EXPECT_EQ(values(v.at(2).add(10)), (std::vector<float>{0, 1, 12, 3, 4}));
  EXPECT_EQ(values(v.at(10).add(10)), values(v));  // dropped
  EXPECT_EQ(values(v.at(20).add(10, {.mode = "clip"})), (std::vector<float>{0, 1, 2, 3, 14}));
  EXPECT_EQ(v.at(20).get({.mode = "clip"}).item<float>(), 4.0f);
  EXPECT_TRUE(std::isnan(v.at(20).get({.mode = "fill"}).item<float>()));
  EXPECT_EQ(v.at(20).get({.mode = "fill", .fill_value = -1}).item<float>(), -1.0f);
  EXPECT_EQ(values(v.at(-1).set(99)), (std::vector<float>{0, 1, 2, 3, 99}));
  EXPECT_EQ(values(v.at(-1).set(99, {.mode = lax::GatherScatterMode::FILL_OR_DROP,
                                     .wrap_negative_indices = false})),
            values(v));
  EXPECT_EQ(values(v.at({slice(1, None)}).set(v.slice({Slice{0, 4}}) + 1)),
            (std::vector<float>{0, 1, 2, 3, 4}));
  EXPECT_EQ(values(v.at(jnp::array({0, 0, 4})).add(1)), (std::vector<float>{2, 1, 2, 3, 5}));
  EXPECT_THROW(IndexMode("wrap"), ValueError);
  EXPECT_EQ(values(jnp::take_along_axis(v, jnp::array({1, 9}), 0, "one_hot")),
            (std::vector<float>{1, 0}));
  // x.at[i].apply(f): f once per time an index names an element.
  auto twice_plus_one = [](const Array& a) { return a * 2 + 1; };
  EXPECT_EQ(values(v.at(jnp::array({0, 0, 2})).apply(twice_plus_one)),
            (std::vector<float>{3, 1, 5, 3, 4}));
  EXPECT_EQ(values(v.at(slice(1, 3)).apply(twice_plus_one)), (std::vector<float>{0, 3, 5, 3, 4}));
}

TEST(Indexing, NarrowIndexDtypesDoNotOverflow) {
  // JAX adds the axis size to a negative int8 index in int8 (OverflowError for 200);
  // parax normalizes in the gather's index dtype, as numpy's result is.
  Array x = jnp::arange(200, DType::float32);
  Array i = jnp::array({-1, 120, -128}, std::nullopt, DType::int8);
  EXPECT_EQ(x[i].to_vector<float>(), (std::vector<float>{199, 120, 72}));
  EXPECT_EQ(x.at(i).set(0.0f).to_vector<float>()[199], 0.0f);
}

// ---- lowering: no gather where slicing does (JAX's testSimpleIndexingUsesSlice,
// testTrivialGatherIsntGenerated) --------------------------------------------------------

std::vector<std::string> primitives(const Jaxpr& jaxpr) {
  static const std::regex kEqn(R"(\] = ([a-z_0-9]+))");
  std::vector<std::string> prims;
  const std::string text = jaxpr.to_string();
  for (auto it = std::sregex_iterator(text.begin(), text.end(), kEqn); it != std::sregex_iterator();
       ++it) {
    prims.push_back((*it)[1]);
  }
  return prims;
}

using Prims = std::vector<std::string>;

TEST(Indexing, BasicIndexingLowersToSlices) {
  Array m34 = jnp::ones({3, 4});
  Array t345 = jnp::ones({3, 4, 5});
  Array v3 = jnp::ones({3});
  Array v4 = jnp::arange(4);
  auto prims_of = [](auto f, const Array& x) { return primitives(make_jaxpr(f)(x)); };
  EXPECT_EQ(prims_of([](const Array& x) { return x[{slice(2), slice(2)}]; }, m34), Prims{"slice"});
  EXPECT_EQ(prims_of(
                [](const Array& x) {
                  return x[{0, slice(2), 1}];
                },
                t345),
            (Prims{"slice", "squeeze"}));
  EXPECT_EQ(prims_of([](const Array& x) { return x[{0, 0}]; }, t345), (Prims{"slice", "squeeze"}));
  EXPECT_EQ(prims_of(
                [](const Array& x) {
                  return x[{slice(), 1}];
                },
                t345),
            (Prims{"slice", "squeeze"}));
  EXPECT_EQ(prims_of(
                [](const Array& x) {
                  return x[{Ellipsis, 0}];
                },
                t345),
            (Prims{"slice", "squeeze"}));
  EXPECT_EQ(prims_of(
                [](const Array& x) {
                  return x[{Ellipsis, slice(0, 1)}];
                },
                v3),
            Prims{"slice"});
  EXPECT_EQ(prims_of(
                [](const Array& x) {
                  return x[{slice(), slice(None, None, -1)}];
                },
                m34),
            Prims{"rev"});
  EXPECT_EQ(prims_of([](const Array& x) { return x[{slice(0, 6, 1)}]; }, v4), Prims{});
  EXPECT_EQ(prims_of([](const Array& x) { return x[{slice(4)}]; }, v4), Prims{});
  EXPECT_EQ(prims_of([](const Array& x) { return x[slice(None, None, -1)]; }, v4), Prims{"rev"});
  Prims p = prims_of([](const Array& x) { return x[{slice(), None}]; }, v4);
  EXPECT_EQ(p.size(), 1u);
  EXPECT_NE(p[0], "gather");
  // A traced scalar index: dynamic_slice then squeeze; an index array: a gather.
  auto traced = make_jaxpr([](const Array& x, const Array& i) { return x[i]; });
  p = primitives(traced(jnp::ones({4}), jnp::array(2)));
  ASSERT_GE(p.size(), 2u);
  EXPECT_EQ(p[p.size() - 2], "dynamic_slice");
  EXPECT_EQ(p.back(), "squeeze");
  p = primitives(traced(jnp::ones({4}), jnp::array({2, 3})));
  EXPECT_EQ(p.back(), "gather");
  // Unsigned indices need no wrapping of negative values (testIndicesNormalizationByType).
  p = primitives(traced(jnp::arange(10), jnp::array({1, 2, 3}, std::nullopt, DType::uint32)));
  EXPECT_EQ(std::count(p.begin(), p.end(), "select_n"), 0) << p.size();
  p = primitives(traced(jnp::arange(10), jnp::array({1, 2, 3})));
  EXPECT_EQ(std::count(p.begin(), p.end(), "select_n"), 1);
}

// ---- sharding --------------------------------------------------------------------------------

TEST(Indexing, ShardedOperandAndIndices) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = jnp::arange(64 * 3, DType::float32).reshape({64, 3});
  Array i = jnp::array({63, 0, -1, 5, 17, 40, 2, 9, 33, 31, 8, 62, 1, 7, 50, 20});
  Array xs = device_put(x, NamedSharding(mesh, P("x")));
  Array is = device_put(i, NamedSharding(mesh, P("x")));
  const auto want = x[i].to_vector<float>();
  EXPECT_EQ(xs[is].to_vector<float>(), want);
  EXPECT_EQ(jit([](const Array& a, const Array& b) { return a[b]; })(xs, is).to_vector<float>(),
            want);
  EXPECT_EQ((xs[{is, 1}].to_vector<float>()), (x[{i, 1}].to_vector<float>()));
  EXPECT_EQ((xs[{slice(None, None, -3), slice(1, None)}].to_vector<float>()),
            (x[{slice(None, None, -3), slice(1, None)}].to_vector<float>()));
  // Updates with batch-sharded indices and updates.
  Array u = jnp::arange(16 * 3, DType::float32).reshape({16, 3});
  Array us = device_put(u, NamedSharding(mesh, P("x")));
  EXPECT_EQ(xs.at(is).add(us).to_vector<float>(), x.at(i).add(u).to_vector<float>());
  EXPECT_EQ(xs.at(is).set(us).to_vector<float>(), x.at(i).set(u).to_vector<float>());
  // Gradient through a sharded gather.
  auto f = [](const Array& a, const Array& b) { return jnp::sum(jnp::sin(a[b])); };
  EXPECT_EQ(grad(f)(xs, is).to_vector<float>(), grad(f)(x, i).to_vector<float>());
  // take along a sharded axis, and take_along_axis with sharded indices.
  Array t = jnp::take(xs, is, 0);
  EXPECT_EQ(t.to_vector<float>(), jnp::take(x, i, 0).to_vector<float>());
  Array j = jnp::array(std::vector<int>(64, 2)).reshape({64, 1});
  Array js = device_put(j, NamedSharding(mesh, P("x")));
  EXPECT_EQ(jnp::take_along_axis(xs, js, 1).to_vector<float>(),
            jnp::take_along_axis(x, j, 1).to_vector<float>());
  EXPECT_EQ(jnp::take_along_axis(xs, js, 1, "one_hot").to_vector<float>(),
            jnp::take_along_axis(x, j, 1).to_vector<float>());
  // apply with repeated sharded indices (twice on element 63), and through jit.
  Array r = jnp::array({63, 0, -1, 5, 17, 40, 2, 9, 33, 31, 8, 62, 1, 7, 50, 20});
  Array rs = device_put(r, NamedSharding(mesh, P("x")));
  auto half = [](const Array& a) { return a * 0.5f; };
  const auto applied = x.at(r).apply(half).to_vector<float>();
  EXPECT_EQ(applied[63 * 3], 63 * 3 / 4.0f);
  EXPECT_EQ(xs.at(rs).apply(half).to_vector<float>(), applied);
  EXPECT_EQ(jit([&](const Array& a, const Array& b) { return a.at(b).apply(half); })(xs, rs)
                .to_vector<float>(),
            applied);
}

// Indexing along an unsharded dimension keeps the operand's layout and needs no
// communication, as in JAX (x[:, idx], x.at[:, idx].add(y) on a P('x', None) operand).
TEST(Indexing, IndexingAnUnshardedDimensionStaysLocal) {
  Mesh mesh = make_mesh({8}, {"x"});
  Array x = device_put(jnp::arange(16 * 6, DType::float32).reshape({16, 6}),
                       NamedSharding(mesh, P("x", None)));
  Array idx = jnp::array({5, 0, -1, 2});
  auto take_cols = [&](const Array& a) { return a[{slice(), idx}]; };
  auto add_cols = [&](const Array& a) { return a.at({slice(), idx}).add(1.0f); };
  for (const auto& f : std::vector<std::function<Array(const Array&)>>{take_cols, add_cols}) {
    Array y = jit(f)(x);
    EXPECT_TRUE(y.sharding().is_equivalent_to(NamedSharding(mesh, P("x", None)), 2))
        << y.sharding().to_string();
    const std::string text = jit(f).lower(x).compile().as_text();
    for (const char* collective : {"all-gather", "all-reduce", "all-to-all"}) {
      EXPECT_EQ(text.find(collective), std::string::npos) << collective << "\n" << text;
    }
    EXPECT_EQ(y.to_vector<float>(),
              f(jnp::arange(16 * 6, DType::float32).reshape({16, 6})).to_vector<float>());
  }
}

// testJVPOfGradOfIndexing: second order through gather's transpose (a scatter-add).
TEST(Indexing, JvpOfGradOfIndexing) {
  Array x = jnp::ones({3, 4});
  Array i = jnp::ones({3}, DType::int32);
  auto g = grad([&](const Array& a) { return jnp::sum(a[i]); });
  auto [primal, tangent] = jvp(g, std::make_tuple(x), std::make_tuple(x));
  std::vector<float> want(12, 0.0f);
  for (int c = 0; c < 4; ++c) want[size_t(4 + c)] = 3.0f;
  EXPECT_EQ(primal.to_vector<float>(), want);
  EXPECT_EQ(tangent.to_vector<float>(), std::vector<float>(12, 0.0f));
}

// testIndexedUpdateAliasingBug: an update reading the operand agrees eagerly and jitted.
TEST(Indexing, UpdateReadingItsOperandAgreesUnderJit) {
  auto f = [](const Array& x) { return x.at({slice(1, None)}).set(1 + x[{slice(None, -1)}]); };
  Array y = jnp::zeros({8});
  EXPECT_EQ(f(y).to_vector<float>(), jit(f)(y).to_vector<float>());
  EXPECT_EQ(f(y).to_vector<float>(), (std::vector<float>{0, 1, 1, 1, 1, 1, 1, 1}));
}

// ---- vmap over several index kinds against a loop ------------------------------------------

TEST(Indexing, VmapMatchesLoop) {
  Array xs = jnp::arange(2 * 4 * 5, DType::float32).reshape({2, 4, 5});
  Array is = jnp::array({{3, -1}, {0, 4}});
  auto f = [](const Array& x, const Array& i) {
    return x[{slice(1, None), i}] + jnp::sum(x.at({0, i}).multiply(2.0f)[{slice(), i}]);
  };
  Array batched = vmap(f)(xs, is);
  for (int64_t b = 0; b < 2; ++b) {
    EXPECT_EQ(batched[b].to_vector<float>(), f(xs[b], is[b]).to_vector<float>()) << b;
  }
}

}  // namespace
}  // namespace parax
