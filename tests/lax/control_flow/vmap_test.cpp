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
                           [&x](const C& c) {
                             return C{c.first + 1, c.second * x};
                           },
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
                           [&x](const C& c) {
                             return C{c.first + 1, c.second + x};
                           },
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
        0, n, [&x](const Array& i, const Array& c) { return c + as_f32(i) * x; }, jnp::array(0.0f));
  };
  expect_case("fori_batched_bound", {vmap(f)(in().n, in().y)});
  expect_case("fori_batched_bound", {jit(vmap(f))(in().n, in().y)});
}

// scan.

std::pair<Array, Array> sum_scan(const Array& xs) {
  return lax::scan(
      [](const Array& c, const Array& x) {
        return std::pair{c + x, c * x};
      },
      jnp::array(0.0f), xs);
}

TEST(VmapControlFlow, ScanBatchedXs) {
  auto [c, ys] = vmap(sum_scan)(in().xs);
  expect_case("scan_batched_xs", {c, ys});
}

TEST(VmapControlFlow, ScanBatchedCarryOnly) {
  auto f = [](const Array& c0) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c * 0.5f + x, c - x};
        },
        c0, jnp::arange(4.0f));
  };
  auto [c, ys] = vmap(f)(in().y);
  expect_case("scan_batched_carry", {c, ys});
}

TEST(VmapControlFlow, ScanBatchedConsts) {
  auto f = [](const Array& w) {
    return lax::scan(
        [&w](const Array& c, const Array& x) {
          return std::pair{c + w * x, w * c};
        },
        jnp::array(0.0f), jnp::arange(4.0f));
  };
  auto [c, ys] = vmap(f)(in().y);
  expect_case("scan_batched_consts", {c, ys});
}

TEST(VmapControlFlow, ScanReverse) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c * 0.5f + x, c};
        },
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
        [&x](const Array& c, const std::vector<Array>&) {
          return std::pair{c * x, c};
        },
        jnp::array(1.0f), std::vector<Array>{}, 3);
  };
  auto [c, ys] = vmap(vmap(f))(in().x);
  expect_case("nested_vmap_scan", {c, ys});
}

TEST(VmapControlFlow, NamedAxisPsumInScanBody) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + lax::psum(x, "b"), c * 2.0f};
        },
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

TEST(VmapControlFlow, NestedNamedAxesCollectivesInScanBody) {
  auto f = [](const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + lax::psum(x, "a") * lax::pmax(x, {"a", "b"}), c};
        },
        jnp::array(0.0f), xs);
  };
  auto g = vmap(vmap(f, {.axis_name = "a"}), {.axis_name = "b"});
  auto [c, ys] = g(in().xs.reshape({3, 2, 2}) * 0.5f);
  expect_case("nested_named_vmap_psum_in_scan", {c, ys});
  auto [jc, jys] = jit(g)(in().xs.reshape({3, 2, 2}) * 0.5f);
  expect_case("nested_named_vmap_psum_in_scan", {jc, jys});
}

TEST(VmapControlFlow, NamedAxisPmeanInWhileBody) {
  auto f = [](const Array& y) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return c.first < 3; },
                           [](const C& c) {
                             return C{c.first + 1, c.second - lax::pmean(c.second, "b")};
                           },
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

// The batched predicate's reduce_or spans the devices: every one runs the same steps.
TEST(VmapControlFlow, JitOfVmapOfWhileOverAShardedBatch) {
  Mesh mesh = make_mesh({8}, {"i"});
  Array v = device_put(jnp::arange(8.0f) + 1.0f, NamedSharding(mesh, P("i")));
  expect_case("jit_vmap_while_sharded_batch", {jit(vmap(doubling_while))(v)});
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
  expect_case("shard_map_psum_in_fori",
              {shard_map(psum_fori, mesh8(), P("i"), P("i"))(on_mesh(in().r8))});
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

TEST(ShardMapControlFlow, VmapOfScanWithPsumInsideTheBody) {
  auto f = [](const Array& x) {
    return vmap([](const Array& r) {
      return lax::scan(
          [](const Array& c, const Array& v) {
            return std::pair{c + lax::psum(v, "i"), c};
          },
          jnp::array(0.0f), r);
    })(x);
  };
  auto [c, ys] = shard_map(f, mesh8(), P("i"), {P(), P()})(on_mesh(in().m8));
  expect_case("shard_map_vmap_scan_psum", {c, ys});
}

TEST(ShardMapControlFlow, PmeanInWhileBody) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return c.first < 3; },
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
        0, 3, [&x](const Array& i, const Array& c) { return lax::pmean(c * x, "i") + as_f32(i); },
        x);
  };
  expect_case("pmap_pmean_in_fori", {pmap(f, {.axis_name = "i"})(in().r8 / 4.0f)});
}

TEST(PmapControlFlow, PsumInWhileBody) {
  auto f = [](const Array& x) {
    using C = std::pair<Array, Array>;
    return lax::while_loop([](const C& c) { return c.first < 2; },
                           [](const C& c) {
                             return C{c.first + 1, lax::psum(c.second, "i")};
                           },
                           C{jnp::array(0), x})
        .second;
  };
  expect_case("pmap_psum_in_while", {pmap(f, {.axis_name = "i"})(in().r8 / 8.0f)});
}

// Ports of JAX's tests/lax_control_flow_test.py (their expected values are JAX's answers).

std::vector<int32_t> ints(const Array& x) { return x.astype(DType::int32).to_vector<int32_t>(); }
std::vector<float> floats(const Array& x) { return x.astype(DType::float32).to_vector<float>(); }
Array i32(std::vector<int32_t> v) { return jnp::array(v); }

TEST(JaxLaxControlFlowTest, WhileLoopBatched) {
  auto fun = [](const Array& x) {
    return lax::while_loop([](const Array& c) { return c < 3; },
                           [](const Array& c) { return c + 2; }, x);
  };
  EXPECT_EQ(ints(vmap(fun)(i32({0, 1, 2, 3}))), (std::vector<int32_t>{4, 3, 4, 3}));
  EXPECT_EQ(ints(vmap(jit(fun))(i32({0, 1, 2, 3}))), (std::vector<int32_t>{4, 3, 4, 3}));
}

TEST(JaxLaxControlFlowTest, WhileLoopAxisIndexBatched) {
  auto fun = [](const Array& x) {
    return lax::while_loop([](const Array& c) { return c < lax::axis_index("i"); },
                           [](const Array& c) { return c + 2; }, x);
  };
  const std::vector<int32_t> expected{0, 2, 2, 4};
  EXPECT_EQ(ints(vmap(fun, {.axis_name = "i"})(i32({0, 0, 0, 0}))), expected);
  EXPECT_EQ(ints(vmap(jit(fun), {.axis_name = "i"})(i32({0, 0, 0, 0}))), expected);
  auto g = [&fun](const Array&, const Array& x) { return fun(x); };
  EXPECT_EQ(
      ints(vmap(g, {.in_axes = {0, None}, .axis_name = "i"})(i32({0, 0, 0, 0}), jnp::array(0))),
      expected);
}

TEST(JaxLaxControlFlowTest, WhileLoopBatchedWithConstBody) {
  auto f = [](const Array& x) {
    return lax::while_loop(
        [](const Array&) { return jnp::logical_not(jnp::array(false)) == jnp::array(false); },
        [](const Array&) { return jnp::array(0.0f); }, x);
  };
  Array x = jnp::arange(5.0f);
  EXPECT_EQ(floats(vmap(f)(x)), floats(x));
}

TEST(JaxLaxControlFlowTest, WhileLoopCondConstsBatched) {
  auto fun = [](const Array& x, const Array& y) {
    return lax::while_loop([&y](const Array& c) { return c < y; },
                           [](const Array& c) { return c + 2; }, x);
  };
  EXPECT_EQ(ints(vmap(fun, {.in_axes = {None, 0}})(jnp::array(0), i32({2, 3}))),
            (std::vector<int32_t>{2, 4}));
}

TEST(JaxLaxControlFlowTest, WhileLoopBodyConstsBatched) {
  auto fun = [](const Array& x, const Array& y) {
    return lax::while_loop([](const Array& c) { return c < 3; },
                           [&y](const Array& c) { return c + y; }, x);
  };
  EXPECT_EQ(ints(vmap(fun, {.in_axes = {None, 0}})(jnp::array(0), i32({2, 3}))),
            (std::vector<int32_t>{4, 3}));
}

TEST(JaxLaxControlFlowTest, WhileLoopTupleBatched) {
  using C = std::pair<Array, Array>;
  auto fun = [](const Array& x, const Array& y) {
    return lax::while_loop([](const C& c) { return c.first + c.second < 5; },
                           [](const C& c) {
                             return C{c.first + 1, c.second};
                           },
                           C{x, y});
  };
  auto [x, y] = vmap(fun)(i32({0, 0}), i32({1, 2}));
  EXPECT_EQ(ints(x), (std::vector<int32_t>{4, 3}));
  EXPECT_EQ(ints(y), (std::vector<int32_t>{1, 2}));
}

TEST(JaxLaxControlFlowTest, ForiLoopBatched) {
  using C = std::pair<Array, Array>;
  auto fun = [](const Array& x) {
    return lax::fori_loop(
        0, 10,
        [](const Array&, const C& c) {
          return C{c.first + 1, c.second + 2};
        },
        C{x, jnp::array(0)});
  };
  auto [x, y] = vmap(fun)(i32({0, 1}));
  EXPECT_EQ(ints(x), (std::vector<int32_t>{10, 11}));
  EXPECT_EQ(ints(y), (std::vector<int32_t>{20, 20}));
}

// The counter stays unbatched: the while keeps an unbatched predicate.
TEST(JaxLaxControlFlowTest, ForiLoopBatchedKeepsTheCounterUnbatched) {
  using C = std::pair<Array, Array>;
  auto f = [](const Array& x) {
    return lax::while_loop([](const C& c) { return c.first < 4; },
                           [](const C& c) {
                             return C{c.first + 1, c.second + 1};
                           },
                           C{jnp::array(0), x});
  };
  const std::string text = make_jaxpr(vmap(f))(jnp::arange(3)).to_string();
  EXPECT_NE(text.find("cond_jaxpr={ lambda ; h:i32[] i:i32[3]."), std::string::npos) << text;
}

TEST(JaxLaxControlFlowTest, CondBatched) {
  auto fun = [](const Array& x, const Array& y, const Array& z) {
    return lax::cond(
        x < 3, [](const Array& a, const Array&) { return a; },
        [](const Array&, const Array& b) { return lax::neg(b); }, y, z);
  };
  auto check = [&](MapAxes axes, const Array& x, const Array& y, const Array& z,
                   std::vector<int32_t> expected, bool select) {
    EXPECT_EQ(ints(vmap(fun, {.in_axes = axes})(x, y, z)), expected);
    EXPECT_EQ(ints(vmap(jit(fun), {.in_axes = axes})(x, y, z)), expected);
    const std::string text = make_jaxpr(vmap(fun, {.in_axes = axes}))(x, y, z).to_string();
    EXPECT_EQ(text.find("select") != std::string::npos, select) << text;
  };
  Array y = i32({1, 2});
  Array z = i32({3, 4});
  // These stay a cond.
  check({None, 0, 0}, jnp::array(2), y, z, {1, 2}, false);
  check({None, 0, 0}, jnp::array(4), y, z, {-3, -4}, false);
  check({None, 0, None}, jnp::array(4), y, jnp::array(5), {-5, -5}, false);
  // These become a select.
  check({0, 0, None}, i32({2, 4}), y, jnp::array(5), {1, -5}, true);
  check(0, i32({2, 4}), y, z, {1, -4}, true);
}

TEST(JaxLaxControlFlowTest, SwitchBatched) {
  using T = std::tuple<Array, Array, Array>;
  auto fun = [](const Array& index, const Array& x, const Array& y, const Array& z) {
    std::vector<std::function<Array(const T&)>> branches = {
        [](const T& t) { return std::get<0>(t); },
        [](const T& t) { return lax::neg(std::get<1>(t)); },
        [](const T& t) { return lax::sign(std::get<2>(t)); }};
    return lax::switch_(index, branches, T{x, y, z});
  };
  auto check = [&](MapAxes axes, const Array& i, const Array& x, const Array& y, const Array& z,
                   std::vector<int32_t> expected, bool select) {
    EXPECT_EQ(ints(vmap(fun, {.in_axes = axes})(i, x, y, z)), expected);
    EXPECT_EQ(ints(vmap(jit(fun), {.in_axes = axes})(i, x, y, z)), expected);
    const std::string text = make_jaxpr(vmap(fun, {.in_axes = axes}))(i, x, y, z).to_string();
    EXPECT_EQ(text.find("select") != std::string::npos, select) << text;
  };
  Array x = i32({1, 2});
  Array y = i32({3, 4});
  Array w = jnp::array(9);
  check({None, 0, 0, None}, jnp::array(0), x, y, w, {1, 2}, false);
  check({None, 0, 0, None}, jnp::array(1), x, y, w, {-3, -4}, false);
  check({None, 0, 0, None}, jnp::array(2), x, y, w, {1, 1}, false);
  check({0, 0, 0, None}, i32({1, 0}), x, y, w, {-3, 2}, true);
  check({0, 0, None, None}, i32({1, 2}), x, jnp::array(-7), w, {7, 1}, true);
}

// testScanVmap: every placement of the batch dimension of the carry and the xs, with the
// scan and its body jitted or not, against scanning each member on its own.
struct ScanVmapCase {
  std::optional<int> c_bdim, as_bdim;
  bool jit_scan, jit_f;
};

class ScanVmap : public ::testing::TestWithParam<ScanVmapCase> {};

Array batch_input(Shape shape, std::optional<int> bdim, float scale) {
  if (bdim) shape.insert(shape.begin() + *bdim, 7);
  int64_t n = 1;
  for (int64_t d : shape) n *= d;
  return jnp::sin(jnp::arange(float(n)).reshape(shape) * scale);
}

Array member(const Array& x, std::optional<int> bdim, int64_t b) {
  if (!bdim) return x;
  return jnp::moveaxis(x, *bdim, 0)[b];
}

TEST_P(ScanVmap, MatchesScanningEachMember) {
  const ScanVmapCase p = GetParam();
  const Array d = jnp::array({0.3f, -0.8f});
  std::function<std::pair<Array, Array>(const Array&, const Array&)> f = [d](const Array& c,
                                                                             const Array& a) {
    Array b = jnp::cos(jnp::sum(jnp::sin(a)) + jnp::sum(jnp::cos(c)) + jnp::sum(d));
    return std::pair{jnp::sin(c * b), b};
  };
  if (p.jit_f) f = jit(f);
  std::function<std::pair<Array, Array>(const Array&, const Array&)> scan =
      [f](const Array& c, const Array& as) { return lax::scan(f, c, as); };
  if (p.jit_scan) scan = jit(scan);
  const Array c = batch_input({4}, p.c_bdim, 0.7f);
  const Array as = batch_input({5, 3}, p.as_bdim, 0.3f);
  MapAxes c_axis = p.c_bdim ? MapAxes(*p.c_bdim) : MapAxes(None);
  MapAxes as_axis = p.as_bdim ? MapAxes(*p.as_bdim) : MapAxes(None);
  auto [cs, bs] = vmap(scan, {.in_axes = {c_axis, as_axis}})(c, as);
  for (int64_t b = 0; b < 7; ++b) {
    auto [c1, b1] = lax::scan(f, member(c, p.c_bdim, b), member(as, p.as_bdim, b));
    EXPECT_LT(jnp::max(jnp::abs(cs[b] - c1)).item<float>(), 1e-5f) << b;
    EXPECT_LT(jnp::max(jnp::abs(bs[b] - b1)).item<float>(), 1e-5f) << b;
  }
}

std::vector<ScanVmapCase> scan_vmap_cases() {
  std::vector<ScanVmapCase> out;
  const std::vector<std::optional<int>> cs = {std::nullopt, 0, 1};
  const std::vector<std::optional<int>> as = {std::nullopt, 0, 1, 2};
  for (bool jit_scan : {false, true}) {
    for (bool jit_f : {false, true}) {
      for (auto c : cs) {
        for (auto a : as) {
          if (c || a) out.push_back({c, a, jit_scan, jit_f});
        }
      }
    }
  }
  return out;
}

INSTANTIATE_TEST_SUITE_P(JaxLaxControlFlowTest, ScanVmap, ::testing::ValuesIn(scan_vmap_cases()));

TEST(JaxLaxControlFlowTest, ScanVmapTuples) {
  using C = std::pair<Array, Array>;
  auto f = [](const C& c, const C& a) {
    Array b = jnp::sum(jnp::cos(a.first)) * jnp::sum(c.second * a.second);
    C next{c.first * jnp::sin(jnp::sum(a.first * a.second)),
           c.second * jnp::cos(jnp::sum(a.first))};
    return std::pair{next, b};
  };
  C as{batch_input({3, 7}, std::nullopt, 0.4f), batch_input({3, 4, 7}, std::nullopt, 0.2f)};
  C c{batch_input({7, 2}, std::nullopt, 0.9f), batch_input({7}, std::nullopt, 1.1f)};
  auto scan = [&f](const C& c0, const C& xs) { return lax::scan(f, c0, xs); };
  auto [cout, bs] = vmap(scan, {.in_axes = {0, {1, 2}}})(c, as);
  for (int64_t i = 0; i < 7; ++i) {
    C ai{jnp::moveaxis(as.first, 1, 0)[i], jnp::moveaxis(as.second, 2, 0)[i]};
    auto [c1, b1] = lax::scan(f, C{c.first[i], c.second[i]}, ai);
    EXPECT_LT(jnp::max(jnp::abs(cout.first[i] - c1.first)).item<float>(), 1e-5f);
    EXPECT_LT(jnp::max(jnp::abs(cout.second[i] - c1.second)).item<float>(), 1e-5f);
    EXPECT_LT(jnp::max(jnp::abs(bs[i] - b1)).item<float>(), 1e-5f);
  }
}

// The carry is shifted left each step, so batching reaches c[0] only after three passes.
TEST(JaxLaxControlFlowTest, ScanVmapFixpoint) {
  using C = std::tuple<Array, Array, Array, Array>;
  auto f = [](const Array& init) {
    return lax::scan(
               [](const C& c, const Array&) {
                 return std::pair{
                     C{std::get<1>(c), std::get<2>(c), std::get<3>(c), jnp::array(0.0f)},
                     std::vector<Array>{}};
               },
               C{jnp::array(0.0f), jnp::array(1.0f), jnp::array(2.0f), init}, jnp::zeros({2}))
        .first;
  };
  Array init = jnp::array({3.0f, 4.0f, 5.0f});
  auto [c0, c1, c2, c3] = vmap(f)(init);
  EXPECT_EQ(floats(c3), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(floats(c2), (std::vector<float>{0, 0, 0}));
  EXPECT_EQ(floats(c1), floats(init));
  EXPECT_EQ(floats(c0), (std::vector<float>{2, 2, 2}));
}

TEST(JaxLaxControlFlowTest, VmapsOfWhileLoop) {
  auto f = [](const Array& x, const Array& n) {
    return lax::fori_loop(
        0, n, [](const Array&, const Array& c) { return c + 1; }, x);
  };
  Array got =
      vmap(vmap(f, {.in_axes = {None, 0}}), {.in_axes = {0, None}})(jnp::arange(3), jnp::arange(4));
  EXPECT_EQ(ints(got), (std::vector<int32_t>{0, 1, 2, 3, 1, 2, 3, 4, 2, 3, 4, 5}));
}

TEST(JaxLaxControlFlowTest, ScanVmapCollectives) {
  auto scan = [](const Array& state, const Array& xs) {
    return lax::scan(
        [](const Array& s, const Array& x) {
          return std::pair{s, lax::psum(s, "i") * x};
        },
        state, xs);
  };
  auto [s, ys] = vmap(scan, {.axis_name = "i"})(jnp::ones({1}), jnp::arange(5.0f).reshape({1, 5}));
  EXPECT_EQ(floats(s), (std::vector<float>{1}));
  EXPECT_EQ(floats(ys), (std::vector<float>{0, 1, 2, 3, 4}));
}

}  // namespace
}  // namespace parax
