// The explainer, the implicit-reshard policy, reshard and CommLog on the tutorial's cases:
// each collective names the user's line that needed it and why, and its bytes add up to
// cost_analysis().
#include <gtest/gtest.h>

#include <set>
#include <sstream>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;
constexpr const char* kFile = "tests/api/explain_test.cpp";

Array iota_f32(Shape shape) {
  return jnp::arange(shape_size(shape), DType::float32).reshape(std::move(shape));
}

// Restores parax_implicit_reshard when a test ends.
struct PolicyScope {
  explicit PolicyScope(const char* policy) { config::update("parax_implicit_reshard", policy); }
  ~PolicyScope() { config::update("parax_implicit_reshard", "allow"); }
};

TEST(Explain, DotOverAShardedContractionNamesTheAllReduceAndTheLine) {
  const Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const Array y = device_put(iota_f32({8, 16}), NamedSharding(mesh, P(None, "b")));
  const Array z = device_put(iota_f32({16, 8}), NamedSharding(mesh, P("b", None)));
  int line = 0;
  auto f = jit(
      [&](const Array& l, const Array& r) {
        line = __LINE__ + 1;
        return jnp::dot(l, r);
      },
      {.name = "matmul"});
  const Compiled compiled = f.lower(y, z).compile();
  const Explanation report = compiled.explain();
  ASSERT_EQ(report.collectives().size(), 1u) << report;
  const CollectiveInfo& c = report.collectives()[0];
  EXPECT_EQ(c.primitive, "all-reduce");
  EXPECT_EQ(c.file, kFile);
  EXPECT_EQ(c.line, line);
  EXPECT_EQ(c.why, "contraction");
  EXPECT_FALSE(c.is_explicit);
  EXPECT_EQ(c.mesh_axes, std::vector<std::string>{"b"});
  EXPECT_EQ(c.operand, "f32[8,8]");
  EXPECT_EQ(c.bytes_received, compiled.cost_analysis().collective_bytes);
  EXPECT_EQ(c.bytes_across_processes, 0);
  EXPECT_EQ(report.bytes_per_call(), compiled.cost_analysis().collective_bytes);
  EXPECT_GT(report.est_seconds(), 0);
  EXPECT_GT(report.est_share(), 0);
  EXPECT_LT(report.est_share(), 1);
  // A ring all-reduce of 256 bytes over 2 devices: each receives 2 x 1/2 of them.
  EXPECT_EQ(c.bytes_received, 256);
  const std::string want =
      "matmul on Mesh('a': 4, 'b': 2): 1 collective, 256 B received per device per call\n"
      "  tests/api/explain_test.cpp:" +
      std::to_string(line) +
      ": all-reduce over ('b',) of f32[8,8], P(None, None){unreduced=('b',) sum} -> "
      "P(None, None): dot_general reduces over a dimension sharded on ('b',): each device "
      "holds a partial result, combined here\n"
      "      per device: sends 256 B, receives 256 B (0 B across processes)\n";
  EXPECT_EQ(report.to_string({.estimates = false}), want);
  EXPECT_NE(report.to_string().find("est. "), std::string::npos);
}

TEST(Explain, TheTutorialsConstraintNamesItsAllToAllAndItsLine) {
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const Array x = device_put(iota_f32({16, 16}), NamedSharding(mesh, P("x", "y")));
  int line = 0;
  auto f = jit([&](Array v) {
    v = v + 1;
    line = __LINE__ + 1;
    return lax::with_sharding_constraint(v, NamedSharding(mesh, P("y", "x")));
  });
  const Compiled compiled = f.lower(x).compile();
  const Explanation report = compiled.explain();
  ASSERT_FALSE(report.collectives().empty()) << compiled.as_text();
  double bytes = 0;
  int all_to_all = 0;
  for (const CollectiveInfo& c : report.collectives()) {
    EXPECT_EQ(c.file, kFile) << c.str();
    EXPECT_EQ(c.line, line) << c.str();
    EXPECT_EQ(c.why, "constraint") << c.str();
    EXPECT_EQ(c.before, "P('x', 'y')");
    EXPECT_EQ(c.after, "P('y', 'x')");
    EXPECT_EQ(c.reason, "sharding_constraint asks for this layout");
    bytes += c.bytes_received * c.runs;
    all_to_all += c.primitive == "all-to-all";
  }
  EXPECT_EQ(all_to_all, 1) << report;
  EXPECT_EQ(bytes, compiled.cost_analysis().collective_bytes);
  EXPECT_EQ(f(x).to_vector<float>(), (iota_f32({16, 16}) + 1).to_vector<float>());
}

TEST(Explain, OutShardingsAndLoopCarriesSayWhy) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array x = device_put(iota_f32({16, 8}), NamedSharding(mesh, P("x", None)));
  // jit's out_shardings ask for another layout than the result has.
  auto f = jit([](const Array& v) { return v * 2; },
               {.out_shardings = {NamedSharding(mesh, P(None, "x"))}});
  const Explanation out = f.lower(x).compile().explain();
  ASSERT_FALSE(out.collectives().empty());
  for (const CollectiveInfo& c : out.collectives()) {
    EXPECT_EQ(c.why, "out_sharding") << c.str();
    EXPECT_EQ(c.reason, "jit's out_shardings ask for this layout");
    EXPECT_EQ(c.after, "P(None, 'x')");
  }
  // A contraction inside a scan body runs once per step.
  int line = 0;
  auto g = jit([&](const Array& v) {
    return lax::fori_loop(
        0, 5,
        [&](const Array&, const Array& c) {
          line = __LINE__ + 1;
          return jnp::dot(c, jnp::ones({8, 8}) / 8.0f) + jnp::sum(c);
        },
        v);
  });
  const Compiled compiled = g.lower(x).compile();
  const Explanation loop = compiled.explain();
  ASSERT_FALSE(loop.collectives().empty()) << compiled.as_text();
  double bytes = 0;
  int contractions = 0;
  for (const CollectiveInfo& c : loop.collectives()) {
    bytes += c.bytes_received * c.runs;
    if (c.why == "contraction") {
      ++contractions;
      EXPECT_EQ(c.line, line) << c.str();
      EXPECT_EQ(c.runs, 5) << c.str();
      EXPECT_EQ(c.where, "scan body") << c.str();
    }
  }
  EXPECT_GE(contractions, 1) << loop;  // jnp::sum over the rows, sharded on 'x'
  EXPECT_EQ(bytes, compiled.cost_analysis().collective_bytes);
}

using Params = std::vector<std::pair<Array, Array>>;
using Batch = std::pair<Array, Array>;
int g_dot_line = 0, g_loss_line = 0;

Array predict(const Params& params, Array inputs) {
  Array outputs;
  for (const auto& [W, b] : params) {
    g_dot_line = __LINE__ + 1;
    outputs = jnp::dot(inputs, W) + b;
    inputs = jnp::maximum(outputs, 0.0f);
  }
  return outputs;
}

Array loss(const Params& params, const Batch& batch) {
  const auto& [inputs, targets] = batch;
  Array predictions = predict(params, inputs);
  g_loss_line = __LINE__ + 1;
  return jnp::mean(jnp::sum(jnp::square(predictions - targets), -1));
}

TEST(Explain, TheMlpGradientStepListsItsAllReducesWithCostAnalysisBytes) {
  const Mesh mesh = make_mesh({4, 2}, {"batch", "model"});
  const NamedSharding rep(mesh, P());
  const std::vector<int64_t> sizes = {16, 32, 32, 32, 8};
  Params params;
  for (size_t l = 0; l + 1 < sizes.size(); ++l) {
    params.emplace_back(jnp::ones({sizes[l], sizes[l + 1]}) / float(sizes[l]),
                        jnp::zeros({sizes[l + 1]}));
  }
  params[0] = {device_put(params[0].first, rep), device_put(params[0].second, rep)};
  params[1] = {device_put(params[1].first, NamedSharding(mesh, P(None, "model"))),
               device_put(params[1].second, NamedSharding(mesh, P("model")))};
  params[2] = {device_put(params[2].first, NamedSharding(mesh, P("model", None))),
               device_put(params[2].second, rep)};
  params[3] = {device_put(params[3].first, rep), device_put(params[3].second, rep)};
  const NamedSharding rows(mesh, P("batch", None));
  const Batch batch{device_put(iota_f32({16, 16}) / 256.0f, rows),
                    device_put(jnp::ones({16, 8}), rows)};
  const Compiled compiled = jit(grad(loss)).lower(params, batch).compile();
  const Explanation report = compiled.explain();
  ASSERT_FALSE(report.collectives().empty());
  double bytes = 0;
  int all_reduces_at_the_dot = 0;
  for (const CollectiveInfo& c : report.collectives()) {
    bytes += c.bytes_received * c.runs;
    EXPECT_EQ(c.file, kFile) << c.str();
    EXPECT_TRUE(c.line == g_dot_line || c.line == g_loss_line) << c.str();
    EXPECT_FALSE(c.is_explicit) << c.str();
    if (c.primitive == "all-reduce" && c.line == g_dot_line && c.why == "contraction") {
      ++all_reduces_at_the_dot;
    }
  }
  // The weights' gradients contract over the batch, sharded on 'batch'.
  EXPECT_GE(all_reduces_at_the_dot, 4) << report;
  EXPECT_EQ(bytes, compiled.cost_analysis().collective_bytes) << report;
  EXPECT_EQ(report.bytes_per_call(), compiled.cost_analysis().collective_bytes);
}

TEST(ReshardPolicy, WarnsAndRaisesForImplicitCollectivesOnly) {
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const Array x = device_put(iota_f32({16, 16}), NamedSharding(mesh, P("x", "y")));
  int line = 0;
  auto implicit = jit([&](const Array& v) {
    line = __LINE__ + 1;
    return lax::with_sharding_constraint(v + 1, NamedSharding(mesh, P("y", "x")));
  });
  auto spelled = jit([&](const Array& v) { return reshard(v + 1, P("y", "x")); });
  auto manual =
      shard_map([](const Array& v) { return lax::psum(v, "x"); }, mesh, P("x", "y"), P(None, "y"));
  const std::vector<float> want = (iota_f32({16, 16}) + 1).to_vector<float>();
  {
    PolicyScope policy("warn");
    testing::internal::CaptureStderr();
    EXPECT_EQ(implicit(x).to_vector<float>(), want);
    const std::string err = testing::internal::GetCapturedStderr();
    EXPECT_NE(err.find("parax: implicit collective in f: tests/api/explain_test.cpp:" +
                       std::to_string(line) + ": all-to-all over ('y',) of f32[16,8], " +
                       "P('x', 'y') -> P('y', 'x'): sharding_constraint asks for this layout\n"),
              std::string::npos)
        << err;
  }
  {
    PolicyScope policy("error");
    auto again = jit([&](const Array& v) {
      return lax::with_sharding_constraint(v * 2, NamedSharding(mesh, P("y", "x")));
    });
    try {
      again(x);
      ADD_FAILURE() << "no ShardingError";
    } catch (const ShardingError& e) {
      EXPECT_NE(std::string(e.what()).find("parax_implicit_reshard='error'"), std::string::npos);
      EXPECT_NE(std::string(e.what()).find("tests/api/explain_test.cpp:"), std::string::npos)
          << e.what();
    }
    sharding::MeshScope scope(mesh);
    testing::internal::CaptureStderr();
    EXPECT_EQ(spelled(x).to_vector<float>(), want);
    EXPECT_EQ(spelled(x).sharding(), NamedSharding(mesh, P("y", "x")));
    EXPECT_EQ(manual(x).shape(), (Shape{4, 16}));
    EXPECT_EQ(testing::internal::GetCapturedStderr(), "");
  }
}

TEST(Reshard, LaysOutEagerlyAndUnderJit) {
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const Array x = device_put(iota_f32({8, 8}), NamedSharding(mesh, P("x", "y")));
  const Array eager = reshard(x, P("y", "x"));  // a bare spec: x's own mesh
  EXPECT_EQ(eager.sharding(), NamedSharding(mesh, P("y", "x")));
  EXPECT_EQ(eager.to_vector<float>(), x.to_vector<float>());
  const Array to_one = reshard(x, NamedSharding(mesh, P()));
  EXPECT_TRUE(to_one.is_fully_replicated());
  auto f = jit([&](const Array& v) { return reshard(v * 2, NamedSharding(mesh, P(None, "x"))); });
  const Array y = f(x);
  EXPECT_EQ(y.sharding(), NamedSharding(mesh, P(None, "x")));
  EXPECT_EQ(y.to_vector<float>(), (x * 2).to_vector<float>());
  const Explanation report = f.lower(x).compile().explain();
  ASSERT_FALSE(report.collectives().empty());
  for (const CollectiveInfo& c : report.collectives()) {
    EXPECT_TRUE(c.is_explicit) << c.str();
    EXPECT_EQ(c.why, "reshard");
  }
  // A bare spec under jit needs a mesh in scope, as JAX's does.
  auto g = jit([](const Array& v) { return reshard(v, P("x")); });
  EXPECT_THROW(g(x), RuntimeError);
  EXPECT_THROW(reshard(x, NamedSharding(mesh, P("x", "y", "x"))), Error);
}

TEST(CommLog, CountsEagerCollectivesPerSourceLine) {
  const Mesh mesh = make_mesh({8}, {"x"});
  const Array a = device_put(iota_f32({8, 16}), NamedSharding(mesh, P(None, "x")));
  const Array b = device_put(iota_f32({16, 8}), NamedSharding(mesh, P("x", None)));
  debug::CommLog log;
  const int line = __LINE__ + 1;
  for (int i = 0; i < 2; ++i) jnp::dot(a, b).block_until_ready();
  auto jitted = jit([](const Array& l, const Array& r) { return jnp::dot(l, r); });
  const int jit_line = __LINE__ - 1;
  jitted(a, b).block_until_ready();
  EXPECT_EQ(log.counts(), (std::map<std::string, int64_t>{{"all-reduce", 3}}));
  EXPECT_EQ(log.total_count(), 3);
  // A ring all-reduce of 256 bytes over 8 devices: each receives 2 x 7/8 of them.
  EXPECT_EQ(log.total_bytes(), 3 * 448.0);
  const std::vector<CollectiveInfo> rows = log.collectives();
  ASSERT_EQ(rows.size(), 3u);
  EXPECT_EQ(rows[0].line, line);
  EXPECT_EQ(rows[1].line, line);
  EXPECT_EQ(rows[2].line, jit_line);
  const std::string table = log.table();
  EXPECT_NE(table.find("tests/api/explain_test.cpp:" + std::to_string(line) +
                       "  all-reduce             2             896 B"),
            std::string::npos)
      << table;
  EXPECT_NE(table.find("total"), std::string::npos) << table;
}

}  // namespace
}  // namespace parax

namespace parax {
namespace {

TEST(InspectArraySharding, CallsBackWithWhatTheCompilerChose) {
  const Mesh mesh = make_mesh({4, 2}, {"x", "y"});
  const Array x = device_put(iota_f32({8, 8}), NamedSharding(mesh, P("x", "y")));
  std::vector<std::string> seen;
  auto record = [&](const char* where) {
    return [&seen, where](const Sharding& s) { seen.push_back(where + (": " + s.to_string())); };
  };
  debug::inspect_array_sharding(x, record("eager"));
  auto f = jit([&](const Array& v) {
    const Array w = jnp::sin(v);
    debug::inspect_array_sharding(w, record("jit"));
    const Array u = lax::with_sharding_constraint(w * 2, NamedSharding(mesh, P(None, "x")));
    debug::inspect_array_sharding(u, record("constrained"));
    return u;
  });
  const Compiled compiled = f.lower(x).compile();  // calls back when compiling
  auto g = jit(shard_map(
      [&](const Array& v) {
        debug::inspect_array_sharding(v, record("shard_map"));
        return v * 2;
      },
      mesh, P("x", "y"), P("x", "y")));
  g(x);
  g(x);  // cached: no call back
  const std::string named = "NamedSharding(mesh=Mesh('x': 4, 'y': 2), spec=PartitionSpec(";
  EXPECT_EQ(seen, (std::vector<std::string>{
                      "eager: " + named + "'x', 'y'))", "jit: " + named + "'x', 'y'))",
                      "constrained: " + named + "None, 'x'))", "shard_map: " + named + "))"}));
  // Inside jit, visualize_array_sharding draws at compile time too.
  std::ostringstream os;
  auto h = jit([&](const Array& v) {
    debug::visualize_array_sharding(jnp::cos(v), os);
    return v;
  });
  h(x);
  EXPECT_EQ(os.str(),
            "┌──────────┬──────────┐\n"
            "│  CPU 0   │  CPU 1   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 2   │  CPU 3   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 4   │  CPU 5   │\n"
            "├──────────┼──────────┤\n"
            "│  CPU 6   │  CPU 7   │\n"
            "└──────────┴──────────┘\n");
  // Under vmap, the batched value is inspected.
  seen.clear();
  auto batched = jit(vmap([&](const Array& row) {
    debug::inspect_array_sharding(row, record("vmap"));
    return row + 1;
  }));
  batched(x);
  EXPECT_EQ(seen, std::vector<std::string>{"vmap: " + named + "'x', 'y'))"});
}

}  // namespace
}  // namespace parax
