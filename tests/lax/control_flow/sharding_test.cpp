// Sharding through control flow: a loop's carry keeps one layout on entry, on every step
// and on exit; the collectives a step needs sit inside the loop body; looped programs
// give the values and shardings of their unrolled versions.
#include <gtest/gtest.h>

#include <string>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

constexpr int64_t kLayers = 3;
constexpr int64_t kWidth = 32;

Array iota_f32(const Shape& shape, float scale) {
  return (jnp::arange(shape_size(shape)).reshape(shape).astype(DType::float32) * scale) -
         jnp::array({0.25f})[0];
}

struct Mlp {
  Mesh mesh = make_mesh({4, 2}, {"data", "model"});
  Array x, ws, bs;
  Mlp() {
    x = device_put(iota_f32({16, kWidth}, 1e-3f), NamedSharding(mesh, P("data", None)));
    ws = device_put(jnp::sin(iota_f32({kLayers, kWidth, kWidth}, 0.37f)) * 0.2f,
                    NamedSharding(mesh, P(None, None, "model")));
    bs = device_put(jnp::cos(iota_f32({kLayers, kWidth}, 0.11f)) * 0.1f,
                    NamedSharding(mesh, P(None, "model")));
  }
};

Array layer(const Array& h, const Array& w, const Array& b) {
  return jnp::maximum(jnp::dot(h, w) + b, 0.0f);
}

Array mlp_scan(const Array& x, const Array& ws, const Array& bs) {
  auto step = [](const Array& h, const std::pair<Array, Array>& wb) {
    return std::pair{layer(h, wb.first, wb.second), std::vector<Array>{}};
  };
  return lax::scan(step, x, std::pair{ws, bs}).first;
}

Array mlp_unrolled(const Array& x, const Array& ws, const Array& bs) {
  Array h = x;
  for (int64_t l = 0; l < kLayers; ++l) h = layer(h, ws[l], bs[l]);
  return h;
}

bool same_values(const Array& a, const Array& b) {
  return jnp::allclose(a, b, 1e-5, 1e-6).item<bool>();
}

// The text of a scan's body in a per-device program: from `scan[` to its `length=`.
std::string scan_body(const std::string& text) {
  const size_t at = text.find("scan[");
  if (at == std::string::npos) return {};
  return text.substr(at, text.find("length=", at) - at);
}

std::string outside_scan(const std::string& text) {
  const size_t at = text.find("scan[");
  if (at == std::string::npos) return text;
  return text.substr(0, at) + text.substr(text.find("length=", at));
}

TEST(ControlFlowSharding, ScanOverMlpLayersMatchesUnrolled) {
  Mlp m;
  Array looped = jit(mlp_scan)(m.x, m.ws, m.bs);
  Array unrolled = jit(mlp_unrolled)(m.x, m.ws, m.bs);
  EXPECT_TRUE(same_values(looped, unrolled));
  EXPECT_TRUE(looped.sharding().is_equivalent_to(unrolled.sharding(), 2))
      << looped.sharding().to_string() << " vs " << unrolled.sharding().to_string();
  // Eagerly too: each eager op follows the data, the scan as one program.
  Array eager = mlp_scan(m.x, m.ws, m.bs);
  EXPECT_TRUE(same_values(eager, unrolled));
  EXPECT_TRUE(eager.sharding().is_equivalent_to(unrolled.sharding(), 2));

  // Each step gathers the activations the next layer's dot needs whole, inside the body.
  const std::string text = jit(mlp_scan).lower(m.x, m.ws, m.bs).compile().as_text();
  EXPECT_NE(scan_body(text).find("all-gather"), std::string::npos) << text;
  EXPECT_EQ(outside_scan(text).find("all-gather"), std::string::npos) << text;
  // The unrolled version does the same, once per layer.
  const auto unrolled_cost = jit(mlp_unrolled).lower(m.x, m.ws, m.bs).compile().cost_analysis();
  EXPECT_EQ(unrolled_cost.collectives.at("all-gather"), int(kLayers) - 1) << unrolled_cost.str();
}

TEST(ControlFlowSharding, CarryKeepsItsLayoutThroughElementwiseLoops) {
  Mlp m;
  auto body = [](const Array&, const Array& h) { return jnp::tanh(h) * 0.5f; };
  auto f = [&](const Array& x) { return lax::fori_loop(0, 4, body, x); };
  Array out = jit(f)(m.x);
  Array want = m.x;
  for (int i = 0; i < 4; ++i) want = body(want, want);
  EXPECT_TRUE(same_values(out, want));
  EXPECT_TRUE(out.sharding().is_equivalent_to(m.x.sharding(), 2)) << out.sharding().to_string();
  const auto cost = jit(f).lower(m.x).compile().cost_analysis();
  EXPECT_TRUE(cost.collectives.empty()) << jit(f).lower(m.x).compile().as_text();

  auto w = [](const Array& h) {
    return lax::while_loop([](const std::pair<Array, Array>& c) { return c.first < 3; },
                           [](const std::pair<Array, Array>& c) {
                             return std::pair{c.first + 1, jnp::sin(c.second)};
                           },
                           std::pair{jnp::array({0})[0], h});
  };
  auto [n, h] = jit(w)(m.x);
  EXPECT_EQ(n.item<int32_t>(), 3);
  EXPECT_TRUE(same_values(h, jnp::sin(jnp::sin(jnp::sin(m.x)))));
  EXPECT_TRUE(h.sharding().is_equivalent_to(m.x.sharding(), 2)) << h.sharding().to_string();
}

TEST(ControlFlowSharding, AConstraintInTheBodyDecidesTheCarry) {
  Mlp m;
  const NamedSharding both(m.mesh, P("data", "model"));
  auto f = [&](const Array& x) {
    return lax::fori_loop(
        0, 3,
        [&](const Array&, const Array& h) { return lax::with_sharding_constraint(h * 2.0f, both); },
        x);
  };
  Array out = jit(f)(m.x);
  EXPECT_TRUE(same_values(out, m.x * 8.0f));
  EXPECT_TRUE(out.sharding().is_equivalent_to(both, 2)) << out.sharding().to_string();
  // The carry enters as the constraint lays it out (a local slice), so no step moves data.
  const std::string text = jit(f).lower(m.x).compile().as_text();
  EXPECT_EQ(scan_body(text).find("all-"), std::string::npos) << text;
}

TEST(ControlFlowSharding, CondAndScanKeepOperandLayouts) {
  Mlp m;
  auto c = [](const Array& p, const Array& x) {
    return lax::cond(
        p, [](const Array& y) { return jnp::exp(y); }, [](const Array& y) { return -y; }, x);
  };
  for (bool p : {true, false}) {
    Array out = jit(c)(jnp::array({p})[0], m.x);
    EXPECT_TRUE(same_values(out, p ? jnp::exp(m.x) : -m.x));
    EXPECT_TRUE(out.sharding().is_equivalent_to(m.x.sharding(), 2)) << out.sharding().to_string();
  }
  // A scan over rows of a value sharded along its columns: each step's slice and the
  // stacked ys keep the column sharding; the scanned dimension stays whole.
  Array xs = device_put(iota_f32({6, 16}, 0.1f), NamedSharding(m.mesh, P(None, "data")));
  auto s = [](const Array& init, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + x, jnp::sin(c)};
        },
        init, xs);
  };
  Array init = device_put(jnp::zeros({16}), NamedSharding(m.mesh, P("data")));
  auto [carry, ys] = jit(s)(init, xs);
  EXPECT_TRUE(same_values(carry, jnp::sum(xs, 0)));
  EXPECT_TRUE(ys.sharding().is_equivalent_to(NamedSharding(m.mesh, P(None, "data")), 2))
      << ys.sharding().to_string();
  EXPECT_TRUE(carry.sharding().is_equivalent_to(NamedSharding(m.mesh, P("data")), 1));
  EXPECT_TRUE(jit(s).lower(init, xs).compile().cost_analysis().collectives.empty());
}

TEST(ControlFlowSharding, APartialSumIsReducedBeforeTheLoop) {
  Mlp m;
  // x @ w with the contracted dimension sharded leaves partial sums; the loop's carry
  // takes the value whole.
  Array a = device_put(iota_f32({8, 16}, 0.01f), NamedSharding(m.mesh, P(None, "model")));
  Array b = device_put(iota_f32({16, 8}, 0.02f), NamedSharding(m.mesh, P("model", None)));
  auto f = [](const Array& a, const Array& b) {
    return lax::fori_loop(
        0, 2, [](const Array&, const Array& h) { return h + 1.0f; }, jnp::dot(a, b));
  };
  EXPECT_TRUE(same_values(jit(f)(a, b), jnp::dot(a, b) + 2.0f));
}

TEST(ControlFlowSharding, CallsAndRegionsInsideLoopBodies) {
  Mlp m;
  // A jitted function called in a body is inlined into it; a shard_map in a body is a
  // region of per-device code inside the step.
  auto inner = jit([](const Array& h) { return jnp::tanh(h); });
  auto ring = shard_map([](const Array& a) { return lax::psum(a, "model"); }, m.mesh,
                        P("data", "model"), P("data", "model"));
  auto f = [&](const Array& x) {
    return lax::fori_loop(
        0, 2, [&](const Array&, const Array& h) { return inner(ring(h) * 0.01f); }, x);
  };
  Array want = m.x;
  for (int i = 0; i < 2; ++i) {
    Array halves = jnp::sum(want.reshape({16, 2, kWidth / 2}), 1);
    want = jnp::tanh(jnp::concatenate({halves, halves}, 1) * 0.01f);
  }
  Array got = jit(f)(m.x);
  EXPECT_TRUE(same_values(got, want)) << got << want;
  EXPECT_NE(scan_body(jit(f).lower(m.x).compile().as_text()).find("all-reduce"), std::string::npos);
}

}  // namespace
}  // namespace parax
