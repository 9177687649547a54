// Control flow under vmap (a batched predicate turns cond into select, a batched while runs
// until every member is done), and loops and conds inside shard_map and pmap bodies with
// named-axis collectives: values and output shardings against JAX's
// (tools/make_control_flow_vmap_goldens.py writes tests/golden/control_flow_vmap_cases.txt
// from the same cases and inputs).
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <sstream>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = numpy;
using Fn = std::function<Array(const Array&)>;

const std::map<std::string, std::string>& goldens() {
  static const auto& g =
      *new std::map<std::string, std::string>(testing::read_golden("control_flow_vmap_cases.txt"));
  return g;
}

std::vector<std::string> split(const std::string& s, char sep) {
  std::vector<std::string> out;
  std::stringstream in(s);
  std::string part;
  while (std::getline(in, part, sep)) out.push_back(part);
  if (!s.empty() && s.back() == sep) out.push_back("");
  return out;
}

std::string shape_text(const Shape& s) {
  std::string out;
  for (size_t i = 0; i < s.size(); ++i) out += (i ? "," : "") + std::to_string(s[i]);
  return out;
}

// Compares result k of a case with JAX's: dtype, shape, values (and layout when sharded).
void expect_result(const std::string& name, size_t k, const Array& x) {
  const std::string key = name + "[" + std::to_string(k) + "]";
  auto it = goldens().find(key);
  ASSERT_NE(it, goldens().end()) << "no golden for " << key;
  const std::vector<std::string> parts = split(it->second, '|');
  ASSERT_EQ(parts.size(), 3u) << it->second;
  EXPECT_EQ(std::string(dtype_name(x.dtype())), parts[0]) << key;
  ASSERT_EQ(shape_text(x.shape()), parts[1]) << key;
  const std::vector<std::string> want = split(parts[2], ',');
  const std::vector<double> got = x.astype(DType::float64).to_vector<double>();
  ASSERT_EQ(got.size(), parts[2].empty() ? 0 : want.size()) << key;
  for (size_t i = 0; i < got.size(); ++i) {
    const double w = std::stod(want[i]);
    EXPECT_NEAR(got[i], w, 1e-5 * (1.0 + std::abs(w))) << key << " element " << i;
  }
  auto spec = goldens().find(key + "#spec");
  if (spec != goldens().end()) {
    EXPECT_EQ(x.sharding().to_named(x.ndim()).spec().to_ir_string(), spec->second) << key;
  }
}

void expect_case(const std::string& name, const std::vector<Array>& outs) {
  for (size_t k = 0; k < outs.size(); ++k) expect_result(name, k, outs[k]);
  const std::string missing = name + "[" + std::to_string(outs.size()) + "]";
  EXPECT_EQ(goldens().count(missing), 0u) << "parax gives fewer results than JAX for " << name;
}

Array f32(std::initializer_list<float> v, Shape shape) { return jnp::array(v, std::move(shape)); }

// The inputs of the golden script, in the same order.
struct Inputs {
  Array x = f32({1, 2, 3, -1, -2, -3, 0.5, -1, 0.25, -0.5, 0.1f, 0.2f}, {4, 3});
  Array y = f32({0.5f, -1.5f, 2.0f}, {3});
  Array v = f32({1, 3, 20}, {3});
  Array idx = jnp::array(std::vector<int32_t>{0, 1, 2, 5, -1});
  Array x5 = jnp::arange(15.0f).reshape({5, 3}) / 4.0f - 1.0f;
  Array n = jnp::array(std::vector<int32_t>{1, 3, 5});
  Array xs = jnp::arange(12.0f).reshape({3, 4}) / 2.0f - 1.0f;
  Array r8 = jnp::arange(8.0f) + 1.0f;
  Array m8 = jnp::arange(16.0f).reshape({8, 2}) / 4.0f;
};

const Inputs& in() {
  static const Inputs& inputs = *new Inputs;
  return inputs;
}

Array as_f32(const Array& i) { return i.astype(DType::float32); }

Array sin_or_cos(const Array& x) {
  return lax::cond(jnp::sum(x) > 0.0f, Fn(lax::sin), Fn(lax::cos), x);
}

std::vector<Fn> branches3() {
  return {[](const Array& x) { return x * 2.0f; }, [](const Array& x) { return lax::sin(x); },
          [](const Array& x) { return -x + 1.0f; }};
}

// cond and switch.

TEST(VmapControlFlow, CondBatchedPredicateIsASelect) {
  expect_case("cond_batched_pred", {vmap(sin_or_cos)(in().x)});
  // The branches both run, batched, and select_n picks per member.
  const std::string text = make_jaxpr(vmap(sin_or_cos))(in().x).to_string();
  EXPECT_EQ(text.find("cond["), std::string::npos) << text;
  EXPECT_NE(text.find("select_n"), std::string::npos) << text;
}

TEST(VmapControlFlow, CondUnbatchedPredicate) {
  auto f = [](const Array& x, const Array& y, const Array& p) {
    return lax::cond(
        p, [](const Array& a, const Array& b) { return a * b; },
        [](const Array&, const Array& b) { return b + 1.0f; }, x, y);
  };
  auto g = vmap(f, {.in_axes = {0, None, None}});
  expect_case("cond_unbatched_pred", {g(in().x, in().y, jnp::array(true))});
  // The false branch leaves its result unbatched: it is broadcast to match the other.
  expect_case("cond_unbatched_pred_false", {g(in().x, in().y, jnp::array(false))});
  const std::string text = make_jaxpr(g)(in().x, in().y, jnp::array(true)).to_string();
  EXPECT_NE(text.find("cond["), std::string::npos) << text;
}

TEST(VmapControlFlow, CondBatchedPredicateUnbatchedOperand) {
  auto f = [](const Array& p, const Array& y) {
    return lax::cond(
        p > 0.0f, [](const Array& b) { return b * 3.0f; }, [](const Array& b) { return b - 1.0f; },
        y);
  };
  expect_case("cond_batched_pred_unbatched_operand",
              {vmap(f, {.in_axes = {0, None}})(in().v - 5.0f, in().y)});
}

TEST(VmapControlFlow, SwitchBatchedIndexClamps) {
  auto f = [](const Array& i, const Array& x) { return lax::switch_(i, branches3(), x); };
  expect_case("switch_batched_index", {vmap(f)(in().idx, in().x5)});
}

TEST(VmapControlFlow, SwitchUnbatchedIndex) {
  auto f = [](const Array& x, const Array& i) { return lax::switch_(i, branches3(), x); };
  expect_case("switch_unbatched_index", {vmap(f, {.in_axes = {0, None}})(in().x5, jnp::array(2))});
}

// JAX's testCondBatched: a cond inside a branch of a batched cond.
TEST(VmapControlFlow, NestedCondBatched) {
  auto f = [](const Array& x) {
    return lax::cond(
        x[0] < 0.5f,
        [](const Array& y) { return lax::cond(y[1] > 0.0f, Fn(lax::sin), Fn(lax::cos), y); },
        [](const Array& y) { return y * 2.0f; }, x);
  };
  expect_case("cond_batched_nested", {vmap(f)(in().x)});
}

// while_loop and fori_loop.

Array doubling_while(const Array& y) {
  return lax::while_loop([](const Array& c) { return c < 10.0f; },
                         [](const Array& c) { return c * 2.0f; }, y);
}

TEST(VmapControlFlow, WhileBatchedPredicateRunsUntilEveryMemberIsDone) {
  expect_case("while_batched_pred", {vmap(doubling_while)(in().v)});
  expect_case("while_batched_pred", {jit(vmap(doubling_while))(in().v)});
}

TEST(VmapControlFlow, WhileUnbatchedPredicateBatchesTheCarry) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return c.first < 5; },
                           [&x](const C& c) { return C{c.first + 1, c.second * x}; },
                           C{jnp::array(0), jnp::array(1.0f)});
  };
  auto [count, prod] = vmap(f)(in().y);
  expect_case("while_unbatched_pred_batched_carry", {count, prod});
  // The count stays shared: the predicate is not batched, so no select in the body.
  const std::string text = make_jaxpr(vmap(f))(in().y).to_string();
  EXPECT_EQ(text.find("select_n"), std::string::npos) << text;
}

// JAX's testWhileLoopCondConstsBatched.
TEST(VmapControlFlow, WhileCondConstantBatched) {
  auto f = [](const Array& b, const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([&b](const C& c) { return c.first < b; },
                           [&x](const C& c) { return C{c.first + 1, c.second + x}; },
                           C{jnp::array(0), jnp::array(0.0f)});
  };
  auto [count, sum] = vmap(f, {.in_axes = {0, None}})(in().n, jnp::array(1.5f));
  expect_case("while_cond_consts_batched", {count, sum});
}

TEST(VmapControlFlow, ForiLoopStaticBounds) {
  auto f = [](const Array& x) {
    return lax::fori_loop(
        0, 5, [](const Array& i, const Array& c) { return c * 0.5f + as_f32(i); }, x);
  };
  expect_case("fori_static_batched", {vmap(f)(in().x)});
}

// JAX's testForiLoopBatched: a batched trip count (a while with a batched predicate).
TEST(VmapControlFlow, ForiLoopBatchedBound) {
  auto f = [](const Array& n, const Array& x) {
    return lax::fori_loop(
        0, n, [&x](const Array& i, const Array& c) { return c + as_f32(i) * x; },
        jnp::array(0.0f));
  };
  expect_case("fori_batched_bound", {vmap(f)(in().n, in().y)});
  expect_case("fori_batched_bound", {jit(vmap(f))(in().n, in().y)});
}

// scan.

std::pair<Array, Array> sum_scan(const Array& xs) {
  return lax::scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; },
                   jnp::array(0.0f), xs);
}

TEST(VmapControlFlow, ScanBatchedXs) {
  auto [c, ys] = vmap(sum_scan)(in().xs);
  expect_case("scan_batched_xs", {c, ys});
}

TEST(VmapControlFlow, ScanBatchedCarryOnly) {
  auto f = [](const Array& c0) {
    return lax::scan(
        [](const Array& c, const Array& x) { return std::pair{c * 0.5f + x, c - x}; }, c0,
        jnp::arange(4.0f));
  };
  auto [c, ys] = vmap(f)(in().y);
  expect_case("scan_batched_carry", {c, ys});
}

TEST(VmapControlFlow, ScanBatchedConsts) {
  auto f = [](const Array& w) {
    return lax::scan(
        [&w](const Array& c, const Array& x) { return std::pair{c + w * x, w * c}; },
        jnp::array(0.0f), jnp::arange(4.0f));
  };
  auto [c, ys] = vmap(f)(in().y);
  expect_case("scan_batched_consts", {c, ys});
}

TEST(VmapControlFlow, ScanReverse) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) { return std::pair{c * 0.5f + x, c}; },
        jnp::array(1.0f), xs, std::nullopt, /*reverse=*/true);
  };
  auto [c, ys] = vmap(f)(in().xs);
  expect_case("scan_reverse", {c, ys});
}

TEST(VmapControlFlow, ScanXsBatchedAlongTheirSecondDimension) {
  auto [c, ys] = vmap(sum_scan, {.in_axes = 1, .out_axes = {0, 1}})(jnp::transpose(in().xs));
  expect_case("scan_xs_batched_at_1", {c, ys});
}

// JAX's testScanVmap: a vector carry, a captured constant, a pair of ys.
TEST(VmapControlFlow, ScanVectorCarry) {
  const Array y = in().y;
  auto f = [&y](const Array& c0, const Array& xs) {
    return lax::scan(
        [&y](const Array& c, const Array& x) {
          return std::pair{lax::tanh(c * x + y), std::pair{jnp::sum(c), c}};
        },
        c0, xs);
  };
  Array x3 = lax::slice(in().x, {0, 0}, {3, 3});
  auto [c, ys] = vmap(f)(x3, in().xs);
  expect_case("scan_vector_carry", {c, ys.first, ys.second});
}

TEST(VmapControlFlow, MapBatched) {
  auto f = [](const Array& xs) {
    return lax::map([](const Array& x) { return x * x + 1.0f; }, xs);
  };
  expect_case("map_batched", {vmap(f)(in().xs)});
}

// Nesting, named axes, jit, checkpoint.

TEST(VmapControlFlow, NestedVmapOfWhile) {
  auto f = [](const Array& y) {
    return lax::while_loop([](const Array& c) { return c < 4.0f; },
                           [](const Array& c) { return c * c + 1.0f; }, y);
  };
  expect_case("nested_vmap_while", {vmap(vmap(f))(in().x)});
}

TEST(VmapControlFlow, NestedVmapOfScan) {
  auto f = [](const Array& x) {
    return lax::scan(
        [&x](const Array& c, const std::vector<Array>&) { return std::pair{c * x, c}; },
        jnp::array(1.0f), std::vector<Array>{}, 3);
  };
  auto [c, ys] = vmap(vmap(f))(in().x);
  expect_case("nested_vmap_scan", {c, ys});
}

TEST(VmapControlFlow, NamedAxisPsumInScanBody) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) { return std::pair{c + lax::psum(x, "b"), c * 2.0f}; },
        jnp::array(0.0f), xs);
  };
  auto [c, ys] = vmap(f, {.axis_name = "b"})(in().xs);
  expect_case("vmap_named_psum_in_scan", {c, ys});
  auto [jc, jys] = jit(vmap(f, {.axis_name = "b"}))(in().xs);
  expect_case("vmap_named_psum_in_scan", {jc, jys});
}

// The scan's operands are all unbatched, yet its body sums over the vmapped axis.
TEST(VmapControlFlow, NamedAxisPsumOfAConstantInScanBody) {
  auto f = [](const Array& x) {
    auto [c, ys] = lax::scan(
        [](const Array& c, const std::vector<Array>&) {
          return std::pair{c + lax::psum(jnp::array(1.0f), "b"), c};
        },
        jnp::array(0.0f), std::vector<Array>{}, 3);
    return std::tuple{x, c, ys};
  };
  auto [x, c, ys] = vmap(f, {.axis_name = "b"})(in().v);
  expect_case("vmap_named_psum_of_constant_in_scan", {x, c, ys});
}

TEST(VmapControlFlow, NamedAxisPmeanInWhileBody) {
  auto f = [](const Array& y) {
    using C = std::pair<Array, Array>;
    return lax::while_loop(
               [](const C& c) { return c.first < 3; },
               [](const C& c) { return C{c.first + 1, c.second - lax::pmean(c.second, "b")}; },
               C{jnp::array(0), y})
        .second;
  };
  expect_case("vmap_named_pmean_in_while", {vmap(f, {.axis_name = "b"})(in().y)});
}

TEST(VmapControlFlow, JitOfVmapOfCondInScan) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          Array next = lax::cond(
              x > 0.0f, [&x](const Array& a) { return a + x; },
              [](const Array& a) { return a * 0.5f; }, c);
          return std::pair{next, c};
        },
        jnp::array(1.0f), xs);
  };
  auto [c, ys] = jit(vmap(f))(in().xs);
  expect_case("jit_vmap_cond_scan", {c, ys});
}

TEST(VmapControlFlow, Checkpoint) {
  auto f = checkpoint([](const Array& x) { return lax::sin(x) * jnp::sum(lax::cos(x)); });
  expect_case("vmap_checkpoint", {vmap(f)(in().x)});
  const std::string text = make_jaxpr(vmap(f))(in().x).to_string();
  EXPECT_NE(text.find("remat2["), std::string::npos) << text;
  auto g = checkpoint([](const Array& x, const Array& y) { return lax::sin(x) * y; },
                      CheckpointPolicy::dots_saveable);
  expect_case("vmap_checkpoint_unbatched_arg", {vmap(g, {.in_axes = {0, None}})(in().x, in().y)});
  const std::string gtext = make_jaxpr(vmap(g, {.in_axes = {0, None}}))(in().x, in().y).to_string();
  EXPECT_NE(gtext.find("DotsSaveable"), std::string::npos) << gtext;
}

TEST(VmapControlFlow, JitOfVmapOfScanOverAShardedBatch) {
  Mesh mesh = make_mesh({8}, {"i"});
  Array xs = device_put(jnp::arange(32.0f).reshape({8, 4}) / 8.0f, NamedSharding(mesh, P("i")));
  auto [c, ys] = jit(vmap(sum_scan))(xs);
  expect_case("jit_vmap_scan_sharded_batch", {c, ys});
}

// shard_map and pmap bodies.

Mesh mesh8() { return make_mesh({8}, {"i"}); }

Array on_mesh(const Array& x) { return device_put(x, NamedSharding(mesh8(), P("i"))); }

Array psum_fori(const Array& x) {
  return lax::fori_loop(
      0, 3, [&x](const Array& i, const Array& c) { return c + lax::psum(x, "i") * as_f32(i); },
      jnp::zeros_like(x));
}

TEST(ShardMapControlFlow, PsumInForiLoopBody) {
  expect_case("shard_map_psum_in_fori", {shard_map(psum_fori, mesh8(), P("i"), P("i"))(
                                            on_mesh(in().r8))});
  expect_case("jit_shard_map_psum_in_fori",
              {jit(shard_map(psum_fori, mesh8(), P("i"), P("i")))(on_mesh(in().r8))});
}

// The carry stays invariant over 'i' (the body adds a psum), so out_specs P() passes
// check_vma.
TEST(ShardMapControlFlow, PsumInForiLoopBodyReplicated) {
  auto f = [](const Array& x) {
    return lax::fori_loop(
        0, 4, [&x](const Array&, const Array& c) { return c + lax::psum(jnp::sum(x), "i"); },
        jnp::array(0.0f));
  };
  expect_case("shard_map_psum_in_fori_replicated",
              {shard_map(f, mesh8(), P("i"), P())(on_mesh(in().r8))});
}

TEST(ShardMapControlFlow, VaryingCarryFailsCheckVma) {
  auto f = [](const Array& x) {
    return lax::fori_loop(
        0, 4, [&x](const Array&, const Array& c) { return c + jnp::sum(x); }, jnp::array(0.0f));
  };
  EXPECT_THROW(shard_map(f, mesh8(), P("i"), P())(on_mesh(in().r8)), ValueError);
}

std::vector<std::pair<int64_t, int64_t>> ring8() {
  std::vector<std::pair<int64_t, int64_t>> perm;
  for (int64_t j = 0; j < 8; ++j) perm.push_back({j, (j + 1) % 8});
  return perm;
}

TEST(ShardMapControlFlow, RingOfPpermutesInAScan) {
  auto f = [](const Array& x) {
    return lax::scan(
        [](const Array& c, const std::vector<Array>&) {
          Array next = lax::ppermute(c, "i", ring8());
          return std::pair{next, jnp::sum(next)};
        },
        x, std::vector<Array>{}, 3);
  };
  auto [c, ys] = shard_map(f, mesh8(), P("i"), {P("i"), P("i")})(on_mesh(in().m8));
  expect_case("shard_map_ring_scan", {c, ys});
}

TEST(ShardMapControlFlow, PmeanInWhileBody) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop(
               [](const C& c) { return c.first < 3; },
               [](const C& c) {
                 return C{c.first + 1, lax::pmean(c.second, "i") * 2.0f + c.second};
               },
               C{jnp::array(0), x})
        .second;
  };
  expect_case("shard_map_while_pmean", {shard_map(f, mesh8(), P("i"), P("i"))(on_mesh(in().m8))});
}

// Each device runs its own number of steps; those done keep their carry.
TEST(ShardMapControlFlow, WhileWithAVaryingPredicate) {
  auto f = [](const Array& x) {
    return lax::while_loop([](const Array& c) { return jnp::sum(c) < 10.0f; },
                           [](const Array& c) { return c * 2.0f; }, x);
  };
  expect_case("shard_map_while_varying_pred",
              {shard_map(f, mesh8(), P("i"), P("i"))(on_mesh(in().r8))});
  expect_case("shard_map_while_varying_pred",
              {jit(shard_map(f, mesh8(), P("i"), P("i")))(on_mesh(in().r8))});
}

TEST(ShardMapControlFlow, CondWithAVaryingPredicate) {
  auto f = [](const Array& x) {
    return lax::cond(
        jnp::sum(x) > 3.0f, [](const Array& y) { return y * 2.0f; },
        [](const Array& y) { return -y; }, x);
  };
  expect_case("shard_map_cond", {shard_map(f, mesh8(), P("i"), P("i"))(on_mesh(in().m8))});
}

TEST(ShardMapControlFlow, CondWithCollectivesInBranches) {
  auto f = [](const Array& x) {
    return lax::cond(
        lax::psum(jnp::sum(x), "i") > 0.0f, [](const Array& y) { return lax::psum(y * 2.0f, "i"); },
        [](const Array& y) { return lax::pmax(y, "i"); }, x);
  };
  expect_case("shard_map_cond_psum_pred", {shard_map(f, mesh8(), P("i"), P())(on_mesh(in().r8))});
}

TEST(ShardMapControlFlow, AllGatherInScanBody) {
  auto f = [](const Array& x) {
    return lax::scan(
        [](const Array& c, const std::vector<Array>&) {
          Array g = lax::all_gather(c, "i", 0, /*tiled=*/true);
          return std::pair{c + jnp::sum(g), jnp::max(g)};
        },
        x, std::vector<Array>{}, 2);
  };
  auto [c, ys] = shard_map(f, mesh8(), P("i"), {P("i"), P("i")})(on_mesh(in().m8));
  expect_case("shard_map_scan_all_gather", {c, ys});
}

TEST(PmapControlFlow, PmeanInForiLoopBody) {
  auto f = [](const Array& x) {
    return lax::fori_loop(
        0, 3,
        [&x](const Array& i, const Array& c) { return lax::pmean(c * x, "i") + as_f32(i); }, x);
  };
  expect_case("pmap_pmean_in_fori", {pmap(f, {.axis_name = "i"})(in().r8 / 4.0f)});
}

TEST(PmapControlFlow, PsumInWhileBody) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return c.first < 2; },
                           [](const C& c) { return C{c.first + 1, lax::psum(c.second, "i")}; },
                           C{jnp::array(0), x})
        .second;
  };
  expect_case("pmap_psum_in_while", {pmap(f, {.axis_name = "i"})(in().r8 / 8.0f)});
}

}  // namespace
}  // namespace parax
