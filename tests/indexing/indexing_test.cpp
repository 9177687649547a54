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
#include <sstream>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = parax::numpy;

const std::map<std::string, std::string>& goldens() {
  static const auto* records =
      new std::map<std::string, std::string>(testing::read_golden("indexing_cases.txt"));
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

Shape parse_shape(const std::string& s) {
  Shape shape;
  if (s.empty()) return shape;
  for (const std::string& d : split(s, ',')) shape.push_back(std::stoll(d));
  return shape;
}

std::vector<double> parse_values(const std::string& s) {
  std::vector<double> v;
  if (s.empty()) return v;
  for (const std::string& x : split(s, ',')) v.push_back(std::stod(x));
  return v;
}

Array make_array(const std::string& dtype, const std::string& shape, const std::string& vals) {
  return jnp::array(parse_values(vals), parse_shape(shape), dtype_from_name(dtype));
}

// `dtype|shape|values`, or a C++ scalar `lit|int|3`, `lit|float|2.5`, `lit|bool|1`.
ArrayLike parse_operand(const std::string& rec) {
  std::vector<std::string> p = split(rec, '|');
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
  for (const std::string& item : split(text, ';')) {
    if (!item.empty() && item[0] == 'f') return true;
  }
  return false;
}

NumpyIndex parse_index(const std::string& text) {
  std::vector<IndexItem> items;
  if (text.empty()) return NumpyIndex(items);
  for (const std::string& item : split(text, ';')) {
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
      std::vector<std::string> b = split(rest, ',');
      auto bound = [](const std::string& s) -> SliceBound {
        if (s == "_") return None;
        return std::stoll(s);
      };
      items.emplace_back(slice(bound(b[0]), bound(b[1]), bound(b[2])));
    } else if (kind == 'a') {
      std::vector<std::string> p = split(rest, ':');
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
};

Options parse_options(const std::string& name) {
  Options o;
  auto it = goldens().find(name + "#opt");
  if (it == goldens().end()) return o;
  for (const std::string& kv : split(it->second, ',')) {
    const size_t eq = kv.find('=');
    const std::string k = kv.substr(0, eq), v = kv.substr(eq + 1);
    if (k == "mode") {
      o.mode = v;
      o.at.mode = v;  // may throw Unknown gather mode: run() catches at use
    } else if (k == "fill") {
      o.at.fill_value = std::stod(v);
    } else if (k == "sorted") {
      o.at.indices_are_sorted = v == "1";
    } else if (k == "unique") {
      o.at.unique_indices = v == "1";
    } else if (k == "wrap") {
      o.at.wrap_negative_indices = v == "1";
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
  std::vector<std::string> p = split(record, '|');
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
    const bool ok = std::isnan(w) ? std::isnan(g)
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
  std::vector<float> v(size_t(n));
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
      Options o = parse_options(name);
      std::optional<std::string_view> mode;
      if (o.mode) mode = *o.mode;
      return std::vector<Array>{jnp::take(x, *i, o.axis, mode, o.at.fill_value,
                                          o.at.unique_indices, o.at.indices_are_sorted)};
    };
  }
  if (op == "take_along_axis") {
    return [name](const Array& x, const std::optional<Array>& i) {
      Options o = parse_options(name);
      return std::vector<Array>{jnp::take_along_axis(x, *i, o.axis, o.at.mode, o.at.fill_value)};
    };
  }
  if (op == "put_along_axis") {
    return [name](const Array& x, const std::optional<Array>&) {
      std::vector<std::string> parts = split(goldens().at(name + "#y"), '#');
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
      Options o = parse_options(name);
      auto f = [&](const Array& a) {
        if (along) return loss(jnp::take_along_axis(a, *i, o.axis));
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
    if (g.count(name + "#y") && !g.at(name + "#y").starts_with("lit|") &&
        op != "put_along_axis") {
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
  Tally t = check_cases({"get/", "get_clip/", "get_fill/", "get_promise_in_bounds/",
                         "get_oob/", "get_static/", "get_err/"},
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

TEST(Indexing, TracedBooleanMaskRaises) {
  Tally t = check_cases({"jit/"}, 0);
  EXPECT_EQ(t.checked, 1);
  // The golden case indexes with a mask captured as a constant; a traced one must raise.
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

}  // namespace
}  // namespace parax
