// jacfwd, jacrev, hessian, linearize and has_aux against JAX
// (tools/make_custom_derivative_goldens.py): values, shapes (out.shape + in.shape), pytree
// nesting (output structure outside, input structure inside), argnums, and their
// composition with jit, vmap and custom derivatives.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <set>
#include <sstream>
#include <string>
#include <vector>

#include <parax/custom_derivatives.h>
#include <parax/parax.h>

#include "support/errors.h"
#include "support/golden.h"
#include "transforms/custom_derivative_golden.h"

namespace parax {
namespace {

namespace jnp = numpy;
using namespace custom_derivative_golden;
using T1 = std::tuple<Array>;
using D = std::map<std::string, Array>;

TEST(Jacobian, MatchesJax) {
  Array jx = vec({0.5f, -1, 2}), jy = vec({1.5f, 0.25f});
  Array jA = jnp::array({{1.0f, 2.0f}, {3.0f, -1.0f}});
  auto jf = [](const Array& x) { return jnp::sin(x) * jnp::sum(x * x); };
  auto jg = [](const Array& x, const Array& y) { return jnp::outer(x, y) + jnp::sum(jnp::sin(x)); };
  auto sq = [](const Array& a) { return jnp::matmul(a, a); };
  std::map<std::string, std::function<Leaves()>> c;
  c["jac/fwd/vec"] = [&] { return L(jacfwd(jf)(jx)); };
  c["jac/rev/vec"] = [&] { return L(jacrev(jf)(jx)); };
  c["jac/fwd/mat"] = [&] { return L(jacfwd(sq)(jA)); };
  c["jac/rev/mat"] = [&] { return L(jacrev(sq)(jA)); };
  c["jac/fwd/argnums01"] = [&] { return L(jacfwd(jg, argnums<0, 1>)(jx, jy)); };
  c["jac/rev/argnums01"] = [&] { return L(jacrev(jg, argnums<0, 1>)(jx, jy)); };
  c["jac/fwd/argnum1"] = [&] { return L(jacfwd(jg, argnums<1>)(jx, jy)); };
  c["jac/rev/argnum1"] = [&] { return L(jacrev(jg, argnums<1>)(jx, jy)); };
  c["jac/rev/scalar"] = [&] {
    return L(jacrev([](const Array& x) { return jnp::sum(jnp::sin(x)); })(jx));
  };
  c["jac/fwd/scalar_in"] = [&] {
    return L(jacfwd([](const Array& s) { return jnp::stack({s, s * s, jnp::sin(s)}); })(f32(2)));
  };
  auto tree_f = [](const D& d) {
    return std::pair{d.at("a") * jnp::sum(d.at("b")), jnp::sum(d.at("a")) * d.at("b")[0]};
  };
  D tree_in{{"a", jx}, {"b", jy}};
  c["jac/fwd/tree"] = [&] { return L(jacfwd(tree_f)(tree_in)); };
  c["jac/rev/tree"] = [&] { return L(jacrev(tree_f)(tree_in)); };
  c["jac/hessian/vec"] = [&] {
    return L(hessian([](const Array& x) { return jnp::sum(jnp::sin(x) * x * x); })(jx));
  };
  c["jac/hessian/mat"] = [&] {
    return L(hessian([](const Array& a) { return jnp::sum(jnp::tanh(jnp::matmul(a, a))); })(jA));
  };
  c["jac/hessian/argnums"] = [&] {
    return L(hessian(
        [](const Array& x, const Array& y) {
          Array o = jnp::outer(x, y);
          return jnp::sum(o * o);
        },
        argnums<0, 1>)(jx, jy));
  };
  c["jac/jit_jacfwd"] = [&] { return L(jit(jacfwd(jf))(jx)); };
  c["jac/vmap_jacrev"] = [&] { return L(vmap(jacrev(jf))(jnp::stack({jx, 2.0f * jx}))); };
  auto sin_jvp = custom_jvp([](const Array& x) { return jnp::sin(x); },
                            [](const T1& p, const T1& t) {
                              auto [x] = p;
                              return std::pair{jnp::sin(x), 2.0f * jnp::cos(x) * std::get<0>(t)};
                            });
  auto vsin = custom_vjp([](const Array& x) { return jnp::sin(x); },
                         [](const Array& x) {
                           return std::pair{jnp::sin(x), jnp::cos(x)};
                         },
                         [](const Array& cos_x, const Array& g) { return 2.0f * cos_x * g; });
  auto log1pexp =
      custom_jvp([](const Array& x) { return jnp::log(1.0f + jnp::exp(x)); },
                 [](const T1& p, const T1& t) {
                   auto [x] = p;
                   return std::pair{jnp::log(1.0f + jnp::exp(x)),
                                    (1.0f - 1.0f / (1.0f + jnp::exp(x))) * std::get<0>(t)};
                 });
  Array ar3 = jnp::arange(3.0f);
  c["jac/fwd_custom_jvp"] = [&] { return L(jacfwd(sin_jvp)(ar3)); };
  c["jac/rev_custom_vjp"] = [&] { return L(jacrev(vsin)(ar3)); };
  c["jac/hessian_custom_jvp"] = [&] {
    return L(hessian([&](const Array& x) { return jnp::sum(log1pexp(x) * x); })(jx));
  };

  Array ai3 = jnp::arange(3);
  auto twice = [](const Array& x) { return x * 2.0f; };
  auto to_int = [](const Array& x) { return (x * 2.0f).astype(DType::int32); };
  c["jac/err/fwd_int_in"] = [&] { return L(jacfwd(twice)(ai3)); };
  c["jac/err/rev_int_in"] = [&] { return L(jacrev(twice)(ai3)); };
  c["jac/err/hessian_int_in"] = [&] { return L(hessian(twice)(ai3)); };
  c["jac/err/rev_int_out"] = [&] { return L(jacrev(to_int)(ar3)); };
  c["jac/fwd_int_out"] = [&] { return L(jacfwd(to_int)(ar3)); };

  // linearize: the primal output and the linear map, evaluated on tangents.
  c["lin/basic"] = [&] {
    auto [out, f_jvp] = linearize([](const Array& x) { return jnp::sin(x) * jnp::cos(x); }, jx);
    return Leaves{out, f_jvp(jnp::ones({3}))};
  };
  c["lin/two"] = [&] {
    auto [out, f_jvp] =
        linearize([](const Array& x, const Array& y) { return x * y + jnp::sin(x); }, jx, jx);
    return Leaves{out, f_jvp(jx, 2.0f * jx)};
  };
  c["lin/custom_jvp"] = [&] {
    auto [out, f_jvp] = linearize(sin_jvp, ar3);
    return Leaves{out, f_jvp(jnp::ones({3}))};
  };
  c["lin/custom_vjp"] = [&] {
    auto [out, f_jvp] = linearize(vsin, ar3);
    return Leaves{f_jvp(jnp::ones({3}))};
  };

  // has_aux.
  auto aux_f = [](const Array& x) { return std::pair{jnp::sum(jnp::sin(x)), D{{"sq", x * x}}}; };
  c["aux/grad"] = [&] { return L(grad(aux_f, has_aux)(jx)); };
  c["aux/value_and_grad"] = [&] { return L(value_and_grad(aux_f, has_aux)(jx)); };
  c["aux/grad_argnums"] = [&] {
    return L(grad(
        [](const Array& x, const Array& y) {
          return std::pair{jnp::sum(x * y), x + y};
        },
        argnums<0, 1>, has_aux)(jx, jx));
  };
  c["aux/vjp"] = [&] {
    auto [out, pullback, aux] = vjp(aux_f, has_aux, jx);
    return L(std::tuple{out, pullback(f32(2)), aux});
  };
  c["aux/jvp"] = [&] { return L(jvp(aux_f, T1{jx}, T1{jnp::ones({3})}, has_aux)); };
  // has_aux on the Jacobians: (Jacobian of out, aux), aux not differentiated.
  auto jac_aux = [](const Array& x) {
    return std::pair{jnp::sin(x) * jnp::sum(x * x), D{{"sq", x * x}, {"n", jnp::sum(x > 0.0f)}}};
  };
  auto jac_aux2 = [](const Array& x, const Array& y) {
    return std::pair{std::pair{jnp::outer(x, y), x * 2.0f}, jnp::sum(x) + jnp::sum(y)};
  };
  c["aux/jacfwd"] = [&] { return L(jacfwd(jac_aux, has_aux)(jx)); };
  c["aux/jacrev"] = [&] { return L(jacrev(jac_aux, has_aux)(jx)); };
  c["aux/jacfwd_argnums01"] = [&] { return L(jacfwd(jac_aux2, argnums<0, 1>, has_aux)(jx, jy)); };
  c["aux/jacrev_argnums01"] = [&] { return L(jacrev(jac_aux2, argnums<0, 1>, has_aux)(jx, jy)); };
  c["aux/jacfwd_argnum1"] = [&] { return L(jacfwd(jac_aux2, argnums<1>, has_aux)(jx, jy)); };
  c["aux/jacrev_argnum1"] = [&] { return L(jacrev(jac_aux2, argnums<1>, has_aux)(jx, jy)); };
  c["aux/hessian"] = [&] {
    return L(hessian(
        [](const Array& x) {
          return std::pair{jnp::sum(jnp::sin(x) * x * x), x * 3.0f};
        },
        has_aux)(jx));
  };
  c["aux/hessian_argnums01"] = [&] {
    return L(hessian(
        [](const Array& x, const Array& y) {
          Array o = jnp::outer(x, y);
          return std::pair{jnp::sum(o * o), D{{"y", y}}};
        },
        argnums<0, 1>, has_aux)(jx, jy));
  };
  c["aux/jit_jacfwd"] = [&] { return L(jit(jacfwd(jac_aux, has_aux))(jx)); };
  c["aux/jacrev_of_jit"] = [&] { return L(jacrev(jit(jac_aux), has_aux)(jx)); };
  c["aux/vmap_jacrev"] = [&] {
    return L(vmap(jacrev(jac_aux, has_aux))(jnp::stack({jx, 2.0f * jx})));
  };
  c["aux/vmap_jacfwd"] = [&] { return L(vmap(jacfwd(jac_aux, has_aux))(jnp::stack({jx, -jx}))); };
  EXPECT_EQ(names_of(c), golden_cases({"jac/", "lin/", "aux/"}));
  for (const auto& [name, fn] : c) check(name, fn);
}

// JAX's message shows the output's value; parax's its structure.
TEST(Jacobian, HasAuxNeedsAPair) {
  Array jx = vec({0.5f, -1, 2});
  auto three = [](const Array& x) { return std::tuple{jnp::sum(x), x, x}; };
  const std::string jax = goldens().at("aux_err/not_pair");
  const std::string head = jax.substr(0, jax.find(", but got") + 9);  // then JAX's value
  EXPECT_EQ(head,
            "!TypeError: expected function with aux output to return a two-element "
            "tuple, but got");
  EXPECT_THROW_HAS(grad(three, has_aux)(jx), TypeError, head.substr(12));
  EXPECT_THROW_HAS(jvp(three, T1{jx}, T1{jx}, has_aux), TypeError, head.substr(12));
  EXPECT_THROW_HAS(vjp(three, has_aux, jx), TypeError, head.substr(12));
  EXPECT_THROW_HAS(jacfwd(three, has_aux)(jx), TypeError, head.substr(12));
  EXPECT_THROW_HAS(jacrev(three, has_aux)(jx), TypeError, head.substr(12));
}

// Shapes and nesting: out.shape + in.shape, the output's structure outside.
TEST(Jacobian, ShapesAndStructure) {
  Array x = jnp::ones({2, 3});
  auto f = [](const Array& a) { return std::pair{jnp::sum(a, 0), a * 2.0f}; };
  auto jf = jacfwd(f)(x);
  auto jr = jacrev(f)(x);
  EXPECT_EQ(jf.first.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(jf.second.shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(jr.first.shape(), (Shape{3, 2, 3}));
  EXPECT_EQ(jr.second.shape(), (Shape{2, 3, 2, 3}));
  auto g = [](const Array& a, const D& d) { return a * d.at("w"); };
  auto jg = jacrev(g, argnums<0, 1>)(x, D{{"w", x}});
  EXPECT_EQ(std::get<0>(jg).shape(), (Shape{2, 3, 2, 3}));
  EXPECT_EQ(std::get<1>(jg).at("w").shape(), (Shape{2, 3, 2, 3}));
}

}  // namespace
}  // namespace parax
