// custom_jvp and custom_vjp against JAX (tools/make_custom_derivative_goldens.py ports the
// cases of JAX's CustomJVPTest / CustomVJPTest): values, every transform (jit, grad,
// vmap, their compositions, grad of grad), pytrees, closures, JAX's errors, and the rules
// inside shard_map over 8 devices.
#include <gtest/gtest.h>

#include <algorithm>
#include <cmath>
#include <functional>
#include <map>
#include <memory>
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
using T2 = std::tuple<Array, Array>;

// ---- the functions of the cases ----

auto sin_jvp = custom_jvp([](const Array& x) { return jnp::sin(x); },
                          [](const T1& p, const T1& t) {
                            auto [x] = p;
                            auto [g] = t;
                            return std::pair{jnp::sin(x), 2.0f * jnp::cos(x) * g};
                          });

auto vsin = custom_vjp([](const Array& x) { return jnp::sin(x); },
                       [](const Array& x) {
                         return std::pair{jnp::sin(x), jnp::cos(x)};
                       },
                       [](const Array& cos_x, const Array& g) { return 2.0f * cos_x * g; });

std::map<std::string, Case> jvp_cases() {
  std::map<std::string, Case> c;
  Array x3 = f32(3), ar3 = jnp::arange(3.0f), xx = jnp::arange(6.0f).reshape({2, 3});
  // The decorator form: the rule calls the function, as JAX's test_basic's does.
  auto f = custom_jvp([](const Array& x) { return jnp::sin(x); });
  f.defjvp([f](const T1& p, const T1& t) {
    auto [x] = p;
    auto [g] = t;
    return std::pair{f(x), 2.0f * jnp::cos(x) * g};
  });
  auto id = [](const Array& x) { return x; };
  c["jvp/basic/value"] = [=] { return L(f(x3)); };
  c["jvp/basic/jvp"] = [=] { return L(jvp(f, T1{x3}, T1{f32(1)})); };
  c["jvp/basic/grad"] = [=] { return L(grad(f)(x3)); };
  c["jvp/basic/grad_grad"] = [=] { return L(grad(grad(f))(x3)); };
  c["jvp/basic/grad3"] = [=] { return L(grad(grad(grad(f)))(x3)); };
  c["jvp/basic/grad4"] = [=] { return L(grad(grad(grad(grad(f))))(x3)); };
  c["jvp/basic/value_and_grad"] = [=] { return L(value_and_grad(f)(x3)); };
  c["jvp/jit/value"] = [=] { return L(jit(f)(x3)); };
  c["jvp/jit/jit"] = [=] { return L(jit(jit(f))(x3)); };
  c["jvp/jit/jit_of_jvp"] = [=] {
    return L(jit([&](const Array& x) { return jvp(f, T1{x}, T1{x}); })(x3));
  };
  c["jvp/jit/jvp_of_jit"] = [=] { return L(jvp(jit(f), T1{x3}, T1{x3})); };
  c["jvp/jit/jit_of_grad"] = [=] { return L(jit(grad(f))(x3)); };
  c["jvp/jit/grad_of_jit"] = [=] { return L(grad(jit(f))(x3)); };
  c["jvp/vmap/value"] = [=] { return L(vmap(f)(ar3)); };
  c["jvp/vmap/vmap_vmap"] = [=] { return L(vmap(vmap(f))(xx)); };
  auto jvp_self = [f](const Array& x) { return jvp(f, T1{x}, T1{x}); };
  c["jvp/vmap/vmap_of_jvp"] = [=] { return L(vmap(jvp_self)(ar3)); };
  c["jvp/vmap/vmap_vmap_of_jvp"] = [=] { return L(vmap(vmap(jvp_self))(xx)); };
  c["jvp/vmap/jvp_of_vmap"] = [=] { return L(jvp(vmap(f), T1{ar3}, T1{ar3})); };
  c["jvp/vmap/jvp_of_vmap_vmap"] = [=] { return L(jvp(vmap(vmap(f)), T1{xx}, T1{xx})); };
  c["jvp/vmap/vmap_jvp_vmap"] = [=] {
    return L(vmap([f](const Array& x) { return jvp(vmap(f), T1{x}, T1{x}); })(xx));
  };
  c["jvp/vmap/vmap_of_grad"] = [=] { return L(vmap(grad(f))(ar3)); };
  c["jvp/vmap/grad_of_vmap"] = [=] {
    return L(grad([f](const Array& x) { return jnp::sum(vmap(f)(x)); })(ar3));
  };
  c["jvp/vmap/axis1"] = [=] { return L(vmap(f, {.in_axes = 1})(xx)); };
  c["jvp/vmap/grad_axis1"] = [=] {
    return L(grad(
        [f](const Array& x) { return jnp::sum(vmap(f, {.in_axes = 1, .out_axes = 1})(x)); })(xx));
  };
  c["jvp/vmap/jit_vmap_grad"] = [=] { return L(jit(vmap(grad(f)))(ar3)); };
  (void)id;

  // test_invariance: jvp of jvp of a rule that ignores the primal.
  auto cos_half = custom_jvp([](const Array& x) { return jnp::cos(2.0f * x) / 2.0f; });
  cos_half.defjvp([cos_half](const T1& p, const T1& t) {
    return std::pair{cos_half(std::get<0>(p)), 3.0f * std::get<0>(t)};
  });
  auto f2 = [cos_half](const Array& x) { return jvp(cos_half, T1{x}, T1{x}).first; };
  auto f3 = [f2](const Array& x) { return jvp(f2, T1{x}, T1{x}).first; };
  Array x1 = f32(1);
  c["jvp/invariance/f"] = [=] { return L(jvp(cos_half, T1{x1}, T1{x1})); };
  c["jvp/invariance/f2"] = [=] { return L(jvp(f2, T1{x1}, T1{x1})); };
  c["jvp/invariance/f3"] = [=] { return L(jvp(f3, T1{x1}, T1{x1})); };

  // Pytrees in and out.
  using D = std::map<std::string, Array>;
  auto tree_fn = custom_jvp([](const D& x) { return D{{"b", jnp::sin(x.at("a"))}}; });
  tree_fn.defjvp([tree_fn](const std::tuple<D>& p, const std::tuple<D>& t) {
    const D& x = std::get<0>(p);
    const D& g = std::get<0>(t);
    return std::pair{tree_fn(x), D{{"b", 2.0f * jnp::cos(x.at("a")) * g.at("a")}}};
  });
  D xd{{"a", x3}};
  c["jvp/pytrees/value"] = [=] { return L(tree_fn(xd)); };
  c["jvp/pytrees/jvp"] = [=] { return L(jvp(tree_fn, std::tuple<D>{xd}, std::tuple<D>{xd})); };
  c["jvp/pytrees/grad"] = [=] {
    return L(grad([tree_fn](const D& x) { return tree_fn(x).at("b"); })(xd));
  };

  // An integer argument: its tangent is JAX's float0 (parax: zeros of its dtype).
  auto scale_pow =
      custom_jvp([](const Array& x, const Array& n) { return x * n.astype(DType::float32); });
  scale_pow.defjvp([scale_pow](const T2& p, const T2& t) {
    auto [x, n] = p;
    return std::pair{scale_pow(x, n), 10.0f * std::get<0>(t) * n};
  });
  Array xv = vec({1, 2, 3}), n2 = jnp::full({}, 2, DType::int32);
  c["jvp/int_arg/value"] = [=] { return L(scale_pow(xv, n2)); };
  c["jvp/int_arg/grad"] = [=] {
    return L(grad(
        [scale_pow](const Array& x, const Array& n) { return jnp::sum(scale_pow(x, n)); })(xv, n2));
  };
  c["jvp/int_arg/vmap"] = [=] { return L(vmap(scale_pow, {.in_axes = {0, None}})(xv, n2)); };

  // A closure over an array.
  Array cvec = vec({0.5f, -1, 2});
  auto closure_fn =
      custom_jvp([cvec](const Array& x) { return cvec * jnp::sin(x); },
                 [cvec](const T1& p, const T1& t) {
                   return std::pair{cvec * jnp::sin(std::get<0>(p)), cvec * 3.0f * std::get<0>(t)};
                 });
  auto closure_loss = [closure_fn](const Array& x) { return jnp::sum(closure_fn(x)); };
  c["jvp/closure/grad"] = [=] { return L(grad(closure_loss)(xv)); };
  c["jvp/closure/vmap_grad"] = [=] {
    return L(vmap(grad(closure_loss))(jnp::stack({xv, 2.0f * xv})));
  };
  c["jvp/closure/jit_grad"] = [=] { return L(jit(grad(closure_loss))(xv)); };

  // The documentation's log1pexp: a stable derivative where autodiff's is nan.
  auto log1pexp = custom_jvp([](const Array& x) { return jnp::log(1.0f + jnp::exp(x)); });
  log1pexp.defjvp([log1pexp](const T1& p, const T1& t) {
    auto [x] = p;
    Array ans = log1pexp(x);
    return std::pair{ans, (1.0f - 1.0f / (1.0f + jnp::exp(x))) * std::get<0>(t)};
  });
  c["jvp/log1pexp/grad100"] = [=] { return L(grad(log1pexp)(f32(100))); };
  c["jvp/log1pexp/vmap_jit_grad"] = [=] { return L(vmap(jit(grad(log1pexp)))(ar3)); };
  c["jvp/log1pexp/grad_grad"] = [=] { return L(grad(grad(log1pexp))(f32(2))); };

  auto safe_div = custom_jvp([](const Array& x) { return x / (1.0f + jnp::sqrt(x)); });
  safe_div.defjvp([safe_div](const T1& p, const T1& t) {
    auto [x] = p;
    Array s = jnp::sqrt(x);
    return std::pair{safe_div(x), ((s + 2.0f) / (2.0f * (s + 1.0f) * (s + 1.0f))) * std::get<0>(t)};
  });
  c["jvp/safe_div/grad0"] = [=] { return L(grad(safe_div)(f32(0))); };

  auto safe_log =
      custom_jvp([](const Array& x) { return jnp::log(jnp::where(x > 0.0f, x, 1.0f)); });
  safe_log.defjvp([safe_log](const T1& p, const T1& t) {
    auto [x] = p;
    Array pos = x > 0.0f;
    return std::pair{safe_log(x), jnp::where(pos, std::get<0>(t) / jnp::where(pos, x, 1.0f), 0.0f)};
  });
  Array sl = vec({-1, 0, 0.5f, 2});
  c["jvp/safe_log/value"] = [=] { return L(safe_log(sl)); };
  c["jvp/safe_log/grad"] = [=] {
    return L(grad([safe_log](const Array& x) { return jnp::sum(safe_log(x)); })(sl));
  };
  c["jvp/safe_log/jacfwd"] = [=] { return L(jacfwd(safe_log)(sl)); };
  c["jvp/safe_log/jacrev"] = [=] { return L(jacrev(safe_log)(sl)); };

  // Two arguments, two results.
  auto two_out = custom_jvp([](const Array& x, const Array& y) { return std::pair{x * y, x + y}; });
  two_out.defjvp([two_out](const T2& p, const T2& t) {
    auto [x, y] = p;
    auto [tx, ty] = t;
    return std::pair{two_out(x, y), std::pair{y * tx + x * ty + 1.0f * tx, tx + ty}};
  });
  c["jvp/two/grad01"] = [=] {
    return L(grad(
        [two_out](const Array& x, const Array& y) {
          auto [a, b] = two_out(x, y);
          return a * b;
        },
        argnums<0, 1>)(x3, f32(2)));
  };
  c["jvp/two/jacrev"] = [=] { return L(jacrev(two_out, argnums<0, 1>)(xv, 2.0f * xv)); };

  // Errors, raised when the rule runs (calling f alone works).
  auto err_struct = custom_jvp([](const Array& x) { return std::tuple<Array>{x * x}; },
                               CustomOptions{.name = "err_struct", .jvp_name = "err_struct_jvp"});
  err_struct.defjvp([err_struct](const T1& p, const T1& t) {
    auto [x] = p;
    return std::pair{err_struct(x), std::vector<Array>{2.0f * x * std::get<0>(t), x}};
  });
  c["jvp/err/structure_call"] = [=] { return L(err_struct(f32(2))); };
  c["jvp/err/structure"] = [=] { return L(jvp(err_struct, T1{f32(2)}, T1{f32(1)})); };
  auto err_aval = custom_jvp([](const Array& x) { return x * x; });
  err_aval.defjvp([err_aval](const T1& p, const T1& t) {
    return std::pair{err_aval(std::get<0>(p)), jnp::reshape(std::get<0>(t), {1})};
  });
  c["jvp/err/aval_call"] = [=] { return L(err_aval(f32(2))); };
  c["jvp/err/aval"] = [=] { return L(jvp(err_aval, T1{f32(2)}, T1{f32(1)})); };
  auto err_primal = custom_jvp(id, CustomOptions{.name = "err_primal"});
  err_primal.defjvp([](const T1& p, const T1& t) {
    auto [x] = p;
    auto [xd] = t;
    return std::pair{std::pair{x, x}, std::pair{xd, xd}};
  });
  c["jvp/err/primal_structure"] = [=] { return L(jvp(err_primal, T1{f32(1)}, T1{f32(1)})); };
  auto err_primal2 = custom_jvp(id, CustomOptions{.name = "err_primal2"});
  err_primal2.defjvp([](const T1& p, const T1& t) {
    return std::pair{jnp::zeros({3}, DType::float32), std::get<0>(t)};
  });
  c["jvp/err/primal_shape"] = [=] { return L(jvp(err_primal2, T1{f32(1)}, T1{f32(1)})); };
  auto foo = custom_jvp([](const Array& x) { return x * x; }, CustomOptions{.name = "foo"});
  c["jvp/err/missing"] = [=] { return L(foo(f32(2))); };
  return c;
}

TEST(CustomJvp, MatchesJax) {
  const auto cases = jvp_cases();
  // Every case JAX's goldens hold is computed here.
  EXPECT_EQ(names_of(cases), golden_cases({"jvp/"}));
  for (const auto& [name, fn] : cases) check(name, fn);
}

// JAX 0.10 prints a literal's type (`2.0:f32[]`); parax prints the literal alone, as
// earlier JAX versions did.
std::string without_literal_types(std::string s) {
  for (size_t at = s.find(":f32[]"); at != std::string::npos; at = s.find(":f32[]", at)) {
    if (at > 0 && std::isdigit(static_cast<unsigned char>(s[at - 1]))) {
      s.erase(at, 6);
    } else {
      ++at;
    }
  }
  return s;
}

TEST(CustomJvp, RuleOnlyProgramPrintsAsJax) {
  auto plain = custom_jvp([](const Array& x) { return jnp::sin(x); },
                          [](const T1& p, const T1& t) {
                            auto [x] = p;
                            return std::pair{jnp::sin(x), 2.0f * jnp::cos(x) * std::get<0>(t)};
                          });
  EXPECT_EQ(make_jaxpr(grad(plain))(f32(1)).to_string(),
            without_literal_types(goldens().at("jaxpr/grad_plain")));
  EXPECT_EQ(make_jaxpr([&](const Array& x, const Array& t) { return jvp(plain, T1{x}, T1{t}); })(
                f32(1), f32(1))
                .to_string(),
            without_literal_types(goldens().at("jaxpr/jvp_plain")));
}

TEST(CustomJvp, StaysOneEquationUnderJit) {
  const std::string text = make_jaxpr(sin_jvp)(f32(1)).to_string();
  EXPECT_NE(text.find("custom_jvp_call["), std::string::npos) << text;
  EXPECT_NE(text.find("name=f"), std::string::npos) << text;
  EXPECT_NE(text.find("symbolic_zeros=False"), std::string::npos) << text;
  EXPECT_NE(text.find("jvp=f_jvp"), std::string::npos) << text;
  // Compiled, the call is inlined: one sin.
  const std::string compiled = jit(sin_jvp).lower(f32(1)).compile().as_text();
  EXPECT_EQ(compiled.find("custom_jvp_call"), std::string::npos) << compiled;
  EXPECT_NE(compiled.find("sin"), std::string::npos) << compiled;
}

TEST(CustomVjp, StaysOneEquationUnderJit) {
  const std::string text = make_jaxpr(vsin)(f32(1)).to_string();
  EXPECT_NE(text.find("custom_vjp_call["), std::string::npos) << text;
  EXPECT_NE(text.find("fwd=f_fwd"), std::string::npos) << text;
  EXPECT_NE(text.find("bwd=f_bwd"), std::string::npos) << text;
  // Under linearize, the linear part is one custom_lin holding bwd.
  const std::string lin = make_jaxpr([](const Array& x) {
                            auto [out, f_jvp] = linearize(vsin, x);
                            (void)f_jvp;
                            return out;
                          })(f32(1))
                              .to_string();
  EXPECT_NE(lin.find("cos"), std::string::npos) << lin;
}

std::map<std::string, Case> vjp_cases() {
  std::map<std::string, Case> c;
  Array x3 = f32(3), ar3 = jnp::arange(3.0f), xx = jnp::arange(6.0f).reshape({2, 3});
  auto f = custom_vjp([](const Array& x) { return jnp::sin(x); });
  f.defvjp(
      [f](const Array& x) {
        return std::pair{f(x), jnp::cos(x)};
      },
      [](const Array& cos_x, const Array& g) { return std::tuple<Array>{2.0f * cos_x * g}; });
  c["vjp/basic/value"] = [=] { return L(f(x3)); };
  c["vjp/basic/grad"] = [=] { return L(grad(f)(x3)); };
  c["vjp/basic/value_and_grad"] = [=] { return L(value_and_grad(f)(x3)); };
  c["vjp/basic/grad_grad"] = [=] { return L(grad(grad(f))(x3)); };
  c["vjp/basic/grad3"] = [=] { return L(grad(grad(grad(f)))(x3)); };
  c["vjp/err/hessian"] = [=] {
    return L(hessian([f](const Array& x) { return jnp::sum(f(x)); })(ar3));
  };
  c["vjp/basic/vjp"] = [=] { return L(vjp(f, x3).second(f32(2))); };
  c["vjp/jit/value"] = [=] { return L(jit(f)(x3)); };
  c["vjp/jit/jit_of_grad"] = [=] { return L(jit(grad(f))(x3)); };
  c["vjp/jit/grad_of_jit"] = [=] { return L(grad(jit(f))(x3)); };
  c["vjp/vmap/value"] = [=] { return L(vmap(f)(ar3)); };
  c["vjp/vmap/vmap_vmap"] = [=] { return L(vmap(vmap(f))(xx)); };
  c["vjp/vmap/vmap_of_grad"] = [=] { return L(vmap(grad(f))(ar3)); };
  c["vjp/vmap/vmap_vmap_grad"] = [=] { return L(vmap(vmap(grad(f)))(xx)); };
  c["vjp/vmap/grad_of_vmap"] = [=] {
    return L(grad([f](const Array& x) { return jnp::sum(vmap(f)(x)); })(ar3));
  };
  c["vjp/vmap/grad_of_vmap_vmap"] = [=] {
    return L(grad([f](const Array& x) { return jnp::sum(vmap(vmap(f))(x)); })(xx));
  };
  c["vjp/vmap/axis1"] = [=] { return L(vmap(f, {.in_axes = 1})(xx)); };
  c["vjp/vmap/grad_axis1"] = [=] {
    return L(grad(
        [f](const Array& x) { return jnp::sum(vmap(f, {.in_axes = 1, .out_axes = 1})(x)); })(xx));
  };
  c["vjp/err/jvp"] = [=] { return L(jvp(f, T1{x3}, T1{f32(1)})); };
  c["vjp/err/jvp_vmap"] = [=] { return L(jvp(vmap(f), T1{ar3}, T1{jnp::ones({3})})); };
  c["vjp/err/jvp_jit"] = [=] { return L(jvp(jit(f), T1{x3}, T1{f32(1)})); };
  c["vjp/err/jacfwd"] = [=] { return L(jacfwd(f)(ar3)); };

  using D = std::map<std::string, Array>;
  auto vtree = custom_vjp(
      [](const D& x) {
        return D{{"b", jnp::sin(x.at("a"))}};
      },
      [](const D& x) {
        return std::pair{D{{"b", jnp::sin(x.at("a"))}}, D{{"r", jnp::cos(x.at("a"))}}};
      },
      [](const D& res, const D& g) {
        return std::tuple<D>{D{{"a", 2.0f * res.at("r") * g.at("b")}}};
      });
  D xd{{"a", x3}};
  c["vjp/pytrees/value"] = [=] { return L(vtree(xd)); };
  c["vjp/pytrees/grad"] = [=] {
    return L(grad([vtree](const D& x) { return vtree(x).at("b"); })(xd));
  };

  auto vmul =
      custom_vjp([](const Array& x, const Array& y) { return jnp::sin(x) * y; },
                 [](const Array& x, const Array& y) {
                   return std::pair{jnp::sin(x) * y, std::tuple{jnp::cos(x), jnp::sin(x), y}};
                 },
                 [](const std::tuple<Array, Array, Array>& res, const Array& g) {
                   auto [cx, sx, y] = res;
                   return std::pair{cx * g * y, sx * g};
                 });
  Array xv = vec({1, 2, 3});
  c["vjp/two/grad01"] = [=] { return L(grad(vmul, argnums<0, 1>)(x3, f32(2))); };
  c["vjp/two/vmap_grad"] = [=] {
    return L(vmap(grad(vmul, argnums<0, 1>), {.in_axes = {0, None}})(ar3, f32(2)));
  };
  c["vjp/two/grad_vmap_shared"] = [=] {
    return L(grad(
        [vmul](const Array& x, const Array& y) {
          return jnp::sum(vmap(vmul, {.in_axes = {0, None}})(x, y));
        },
        argnums<0, 1>)(ar3, f32(2)));
  };
  c["vjp/vmap/grad_of_vmap_closure"] = [=] {
    return L(grad([vmul, xx](const Array& x) {
      return jnp::sum(vmap([vmul, x](const Array& r) { return vmul(r, x[0]); })(xx));
    })(ar3));
  };
  c["vjp/two/jacrev"] = [=] { return L(jacrev(vmul, argnums<0, 1>)(xv, 2.0f * xv)); };

  // clip_gradient, whose bounds get no cotangent: invalid Arrays are JAX's None cotangents.
  using T3 = std::tuple<Array, Array, Array>;
  auto clip_g = custom_vjp([](const Array&, const Array&, const Array& x) { return x; },
                           [](const Array& lo, const Array& hi, const Array& x) {
                             return std::pair{x, T2{lo, hi}};
                           },
                           [](const T2& res, const Array& g) {
                             auto [lo, hi] = res;
                             return T3{Array(), Array(), jnp::clip(g, lo, hi)};
                           });
  auto clip_gradient = [clip_g](const Array& x) {
    return clip_g(ArrayLike(-0.1).array(), x + 0.1, x);
  };
  c["vjp/clip_gradient/grad"] = [=] { return L(grad(clip_gradient)(f32(0.1f))); };
  c["vjp/clip_gradient/grad_big"] = [=] {
    return L(grad([clip_gradient](const Array& x) { return 5.0f * clip_gradient(x); })(f32(0.1f)));
  };

  // Gradient checkpointing by hand: fwd saves the input, bwd recomputes through vjp.
  auto sin2 = [](const Array& x) { return jnp::sin(jnp::sin(x)); };
  auto ckpt = custom_vjp(
      sin2,
      [sin2](const Array& x) {
        return std::pair{sin2(x), x};
      },
      [sin2](const Array& x, const Array& g) { return vjp(sin2, x).second(g); });
  auto ckpt_loss = [ckpt](const Array& x) { return jnp::sum(ckpt(x)); };
  c["vjp/checkpoint/grad"] = [=] { return L(grad(ckpt_loss)(xv)); };
  c["vjp/checkpoint/jit_grad"] = [=] { return L(jit(grad(ckpt_loss))(xv)); };
  c["vjp/checkpoint/vmap_grad"] = [=] { return L(vmap(grad(ckpt))(xv)); };

  // Closed-over values under vmap.
  auto outer = [](const Array& x) {
    return custom_vjp([x](const Array& y) { return x * y; },
                      [x](const Array& y) {
                        return std::pair{x * y, jnp::cos(y)};
                      },
                      [](const Array& cos_y, const Array& g) { return cos_y * g; });
  };
  auto outer3 = [](const Array& x) {
    return grad(custom_vjp(
        [x](const Array& y) { return x * y; },
        [x](const Array& y) {
          return std::pair{x * y, T2{x, jnp::cos(y)}};
        },
        [](const T2& res, const Array& g) { return std::get<1>(res) * g * std::get<0>(res); }));
  };
  c["vjp/closure/vmap"] = [=] {
    return L(vmap([outer](const Array& x) { return outer(x)(f32(3)); })(ar3));
  };
  c["vjp/closure/vmap_grad"] = [=] {
    return L(vmap([outer3](const Array& x) { return outer3(x)(f32(3)); })(ar3));
  };

  // Errors.
  auto id = [](const Array& x) { return x; };
  auto ident = custom_vjp(
      id,
      [](const Array& x) {
        return std::pair{x, std::vector<Array>{}};
      },
      [](const std::vector<Array>&, const Array& g) {
        return T2{g, g};
      });
  c["vjp/err/bwd_structure_call"] = [=] { return L(ident(f32(2))); };
  c["vjp/err/bwd_structure"] = [=] { return L(grad(ident)(f32(2))); };
  auto two_ident = custom_vjp([](const Array& x, const Array& y) { return x * y; },
                              [](const Array& x, const Array& y) {
                                return std::pair{x * y, std::vector<Array>{}};
                              },
                              [](const std::vector<Array>&, const Array& g) { return 2.0f * g; });
  c["vjp/err/bwd_not_tuple"] = [=] { return L(grad(two_ident)(f32(3), f32(1))); };
  auto shape_foo = custom_vjp([](const Array& x, const Array&) { return x; },
                              [](const Array& x, const Array&) {
                                return std::pair{x, std::vector<Array>{}};
                              },
                              [](const std::vector<Array>&, const Array&) {
                                return T2{jnp::zeros({3}), jnp::zeros({3})};
                              });
  c["vjp/err/bwd_shape"] = [=] {
    return L(
        grad([shape_foo](const Array& x, const Array& y) { return jnp::sum(shape_foo(x, y * y)); },
             argnums<1>)(jnp::ones({3}), jnp::ones({4})));
  };
  auto fwd_bad = custom_vjp(
      id,
      [](const Array& x) {
        return std::pair{T2{x, x}, std::vector<Array>{}};
      },
      [](const std::vector<Array>&, const Array& g) { return g; },
      CustomOptions{.name = "fwd_bad"});
  c["vjp/err/fwd_structure"] = [=] { return L(grad(fwd_bad)(f32(1))); };
  auto fwd_bad2 = custom_vjp(
      id,
      [](const Array& x) {
        return std::pair{jnp::zeros({3}, x.dtype()), std::vector<Array>{}};
      },
      [](const std::vector<Array>&, const Array& g) { return g; },
      CustomOptions{.name = "fwd_bad2"});
  c["vjp/err/fwd_shape"] = [=] { return L(grad(fwd_bad2)(f32(1))); };
  auto vfoo = custom_vjp([](const Array& x) { return x * x; }, CustomOptions{.name = "vfoo"});
  c["vjp/err/missing"] = [=] { return L(vfoo(f32(2))); };
  return c;
}

TEST(CustomVjp, MatchesJax) {
  const auto cases = vjp_cases();
  // Every case JAX's goldens hold is computed here.
  EXPECT_EQ(names_of(cases), golden_cases({"vjp/"}));
  for (const auto& [name, fn] : cases) check(name, fn);
}

// Inside control flow (JAX's test_initial_style, test_multiple_rule_invocations): scan and
// cond bodies holding the calls, differentiated and batched.
TEST(CustomDerivatives, InsideControlFlow) {
  Array x3 = f32(3), x1 = f32(1), ar3 = jnp::arange(3.0f);
  auto in_scan = [](auto f) {
    return [f](const Array& x) {
      auto step = [f](const Array& c, const std::vector<Array>&) {
        return std::pair{f(c), std::vector<Array>{}};
      };
      return lax::scan(step, x, std::vector<Array>{}, 2).first;
    };
  };
  auto in_cond = [](auto f) {
    return [f](const Array& x) {
      return lax::cond(
          x > 0.0f, [f](const Array& y) { return f(y); }, [](const Array& y) { return 2.0f * y; },
          x);
    };
  };
  auto expit = custom_jvp([](const Array& x) { return 1.0f / (1.0f + jnp::exp(-x)); });
  expit.defjvp([expit](const T1& p, const T1& t) {
    Array ans = expit(std::get<0>(p));
    return std::pair{ans, std::get<0>(t) * ans * (1.0f - ans)};
  });
  auto expit_foo = [expit](const Array& x) {
    Array zero = jnp::zeros_like(x);
    auto step = [expit](const std::vector<Array>& c, const std::vector<Array>&) {
      std::vector<Array> next{expit(c[0])};
      for (size_t i = 1; i < c.size(); ++i) next.push_back(c[i - 1] + c[i]);
      return std::pair{next, std::vector<Array>{}};
    };
    return lax::scan(step, std::vector<Array>{x, zero, zero, zero, zero}, std::vector<Array>{}, 10)
        .first.back();
  };
  std::map<std::string, Case> c;
  c["cf/jvp/scan_grad"] = [&] { return L(grad(in_scan(sin_jvp))(x3)); };
  c["cf/jvp/scan_grad_grad"] = [&] { return L(grad(grad(in_scan(sin_jvp)))(x3)); };
  c["cf/jvp/scan_jit_grad"] = [&] { return L(jit(grad(in_scan(sin_jvp)))(x3)); };
  c["cf/jvp/scan_vmap_grad"] = [&] { return L(vmap(grad(in_scan(sin_jvp)))(ar3)); };
  c["cf/jvp/scan_jvp"] = [&] { return L(jvp(in_scan(sin_jvp), T1{x3}, T1{x1})); };
  c["cf/jvp/cond_grad"] = [&] { return L(grad(in_cond(sin_jvp))(x3)); };
  c["cf/jvp/cond_vmap_grad"] = [&] { return L(vmap(grad(in_cond(sin_jvp)))(ar3 - 1.0f)); };
  c["cf/vjp/scan_grad"] = [&] { return L(grad(in_scan(vsin))(x3)); };
  c["cf/vjp/scan_jit_grad"] = [&] { return L(jit(grad(in_scan(vsin)))(x3)); };
  c["cf/vjp/scan_vmap_grad"] = [&] { return L(vmap(grad(in_scan(vsin)))(ar3)); };
  c["cf/vjp/cond_grad"] = [&] { return L(grad(in_cond(vsin))(x3)); };
  c["cf/expit/value"] = [&] { return L(expit_foo(x3)); };
  c["cf/expit/grad"] = [&] { return L(grad(expit_foo)(x3)); };
  c["cf/expit/grad_vmap"] = [&] {
    return L(grad([&](const Array& x) { return jnp::sum(vmap(expit_foo)(x)); })(ar3));
  };
  auto psum_fn = custom_jvp([](const Array& x) { return lax::psum(x, "foo"); });
  psum_fn.defjvp([](const T1& p, const T1& t) {
    return std::pair{lax::psum(std::get<0>(p), "foo"), 3.0f * std::get<0>(t)};
  });
  c["cf/collective/vmap"] = [&] {
    return L(vmap([psum_fn](const Array&, const Array& x) { return psum_fn(x); },
                  {.in_axes = {0, None}, .out_axes = None, .axis_name = "foo"})(ar3, x1));
  };
  c["cf/collective/vmap_jvp"] = [&] {
    return L(vmap([psum_fn](const Array& x) { return jvp(psum_fn, T1{x}, T1{x}); },
                  {.axis_name = "foo"})(ar3));
  };
  c["cf/collective/vmap_grad"] = [&] { return L(vmap(grad(psum_fn), {.axis_name = "foo"})(ar3)); };
  auto psum_vjp = custom_vjp([](const Array& x) { return lax::psum(x, "foo"); },
                             [](const Array& x) {
                               return std::pair{lax::psum(x, "foo"), x};
                             },
                             [](const Array& x, const Array& g) { return 3.0f * g * x; });
  c["cf/collective/vjp_vmap"] = [&] {
    return L(vmap([psum_vjp](const Array&, const Array& x) { return psum_vjp(x); },
                  {.in_axes = {0, None}, .out_axes = None, .axis_name = "foo"})(ar3, x1));
  };
  c["cf/collective/vjp_vmap_grad"] = [&] {
    return L(vmap(grad(psum_vjp), {.axis_name = "foo"})(ar3));
  };
  EXPECT_EQ(names_of(c), golden_cases({"cf/"}));
  for (const auto& [name, fn] : c) check(name, fn);
}

// The rules inside shard_map over 8 devices see each device's block (a psum in the rule
// sums over the mesh axis), under grad, jit and jvp.
TEST(CustomDerivatives, InsideShardMap) {
  Mesh mesh = make_mesh({8}, {"i"});
  Array host = jnp::arange(16.0f) / 4.0f;
  Array x16 = device_put(host, NamedSharding(mesh, P("i")));
  auto normed = custom_jvp([](const Array& x) { return x / lax::psum(jnp::sum(x), "i"); });
  normed.defjvp([normed](const T1& p, const T1& t) {
    auto [x] = p;
    Array s = lax::psum(jnp::sum(x), "i");
    return std::pair{normed(x), 2.0f * std::get<0>(t) / s};
  });
  auto sm = [mesh](auto fn) { return shard_map(fn, mesh, P("i"), P("i")); };
  auto sm_normed = sm(normed);
  auto sm_vsin = sm(vsin);
  auto loss = [sm_normed, host](const Array& x) { return jnp::sum(sm_normed(x) * host); };
  auto vloss = [sm_vsin](const Array& x) { return jnp::sum(sm_vsin(x)); };
  std::map<std::string, Case> c;
  c["shard/jvp/value"] = [&] { return L(sm_normed(x16)); };
  c["shard/jvp/grad"] = [&] { return L(grad(loss)(x16)); };
  c["shard/jvp/jit_grad"] = [&] { return L(jit(grad(loss))(x16)); };
  c["shard/jvp/jvp"] = [&] { return L(jvp(sm_normed, T1{x16}, T1{jnp::ones({16})})); };
  c["shard/vjp/value"] = [&] { return L(sm_vsin(x16)); };
  c["shard/vjp/grad"] = [&] { return L(grad(vloss)(x16)); };
  c["shard/vjp/jit_grad"] = [&] { return L(jit(grad(vloss))(x16)); };
  c["shard/vjp/grad_inside"] = [&] {
    return L(sm(grad([](const Array& x) { return jnp::sum(vsin(x)); }))(x16));
  };
  EXPECT_EQ(names_of(c), golden_cases({"shard/"}));
  for (const auto& [name, fn] : c) check(name, fn);
  // The gradient stays sharded like its input.
  EXPECT_EQ(jit(grad(vloss))(x16).sharding().to_string(), NamedSharding(mesh, P("i")).to_string());
}

}  // namespace
}  // namespace parax

namespace parax {
namespace {

// Differentiating with respect to a value the function closes over has no rule: JAX raises
// (an UnexpectedTracerError, a TypeError); parax a TypeError naming the closed-over value.
TEST(CustomDerivatives, ClosedOverDifferentiatedValueRaises) {
  auto jvp_outer = [](const Array& x) {
    auto g = custom_jvp([x](const Array& y) { return x + y; });
    g.defjvp([g, x](const T1& p, const T1&) { return std::pair{g(x), 2.0f * std::get<0>(p)}; });
    return g(f32(1));
  };
  auto vjp_outer = [](const Array& x) {
    auto g = custom_vjp([x](const Array& y) { return x * y; },
                        [x](const Array& y) {
                          return std::pair{x * y, y};
                        },
                        [](const Array&, const Array& ct) { return 2.0f * ct; });
    return g(f32(1));
  };
  EXPECT_THROW_HAS(jvp(jvp_outer, T1{f32(3)}, T1{f32(1)}), TypeError,
                   "Detected differentiation of a custom_jvp function with respect to a "
                   "closed-over value.");
  EXPECT_THROW_HAS(grad(jvp_outer)(f32(3)), TypeError, "closed-over value");
  EXPECT_THROW_HAS(grad(vjp_outer)(f32(3)), TypeError,
                   "Detected differentiation of a custom_vjp function with respect to a "
                   "closed-over value. That isn't supported because the custom VJP rule only "
                   "specifies how to differentiate the custom_vjp function with respect to "
                   "explicit input parameters. Try passing the closed-over value into the "
                   "custom_vjp function as an argument, and adapting the custom_vjp fwd and bwd "
                   "rules.");
  EXPECT_THROW_HAS(grad(jit(vjp_outer))(f32(3)), TypeError, "closed-over value");
  // Closing over a value that is not differentiated is fine.
  EXPECT_FLOAT_EQ(grad([&](const Array& y) { return jvp_outer(f32(3)) * y; })(f32(2)).item<float>(),
                  4.0f);
}

// A rule holding its own function by value (JAX's idiom) is no reference cycle: the rules
// are freed with the last copy of the function outside them, or of a program calling it.
TEST(CustomDerivatives, RulesHoldingTheirFunctionAreFreed) {
  auto token = std::make_shared<int>(0);
  std::weak_ptr<int> seen = token;
  std::function<Array(const Array&)> kept;
  {
    auto f = custom_jvp([](const Array& x) { return jnp::sin(x); });
    f.defjvp([f, token](const T1& p, const T1& t) {
      return std::pair{f(std::get<0>(p)), 2.0f * jnp::cos(std::get<0>(p)) * std::get<0>(t)};
    });
    auto g = custom_vjp([](const Array& x) { return jnp::exp(x); });
    g.defvjp(
        [g, token](const Array& x) {
          return std::pair{g(x), g(x)};
        },
        [g, token](const Array& r, const Array& ct) { return 3.0f * r * ct; });
    EXPECT_FLOAT_EQ(grad(f)(f32(0)).item<float>(), 2.0f);
    EXPECT_FLOAT_EQ(grad(g)(f32(0)).item<float>(), 3.0f);
    // A program outliving f and g keeps their rules.
    kept = jit(grad([f, g](const Array& x) { return f(x) + g(x); }));
  }
  token.reset();
  EXPECT_FALSE(seen.expired());
  EXPECT_FLOAT_EQ(kept(f32(0)).item<float>(), 5.0f);
  kept = nullptr;
  EXPECT_TRUE(seen.expired()) << "the rules of a function no copy of which is left stay alive";
}

// A rule over Array arguments may take primals and tangents as two vectors, in both forms.
TEST(CustomJvp, RuleMayTakeVectors) {
  using V = std::vector<Array>;
  auto mul = [](const Array& x, const Array& y) { return x * y; };
  auto rule = [mul](const V& p, const V& t) {
    return std::pair{mul(p[0], p[1]), 10.0f * (t[0] * p[1] + p[0] * t[1])};
  };
  auto f = custom_jvp(mul, rule);
  auto g = custom_jvp(mul);
  g.defjvp(rule);
  for (const auto& h : {std::function<Array(const Array&, const Array&)>(f),
                        std::function<Array(const Array&, const Array&)>(g)}) {
    auto [dx, dy] = grad(h, argnums<0, 1>)(f32(2), f32(3));
    EXPECT_FLOAT_EQ(dx.item<float>(), 30.0f);
    EXPECT_FLOAT_EQ(dy.item<float>(), 20.0f);
  }
}

// The decorator form with two arguments agrees with the functional form.
TEST(CustomVjp, DecoratorFormWithTwoArguments) {
  auto mul = [](const Array& x, const Array& y) { return jnp::sin(x) * y; };
  auto fwd = [](const Array& x, const Array& y) {
    return std::pair{jnp::sin(x) * y, T2{jnp::cos(x), y}};
  };
  auto bwd = [](const T2& res, const Array& g) {
    return T2{std::get<0>(res) * g * std::get<1>(res) * 3.0f, g};
  };
  auto h = custom_vjp(mul);
  h.defvjp(fwd, bwd);
  auto k = custom_vjp(mul, fwd, bwd);
  auto [hx, hy] = grad(h, argnums<0, 1>)(f32(1), f32(2));
  auto [kx, ky] = grad(k, argnums<0, 1>)(f32(1), f32(2));
  EXPECT_FLOAT_EQ(hx.item<float>(), 3.0f * std::cos(1.0f) * 2.0f);
  EXPECT_FLOAT_EQ(hx.item<float>(), kx.item<float>());
  EXPECT_FLOAT_EQ(hy.item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(ky.item<float>(), 1.0f);
  // eval_shape traces without computing.
  auto shape = eval_shape(h, f32(1), f32(2));
  EXPECT_EQ(shape.shape(), Shape{});
}

// A custom rule on sharded data under jit keeps it sharded: no communication.
TEST(CustomDerivatives, ShardedGradientStaysLocal) {
  Mesh mesh = make_mesh({8}, {"i"});
  Array x = device_put(jnp::arange(16.0f) / 8.0f, NamedSharding(mesh, P("i")));
  auto loss = [](const Array& v) { return jnp::sum(sin_jvp(v) * vsin(v)); };
  auto g = jit(grad(loss));
  Array got = g(x);
  EXPECT_EQ(got.sharding().to_string(), NamedSharding(mesh, P("i")).to_string());
  Array host = jnp::arange(16.0f) / 8.0f;
  // d/dx sin(x)*sin(x) with both rules doubling their derivative: 2cos*sin + sin*2cos.
  Array want = 4.0f * jnp::cos(host) * jnp::sin(host);
  EXPECT_LT(jnp::max(jnp::abs(got - want)).item<float>(), 1e-5f);
  const std::string text = g.lower(x).compile().as_text();
  EXPECT_EQ(text.find("all-gather"), std::string::npos) << text;
  EXPECT_EQ(text.find("all-to-all"), std::string::npos) << text;
}

using Fn = std::function<Array(const Array&)>;

// nondiff_argnums (JAX's test_nondiff_argnums, test_nondiff_arg_vmap_tracer,
// test_nondiff_argnums_unhashable, test_nondiff_arg_tracer_error): a callable, a float, a
// std::vector<float> and arrays in nondiff positions, under every transform.
TEST(CustomDerivatives, NondiffArgnumsMatchJax) {
  Array x3 = f32(3), x1 = f32(1), ar3 = jnp::arange(3.0f);
  auto app = custom_jvp([](const Fn& f, const Array& x) { return f(x); },
                        [](const Fn& f, const T1& p, const T1& t) {
                          return std::pair{f(std::get<0>(p)), 3.0f * std::get<0>(t)};
                        },
                        nondiff_argnums<0>);
  Fn dbl = [](const Array& y) { return 2.0f * y; };
  Fn sin = [](const Array& y) { return jnp::sin(y); };
  auto app_sin = [app, sin](const Array& x) { return app(sin, x); };
  // The decorator form, its rule calling the function.
  auto nd_mul =
      custom_jvp([](const Array& x, const Array& y) { return x * y; }, nondiff_argnums<0>);
  nd_mul.defjvp([&nd_mul](const Array& x, const T1& p, const T1& t) {
    return std::pair{nd_mul(x, std::get<0>(p)), 5.0f * std::get<0>(t)};
  });
  auto scaled = custom_jvp([](float k, const Array& x, const Fn& g) { return g(k * x); },
                           [](float k, const Fn& g, const T1& p, const T1& t) {
                             return std::pair{g(k * std::get<0>(p)), k * std::get<0>(t) + 1.0f};
                           },
                           nondiff_argnums<0, 2>);
  auto vapp =
      custom_vjp([](const Fn& f, const Array& x) { return f(x); },
                 [](const Fn& f, const Array& x) {
                   return std::pair{f(x), jnp::cos(x)};
                 },
                 [](const Fn&, const Array& cos_x, const Array& g) { return T1{cos_x * g}; },
                 nondiff_argnums<0>);
  using Lst = std::vector<float>;
  auto lst_f = custom_vjp([](const Lst& l, const Array& x) { return l[0] * jnp::sin(x); },
                          nondiff_argnums<0>);
  lst_f.defvjp(
      [](const Lst& l, const Array& x) {
        return std::pair{l[0] * jnp::sin(x), jnp::cos(x)};
      },
      [](const Lst& l, const Array& cos_x, const Array& g) { return T1{l[0] * cos_x * g}; });
  const Lst lst{2.0f};
  auto tr_f = custom_vjp([](const Array& x, const Array& y) { return x * y; },
                         [](const Array& x, const Array& y) {
                           return std::pair{x * y, jnp::cos(y)};
                         },
                         [](const Array&, const Array& cos_y, const Array& g) { return cos_y * g; },
                         nondiff_argnums<0>);
  auto tr_nested = custom_vjp(
      [](const T1& xs, const Array& y) { return std::get<0>(xs) * y; },
      [](const T1& xs, const Array& y) {
        return std::pair{std::get<0>(xs) * y, jnp::cos(y)};
      },
      [](const T1&, const Array& cos_y, const Array& g) { return cos_y * g; }, nondiff_argnums<0>);

  std::map<std::string, Case> c;
  c["nondiff/jvp/value"] = [&] { return L(app(dbl, x3)); };
  c["nondiff/jvp/jvp"] = [&] {
    return L(jvp([&](const Array& x) { return app(dbl, x); }, T1{x1}, T1{x1}));
  };
  c["nondiff/jvp/grad"] = [&] { return L(grad(app_sin)(x3)); };
  c["nondiff/jvp/jit_grad"] = [&] { return L(jit(grad(app_sin))(x3)); };
  c["nondiff/jvp/vmap_grad"] = [&] { return L(vmap(grad(app_sin))(ar3)); };
  c["nondiff/jvp/grad_grad"] = [&] { return L(grad(grad(app_sin))(x3)); };
  c["nondiff/jvp/vmap_tracer"] = [&] {
    auto g = vmap([&](const Array& x, const Array& y) { return nd_mul(x, y); });
    return L(jvp([&](const Array& y) { return g(vec({2}), y); }, T1{vec({3})}, T1{vec({1})}));
  };
  c["nondiff/jvp/held_constant"] = [&] {
    return L(grad([&](const Array& x) { return nd_mul(x, x); })(x3));
  };
  c["nondiff/jvp/two_static"] = [&] {
    return L(value_and_grad([&](const Array& x) { return scaled(2.0f, x, sin); })(x3));
  };
  c["nondiff/vjp/value"] = [&] { return L(vapp(dbl, x3)); };
  c["nondiff/vjp/value_and_grad"] = [&] {
    return L(value_and_grad([&](const Array& x) { return vapp(dbl, x); })(x1));
  };
  auto lst_x = [&](const Array& x) { return lst_f(lst, x); };
  c["nondiff/vjp/list_value"] = [&] { return L(lst_f(lst, x3)); };
  c["nondiff/vjp/list_grad"] = [&] { return L(grad(lst_x)(x3)); };
  c["nondiff/vjp/list_jit_grad"] = [&] { return L(jit(grad(lst_x))(x3)); };
  c["nondiff/vjp/list_vmap_grad"] = [&] { return L(vmap(grad(lst_x))(ar3)); };
  c["nondiff/vjp/concrete_array"] = [&] {
    return L(grad([&](const Array& y) { return tr_f(x3, y); })(x1));
  };
  auto tr_xy = [&](const Array& x, const Array& y) { return tr_f(x, y); };
  c["nondiff/vjp/err/jit_tracer"] = [&] { return L(jit(tr_xy)(x3, x1)); };
  c["nondiff/vjp/err/grad_jit_tracer"] = [&] { return L(grad(jit(tr_xy), argnums<1>)(x3, x1)); };
  c["nondiff/vjp/err/nested_tracer"] = [&] {
    return L(jit([&](const Array& x, const Array& y) { return tr_nested(T1{x}, y); })(x3, x1));
  };
  EXPECT_EQ(names_of(c), golden_cases({"nondiff/"}));
  for (const auto& [name, fn] : c) check(name, fn);
}

// symbolic_zeros (JAX's test_symbolic_zero_custom_jvp and the tests after it): the rule
// sees SymbolicZero tangents for unperturbed arguments and may return one.
TEST(CustomDerivatives, SymbolicZerosMatchJax) {
  Array x3 = f32(3), x2 = f32(2), x1 = f32(1);
  std::vector<std::string> seen;  // what the rule saw, per call of the rule
  using T4 = std::tuple<Array, Array, Array, Array>;
  auto sz_f = custom_jvp([](const Array& s, const Array& sa, const Array& d, const Array& da) {
    return std::pair{s + d, sa + da};
  });
  sz_f.defjvp(
      [&sz_f, &seen](const T4& p, const T4& t) {
        auto [s, sa, d, da] = p;
        auto [ts, tsa, td, tda] = t;
        seen.push_back(std::string(is_symbolic_zero(ts) ? "Z" : "-") +
                       (is_symbolic_zero(tsa) ? "Z" : "-") + (is_symbolic_zero(td) ? "Z" : "-") +
                       (is_symbolic_zero(tda) ? "Z" : "-") +
                       (is_symbolic_zero(tsa) && tsa.shape() == Shape{2} ? "2" : ""));
        return std::pair{sz_f(s, sa, d, da), std::pair{s + 90.0f, tda + 91.0f}};
      },
      /*symbolic_zeros=*/true);
  auto sz_run = [&](bool use_jit, bool use_vmap) {
    auto g = [&, use_vmap](const Array& d, const Array& da) {
      Array s = f32(1), sa = vec({2, 3});
      if (!use_vmap) return sz_f(s, sa, d, da);
      auto pack = [](const Array& x) { return jnp::expand_dims(x, 0); };
      auto [o1, o2] = vmap(sz_f)(pack(s), pack(sa), pack(d), pack(da));
      return std::pair{o1[0], o2[0]};
    };
    auto run = [g](const Array& d, const Array& da, const Array& td, const Array& tda) {
      auto [p, t] = jvp(g, T2{d, da}, T2{td, tda});
      return std::vector<Array>{p.first, p.second, t.first, t.second};
    };
    Array d = f32(4), da = vec({5, 6}), td = f32(7), tda = vec({8, 9});
    return use_jit ? jit(run)(d, da, td, tda) : run(d, da, td, tda);
  };
  std::map<std::string, Case> c;
  c["symzero/jvp/nojit_novmap"] = [&] { return L(sz_run(false, false)); };
  c["symzero/jvp/jit_novmap"] = [&] { return L(sz_run(true, false)); };
  c["symzero/jvp/nojit_vmap"] = [&] { return L(sz_run(false, true)); };
  c["symzero/jvp/jit_vmap"] = [&] { return L(sz_run(true, true)); };

  auto sz_mul = custom_jvp([](const Array& x, const Array& y) { return x * y; });
  sz_mul.defjvp(
      [&sz_mul](const T2& p, const T2& t) {
        auto [x, y] = p;
        auto [tx, ty] = t;
        EXPECT_FALSE(is_symbolic_zero(tx) && is_symbolic_zero(ty));
        Array out = is_symbolic_zero(tx) ? ty : is_symbolic_zero(ty) ? tx : tx + ty;
        return std::pair{sz_mul(x, y), out};
      },
      true);
  c["symzero/jvp/jacfwd_jit"] = [&] { return L(jacfwd(jit(sz_mul))(f32(0.1f), f32(0.2f))); };
  c["symzero/jvp/grad_x"] = [&] { return L(grad(sz_mul)(x3, x2)); };
  c["symzero/jvp/grad_both"] = [&] { return L(grad(sz_mul, argnums<0, 1>)(x3, x2)); };
  c["symzero/jvp/jvp_y_only"] = [&] {
    return L(jvp([&](const Array& y) { return sz_mul(x3, y); }, T1{x2}, T1{x1}));
  };
  // The rule returns the symbolic zero it was given.
  auto sz_out = custom_jvp([](const Array& x, const Array& y) { return x * y; },
                           [](const T2& p, const T2& t) {
                             return std::pair{std::get<0>(p) * std::get<1>(p), std::get<1>(t)};
                           },
                           CustomOptions{.symbolic_zeros = true});
  c["symzero/jvp/zero_output_grad_vmap"] = [&] {
    return L(grad([&](const Array& x, const Array& y) { return jnp::sum(vmap(sz_out)(x, y)); })(
        jnp::ones({3}), jnp::ones({3})));
  };
  c["symzero/jvp/zero_output_jvp"] = [&] {
    return L(jvp([&](const Array& x) { return sz_out(x, x3); }, T1{x2}, T1{x1}));
  };
  auto sz_first = custom_jvp([](const Array& x, const Array&) { return x; },
                             [](const T2& p, const T2& t) {
                               return std::pair{std::get<0>(p), std::get<0>(t)};
                             },
                             CustomOptions{.symbolic_zeros = true});
  c["symzero/jvp/scan_grad"] = [&] {
    return L(grad([&](const Array& x) {
      auto body = [&](const T2& xy, const std::vector<Array>&) {
        auto [a, b] = xy;
        return std::pair{T2{sz_first(a, b), a}, std::vector<Array>{}};
      };
      return std::get<0>(lax::scan(body, T2{x, f32(1)}, std::vector<Array>{}, 2).first);
    })(x1));
  };
  // A bad output for one pattern only is JAX's error when that pattern is traced.
  auto sz_bad = custom_jvp([](const Array& x, const Array& y) { return x * y; });
  sz_bad.defjvp(
      [&sz_bad](const T2& p, const T2& t) {
        auto [x, y] = p;
        auto [tx, ty] = t;
        if (is_symbolic_zero(tx)) return std::pair{sz_bad(x, y), jnp::reshape(ty, {1})};
        return std::pair{sz_bad(x, y), is_symbolic_zero(ty) ? tx * y : tx * y + ty * x};
      },
      true);
  c["symzero/err/pattern_shape"] = [&] {
    return L(jvp([&](const Array& y) { return sz_bad(x3, y); }, T1{x2}, T1{x1}));
  };
  c["symzero/err/pattern_ok"] = [&] { return L(grad(sz_bad)(x3, x2)); };
  EXPECT_EQ(names_of(c), golden_cases({"symzero/"}));
  for (const auto& [name, fn] : c) check(name, fn);
  // Under jit and vmap or not, the rule saw the static arguments' tangents as symbolic
  // zeros of their shapes, and the others as values (once per case: traced for that
  // pattern); besides, it is traced once for all tangents when f is called.
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "ZZ--2"), 4);
  EXPECT_EQ(std::count(seen.begin(), seen.end(), "----"), long(seen.size()) - 4);
}

// bwd returning no cotangent (an invalid Array, JAX's None) for some arguments: zeros of
// their types (JAX's test_bwd_nones, _vmap, _pytree).
TEST(CustomVjp, BwdNonesMatchJax) {
  Array x3 = f32(3), x2 = f32(2), x1 = f32(1);
  auto bn_f = custom_vjp([](const Array& x, const Array& y) { return x * jnp::sin(y); },
                         [](const Array& x, const Array& y) {
                           return std::pair{x * jnp::sin(y), jnp::cos(y)};
                         },
                         [](const Array& cos, const Array& g) {
                           return T2{Array(), 2.0f * cos * g};
                         });
  auto bn_tree = custom_vjp(
      [](const T2& xs, const Array& y) { return std::get<0>(xs) * std::get<1>(xs) * jnp::sin(y); },
      [](const T2& xs, const Array& y) {
        return std::pair{std::get<0>(xs) * std::get<1>(xs) * jnp::sin(y), jnp::cos(y)};
      },
      [](const Array& cos, const Array& g) {
        return std::tuple<T2, Array>{T2{Array(), Array()}, 2.0f * cos * g};
      });
  std::map<std::string, Case> c;
  c["bwd_none/grad"] = [&] { return L(grad([&](const Array& x) { return bn_f(x, x); })(x3)); };
  c["bwd_none/grad_vmap"] = [&] {
    return L(grad([&](const Array& x) { return jnp::sum(vmap(bn_f)(x, x)); })(jnp::arange(3.0f)));
  };
  c["bwd_none/grad_both"] = [&] { return L(grad(bn_f, argnums<0, 1>)(x3, x2)); };
  c["bwd_none/pytree"] = [&] {
    return L(grad([&](const Array& x) { return bn_tree(T2{x, x}, x); })(x3));
  };
  c["bwd_none/pytree_argnums"] = [&] { return L(grad(bn_tree, argnums<0, 1>)(T2{x3, x2}, x1)); };
  EXPECT_EQ(names_of(c), golden_cases({"bwd_none/"}));
  for (const auto& [name, fn] : c) check(name, fn);
}

// Called eagerly, f runs as it is and its rules are not traced (JAX's eval trace); under a
// transform they are.
TEST(CustomDerivatives, EagerCallsDoNotTraceTheRules) {
  int traced = 0;
  auto f = custom_jvp([](const Array& x) { return jnp::sin(x); },
                      [&traced](const T1& p, const T1& t) {
                        ++traced;
                        return std::pair{jnp::sin(std::get<0>(p)), std::get<0>(t)};
                      });
  auto g = custom_vjp([](const Array& x) { return jnp::sin(x); },
                      [&traced](const Array& x) {
                        ++traced;
                        return std::pair{jnp::sin(x), x};
                      },
                      [](const Array&, const Array& ct) { return ct; });
  EXPECT_FLOAT_EQ(f(f32(1)).item<float>(), std::sin(1.0f));
  EXPECT_FLOAT_EQ(g(f32(1)).item<float>(), std::sin(1.0f));
  EXPECT_EQ(traced, 0);
  EXPECT_FLOAT_EQ(grad(f)(f32(1)).item<float>(), 1.0f);
  EXPECT_FLOAT_EQ(grad(g)(f32(1)).item<float>(), 1.0f);
  EXPECT_EQ(traced, 2);
}

// custom_jvp_call and custom_vjp_call print as JAX's make_jaxpr prints them.
TEST(CustomDerivatives, CallsPrintAsJax) {
  auto sin_jvp = custom_jvp([](const Array& x) { return jnp::sin(x); },
                            [](const T1& p, const T1& t) {
                              return std::pair{jnp::sin(std::get<0>(p)), std::get<0>(t)};
                            },
                            CustomOptions{.name = "sin_jvp", .jvp_name = "sin_jvp_rule"});
  EXPECT_EQ(make_jaxpr(sin_jvp)(f32(1)).to_string(), goldens().at("jaxpr/custom_jvp_call"));
  auto vsin = custom_vjp([](const Array& x) { return jnp::sin(x); },
                         [](const Array& x) {
                           return std::pair{jnp::sin(x), jnp::cos(x)};
                         },
                         [](const Array& c, const Array& g) { return c * g; },
                         CustomOptions{.name = "vsin"});
  EXPECT_EQ(make_jaxpr(vsin)(f32(1)).to_string(), goldens().at("jaxpr/custom_vjp_call"));
  auto app = custom_jvp([](const Fn& f, const Array& x) { return f(x); },
                        [](const Fn& f, const T1& p, const T1& t) {
                          return std::pair{f(std::get<0>(p)), std::get<0>(t)};
                        },
                        nondiff_argnums<0>, CustomOptions{.name = "app"});
  Fn sin = [](const Array& y) { return jnp::sin(y); };
  EXPECT_EQ(make_jaxpr([&](const Array& x) { return app(sin, x); })(f32(1)).to_string(),
            goldens().at("jaxpr/custom_jvp_call_nondiff"));
  auto sz_mul = custom_jvp([](const Array& x, const Array& y) { return x * y; },
                           [](const T2& p, const T2& t) {
                             return std::pair{std::get<0>(p) * std::get<1>(p), std::get<0>(t)};
                           },
                           CustomOptions{.name = "sz_mul", .symbolic_zeros = true});
  EXPECT_EQ(make_jaxpr(sz_mul)(f32(1), f32(2)).to_string(),
            goldens().at("jaxpr/custom_jvp_call_symbolic"));
}

}  // namespace
}  // namespace parax
