// jit end to end on 8 devices: tracing and caching, lower/compile/as_text/cost, in and out
// shardings, with_sharding_constraint, commitment, padding of uneven dimensions, the
// tutorial's computations, and memory released as soon as values die.
#include <gtest/gtest.h>

#include <cmath>
#include <filesystem>
#include <iostream>
#include <numeric>
#include <sstream>

#include "base/thread_pool.h"
#include "parax/parax.h"
#include "runtime/buffer.h"

namespace parax {
namespace {

namespace jnp = numpy;

Array iota_f32(Shape shape) {
  return jnp::arange(shape_size(shape), DType::float32).reshape(std::move(shape));
}

std::string layout_of(const Array& x) {
  std::ostringstream os;
  debug::visualize_array_sharding(x, os);
  return os.str();
}

int count(const std::string& text, const std::string& word) {
  int n = 0;
  for (size_t p = text.find(word); p != std::string::npos; p = text.find(word, p + 1)) ++n;
  return n;
}

Array add_one(Array x) { return x + 1; }

struct Params2 {
  Array w, b;
};
PARAX_REGISTER_PYTREE(Params2, w, b)

TEST(Jit, TracesOncePerSignatureAndAcceptsCallablesAndPytrees) {
  int traces = 0;
  auto g = jit([&](const Array& x) {
    ++traces;
    return jnp::sin(x) * 2.0f;
  });
  auto x = iota_f32({4, 4});
  Array y = g(x);
  g(x);
  g(iota_f32({4, 4}) + 1);
  EXPECT_EQ(traces, 1);
  g(iota_f32({2, 8}));
  EXPECT_EQ(traces, 2);
  auto want = (jnp::sin(x) * 2.0f).to_vector<float>();
  EXPECT_EQ(y.to_vector<float>(), want);

  auto h = jit(add_one);  // a function pointer
  EXPECT_EQ(h(x).to_vector<float>()[3], 4.0f);

  auto k = jit([](const std::pair<Array, std::vector<Array>>& in, Params2 p) {
    return std::make_tuple(in.first + in.second[0], p.w * p.b);
  });
  auto [s, t] = k(std::pair{x, std::vector<Array>{x}}, Params2{x, x});
  EXPECT_EQ(s.to_vector<float>()[5], 10.0f);
  EXPECT_EQ(t.to_vector<float>()[3], 9.0f);
}

TEST(Jit, WeakTypesAreKeptAndPartOfTheSignature) {
  auto f = jit([](const Array& x) { return x * 2; });
  auto x16 = jnp::ones({3}, DType::float16);
  EXPECT_EQ(f(x16).dtype(), DType::float16);
  auto xi = jnp::arange(3);
  EXPECT_EQ(f(xi).dtype(), DType::int32);
}

TEST(Jit, MakeJaxprAndLowerPrintTheTracedProgram) {
  auto f = [](const Array& x, const Array& y) {
    Array s = jnp::sin(x);
    return s + y * 2.0f;
  };
  auto x = jnp::ones({8});
  std::string text = make_jaxpr(f)(x, x).to_string();
  EXPECT_EQ(text,
            "{ lambda ; a:f32[8] b:f32[8]. let\n"
            "    c:f32[8] = sin a\n"
            "    d:f32[8] = mul b 2.0\n"
            "    e:f32[8] = add c d\n"
            "  in (e,) }");
  EXPECT_EQ(jit(f).lower(x, x).as_text(), text);
}

TEST(Jit, CapturedArraysBecomeConstants) {
  auto c = iota_f32({3});
  auto f = jit([&](const Array& x) { return x + c; });
  std::string text = jit([&](const Array& x) { return x + c; }).lower(jnp::ones({3})).as_text();
  EXPECT_EQ(text, "{ lambda a:f32[3]; b:f32[3]. let c:f32[3] = add b a in (c,) }");
  EXPECT_EQ(f(jnp::ones({3})).to_vector<float>(), (std::vector<float>{1, 2, 3}));
}

TEST(Jit, TracedValuesAreNotConcrete) {
  auto f = jit([](const Array& x) {
    (void)x.item<float>();
    return x;
  });
  try {
    f(jnp::ones({}));
    FAIL() << "expected ConcretizationError";
  } catch (const ConcretizationError& e) {
    EXPECT_NE(std::string(e.what()).find("Abstract tracer value encountered"), std::string::npos);
  }
  Array leaked;
  auto g = jit([&](const Array& x) {
    leaked = x;
    return x;
  });
  g(jnp::ones({2}));
  EXPECT_THROW(jnp::sin(leaked), ValueError);
}

TEST(Jit, EagerOpsFollowTheDataAndJitAgrees) {
  auto mesh = make_mesh({4, 2}, {"a", "b"});
  auto x = iota_f32({16, 16});
  auto y = device_put(x, NamedSharding(mesh, P("a", "b")));
  auto s = jnp::sin(y);
  EXPECT_EQ(s.sharding(), y.sharding());
  EXPECT_TRUE(s.is_committed());
  EXPECT_EQ(jit([](const Array& v) { return jnp::sin(v); })(y).sharding(), y.sharding());

  auto lhs = device_put(x, NamedSharding(mesh, P("a", None)));
  auto rhs = device_put(x, NamedSharding(mesh, P(None, "b")));
  auto w = jnp::dot(lhs, rhs);
  EXPECT_TRUE(w.sharding().is_equivalent_to(NamedSharding(mesh, P("a", "b")), 2));
  auto f = jit([](const Array& a, const Array& b) { return jnp::dot(a, b); });
  auto compiled = f.lower(lhs, rhs).compile();
  EXPECT_EQ(compiled.cost_analysis().collectives.size(), 0u) << compiled.as_text();
  EXPECT_DOUBLE_EQ(compiled.cost_analysis().flops, 2.0 * 4 * 8 * 16);
  EXPECT_TRUE(jnp::copy(w).sharding().is_equivalent_to(w.sharding(), 2));

  auto single = device_put(x, devices()[0]);
  auto want = jnp::dot(single, single).to_vector<float>();
  auto got = w.to_vector<float>();
  for (size_t i = 0; i < want.size(); ++i) EXPECT_NEAR(got[i], want[i], 1e-3f * std::abs(want[i]));
}

TEST(Jit, ContractionOverAShardedDimensionIsAllReducedOrReduceScattered) {
  auto mesh = make_mesh({8}, {"x"});
  auto a = device_put(iota_f32({8, 16}), NamedSharding(mesh, P(None, "x")));
  auto b = device_put(iota_f32({16, 8}), NamedSharding(mesh, P("x", None)));
  auto f = jit([](const Array& l, const Array& r) { return jnp::dot(l, r); });
  auto text = f.lower(a, b).compile().as_text();
  EXPECT_EQ(count(text, "all-reduce"), 1) << text;
  auto g = jit([&](const Array& l, const Array& r) {
    return lax::with_sharding_constraint(jnp::dot(l, r), NamedSharding(mesh, P("x")));
  });
  text = g.lower(a, b).compile().as_text();
  EXPECT_EQ(count(text, "reduce-scatter"), 1) << text;
  EXPECT_EQ(count(text, "all-reduce"), 0) << text;
  auto want = jnp::dot(iota_f32({8, 16}), iota_f32({16, 8})).to_vector<float>();
  EXPECT_EQ(f(a, b).to_vector<float>(), want);
  EXPECT_EQ(g(a, b).to_vector<float>(), want);
  // Scattering along the minor dimension: strided blocks of every member.
  auto h = jit([&](const Array& l, const Array& r) {
    return lax::with_sharding_constraint(jnp::dot(l, r), NamedSharding(mesh, P(None, "x")));
  });
  EXPECT_EQ(count(h.lower(a, b).compile().as_text(), "reduce-scatter"), 1);
  EXPECT_EQ(h(a, b).to_vector<float>(), want);
}

TEST(Jit, ConstraintsReshardAsTheTutorialShows) {
  auto mesh = make_mesh({4, 2}, {"x", "y"});
  auto x = device_put(iota_f32({16, 16}), NamedSharding(mesh, P("x", "y")));
  auto f = jit([&](Array v) {
    v = v + 1;
    return lax::with_sharding_constraint(v, NamedSharding(mesh, P("y", "x")));
  });
  auto y = f(x);
  EXPECT_EQ(y.sharding(), Sharding(NamedSharding(mesh, P("y", "x"))));  // the constraint's
  EXPECT_EQ(layout_of(y),
            "┌───────┬───────┬───────┬───────┐\n"
            "│       │       │       │       │\n"
            "│ CPU 0 │ CPU 2 │ CPU 4 │ CPU 6 │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "├───────┼───────┼───────┼───────┤\n"
            "│       │       │       │       │\n"
            "│ CPU 1 │ CPU 3 │ CPU 5 │ CPU 7 │\n"
            "│       │       │       │       │\n"
            "│       │       │       │       │\n"
            "└───────┴───────┴───────┴───────┘\n");
  auto text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "all-to-all"), 1) << text;
  EXPECT_EQ(y.to_vector<float>(), (iota_f32({16, 16}) + 1).to_vector<float>());

  auto g = jit([&](Array v) {
    v = v + 1;
    return lax::with_sharding_constraint(v, NamedSharding(mesh, P()));
  });
  auto r = g(x);
  EXPECT_TRUE(r.sharding().is_fully_replicated());
  text = g.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "all-gather"), 2) << text;
  EXPECT_EQ(count(text, "all-to-all"), 0) << text;
}

TEST(Jit, UnconstrainedDimensionsKeepTheOperandsLayout) {
  auto mesh = make_mesh({4, 2}, {"a", "b"});
  auto x = device_put(iota_f32({8, 8}), NamedSharding(mesh, P("a", None)));
  auto f = jit([&](const Array& v) {
    return lax::with_sharding_constraint(v * 2.0f,
                                         NamedSharding(mesh, P(PartitionSpec::UNCONSTRAINED, "b")));
  });
  auto y = f(x);
  EXPECT_TRUE(y.sharding().is_equivalent_to(NamedSharding(mesh, P("a", "b")), 2)) << y.sharding();
  EXPECT_EQ(count(f.lower(x).compile().as_text(), "all-"), 0);
}

TEST(Jit, ReplicatedAxesNeedNoCopyInACollectivePermute) {
  auto mesh = make_mesh({2, 2, 2}, {"a", "b", "c"});
  auto x = device_put(iota_f32({8}), NamedSharding(mesh, P("a")));
  auto f = jit([&](const Array& v) {
    return lax::with_sharding_constraint(v, NamedSharding(mesh, P("b")));
  });
  auto text = f.lower(x).compile().as_text();
  EXPECT_EQ(count(text, "collective-permute"), 1) << text;
  EXPECT_EQ(f(x).to_vector<float>(), iota_f32({8}).to_vector<float>());
  EXPECT_TRUE(f(x).sharding().is_equivalent_to(NamedSharding(mesh, P("b")), 1));
}

TEST(Jit, InAndOutShardingsAreRespected) {
  auto mesh = make_mesh({4, 2}, {"a", "b"});
  auto s_ab = NamedSharding(mesh, P("a", "b"));
  auto s_rep = NamedSharding(mesh, P());
  auto f = jit([](const Array& v) { return v * 3.0f; },
               JitOptions{.in_shardings = {s_ab}, .out_shardings = {s_rep}});
  auto x = iota_f32({8, 8});  // uncommitted: moved to the in_sharding
  auto y = f(x);
  EXPECT_EQ(y.sharding(), Sharding(s_rep));
  EXPECT_TRUE(y.is_committed());
  auto text = f.lower(x).compile().as_text();
  EXPECT_NE(text.find("# in_layouts (P('a', 'b'))"), std::string::npos) << text;
  EXPECT_EQ(y.to_vector<float>(), (iota_f32({8, 8}) * 3.0f).to_vector<float>());
  auto two = jit([](const Array& v) { return v; }, JitOptions{.in_shardings = {s_ab, s_ab}});
  EXPECT_THROW(two(x), ValueError);
}

TEST(Jit, CommittedArgumentsOnDifferentDevicesAreAnError) {
  auto all = devices();
  NamedSharding s1(Mesh({all.begin(), all.begin() + 4}, "x"), P("x"));
  NamedSharding s2(Mesh({all.begin() + 4, all.end()}, "x"), P("x"));
  auto x = jnp::arange(24, DType::float32);
  auto y = device_put(x, s1);
  auto z = device_put(x, s2);
  try {
    y + z;
    FAIL() << "expected ValueError";
  } catch (const ValueError& e) {
    EXPECT_EQ(std::string(e.what()),
              "Received incompatible devices for jitted computation. Got argument x of add with "
              "shape float32[24] and device ids [0, 1, 2, 3] on platform CPU and argument y of "
              "add with shape float32[24] and device ids [4, 5, 6, 7] on platform CPU");
  }
  // Uncommitted arrays move to the committed ones' devices.
  auto r = y + jnp::ones_like(y);
  EXPECT_TRUE(r.sharding().is_equivalent_to(s1, 1));
  auto q = y + jnp::arange(24).astype(DType::float32);
  EXPECT_TRUE(q.sharding().is_equivalent_to(s1, 1));
  EXPECT_EQ(q.to_vector<float>()[23], 46.0f);
}

TEST(Jit, UnevenDimensionsArePaddedAndMaskedInsideJit) {
  auto mesh = make_mesh({8}, {"x"});
  auto s = NamedSharding(mesh, P("x"));
  auto x = jnp::arange(10, DType::float32);
  auto f = jit([&](const Array& v) { return lax::with_sharding_constraint(v + 1, s); });
  auto y = f(x);
  EXPECT_EQ(y.to_vector<float>(), (x + 1).to_vector<float>());
  EXPECT_TRUE(y.sharding().is_fully_replicated());  // arrays hold even shards only, as in JAX

  auto total = [&](auto reduce) {
    return jit([&, reduce](const Array& v) {
      return reduce(lax::with_sharding_constraint(v * 2.0f + 1.0f, s));
    });
  };
  EXPECT_EQ(total([](const Array& v) { return jnp::sum(v); })(x).item<float>(), 100.0f);
  EXPECT_EQ(total([](const Array& v) { return jnp::max(v); })(x).item<float>(), 19.0f);
  EXPECT_EQ(total([](const Array& v) { return jnp::min(v); })(x).item<float>(), 1.0f);
  auto sum = total([](const Array& v) { return jnp::sum(v); });
  auto text = sum.lower(x).compile().as_text();
  EXPECT_NE(text.find("shard-slice"), std::string::npos) << text;
  EXPECT_NE(text.find("select_n"), std::string::npos) << text;
  EXPECT_EQ(count(text, "all-reduce"), 1) << text;

  // A contraction over a padded dimension.
  auto a = jnp::ones({3, 10});
  auto b = jnp::arange(10, DType::float32);
  auto dot = jit([&](const Array& l, const Array& r) {
    return jnp::dot(lax::with_sharding_constraint(l, NamedSharding(mesh, P(None, "x"))),
                    lax::with_sharding_constraint(r, s));
  });
  EXPECT_EQ(dot(a, b).to_vector<float>(), (std::vector<float>{45, 45, 45}));

  auto bad = jit([](const Array& v) { return v; }, JitOptions{.out_shardings = {s}});
  EXPECT_THROW(bad(x), ValueError);
}

TEST(Runtime, EightDevicesNeverUseMoreThreadsThanThePool) {
  auto mesh = make_mesh({4, 2}, {"a", "b"});
  auto x = device_put(iota_f32({512, 512}), NamedSharding(mesh, P("a", "b")));
  auto l = device_put(iota_f32({512, 512}), NamedSharding(mesh, P("a", None)));
  auto r = device_put(iota_f32({512, 512}), NamedSharding(mesh, P(None, "b")));
  for (int i = 0; i < 3; ++i) {
    jnp::sin(x).block_until_ready();
    jnp::dot(l, r).block_until_ready();
    jit([](const Array& v) { return jnp::tanh(v) * 2.0f + 1.0f; })(x).block_until_ready();
    jnp::sum(x).block_until_ready();
  }
  EXPECT_GE(base::threads_used(), 1);
  EXPECT_LE(base::threads_used(), base::num_threads());
  // Nor does anything else start busy threads per device: the process holds the pool's
  // threads plus the BLAS library's one idle helper at most.
  int tasks = 0;
  for (const auto& entry : std::filesystem::directory_iterator("/proc/self/task")) {
    (void)entry;
    ++tasks;
  }
  std::cerr << "threads in the process: " << tasks << "\n";
  EXPECT_LE(tasks, base::num_threads() + 2);
}

TEST(Runtime, ElementwiseResultsReuseABufferThatDiesThere) {
  auto x = device_put(iota_f32({64, 64}), devices()[0]);
  auto f = jit([](const Array& v) { return jnp::exp(jnp::flip(v, 0)) + 1.0f; });
  auto want = (jnp::exp(jnp::flip(x, 0)) + 1.0f).to_vector<float>();
  f(x);
  const int64_t before = runtime::memory_stats().allocations;
  Array y = f(x);
  // flip makes one buffer; the fusion after it writes into that buffer in place, as the
  // plan says.
  const std::string text = f.lower(x).compile().as_text();
  EXPECT_EQ(runtime::memory_stats().allocations - before, 1) << text;
  EXPECT_EQ(y.to_vector<float>(), want);
  EXPECT_EQ(text.substr(text.find("# buffers")),
            "# buffers\n"
            "#   0: b new; frees a\n"
            "#   1: c to result 0 else reuses b; frees b\n");
}

TEST(Runtime, AResultReadLaterIsNotWrittenOver) {
  auto x = device_put(iota_f32({64, 64}) / 4096.0f, devices()[0]);
  auto f = jit([](const Array& v) {
    Array y = jnp::exp(v);
    return std::vector<Array>{y, jnp::flip(y, 0) + y};
  });
  const std::string text = f.lower(x).compile().as_text();
  // The add may write over the flip's buffer, never over y, which the caller receives.
  EXPECT_EQ(text.substr(text.find("# buffers")),
            "# buffers\n"
            "#   0: b to result 0 else new; frees a\n"
            "#   1: c new\n"
            "#   2: d to result 1 else reuses c; frees c\n");
  std::vector<Array> r = f(x);
  EXPECT_EQ(r[0].to_vector<float>(), jnp::exp(x).to_vector<float>());
  EXPECT_EQ(r[1].to_vector<float>(), (jnp::flip(jnp::exp(x), 0) + jnp::exp(x)).to_vector<float>());
}

TEST(Runtime, AScanBodyWritesItsYsIntoTheStackedResult) {
  const int64_t length = 16;
  auto xs = device_put(iota_f32({length, 256}), devices()[0]);
  auto c0 = device_put(jnp::zeros({256}), devices()[0]);
  auto g = jit([](const Array& c, const Array& xs) {
    auto [carry, ys] = lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + x, jnp::sin(x) * 2.0f};
        },
        c, xs);
    return std::vector<Array>{carry, ys};
  });
  g(c0, xs);
  const int64_t before = runtime::memory_stats().allocations;
  std::vector<Array> r = g(c0, xs);
  // The stacked ys once, and a carry per step: each step's y goes straight into its slot
  // (the body's plan sends it to its result 1).
  EXPECT_EQ(runtime::memory_stats().allocations - before, 1 + length)
      << g.lower(c0, xs).compile().as_text();
  EXPECT_EQ(r[1].to_vector<float>(), (jnp::sin(xs) * 2.0f).to_vector<float>());
  EXPECT_EQ(r[0].to_vector<float>(), jnp::sum(xs, 0).to_vector<float>());
}

TEST(Runtime, BuffersAreFreedAfterTheirLastUse) {
  const int64_t n = 1024;
  auto x = device_put(jnp::ones({n, n}), devices()[0]);
  auto chain = jit([](Array v) {
    for (int i = 0; i < 10; ++i) v = jnp::sin(v) + 1.0f;
    return v;
  });
  chain(x).block_until_ready();  // compile outside the measurement
  const int64_t bytes = n * n * 4;
  runtime::reset_peak_memory();
  const int64_t before = runtime::memory_stats().live_bytes;
  Array y = chain(x);
  const int64_t peak = runtime::memory_stats().peak_bytes - before;
  EXPECT_LE(peak, 3 * bytes) << "peak " << peak << " bytes for " << bytes << "-byte arrays";
}

}  // namespace
}  // namespace parax
