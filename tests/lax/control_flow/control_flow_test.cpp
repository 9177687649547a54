// lax's control flow forward: values eager and under jit, make_jaxpr text as JAX 0.10.2
// prints it, and JAX's errors.
#include <gtest/gtest.h>

#include <cmath>

#include "parax/parax.h"

namespace parax {
namespace {

namespace jnp = numpy;

std::vector<float> values(const Array& x) { return x.to_vector<float>(); }

TEST(ControlFlow, CondPicksABranch) {
  auto f = [](const Array& x) {
    return lax::cond(
        jnp::sum(x) > 0, [](const Array& y) { return lax::sin(y); },
        [](const Array& y) { return lax::cos(y); }, x);
  };
  Array x = jnp::ones({3});
  EXPECT_FLOAT_EQ(values(f(x))[0], std::sin(1.0f));
  EXPECT_FLOAT_EQ(values(f(-x))[0], std::cos(-1.0f));
  EXPECT_FLOAT_EQ(values(jit(f)(x))[0], std::sin(1.0f));
  EXPECT_FLOAT_EQ(values(jit(f)(-x))[0], std::cos(-1.0f));
  EXPECT_EQ(make_jaxpr(f)(x).to_string(),
            "{ lambda ; a:f32[3]. let\n"
            "    b:f32[] = reduce_sum[axes=(0,)] a\n"
            "    c:bool[] = gt b 0.0\n"
            "    d:i32[] = convert_element_type[new_dtype=int32 weak_type=False] c\n"
            "    e:f32[3] = cond[\n"
            "      branches=(\n"
            "        { lambda ; f:f32[3]. let g:f32[3] = cos f in (g,) }\n"
            "        { lambda ; h:f32[3]. let i:f32[3] = sin h in (i,) }\n"
            "      )\n"
            "    ] d a\n"
            "  in (e,) }");
}

TEST(ControlFlow, WhileLoop) {
  auto f = [](const Array& x) {
    return lax::while_loop([](const Array& c) { return c < 10.0f; },
                           [](const Array& c) { return c * 2.0f; }, x);
  };
  Array x = jnp::array({1.0f});
  EXPECT_FLOAT_EQ(f(x[0]).item<float>(), 16.0f);
  EXPECT_FLOAT_EQ(jit(f)(x[0]).item<float>(), 16.0f);
  EXPECT_EQ(make_jaxpr(f)(x[0]).to_string(),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = while[\n"
            "      body_jaxpr={ lambda ; c:f32[]. let d:f32[] = mul c 2.0 in (d,) }\n"
            "      body_nconsts=0\n"
            "      cond_jaxpr={ lambda ; e:f32[]. let f:bool[] = lt e 10.0 in (f,) }\n"
            "      cond_nconsts=0\n"
            "    ] a\n"
            "  in (b,) }");
}

TEST(ControlFlow, ForiLoopStaticIsAScan) {
  auto f = [](const Array& x) {
    return lax::fori_loop(
        0, 5, [](const Array&, const Array& c) { return c * 2.0f; }, x);
  };
  Array x = jnp::array({1.0f})[0];
  EXPECT_FLOAT_EQ(f(x).item<float>(), 32.0f);
  EXPECT_FLOAT_EQ(jit(f)(x).item<float>(), 32.0f);
  EXPECT_EQ(make_jaxpr(f)(x).to_string(),
            "{ lambda ; a:f32[]. let\n"
            "    _:i32[] b:f32[] = scan[\n"
            "      jaxpr={ lambda ; c:i32[] d:f32[]. let\n"
            "          e:i32[] = add c 1\n"
            "          f:f32[] = mul d 2.0\n"
            "        in (e, f) }\n"
            "      length=5\n"
            "      num_carry=2\n"
            "      num_consts=0\n"
            "      reverse=False\n"
            "      unroll=1\n"
            "    ] 0 a\n"
            "  in (b,) }");
}

TEST(ControlFlow, ForiLoopTracedBoundsIsAWhile) {
  auto f = [](const Array& x, const Array& n) {
    return lax::fori_loop(
        0, n, [](const Array& i, const Array& c) { return c + i; }, x);
  };
  Array x = jnp::array({0.0f})[0];
  Array n = jnp::array({5})[0];
  EXPECT_FLOAT_EQ(jit(f)(x, n).item<float>(), 10.0f);
}

TEST(ControlFlow, ScanCarriesAndStacks) {
  auto f = [](const Array& c, const Array& xs) {
    return lax::scan([](const Array& c, const Array& x) { return std::pair{c + x, c * x}; }, c, xs);
  };
  Array c = jnp::array({1.0f})[0];
  Array xs = jnp::arange(1, 5).astype(DType::float32);
  for (auto run : {0, 1}) {
    auto [carry, ys] = run ? jit(f)(c, xs) : f(c, xs);
    EXPECT_FLOAT_EQ(carry.item<float>(), 11.0f);
    EXPECT_EQ(values(ys), (std::vector<float>{1, 4, 12, 28}));
  }
  auto rev = [](const Array& c, const Array& xs) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + x, c};
        },
        c, xs, std::nullopt, true);
  };
  auto [carry, ys] = jit(rev)(c, xs);
  EXPECT_FLOAT_EQ(carry.item<float>(), 11.0f);
  EXPECT_EQ(values(ys), (std::vector<float>{10, 8, 5, 1}));
}

TEST(ControlFlow, MapAndSwitch) {
  Array xs = jnp::arange(4).astype(DType::float32);
  Array ys = lax::map([](const Array& x) { return x * x; }, xs);
  EXPECT_EQ(values(ys), (std::vector<float>{0, 1, 4, 9}));
  std::vector<std::function<Array(const Array&)>> branches = {
      [](const Array& x) { return x + 1.0f; }, [](const Array& x) { return x * 10.0f; },
      [](const Array& x) { return -x; }};
  for (int i : {-1, 0, 1, 2, 7}) {
    Array r = lax::switch_(i, branches, xs);
    const float want = i <= 0 ? 2.0f : i == 1 ? 10.0f : -1.0f;
    EXPECT_FLOAT_EQ(values(r)[1], want) << i;
  }
}

TEST(ControlFlow, CheckpointComputesTheSame) {
  auto f = checkpoint([](const Array& x) { return lax::sin(lax::sin(x)); });
  Array x = jnp::array({1.0f})[0];
  EXPECT_FLOAT_EQ(f(x).item<float>(), std::sin(std::sin(1.0f)));
  EXPECT_EQ(make_jaxpr(f)(x).to_string(),
            "{ lambda ; a:f32[]. let\n"
            "    b:f32[] = remat2[\n"
            "      differentiated=False\n"
            "      jaxpr={ lambda ; c:f32[]. let d:f32[] = sin c; e:f32[] = sin d in (e,) }\n"
            "      policy=None\n"
            "      prevent_cse=True\n"
            "    ] a\n"
            "  in (b,) }");
}

TEST(ControlFlow, Errors) {
  Array x = jnp::ones({3});
  try {
    lax::scan(
        [](const Array&, const Array& x) {
          return std::pair{jnp::ones({3}), x};
        },
        jnp::array({1.0f})[0], x);
    FAIL();
  } catch (const TypeError& e) {
    EXPECT_EQ(std::string(e.what()),
              "scan body function carry input and carry output must have equal types, but they "
              "differ:\n\nThe input carry c has type float32[] but the corresponding output "
              "carry component has type float32[3], so the shapes do not match.\n\nRevise the "
              "function so that all output types match the corresponding input types.");
  }
  EXPECT_THROW(lax::cond(
                   x > 0, [](const Array& y) { return y; }, [](const Array& y) { return y; }, x),
               TypeError);
}

}  // namespace
}  // namespace parax
