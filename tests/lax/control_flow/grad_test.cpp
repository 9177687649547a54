// Differentiation through control flow (jvp, grad, vjp; eager, under jit, of jit) against
// JAX 0.10.2's answers in tests/golden/control_flow_grad_cases.txt, written by
// tools/make_control_flow_grad_goldens.py from the same functions in Python. Ported from
// JAX's tests/lax_control_flow_test.py: testCondGrad, testSwitchGrad, testScanGrad,
// testScanRnn, testForiLoopGrad..., testWhileJVP, testWhileGradError.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = numpy;

const std::map<std::string, std::string>& goldens() {
  static const auto* g =
      new std::map<std::string, std::string>(testing::read_golden("control_flow_grad_cases.txt"));
  return *g;
}

std::vector<double> golden(const std::string& name) {
  auto it = goldens().find(name);
  if (it == goldens().end()) throw std::runtime_error("no golden " + name);
  std::vector<double> out;
  std::stringstream in(it->second);
  std::string v;
  while (std::getline(in, v, ',')) out.push_back(std::stod(v));
  return out;
}

// The values of the arrays, flattened one after the other.
std::vector<double> flat(std::initializer_list<Array> arrays) {
  std::vector<double> out;
  for (const Array& a : arrays) {
    for (float v : a.to_vector<float>()) out.push_back(v);
  }
  return out;
}

void expect_golden(const std::string& name, const std::vector<double>& got) {
  const std::vector<double> want = golden(name);
  ASSERT_EQ(got.size(), want.size()) << name;
  for (size_t i = 0; i < got.size(); ++i) {
    EXPECT_NEAR(got[i], want[i], 1e-4 * std::max(1.0, std::abs(want[i])))
        << name << "[" << i << "]";
  }
}

Array x3() { return jnp::array(std::vector<float>{0.5f, 1.0f, 1.5f}); }
Array xs42() {
  return jnp::reshape(
      jnp::array(std::vector<float>{0.1f, -0.2f, 0.3f, 0.4f, -0.5f, 0.6f, 0.7f, -0.8f}), {4, 2});
}
Array w2() { return jnp::array(std::vector<float>{0.9f, -1.1f}); }
Array c2() { return jnp::array(std::vector<float>{0.2f, 0.3f}); }
Array scalar(float v) { return jnp::array(std::vector<float>{v})[0]; }

Array cond_f(const Array& x) {
  return jnp::sum(lax::cond(
      jnp::sum(x) > 0.0f, [](const Array& y) { return jnp::sin(y) * y; },
      [](const Array& y) { return jnp::cos(y) + y; }, x));
}

TEST(Grad, CondBothBranches) {
  for (auto [tag, x] : {std::pair{"true", x3()}, std::pair{"false", -x3()}}) {
    const std::string name = std::string("cond_") + tag;
    expect_golden(name + ":out", flat({cond_f(x)}));
    expect_golden(name + ":grad", flat({grad(cond_f)(x)}));
    expect_golden(name + ":grad", flat({jit(grad(cond_f))(x)}));
    expect_golden(name + ":grad", flat({grad(jit(cond_f))(x)}));
    auto [out, t] = jvp(cond_f, std::tuple{x}, std::tuple{jnp::ones_like(x)});
    expect_golden(name + ":jvp", flat({t}));
    auto gradgrad = grad([](const Array& x) { return jnp::sum(grad(cond_f)(x) * x); });
    expect_golden(name + ":gradgrad", flat({gradgrad(x)}));
  }
}

Array cond2_f(const Array& x, const Array& y) {
  const Array c = jnp::array(std::vector<float>{2.0f, -1.0f, 0.5f});
  auto [a, b] = lax::cond(
      x[0] > 0.0f,
      [&](const Array& x, const Array& y) {
        return std::pair{x * y + c, 1.0f + 0.0f * y[0]};
      },
      [](const Array& x, const Array& y) {
        return std::pair{x - y, jnp::sum(y * y)};
      },
      x, y);
  return jnp::sum(a * a) + b;
}

TEST(Grad, CondTwoOperandsAndAConstant) {
  for (auto [tag, x] : {std::pair{"true", x3()}, std::pair{"false", -x3()}}) {
    const std::string name = std::string("cond2_") + tag;
    const Array y = jnp::array(std::vector<float>{0.75f, 0.5f, 0.25f});
    expect_golden(name + ":out", flat({cond2_f(x, y)}));
    auto [gx, gy] = grad(cond2_f, argnums<0, 1>)(x, y);
    expect_golden(name + ":grad", flat({gx, gy}));
    auto [gx2, gy2] = jit(grad(cond2_f, argnums<0, 1>))(x, y);
    expect_golden(name + ":grad", flat({gx2, gy2}));
    auto [out, t] =
        jvp(cond2_f, std::tuple{x, y}, std::tuple{jnp::ones_like(x), -jnp::ones_like(y)});
    expect_golden(name + ":jvp", flat({t}));
  }
}

TEST(Grad, SwitchThreeBranches) {
  std::vector<std::function<Array(const Array&)>> branches = {
      [](const Array& x) { return jnp::sin(x); }, [](const Array& x) { return jnp::cos(x); },
      [](const Array& x) { return x * x * x; }};
  for (int i : {0, 1, 2, 5}) {
    auto f = [&](const Array& x) { return jnp::sum(lax::switch_(i, branches, x)); };
    const std::string name = "switch_" + std::to_string(i);
    expect_golden(name + ":out", flat({f(x3())}));
    expect_golden(name + ":grad", flat({grad(f)(x3())}));
    expect_golden(name + ":grad", flat({jit(grad(f))(x3())}));
  }
}

TEST(Grad, SwitchWithATracedIndex) {
  auto f = [](const Array& x, const Array& i) {
    std::vector<std::function<Array(const Array&)>> branches = {
        [](const Array& x) { return jnp::sin(x); }, [](const Array& x) { return jnp::cos(x); },
        [](const Array& x) { return x * x * x; }};
    return jnp::sum(lax::switch_(i, branches, x));
  };
  for (int i : {0, 1, 2, 5}) {
    const Array index = jnp::array(std::vector<int32_t>{i})[0];
    const std::string name = "switch_" + std::to_string(i);
    expect_golden(name + ":grad", flat({jit(grad(f))(x3(), index)}));
  }
}

TEST(Grad, MapIsAScanWithoutCarry) {
  auto f = [](const Array& xs) {
    return jnp::sum(lax::map([](const Array& x) { return jnp::sin(x) * x; }, xs));
  };
  const Array g = grad(f)(x3());
  const std::vector<float> x = x3().to_vector<float>();
  for (size_t i = 0; i < x.size(); ++i) {
    EXPECT_NEAR(g.to_vector<float>()[i], std::cos(x[i]) * x[i] + std::sin(x[i]), 1e-5);
  }
}

std::function<Array(const Array&, const Array&, const Array&)> scan_f(bool reverse) {
  return [reverse](const Array& c, const Array& xs, const Array& w) {
    auto body = [&](const Array& carry, const Array& x) {
      return std::pair{carry * w + jnp::sin(x), std::pair{carry * x, jnp::cos(carry)}};
    };
    auto [carry, ys] = lax::scan(body, c, xs, std::nullopt, reverse);
    return jnp::sum(carry) + jnp::sum(ys.first * ys.first) + jnp::sum(ys.second);
  };
}

TEST(Grad, ScanForwardAndReverse) {
  for (auto [tag, rev] : {std::pair{"fwd", false}, std::pair{"rev", true}}) {
    const std::string name = std::string("scan_") + tag;
    auto f = scan_f(rev);
    expect_golden(name + ":out", flat({f(c2(), xs42(), w2())}));
    auto [gc, gxs, gw] = grad(f, argnums<0, 1, 2>)(c2(), xs42(), w2());
    expect_golden(name + ":grad", flat({gc, gxs, gw}));
    auto [out, t] =
        jvp(f, std::tuple{c2(), xs42(), w2()},
            std::tuple{jnp::ones_like(c2()), jnp::ones_like(xs42()), -jnp::ones_like(w2())});
    expect_golden(name + ":jvp", flat({t}));
  }
}

TEST(Grad, ScanSecondOrder) {
  auto f = scan_f(false);
  auto gradgrad =
      grad([&](const Array& w) { return jnp::sum(grad(f, argnums<2>)(c2(), xs42(), w) * w); });
  expect_golden("scan_fwd:gradgrad", flat({gradgrad(w2())}));
  expect_golden("scan_fwd:gradgrad", flat({jit(gradgrad)(w2())}));
}

TEST(Grad, ScanUnderJitAndOfJit) {
  auto f = scan_f(false);
  auto [gc, gxs, gw] = jit(grad(f, argnums<0, 1, 2>))(c2(), xs42(), w2());
  expect_golden("scan_fwd:grad", flat({gc, gxs, gw}));
  auto [hc, hxs, hw] = grad(jit(f), argnums<0, 1, 2>)(c2(), xs42(), w2());
  expect_golden("scan_fwd:grad", flat({hc, hxs, hw}));
  auto g = scan_f(true);
  auto [rc, rxs, rw] = jit(grad(jit(g), argnums<0, 1, 2>))(c2(), xs42(), w2());
  expect_golden("scan_rev:grad", flat({rc, rxs, rw}));
}

size_t count_of(const std::string& text, const std::string& what) {
  size_t n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(Grad, ScanBackwardIsAReversedScan) {
  // As JAX stages it: a forward scan storing residuals per iteration, then the transposed
  // scan running the other way; no loop is unrolled.
  const std::string text =
      make_jaxpr(grad(scan_f(false), argnums<0, 1, 2>))(c2(), xs42(), w2()).to_string();
  EXPECT_EQ(count_of(text, "= scan["), 2u) << text;
  EXPECT_EQ(count_of(text, "reverse=True"), 1u) << text;
  EXPECT_EQ(count_of(text, "length=4"), 2u) << text;
}

TEST(Grad, ScanPytreeCarry) {
  auto f = [](const Array& x, const Array& xs) {
    auto body = [&](const std::pair<Array, Array>& carry, const Array& xi) {
      auto [a, b] = carry;
      return std::pair{std::pair{a + b * xi, b * jnp::cos(xi) + x}, a * b};
    };
    auto [carry, ys] = lax::scan(body, std::pair{jnp::zeros({2}), jnp::ones({2})}, xs);
    return jnp::sum(carry.first) + jnp::sum(carry.second) + jnp::sum(ys * ys);
  };
  expect_golden("scan_tree:out", flat({f(w2(), xs42())}));
  auto [gx, gxs] = grad(f, argnums<0, 1>)(w2(), xs42());
  expect_golden("scan_tree:grad", flat({gx, gxs}));
  auto [hx, hxs] = jit(grad(f, argnums<0, 1>))(w2(), xs42());
  expect_golden("scan_tree:grad", flat({hx, hxs}));
}

TEST(Grad, ScanRnn) {
  auto f = [](const Array& w, const Array& h0, const Array& xs) {
    auto step = [&](const Array& h, const Array& x) {
      Array next = jnp::tanh(jnp::dot(w, h) + x);
      return std::pair{next, next};
    };
    auto [h, hs] = lax::scan(step, h0, xs);
    return jnp::sum(hs * hs);
  };
  const Array w = jnp::reshape(jnp::array(std::vector<float>{0.5f, -0.3f, 0.2f, 0.8f}), {2, 2});
  expect_golden("rnn:out", flat({f(w, c2(), xs42())}));
  auto [gw, gh, gxs] = grad(f, argnums<0, 1, 2>)(w, c2(), xs42());
  expect_golden("rnn:grad", flat({gw, gh, gxs}));
  auto [jw, jh, jxs] = jit(grad(f, argnums<0, 1, 2>))(w, c2(), xs42());
  expect_golden("rnn:grad", flat({jw, jh, jxs}));
}

Array fori_f(const Array& x) {
  return jnp::sum(lax::fori_loop(
      0, 5,
      [&](const Array& i, const Array& c) {
        return c * x + jnp::sin(c) * i.astype(DType::float32);
      },
      x));
}

TEST(Grad, ForiLoopStaticBounds) {
  auto f = fori_f;
  expect_golden("fori:out", flat({f(x3())}));
  expect_golden("fori:grad", flat({grad(f)(x3())}));
  expect_golden("fori:grad", flat({jit(grad(f))(x3())}));
  expect_golden("fori:grad", flat({grad(jit(f))(x3())}));
  auto gradgrad = grad([](const Array& x) { return jnp::sum(grad(fori_f)(x) * x); });
  expect_golden("fori:gradgrad", flat({gradgrad(x3())}));
}

TEST(Grad, NestedScans) {
  auto f = [](const Array& w, const Array& xs) {
    auto outer = [&](const Array& c, const Array& row) {
      auto inner = [&](const Array& d, const Array& v) {
        return std::pair{d * w[0] + jnp::sin(v * c), d * v};
      };
      auto [d, ys] = lax::scan(inner, c, row);
      return std::pair{d + w[1], jnp::sum(ys)};
    };
    auto [c, ys] = lax::scan(outer, scalar(0.5f), xs);
    return c + jnp::sum(ys * ys);
  };
  expect_golden("nested_scan:out", flat({f(w2(), xs42())}));
  auto [gw, gxs] = grad(f, argnums<0, 1>)(w2(), xs42());
  expect_golden("nested_scan:grad", flat({gw, gxs}));
  auto [hw, hxs] = jit(grad(f, argnums<0, 1>))(w2(), xs42());
  expect_golden("nested_scan:grad", flat({hw, hxs}));
}

TEST(Grad, CondInsideScan) {
  auto f = [](const Array& w, const Array& xs) {
    auto body = [&](const Array& c, const Array& x) {
      Array next = lax::cond(
          x[0] > 0.0f, [&](const Array& c) { return c * w + x; },
          [&](const Array& c) { return jnp::sin(c) - x; }, c);
      return std::pair{next, next[0] * x[1]};
    };
    auto [c, ys] = lax::scan(body, c2(), xs);
    return jnp::sum(c) + jnp::sum(ys);
  };
  expect_golden("scan_cond:out", flat({f(w2(), xs42())}));
  auto [gw, gxs] = grad(f, argnums<0, 1>)(w2(), xs42());
  expect_golden("scan_cond:grad", flat({gw, gxs}));
  auto [hw, hxs] = grad(jit(f), argnums<0, 1>)(w2(), xs42());
  expect_golden("scan_cond:grad", flat({hw, hxs}));
}

TEST(Grad, ScanWithPsumInsideShardMap) {
  using P = PartitionSpec;
  const Mesh mesh = make_mesh({4}, {"x"});
  auto body = [](const Array& w, const Array& xs) {
    auto step = [&](const Array& c, const Array& x) {
      Array s = lax::psum(c * x * w, "x");
      return std::pair{s, jnp::sin(s)};
    };
    auto [c, ys] = lax::scan(step, jnp::ones({2}), xs);
    return jnp::sum(ys) + jnp::sum(c);
  };
  auto f = shard_map(body, mesh, {P(), P(None, "x")}, P(), ShardMapOptions{.check_vma = false});
  const Array xs = jnp::reshape(jnp::linspace(-1, 1, 24), {3, 8}).astype(DType::float32);
  const Array w = jnp::array(std::vector<float>{0.3f, 0.5f});
  expect_golden("shard_map_psum:out", flat({f(w, xs)}));
  expect_golden("shard_map_psum:grad", flat({grad(f)(w, xs)}));
  expect_golden("shard_map_psum:grad", flat({jit(grad(f))(w, xs)}));
}

Array while_f(const Array& x) {
  auto body = [&](const std::pair<Array, Array>& c) {
    return std::pair{c.first + 1, c.second * x + jnp::sin(c.second)};
  };
  auto cond = [](const std::pair<Array, Array>& c) { return c.first < 4; };
  return lax::while_loop(cond, body, std::pair{jnp::array(std::vector<int32_t>{0})[0], x}).second;
}

TEST(Grad, WhileLoopJvp) {
  expect_golden("while:out", flat({while_f(x3())}));
  for (auto f : {std::function<Array(const Array&)>(while_f),
                 std::function<Array(const Array&)>(jit(while_f))}) {
    auto [out, t] = jvp(f, std::tuple{x3()}, std::tuple{jnp::ones_like(x3())});
    expect_golden("while:jvp", flat({t}));
  }
  // jacfwd, a column per basis tangent.
  std::vector<std::vector<double>> cols;
  for (int i = 0; i < 3; ++i) {
    std::vector<float> e(3, 0.0f);
    e[size_t(i)] = 1.0f;
    cols.push_back(flat({jvp(while_f, std::tuple{x3()}, std::tuple{jnp::array(e)}).second}));
  }
  std::vector<double> jac;
  for (int o = 0; o < 3; ++o) {
    for (int i = 0; i < 3; ++i) jac.push_back(cols[size_t(i)][size_t(o)]);
  }
  expect_golden("while:jacfwd", jac);
}

TEST(Grad, VjpWithSomeCotangents) {
  auto f = [](const Array& c, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c * x, jnp::sin(c + x)};
        },
        c, xs);
  };
  auto [out, pullback] = vjp(f, c2(), xs42());
  expect_golden("vjp:out", flat({out.first, out.second}));
  auto [a, b] = pullback(std::pair{jnp::zeros_like(c2()), jnp::ones_like(xs42())});
  expect_golden("vjp:ys_only", flat({a, b}));
  auto [p, q] = pullback(std::pair{jnp::ones_like(c2()), jnp::zeros_like(xs42())});
  expect_golden("vjp:carry_only", flat({p, q}));
  // The ys alone in the loss: the carry's cotangent is a symbolic zero.
  auto ys_loss = [&](const Array& c, const Array& xs) { return jnp::sum(f(c, xs).second); };
  auto [gc, gxs] = grad(ys_loss, argnums<0, 1>)(c2(), xs42());
  expect_golden("vjp:ys_only", flat({gc, gxs}));
}

constexpr const char* kWhileReverseError =
    "Reverse-mode differentiation does not work for lax.while_loop or lax.fori_loop with "
    "dynamic start/stop values. Try using lax.scan, or using fori_loop with static "
    "start/stop.";

template <class F>
void expect_while_error(F&& f) {
  try {
    f();
    ADD_FAILURE() << "no error";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()), kWhileReverseError);
  }
}

TEST(Grad, WhileLoopWithoutTangentsIsFine) {
  // The loop's carry does not depend on x: nothing to run backward through it.
  auto f = [](const Array& x) {
    return x * lax::while_loop([](const Array& c) { return c < 10.0f; },
                               [](const Array& c) { return c * 2.0f; }, scalar(1.0f));
  };
  EXPECT_FLOAT_EQ(grad(f)(scalar(3.0f)).item<float>(), 16.0f);
  EXPECT_FLOAT_EQ(jit(grad(f))(scalar(3.0f)).item<float>(), 16.0f);
}

TEST(Grad, WhileLoopReverseModeIsJaxsError) {
  auto loop = [](const Array& x) {
    return lax::while_loop([](const Array& c) { return c < 10.0f; },
                           [](const Array& c) { return c * 2.0f; }, x);
  };
  expect_while_error([&] { grad(loop)(scalar(1.0f)); });
  expect_while_error([&] { jit(grad(loop))(scalar(1.0f)); });
  expect_while_error([&] { grad(while_f)(scalar(1.0f)); });
  auto fori = [](const Array& x, const Array& n) {
    return lax::fori_loop(
        0, n, [](const Array&, const Array& c) { return c * 2.0f; }, x);
  };
  expect_while_error(
      [&] { grad(jit(fori))(scalar(1.0f), jnp::array(std::vector<int32_t>{3})[0]); });
  // vjp gives the primal outputs; its pullback raises.
  auto [out, pullback] = vjp(loop, scalar(1.0f));
  EXPECT_FLOAT_EQ(out.item<float>(), 16.0f);
  expect_while_error([&] { pullback(scalar(1.0f)); });
}

}  // namespace
}  // namespace parax
