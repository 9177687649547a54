// shard_map and pmap composed with the rest of parax: a shard_map region inside a jitted
// function partitioned automatically around it, gradients of shard_map and pmap taken from
// outside, pmap outputs fed to pmap in place, pmap inside pmap on a 2-D grid, and vmap of
// both.
#include <gtest/gtest.h>

#include <parax/parax.h>

#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

float max_abs_diff(const Array& a, const Array& b) {
  return jnp::max(jnp::abs(a - b)).item<float>();
}

int count(const std::string& text, const std::string& what) {
  int n = 0;
  for (size_t at = text.find(what); at != std::string::npos; at = text.find(what, at + 1)) ++n;
  return n;
}

TEST(ShardMap, RegionInsideAutomaticallyPartitionedJit) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  Array x = device_put(jnp::arange(64.0f).reshape({8, 8}), NamedSharding(mesh, P("a", "b")));
  auto row_sums =
      shard_map([](const Array& block) { return lax::psum(jnp::sum(block, 1, true), "b"); }, mesh,
                P("a", "b"), P("a", None));
  auto f = jit([&](const Array& v) {
    Array w = jnp::sin(v) + 1.0f;  // partitioned automatically
    Array r = row_sums(w);         // per-device code
    return jnp::dot(r * 2.0f, jnp::ones({1, 8}));
  });
  Array y = f(x);
  Array host = jnp::arange(64.0f).reshape({8, 8});
  Array expected = jnp::dot(jnp::sum(jnp::sin(host) + 1.0f, 1, true) * 2.0f, jnp::ones({1, 8}));
  EXPECT_LT(max_abs_diff(y, expected), 1e-4f);
  EXPECT_EQ(y.sharding().to_string(), NamedSharding(mesh, P("a")).to_string());
  // The only communication is the region's psum over 'b'.
  std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "all-reduce[mesh_axes=('b',) op=sum]"), 1) << text;
  EXPECT_EQ(count(text, "all-gather"), 0) << text;
  EXPECT_EQ(count(text, "all-to-all"), 0) << text;
}

TEST(ShardMap, GradientFromOutside) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  Array x = jnp::arange(64.0f).reshape({8, 8}) / 10.0f;
  // A replicated result: every device holds the total.
  auto total = shard_map(
      [](const Array& b) {
        return lax::psum(jnp::sum(jnp::sin(b) * jnp::sin(b)), {"i", "j"});
      },
      mesh, P("i", "j"), P());
  EXPECT_LT(std::abs(total(x).item<float>() - jnp::sum(jnp::sin(x) * jnp::sin(x)).item<float>()),
            1e-4f);
  Array g = grad([&](const Array& v) { return total(v); })(x);
  EXPECT_LT(max_abs_diff(g, 2.0f * jnp::sin(x) * jnp::cos(x)), 1e-6f);
  // A replicated operand collects the cotangents of every device.
  auto scaled = shard_map([](const Array& b, const Array& w) { return b * w; }, mesh,
                          {P("i", "j"), P()}, P("i", "j"));
  Array w = jnp::full({2, 4}, 3.0f);
  auto [gx, gw] = grad([&](const Array& a, const Array& b) { return jnp::sum(scaled(a, b)); },
                       argnums<0, 1>)(x, w);
  EXPECT_LT(max_abs_diff(gx, jnp::full({8, 8}, 3.0f)), 1e-6f);
  Array block_sum = jnp::sum(jnp::sum(x.reshape({4, 2, 2, 4}), 2), 0);
  EXPECT_LT(max_abs_diff(gw, block_sum), 1e-4f);
}

TEST(ShardMap, SpecsArePrefixesOfTheArgumentTrees) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  std::pair<Array, Array> pair{jnp::ones({3}), jnp::arange(8.0f)};
  // The pair's first leaf is replicated, its second split over 'i'; results one spec each.
  auto f = shard_map(
      [](const Array& x, const std::pair<Array, Array>& p) {
        return std::make_pair(x + jnp::sum(p.first), lax::psum(p.second, "i"));
      },
      mesh, {P("i", "j"), {P(), P("i")}}, {P("i", "j"), P()});
  auto [a, b] = f(jnp::zeros({8, 4}), pair);
  EXPECT_EQ(a.to_vector<float>(), std::vector<float>(32, 3.0f));
  EXPECT_EQ(b.to_vector<float>(), (std::vector<float>{12, 16}));
  EXPECT_EQ(a.sharding().to_string(), NamedSharding(mesh, P("i", "j")).to_string());
}

TEST(ShardMap, WithoutCheckVmaAResultComesFromTheFirstInstance) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  // The block varies over 'j', which out_specs leaves out: JAX prints instance 0's value;
  // parax gives every device that copy, so later computations agree too.
  auto f = shard_map(
      [](const Array& b) { return b * (1 + lax::axis_index("j")).astype(DType::float32); }, mesh,
      P("i"), P(), {.check_vma = false});
  Array y = f(jnp::arange(8.0f));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 1}));
  for (const Shard& s : y.addressable_shards()) {
    EXPECT_EQ(s.data.to_vector<float>(), (std::vector<float>{0, 1})) << s.device.id();
  }
}

TEST(ShardMap, ANestedShardMapOverTheSameAxisIsRejected) {
  Mesh mesh = make_mesh({4, 2}, {"i", "j"});
  auto inner = shard_map([](const Array& b) { return b * 2.0f; }, mesh, P("i"), P("i"));
  auto outer = shard_map([&](const Array& b) { return inner(b); }, mesh, P("i"), P("i"));
  EXPECT_THROW_MSG(outer(jnp::arange(16.0f)), ValueError,
                   "shard_map applied to the function 'f' maps mesh axis 'i', which an enclosing "
                   "shard_map or pmap already maps; a nested shard_map must use other mesh axes");
}

TEST(Pmap, GradientFromOutsideAndInside) {
  auto f = pmap([](const Array& v) { return jnp::sin(v) * lax::psum(v, "d"); }, {.axis_name = "d"});
  Array y = jnp::arange(8.0f) / 8.0f;
  Array g = grad([&](const Array& v) { return jnp::sum(f(v)); })(y);
  Array expected = jnp::cos(y) * jnp::sum(y) + jnp::sum(jnp::sin(y));
  EXPECT_LT(max_abs_diff(g, expected), 1e-5f);
  // Inside: each device differentiates its own loss; pmean combines the gradients.
  auto per_device = pmap(
      [](const Array& v) {
        return lax::pmean(grad([](const Array& u) { return jnp::sum(u * u); })(v), "d");
      },
      {.axis_name = "d"});
  Array h = per_device(jnp::arange(16.0f).reshape({8, 2}));
  Array mean = 2.0f * jnp::mean(jnp::arange(16.0f).reshape({8, 2}), 0);
  for (int64_t k = 0; k < 8; ++k) EXPECT_LT(max_abs_diff(h[k], mean), 1e-5f);
}

TEST(Pmap, GradOfPsumInsideCountsEveryInstance) {
  // As JAX 0.4.35 (pmap and vmap alike): each instance's output depends on every input, so
  // the gradient of psum(x) inside the map is the number of instances.
  auto g = grad([](const Array& x) { return lax::psum(x, "i"); });
  EXPECT_EQ(pmap(g, {.axis_name = "i"})(jnp::ones({8})).to_vector<float>(),
            std::vector<float>(8, 8.0f));
  EXPECT_EQ(vmap(g, {.axis_name = "i"})(jnp::ones({8})).to_vector<float>(),
            std::vector<float>(8, 8.0f));
  auto sq = grad([](const Array& x) { return lax::psum(x * x, "i"); });
  EXPECT_EQ(pmap(sq, {.axis_name = "i"})(jnp::arange(8.0f)).to_vector<float>(),
            (std::vector<float>{0, 16, 32, 48, 64, 80, 96, 112}));
}

TEST(Pmap, IntegerMeanIsAStrongFloatAndEmptyMapsAreRejected) {
  Array m =
      pmap([](const Array& v) { return lax::pmean(v, "p"); }, {.axis_name = "p"})(jnp::arange(8));
  EXPECT_EQ(m.dtype(), DType::float32);
  EXPECT_FALSE(m.weak_type());  // as JAX: psum(x) / psum(1)
  EXPECT_EQ(m.to_vector<float>(), std::vector<float>(8, 3.5f));
  EXPECT_THROW_MSG(pmap([](const Array& v) { return v; })(jnp::ones({0, 3})), ValueError,
                   "pmap got a mapped axis of size 0; it maps one instance per device, so the "
                   "mapped size must be at least 1");
}

TEST(Pmap, OutputsStayInPlaceForTheNextPmap) {
  auto inc = pmap([](const Array& v) { return v + 1.0f; }, {.axis_name = "p"});
  Array a = inc(jnp::arange(16.0f).reshape({8, 2}));
  EXPECT_TRUE(a.is_committed());
  Mesh mesh(local_devices(), "p");
  EXPECT_EQ(a.sharding().to_string(), NamedSharding(mesh, P("p")).to_string());
  Array b = inc(a);
  EXPECT_EQ(b.to_vector<float>()[15], 17.0f);
  // The second call's executable takes `a` as it lies: its input layout is P('p') and it
  // moves nothing.
  std::string text = inc.lower(a).compile().as_text();
  EXPECT_NE(text.find("# in_layouts (P('p'"), std::string::npos) << text;
  EXPECT_EQ(count(text, "all-"), 0) << text;
  EXPECT_EQ(count(text, "collective-permute"), 0) << text;
}

TEST(Pmap, NestedPmapRunsOnATwoDimensionalGrid) {
  auto f = pmap(
      [](const Array& row) {
        return pmap(
            [](const Array& v) {
              return v + 10.0f * lax::axis_index("c").astype(DType::float32) +
                     100.0f * lax::axis_index("r").astype(DType::float32);
            },
            {.axis_name = "c"})(row);
      },
      {.axis_name = "r"});
  Array y = f(jnp::zeros({2, 4}));
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{0, 10, 20, 30, 100, 110, 120, 130}));
  std::vector<Device> devs = local_devices();
  Mesh grid(DeviceGrid(devs, {2, 4}), {"r", "c"});
  EXPECT_EQ(y.sharding().to_string(), NamedSharding(grid, P("r", "c")).to_string());
  EXPECT_EQ(y.addressable_shards().size(), 8u);
  EXPECT_THROW(pmap(
                   [](const Array& row) {
                     return pmap([](const Array& v) { return v; }, {.axis_name = "c"})(row);
                   },
                   {.axis_name = "r"})(jnp::zeros({3, 4})),
               ValueError);  // 12 devices needed
}

TEST(Pmap, NestsWithVmapInEitherOrder) {
  Array x = jnp::arange(16.0f).reshape({2, 8});
  auto inner = [](const Array& v) { return lax::psum(v, "p") + lax::psum(v, "v"); };
  Array a = vmap(pmap(inner, {.axis_name = "p"}), {.axis_name = "v"})(x);
  Array b =
      pmap(vmap(inner, {.axis_name = "v"}), {.axis_name = "p", .in_axes = 1, .out_axes = 1})(x);
  Array c = vmap(vmap(inner, {.axis_name = "p"}), {.axis_name = "v"})(x);
  EXPECT_EQ(a.to_vector<float>(), c.to_vector<float>());
  EXPECT_EQ(b.to_vector<float>(), c.to_vector<float>());
}

TEST(ShardMap, VmapOfShardMapKeepsTheBatchUnsplit) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  auto rows = shard_map([](const Array& blk) { return lax::psum(jnp::sum(blk, 1, true), "b"); },
                        mesh, P("a", "b"), P("a", None));
  Array xs = jnp::arange(3 * 64.0f).reshape({3, 8, 8});
  Array out = vmap(rows)(xs);
  EXPECT_EQ(out.shape(), (Shape{3, 8, 1}));
  EXPECT_LT(max_abs_diff(out, jnp::sum(xs, 2, true)), 1e-3f);
  EXPECT_EQ(out.sharding().to_string(), NamedSharding(mesh, P(None, "a")).to_string());
}

}  // namespace
}  // namespace parax
