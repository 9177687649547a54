// lax's control flow run forward against JAX 0.10.2: every case of
// tools/make_control_flow_goldens.py computed here with the same inputs, eager and under jit
// (values, dtypes, weak types, shapes, or JAX's error and message), and make_jaxpr's text.
// The cases named jax_* are ports of JAX's tests/lax_control_flow_test.py (see the script).
//
// Deliberate differences from JAX (the golden script lists them too):
//  * literals print without their type and reduce_sum without out_sharding (parax's dialect),
//    and slice's absent strides as `()`; jaxpr text is compared with whitespace runs
//    collapsed, since line breaks follow from line lengths, and without whitespace inside
//    `[...]`, since parax never breaks an ordinary equation's params over lines;
//  * cond/switch errors leave out JAX's `true_fun is <lambda> at file:line` lines (C++
//    callables have no printable name), and loop errors call the carry `c` (JAX uses the
//    body's parameter name), which the Python cases do too;
//  * a leaf against a container in a loop carry is `a pytree leaf` (JAX: the leaf's class);
//  * cases indexing with dynamic_slice and jax_while_with_many_args (JAX hoists its body as
//    `let jaxpr = ...`) compare values only;
//  * Python's dicts of mixed values become pairs or structs with the same leaf order.
#include <gtest/gtest.h>

#include <cmath>
#include <functional>
#include <map>
#include <string>
#include <vector>

#include "parax/parax.h"
#include "support/golden.h"

namespace parax {
namespace {

namespace jnp = numpy;
using Args = std::vector<Array>;
using Dict = std::map<std::string, Array>;
using Fn = std::function<Args(const Args&)>;
using Branch = std::function<Array(const Array&)>;

const std::map<std::string, std::string>& goldens() {
  static const auto* g =
      new std::map<std::string, std::string>(testing::read_golden("control_flow_cases.txt"));
  return *g;
}

// The inputs of the golden script.
struct Inputs {
  Array x3 = jnp::array({1.0f, -2.0f, 3.0f});
  Array s = jnp::array({2.0f})[0];
  Array n5 = jnp::array({5})[0];
  Array m43 = jnp::arange(12).astype(DType::float32).reshape({4, 3});
  Array xs4 = jnp::array({1.0f, 2.0f, 3.0f, 4.0f});
  Array w3 = jnp::array({0.5f, 1.5f, -1.0f});
  Array e03 = jnp::zeros({0, 3});
};

// A 0-d int32 array made on the host (inside a trace too, where JAX inlines it).
Array i32(int32_t v) { return detail::scalar_array(&v, DType::int32, false); }
// A numpy scalar (np.float32(1.), np.int16(0)): strongly typed.
template <class T>
Array strong(T v) {
  return detail::scalar_array(&v, dtype_of<T>(), false);
}
Array boolean(bool v) { return ArrayLike(v).array(); }
// A Python scalar: weakly typed.
Array weak(float v) { return ArrayLike(v).array(); }
Array weak(int v) { return ArrayLike(v).array(); }

struct Case {
  std::string name;
  Fn fn;
  Args args;
};

// Wraps f(args) -> pytree into args -> leaves.
template <class F>
Fn flat(F f) {
  return [f](const Args& a) { return tree::flatten(f(a)).first; };
}

std::vector<Branch> branches4(const Array& w3) {
  return {[](const Array& y) { return y + 1.0; }, [](const Array& y) { return y * 10.0; },
          [](const Array& y) { return -y; }, [w3](const Array& y) { return y - w3; }};
}

void add_cond_cases(const Inputs& in, std::vector<Case>& cs) {
  auto basic = flat([](const Args& a) {
    return lax::cond(
        a[0][0] > 0, [](const Array& y) { return y * 2.0; }, [](const Array& y) { return y - 1.0; },
        a[0]);
  });
  cs.push_back({"cond_true", basic, {in.x3}});
  cs.push_back({"cond_false", basic, {-in.x3}});
  auto pytree = flat([](const Args& a) {
    using Ops = std::pair<Array, Dict>;
    using Out = std::pair<std::pair<Array, Array>, Array>;
    Array pred = a[1] > 0;  // first, as Python evaluates it
    return lax::cond(
        pred,
        [](const Ops& t, const Array& b) {
          const Array& q = t.second.at("q");
          return Out{{t.first + b, q * b}, q};
        },
        [](const Ops& t, const Array& b) {
          const Array& q = t.second.at("q");
          return Out{{t.first - b, q}, q + 1.0};
        },
        Ops{a[0], Dict{{"q", a[0] * 2.0}}}, a[1]);
  });
  cs.push_back({"cond_pytree_true", pytree, {in.x3, in.s}});
  cs.push_back({"cond_pytree_false", pytree, {in.x3, -in.s}});
  const Array w3 = in.w3;
  cs.push_back({"cond_const_one_branch",
                flat([w3](const Args& a) {
                  return lax::cond(
                      a[0][1] > 0, [w3](const Array& y) { return y * w3; },
                      [](const Array& y) { return y + 1.0; }, a[0]);
                }),
                {in.x3}});
  cs.push_back({"cond_literal_pred",
                flat([](const Args& a) {
                  return lax::cond(
                      true, [](const Array& y) { return y * 3.0; },
                      [](const Array& y) { return lax::sin(y); }, a[0]);
                }),
                {in.x3}});
  auto by_pred = flat([](const Args& a) {
    return lax::cond(
        a[0], [](const Array& y) { return y + 1.0; }, [](const Array& y) { return y - 1.0; }, a[1]);
  });
  cs.push_back({"cond_int_pred", by_pred, {in.n5, in.x3}});
  cs.push_back({"cond_int_pred_zero", by_pred, {in.n5 - 5, in.x3}});
  cs.push_back({"cond_float_pred", by_pred, {in.s, in.x3}});
  cs.push_back({"cond_float_pred_zero", by_pred, {in.s - in.s, in.x3}});
  cs.push_back({"cond_two_operands",
                flat([](const Args& a) {
                  return lax::cond(
                      a[1] < 0, [](const Array& x, const Array& c) { return x * c; },
                      [](const Array& x, const Array& c) { return x - c; }, a[0], a[1]);
                }),
                {in.x3, in.s}});
}

void add_switch_cases(const Inputs& in, std::vector<Case>& cs) {
  const Array w3 = in.w3;
  auto four = flat([w3](const Args& a) { return lax::switch_(a[0], branches4(w3), a[1]); });
  for (int k : {-3, -1, 0, 1, 2, 3, 4, 9}) {
    const std::string name = "switch4_" + (k < 0 ? "m" + std::to_string(-k) : std::to_string(k));
    cs.push_back({name, four, {i32(k), in.x3}});
  }
  cs.push_back({"switch1",
                flat([](const Args& a) {
                  return lax::switch_(
                      a[0], std::vector<Branch>{[](const Array& y) { return y * 2.0; }}, a[1]);
                }),
                {in.n5, in.x3}});
  cs.push_back({"switch_literal_index",
                flat([w3](const Args& a) {
                  std::vector<Branch> two = branches4(w3);
                  two.resize(2);
                  return lax::switch_(3, two, a[0]);
                }),
                {in.x3}});
}

void add_while_cases(const Inputs& in, std::vector<Case>& cs) {
  using Carry = std::pair<Array, std::pair<Array, Array>>;
  cs.push_back({"while_pytree",
                flat([](const Args& a) {
                  return lax::while_loop([](const Carry& c) { return c.first < 4; },
                                         [](const Carry& c) {
                                           const auto& [x, b] = c.second;
                                           return Carry{c.first + 1, {x * b, b + 1.0}};
                                         },
                                         Carry{i32(0), {a[0], a[1]}});
                }),
                {in.x3, in.s}});
  const Array w3 = in.w3;
  cs.push_back({"while_consts",
                flat([w3](const Args& a) {
                  return lax::while_loop(
                      [w3](const Array& c) {
                        Array total = jnp::sum(c);  // first, as Python evaluates it
                        return total < w3[1] * 20.0;
                      },
                      [w3](const Array& c) { return c + w3; }, a[0]);
                }),
                {in.x3}});
  cs.push_back({"while_zero_iterations",
                flat([](const Args& a) {
                  return lax::while_loop([](const Array& c) { return c[0] > 100.0; },
                                         [](const Array& c) { return c * 2.0; }, a[0]);
                }),
                {in.x3}});
}

void add_fori_cases(const Inputs& in, std::vector<Case>& cs) {
  cs.push_back({"fori_static",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, 4, [](const Array& i, const Array& c) { return c * 2.0 + i; }, a[0]);
                }),
                {in.x3}});
  cs.push_back({"fori_traced",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, a[0], [](const Array& i, const Array& c) { return c + i; }, a[1]);
                }),
                {in.n5, in.x3}});
  cs.push_back({"fori_traced_lower",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      a[0] - 3, a[0], [](const Array& i, const Array& c) { return c * i; }, a[1]);
                }),
                {in.n5, in.x3}});
  cs.push_back({"fori_upper_below_lower",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      5, 2, [](const Array&, const Array& c) { return c + 1.0; }, a[0]);
                }),
                {in.x3}});
  cs.push_back({"fori_nonzero_lower",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      2, 6, [](const Array& i, const Array& c) { return c * i; }, a[0]);
                }),
                {in.x3}});
  using T = std::pair<Array, Dict>;
  cs.push_back({"fori_pytree",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, 3,
                      [](const Array&, const T& t) {
                        const Array& k = t.second.at("k");
                        return T{t.first + k, Dict{{"k", k * 2.0}}};
                      },
                      T{a[0], Dict{{"k", a[1]}}});
                }),
                {in.x3, in.s}});
}

void add_scan_cases(const Inputs& in, std::vector<Case>& cs) {
  const Array w3 = in.w3;
  using C2 = std::pair<Array, Array>;
  cs.push_back({"scan_pytree",
                flat([w3](const Args& a) {
                  auto f = [w3](const C2& c, const Dict& x) {
                    const auto& [p, b] = c;
                    return std::pair{C2{p + x.at("v"), b * 2.0 + x.at("row")},
                                     Dict{{"sum", p + b[0]}, {"row", x.at("row") - w3}}};
                  };
                  return lax::scan(f, C2{a[0], w3}, Dict{{"v", a[1]}, {"row", a[2]}});
                }),
                {in.s, in.xs4, in.m43}});
  cs.push_back({"scan_consts",
                flat([w3](const Args& a) {
                  return lax::scan(
                      [w3](const Array& c, const Array& x) {
                        return std::pair{c * w3 + x, c[0] * x};
                      },
                      a[0], a[1]);
                }),
                {in.x3, in.xs4}});
  auto halve = [](const Array& c, const Array& x) { return std::pair{c * 0.5 + x, c}; };
  cs.push_back(
      {"scan_reverse",
       flat([halve](const Args& a) { return lax::scan(halve, a[0], a[1], std::nullopt, true); }),
       {in.s, in.xs4}});
  cs.push_back({"scan_unroll2",
                flat([halve](const Args& a) {
                  return lax::scan(halve, a[0], a[1], std::nullopt, false, 2);
                }),
                {in.s, in.xs4}});
  cs.push_back({"scan_length_no_xs",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Args&) {
                        return std::pair{c * 2.0, c + 1.0};
                      },
                      a[0], Args{}, 3);
                }),
                {in.x3}});
  cs.push_back({"scan_zero_length",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        return std::pair{c + x, x * 2.0};
                      },
                      a[0], a[1]);
                }),
                {in.x3, in.e03}});
  cs.push_back({"scan_weak_carry",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        return std::pair{c + x, c};
                      },
                      weak(0.0f), a[0]);
                }),
                {in.xs4}});
  cs.push_back({"scan_int_carry",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        return std::pair{c + 1, c * x};
                      },
                      a[0], a[1]);
                }),
                {in.n5, in.xs4}});
  cs.push_back({"scan_readonly_carry",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        return std::pair{c, c * x};
                      },
                      a[0], a[1]);
                }),
                {in.s, in.xs4}});
  cs.push_back({"scan_forwards_xs",
                flat([](const Args& a) {
                  using Y = std::tuple<Array, Array, Array>;
                  return lax::scan(
                      [](const Array& c, const C2& x) {
                        return std::pair{c + x.first, Y{x.second, c, x.first}};
                      },
                      a[0], C2{a[1], a[2]});
                }),
                {in.s, in.xs4, in.m43}});
  cs.push_back({"scan_forwards_xs_reverse",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        return std::pair{c * x, x};
                      },
                      a[0], a[1], std::nullopt, true);
                }),
                {in.s, in.xs4}});
  cs.push_back({"fori_readonly_carry",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, 3,
                      [](const Array&, const C2& t) {
                        return C2{t.first * t.second, t.second};
                      },
                      C2{a[0], a[1]});
                }),
                {in.x3, in.s}});
  cs.push_back({"map_passthrough",
                flat([](const Args& a) {
                  return lax::map(
                      [](const C2& t) {
                        return C2{t.first * t.second, t.second};
                      },
                      C2{a[0], a[1]});
                }),
                {in.m43, in.xs4}});
  cs.push_back({"map",
                flat([w3](const Args& a) {
                  return lax::map([w3](const Array& r) { return jnp::sum(r * w3); }, a[0]);
                }),
                {in.m43}});
  cs.push_back({"map_pytree",
                flat([](const Args& a) {
                  return lax::map(
                      [](const C2& t) {
                        return C2{t.first * t.second, t.second + 1.0};
                      },
                      C2{a[0], a[1]});
                }),
                {in.m43, in.xs4}});
}

void add_nested_cases(const Inputs& in, std::vector<Case>& cs) {
  cs.push_back({"nested_fori_in_scan",
                flat([](const Args& a) {
                  auto f = [](const Array& c, const Array& x) {
                    Array b = lax::fori_loop(
                        0, 3, [&x](const Array& i, const Array& t) { return t + x * i; }, c);
                    return std::pair{b, b * 2.0};
                  };
                  return lax::scan(f, a[0], a[1]);
                }),
                {in.s, in.xs4}});
  using C = std::pair<Array, Array>;
  cs.push_back(
      {"nested_cond_in_while",
       flat([](const Args& a) {
         auto body = [](const C& c) {
           Array v = lax::cond(
               lax::rem(c.first, 2) == 0, [](const Array& u) { return u * 2.0; },
               [](const Array& u) { return u - 1.0; }, c.second);
           return C{c.first + 1, v};
         };
         return lax::while_loop([](const C& c) { return c.first < 5; }, body, C{i32(0), a[0]});
       }),
       {in.x3}});
  cs.push_back({"nested_scan_in_cond",
                flat([](const Args& a) {
                  const Array xs = a[1];
                  return lax::cond(
                      a[0][0] > 0,
                      [xs](const Array& v) {
                        return lax::scan(
                                   [](const Array& c, const Array& y) {
                                     return std::pair{c + y, c * y};
                                   },
                                   v, xs)
                            .first;
                      },
                      [](const Array& v) { return v * 0.0; }, a[0]);
                }),
                {in.x3, in.xs4}});
}

// JAX's testNestedWhile, as written there.
std::pair<Array, Array> nested_while(const Array& num) {
  using T = std::tuple<Array, Array, Array>;
  auto inner = [](const Array& i, const Array& count) {
    T out = lax::while_loop(
        [](const T& t) { return lax::le(std::get<1>(t), std::get<0>(t)); },
        [](const T& t) {
          return T{std::get<0>(t), lax::add(std::get<1>(t), 1), lax::add(std::get<2>(t), 1)};
        },
        T{i, weak(0), count});
    return std::get<2>(out);
  };
  T out = lax::while_loop([](const T& t) { return lax::lt(std::get<1>(t), std::get<0>(t)); },
                          [&](const T& t) {
                            return T{std::get<0>(t), lax::add(std::get<1>(t), 1),
                                     inner(std::get<1>(t), std::get<2>(t))};
                          },
                          T{num, weak(0), weak(0)});
  return {std::get<1>(out), std::get<2>(out)};
}

void add_jax_ports(const Inputs& in, std::vector<Case>& cs) {
  using C = std::pair<Array, Array>;
  cs.push_back({"jax_while_with_tuple",
                flat([](const Args& a) {
                  return lax::while_loop([](const C& s) { return lax::lt(s.first, 10); },
                                         [](const C& s) {
                                           return C{lax::add(s.first, 1), lax::add(s.second, 1)};
                                         },
                                         C{a[0], weak(0)})
                      .second;
                }),
                {i32(3)}});
  cs.push_back(
      {"jax_nested_while", flat([](const Args& a) { return nested_while(a[0]); }), {i32(4)}});
  cs.push_back({"jax_while_with_closure",
                flat([](const Args& a) {
                  const Array limit = a[1];
                  const Array inc = a[2];
                  return lax::while_loop([limit](const C& s) { return lax::lt(s.first, limit); },
                                         [inc](const C& s) {
                                           return C{lax::add(s.first, 1), lax::add(s.second, inc)};
                                         },
                                         C{a[0], weak(0)})
                      .second;
                }),
                {i32(2), i32(7), i32(3)}});
  cs.push_back({"jax_fori_loop_basic",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, a[0], [](const Array& i, const Array& t) { return lax::add(t, i); },
                      weak(0));
                }),
                {i32(10)}});
  cs.push_back({"jax_fori_loop_tuple_state",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, 5,
                      [](const Array&, const C& s) {
                        return C{s.first + 1, s.second + 2.0};
                      },
                      C{a[0], weak(0.0f)});
                }),
                {i32(1)}});
  cs.push_back({"jax_fori_loop_dict_state",
                flat([](const Args& a) {
                  return lax::fori_loop(
                      0, 5,
                      [](const Array&, const Dict& s) {
                        return Dict{{"x", s.at("x") + 1}, {"y", s.at("y") + 2.0}};
                      },
                      Dict{{"x", a[0]}, {"y", weak(0.0f)}});
                }),
                {i32(1)}});
  auto jax_cond = flat([](const Args& a) {
    return lax::cond(
        lax::lt(a[0], 3),
        [](const Array& x) {
          return C{x, x};
        },
        [](const Array& x) {
          return C{-x, -x};
        },
        a[0]);
  });
  cs.push_back({"jax_cond_lt", jax_cond, {i32(1)}});
  cs.push_back({"jax_cond_ge", jax_cond, {i32(4)}});
  cs.push_back({"jax_cond_with_consts",
                flat([](const Args& a) {
                  const Array y = a[1];
                  return lax::cond(
                      lax::lt(a[0], 3),
                      [y](const Array& x) {
                        return C{x, y};
                      },
                      [y](const Array& x) {
                        return C{-x, -y};
                      },
                      a[0]);
                }),
                {i32(1), i32(7)}});
  cs.push_back({"jax_cond_two_operands",
                flat([](const Args& a) {
                  return lax::cond(
                      a[0] < 3, [](const Array& x, const Array&) { return x; },
                      [](const Array&, const Array& y) { return y; }, a[0], a[1]);
                }),
                {i32(4), i32(9)}});
  auto jax_switch = flat([](const Args& a) {
    std::vector<Branch> bs = {[](const Array& x) { return x - 1; },
                              [](const Array& x) { return x; },
                              [](const Array& x) { return x + 1; }};
    return lax::switch_(a[0], bs, a[0]);
  });
  for (int k : {0, 1, 2, 5})
    cs.push_back({"jax_switch_" + std::to_string(k), jax_switch, {i32(k)}});
  cs.push_back({"cond_no_operands",
                flat([](const Args& a) {
                  const Array x = a[0];
                  return lax::cond(
                      x > 0,
                      [] {
                        return jnp::array({1.0f, 2.0f});
                      },
                      [x] {
                        return jnp::array({1.0f, 1.0f}) * x;
                      });
                }),
                {in.s}});
  cs.push_back({"jax_scan_impl",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const Array& c, const Array& x) {
                        Array b = lax::sin(c * x + 1.0);
                        return std::pair{lax::cos(b + c), b};
                      },
                      a[0], a[1]);
                }),
                {in.x3, jnp::stack({in.x3 * 0.5, in.x3, in.w3})}});
  cs.push_back({"jax_map",
                flat([](const Args& a) {
                  return lax::map([](const Array& x) { return C{jnp::sum(x), jnp::max(x)}; }, a[0]);
                }),
                {in.m43}});
  cs.push_back({"scan_mixed_carry",
                flat([](const Args& a) {
                  return lax::scan(
                      [](const C& c, const Array& x) {
                        return std::pair{C{c.first + 1, c.second + x}, c.second};
                      },
                      C{weak(0), weak(0.0f)}, a[0]);
                }),
                {in.xs4}});
}

// lax.dynamic_index_in_dim(a, i, 0, False).
Array dynamic_index(const Array& a, const Array& i) {
  return lax::squeeze(lax::dynamic_slice(a, {i}, {1}), {0});
}

void add_more_jax_ports(std::vector<Case>& cs) {
  cs.push_back({"jax_while_with_many_args",
                flat([](const Args&) {
                  return lax::while_loop([](const Args& s) { return lax::lt(s[0], 2); },
                                         [](const Args& s) {
                                           Args out;
                                           for (const Array& v : s) out.push_back(lax::add(v, 1));
                                           return out;
                                         },
                                         Args(16, weak(0)));
                }),
                {}});
  const Array arr10 = jnp::array({0.5f, -1.0f, 2.0f, 3.5f, -0.25f, 1.0f, 4.0f, -2.0f, 0.75f, 1.5f});
  using S4 = std::tuple<Array, Array, Array, Array>;
  auto conjunction = flat([](const Args& a) {
    return std::get<3>(lax::while_loop(
        [](const S4& s) {
          const auto& [arr, num, i, total] = s;
          return lax::bitwise_and(lax::lt(i, num), lax::lt(i, arr.shape()[0]));
        },
        [](const S4& s) {
          const auto& [arr, num, i, total] = s;
          return S4{arr, num, i + 1, total + dynamic_index(arr, i)};
        },
        S4{a[0], a[1], weak(0), weak(0.0f)}));
  });
  using S3 = std::tuple<Array, Array, std::tuple<>>;
  auto empty_tuple = flat([](const Args& a) {
    auto body = [](const Array& i, const S3& s) {
      return S3{std::get<0>(s), lax::add(std::get<1>(s), dynamic_index(std::get<0>(s), i)), {}};
    };
    return std::get<1>(
        lax::fori_loop(0, lax::min(a[0].shape()[0], a[1]), body, S3{a[0], strong(0.0f), {}}));
  });
  for (int k : {0, 5, 10, 15}) {
    cs.push_back({"jax_loop_with_conjunction_" + std::to_string(k), conjunction, {arr10, i32(k)}});
    cs.push_back({"jax_fori_loop_empty_tuple_" + std::to_string(k), empty_tuple, {arr10, i32(k)}});
  }
  auto closure = flat([](const Args& a) {
    const Array num = a[0];
    return lax::fori_loop(
        0, num, [num](const Array& i, const Array& t) { return lax::add(num, lax::add(t, i)); },
        weak(0));
  });
  for (int k : {2, 3, 4}) {
    cs.push_back({"jax_fori_loop_closure_" + std::to_string(k), closure, {i32(k)}});
  }
  auto three = flat([](const Args& a) {
    return lax::cond(
        a[0] == 0, [](const Array& x, const Array& y, const Array& z) { return x + y + z; },
        [](const Array& x, const Array& y, const Array& z) { return x * y * z; }, a[0], a[0], a[0]);
  });
  for (int k : {0, 1})
    cs.push_back({"jax_cond_three_operands_" + std::to_string(k), three, {i32(k)}});
  auto multi = flat([](const Args& a) {
    using B2 = std::function<Array(const Array&, const Array&)>;
    std::vector<B2> bs = {[](const Array& x, const Array& y) { return lax::add(x, y); },
                          [](const Array& x, const Array& y) { return lax::mul(x, y); }};
    return lax::switch_(a[0], bs, a[0], a[0]);
  });
  for (int k : {-1, 0, 1, 2}) {
    const std::string name = k < 0 ? "m" + std::to_string(-k) : std::to_string(k);
    cs.push_back({"jax_switch_multi_operands_" + name, multi, {i32(k)}});
  }
  auto nested = flat([](const Args& a) {
    return lax::cond(
        lax::lt(a[0], 2), [](const Array& x) { return lax::mul(2, x); },
        [](const Array& x) {
          return lax::cond(
              lax::lt(x, 5), [](const Array& v, const Array&) { return lax::mul(3, v); },
              [x](const Array&, const Array& y) { return lax::mul(y, x); }, x, weak(4));
        },
        a[0]);
  });
  for (int k : {1, 3, 6}) cs.push_back({"jax_nested_cond_" + std::to_string(k), nested, {i32(k)}});
  cs.push_back(
      {"jax_map_empty",
       flat([](const Args& a) { return lax::map([](const Array& v) { return v * v; }, a[0]); }),
       {jnp::zeros({0})}});
  cs.push_back({"jax_while_cond_constant",
                flat([](const Args&) {
                  return lax::while_loop([](const std::tuple<>&) { return boolean(false); },
                                         [](const std::tuple<>&) { return std::tuple<>{}; },
                                         std::tuple<>{});
                }),
                {}});
  auto scan_weak = flat([](const Args& a) {
    return lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c + x, x};
        },
        weak(0), a[0]);
  });
  for (DType d :
       {DType::int8, DType::uint8, DType::float16, DType::bfloat16, DType::float32, DType::int32}) {
    cs.push_back(
        {"jax_scan_init_weak_type_" + std::string(dtype_name(d)), scan_weak, {jnp::ones({5}, d)}});
  }
  auto while_weak = flat([](const Args& a) {
    const Array inc = a[0];
    return lax::while_loop([](const Array& v) { return v < 2; },
                           [inc](const Array& v) { return v + inc; }, weak(0));
  });
  for (DType d : {DType::int8, DType::int16, DType::uint8, DType::uint32}) {
    cs.push_back({"jax_while_loop_init_weak_type_" + std::string(dtype_name(d)),
                  while_weak,
                  {jnp::ones({}, d)}});
  }
  auto plus_one = [](const Array&, const Array& c) { return c + 1; };
  cs.push_back({"jax_fori_loop_scalar_limits_lower",
                flat([plus_one](const Args&) {
                  return lax::fori_loop(strong(int16_t(0)), 10, plus_one, strong(10.0f));
                }),
                {}});
  cs.push_back({"jax_fori_loop_scalar_limits_upper",
                flat([plus_one](const Args&) {
                  return lax::fori_loop(0, strong(int16_t(10)), plus_one, strong(10.0f));
                }),
                {}});
}

Array identity(const Array& y) { return y; }

// JAX's error tests of lax_control_flow_test.py, with no inputs.
void add_jax_error_ports(std::vector<Case>& cs) {
  auto none = [&](const std::string& name, std::function<void()> f) {
    cs.push_back({name,
                  [f](const Args&) {
                    f();
                    return Args{};
                  },
                  {}});
  };
  using C = std::pair<Array, Array>;
  using T3 = std::tuple<Array, Array, Array>;
  none("jax_err_while_cond_pytree", [] {
    lax::while_loop([](const Array&) { return C{weak(1.0f), weak(1.0f)}; }, identity, weak(0.0f));
  });
  none("jax_err_while_cond_float",
       [] { lax::while_loop([](const Array&) { return strong(1.0f); }, identity, strong(0.0f)); });
  none("jax_err_while_component_dtype", [] {
    lax::while_loop([](const C&) { return boolean(true); },
                    [](const C&) {
                      return C{boolean(true), boolean(true)};
                    },
                    C{boolean(true), strong(0.0f)});
  });
  none("jax_err_fori_unequal_bounds", [] {
    lax::fori_loop(
        strong(int16_t(0)), strong(int32_t(10)), [](const Array&, const Array& c) { return c; },
        strong(7.0f));
  });
  none("jax_err_cond_dict_structure", [] {
    lax::cond(
        true,
        [](const Array&) {
          return Dict{{"a", weak(2.0f)}};
        },
        [](const Array&) {
          return std::map<std::string, C>{{"a", C{weak(3.0f), weak(3.0f)}}};
        },
        weak(1.0f));
  });
  none("jax_err_cond_shape", [] {
    lax::cond(
        true, [](const Array&) { return jnp::array({1.0f}); },
        [](const Array&) { return strong(1.0f); }, weak(1.0f));
  });
  none("jax_err_switch_dict_types", [] {
    std::vector<std::function<Dict(const Array&)>> bs = {[](const Array&) {
                                                           return Dict{{"a", jnp::array({1.0f})}};
                                                         },
                                                         [](const Array&) {
                                                           return Dict{{"a", strong(1.0f)}};
                                                         }};
    lax::switch_(1, bs, weak(1.0f));
  });
  const Array five = jnp::arange(5).astype(DType::float32);
  none("jax_err_scan_body_output", [five] {
    lax::scan([](const Array& c, const Array& x) { return T3{c, x, x}; }, weak(0.0f), five);
  });
  none("jax_err_scan_metadata", [] {
    lax::fori_loop(
        0, 1,
        [](const Array&, const Dict& c) {
          return Dict{{"T", c.at("t")}};
        },
        Dict{{"t", jnp::array({1.0f})}});
  });
  none("jax_err_scan_tuple_length", [five] {
    lax::scan(
        [](const std::pair<Array, C>&, const Array& x) {
          return std::pair{T3{weak(0), weak(0), weak(0)}, x};
        },
        std::pair<Array, C>{weak(1), C{weak(2), weak(3)}}, five);
  });
  none("jax_err_scan_dict_children", [] {
    lax::scan(
        [](const Dict& c, const Args&) {
          return std::pair{Dict{{"a", c.at("a")}, {"b", c.at("a")}}, Args{}};
        },
        Dict{{"a", i32(0)}}, Args{}, 1);
  });
  none("jax_err_scan_nested_dict_children", [] {
    using D2 = std::pair<Dict, Dict>;
    lax::scan(
        [](const D2& c, const Args&) {
          const Dict two{{"a", c.first.at("a")}, {"b", c.first.at("a")}};
          return std::pair{D2{two, two}, Args{}};
        },
        D2{Dict{{"a", i32(0)}}, Dict{{"a", i32(0)}}}, Args{}, 1);
  });
  none("jax_err_scan_carry_types", [] {
    lax::scan(
        [](const T3& c, const Args&) {
          return std::pair{
              T3{std::get<0>(c).astype(DType::float32),
                 std::get<1>(c).astype(DType::float32).reshape({1, 1}), std::get<2>(c)},
              Args{}};
        },
        T3{i32(0), i32(0), i32(0)}, Args{}, 1);
  });
  none("jax_err_scan_length", [] {
    lax::scan(
        [](const Array& c, const Array& x) {
          return std::pair{c, x};
        },
        weak(0), jnp::arange(10), 5);
  });
  none("jax_err_scan_unroll", [] {
    lax::scan(
        [](const Array& c, const Array&) {
          return std::pair{c, c};
        },
        weak(0), jnp::arange(5), std::nullopt, false, -1);
  });
}

void add_error_cases(const Inputs& in, std::vector<Case>& cs) {
  const Array x3 = in.x3;
  auto on_x = [&](const std::string& name, std::function<void(const Array&)> f) {
    cs.push_back({name,
                  [f](const Args& a) {
                    f(a[0]);
                    return Args{};
                  },
                  {x3}});
  };
  using C = std::pair<Array, Array>;
  on_x("err_cond_structure", [](const Array& x) {
    lax::cond(
        x[0] > 0, identity, [](const Array& y) { return std::tuple<Array>{y}; }, x);
  });
  on_x("err_cond_dtype", [](const Array& x) {
    lax::cond(
        x[0] > 0, identity, [](const Array& y) { return y.astype(DType::int32); }, x);
  });
  on_x("err_cond_shape", [](const Array& x) {
    lax::cond(
        x[0] > 0, identity, [](const Array& y) { return y[0]; }, x);
  });
  on_x("err_cond_shape_at_path", [](const Array& x) {
    lax::cond(
        x[0] > 0,
        [](const Array& y) {
          return C{y, y};
        },
        [](const Array& y) {
          return C{y, y[0]};
        },
        x);
  });
  on_x("err_cond_nonscalar_pred", [](const Array& x) { lax::cond(x > 0, identity, identity, x); });
  on_x("err_switch_no_branches", [](const Array& x) { lax::switch_(0, std::vector<Branch>{}, x); });
  on_x("err_switch_float_index",
       [](const Array& x) { lax::switch_(1.0f, std::vector<Branch>{identity}, x); });
  on_x("err_switch_shape", [](const Array& x) {
    lax::switch_(0, std::vector<Branch>{identity, [](const Array& y) { return y[0]; }}, x);
  });
  on_x("err_switch_structure", [](const Array& x) {
    using B = std::function<Args(const Array&)>;
    lax::switch_(0,
                 std::vector<B>{[](const Array& y) { return Args{y}; },
                                [](const Array& y) { return Args{y}; },
                                [](const Array& y) {
                                  return Args{y, y};
                                }},
                 x);
  });
  on_x("err_while_list_length", [](const Array& x) {
    lax::while_loop([](const Args& c) { return c[0][0] > 0; },
                    [](const Args& c) {
                      return Args{c[0], c[0]};
                    },
                    Args{x});
  });
  on_x("err_scan_list_length", [](const Array& x) {
    lax::scan(
        [](const Args& c, const Array& y) {
          return std::pair{Args{c[0]}, y};
        },
        Args{x[0], x[1]}, x);
  });
  on_x("err_cond_list_length", [](const Array& x) {
    lax::cond(
        x[0] > 0, [](const Array& y) { return Args{y}; },
        [](const Array& y) {
          return Args{y, y};
        },
        x);
  });
  on_x("err_cond_two_types", [](const Array& x) {
    using T = std::tuple<Array, Array, Array>;
    lax::cond(
        x[0] > 0,
        [](const Array& y) {
          return T{y, y, y};
        },
        [](const Array& y) {
          return T{y[0], y, lax::slice(y, {1}, {3}).astype(DType::int32)};
        },
        x);
  });
  on_x("err_cond_dtype_and_shape", [](const Array& x) {
    lax::cond(
        x[0] > 0, identity, [](const Array& y) { return y[0].astype(DType::int32); }, x);
  });
  on_x("err_while_three_components", [](const Array& x) {
    using T = std::tuple<Array, Array, Array>;
    lax::while_loop([](const T& c) { return std::get<0>(c)[0] > 0; },
                    [](const T& c) {
                      return T{std::get<0>(c)[0], std::get<1>(c).astype(DType::int32),
                               lax::slice(std::get<2>(c), {1}, {3})};
                    },
                    T{x, x, x});
  });
  on_x("err_while_cond_not_bool",
       [](const Array& x) { lax::while_loop([](const Array& c) { return c[0]; }, identity, x); });
  on_x("err_while_cond_nonscalar",
       [](const Array& x) { lax::while_loop([](const Array& c) { return c > 0; }, identity, x); });
  on_x("err_while_carry_shape", [](const Array& x) {
    lax::while_loop([](const Array& c) { return c[0] > 0; }, [](const Array& c) { return c[0]; },
                    x);
  });
  on_x("err_while_carry_dtype", [](const Array& x) {
    lax::while_loop([](const Array& c) { return c[0] > 0; },
                    [](const Array& c) { return c.astype(DType::int32); }, x);
  });
  on_x("err_while_structure", [](const Array& x) {
    using T = std::tuple<Array>;
    lax::while_loop([](const T& c) { return std::get<0>(c)[0] > 0; },
                    [](const T& c) { return Args{std::get<0>(c)}; }, T{x});
  });
  on_x("err_while_two_components", [](const Array& x) {
    lax::while_loop([](const C& c) { return c.first[0] > 0; },
                    [](const C& c) {
                      return C{c.first[0], c.second.astype(DType::int32)};
                    },
                    C{x, x});
  });
  on_x("err_scan_carry_dtype", [](const Array& x) {
    lax::scan(
        [](const Array& c, const Array& y) {
          return std::pair{c.astype(DType::int32), y};
        },
        x[0], x);
  });
  on_x("err_scan_carry_shape", [](const Array& x) {
    lax::scan([x](const Array& c, const Array& y) { return std::pair{c * x, y}; }, x[0], x);
  });
  on_x("err_scan_structure", [](const Array& x) {
    lax::scan(
        [](const Args& c, const Array& y) {
          return std::pair{C{c[0], c[1]}, y};
        },
        Args{x[0], x[1]}, x);
  });
  on_x("err_scan_dict_component", [](const Array& x) {
    lax::scan(
        [](const Dict& c, const Array& y) {
          return std::pair{Dict{{"a", c.at("a")}, {"b", c.at("b")[0]}}, y};
        },
        Dict{{"a", x[0]}, {"b", x}}, x);
  });
  on_x("err_scan_lengths", [](const Array& x) {
    lax::scan(
        [](const Array& c, const C& y) {
          return std::pair{c, y};
        },
        x[0], C{x, lax::slice(x, {0}, {2})});
  });
  on_x("err_scan_length_arg", [](const Array& x) {
    lax::scan([](const Array& c, const Array& y) { return std::pair{c, y}; }, x[0], x, 5);
  });
  on_x("err_scan_no_length", [](const Array& x) {
    lax::scan([](const Array& c, const Args&) { return std::pair{c, c}; }, x[0], Args{});
  });
  on_x("err_fori_carry_shape", [](const Array& x) {
    lax::fori_loop(
        0, 3, [](const Array&, const Array& c) { return c[0]; }, x);
  });
  on_x("err_fori_carry_dtype", [](const Array& x) {
    lax::fori_loop(
        0, 3,
        [](const Array&, const C& c) {
          return C{c.first, c.second.astype(DType::int32)};
        },
        C{x, x});
  });
  cs.push_back({"err_fori_traced_carry_shape",
                [](const Args& a) {
                  lax::fori_loop(
                      0, a[0], [](const Array&, const Array& c) { return c[0]; }, a[1]);
                  return Args{};
                },
                {in.n5, in.x3}});
}

std::vector<Case> all_cases() {
  Inputs in;
  std::vector<Case> cs;
  add_cond_cases(in, cs);
  add_switch_cases(in, cs);
  add_while_cases(in, cs);
  add_fori_cases(in, cs);
  add_scan_cases(in, cs);
  add_nested_cases(in, cs);
  add_jax_ports(in, cs);
  add_more_jax_ports(cs);
  add_error_cases(in, cs);
  add_jax_error_ports(cs);
  return cs;
}

std::string fmt_value(double v) {
  // Python's repr of a float for the values the cases produce.
  std::ostringstream os;
  os.precision(17);
  os << v;
  return os.str();
}

// A leaf as the golden script records it: dtype|weak|shape|values.
bool leaf_matches(const Array& x, const std::string& want, std::string* why) {
  std::vector<std::string> parts;
  size_t start = 0;
  for (int k = 0; k < 3; ++k) {
    size_t bar = want.find('|', start);
    parts.push_back(want.substr(start, bar - start));
    start = bar + 1;
  }
  parts.push_back(want.substr(start));
  std::string shape;
  for (size_t d = 0; d < x.shape().size(); ++d) {
    shape += (d ? "," : "") + std::to_string(x.shape()[d]);
  }
  const std::string head =
      std::string(dtype_name(x.dtype())) + "|" + (x.weak_type() ? "w" : "s") + "|" + shape;
  if (head != parts[0] + "|" + parts[1] + "|" + parts[2]) {
    *why = "got " + head + ", JAX " + parts[0] + "|" + parts[1] + "|" + parts[2];
    return false;
  }
  std::vector<double> got = x.to_vector<double>();
  std::vector<double> expect;
  std::stringstream ss(parts[3]);
  for (std::string v; std::getline(ss, v, ',');) expect.push_back(std::stod(v));
  if (got.size() != expect.size()) {
    *why = "got " + std::to_string(got.size()) + " values, JAX " + std::to_string(expect.size());
    return false;
  }
  for (size_t k = 0; k < got.size(); ++k) {
    if (std::abs(got[k] - expect[k]) > 1e-6 * std::abs(expect[k]) + 1e-6) {
      *why = "value " + std::to_string(k) + ": got " + fmt_value(got[k]) + ", JAX " +
             fmt_value(expect[k]);
      return false;
    }
  }
  return true;
}

void check_run(const std::string& key, const std::function<Args()>& run) {
  SCOPED_TRACE(key);
  const auto& g = goldens();
  auto it = g.find(key);
  ASSERT_NE(it, g.end()) << "no golden for " << key;
  Args got;
  std::string error;
  try {
    got = run();
  } catch (const Error& e) {
    error = testing::error_record(e);
  }
  if (it->second.starts_with("!")) {
    EXPECT_EQ(error, it->second);
    return;
  }
  ASSERT_EQ(error, "");
  std::vector<std::string> leaves;
  for (size_t at = 0; !it->second.empty();) {
    size_t sep = it->second.find(" ; ", at);
    leaves.push_back(it->second.substr(at, sep - at));
    if (sep == std::string::npos) break;
    at = sep + 3;
  }
  ASSERT_EQ(got.size(), leaves.size());
  for (size_t k = 0; k < got.size(); ++k) {
    std::string why;
    EXPECT_TRUE(leaf_matches(got[k], leaves[k], &why)) << "leaf " << k << ": " << why;
  }
}

// Returns `s` with whitespace runs collapsed to one space and none inside `[ ... ]`: JAX
// breaks an equation's params one a line where it does not fit in 80 columns, parax keeps
// ordinary equations on one line.
std::string collapse(const std::string& s) {
  std::string out;
  bool space = false;
  for (char c : s) {
    if (std::isspace(static_cast<unsigned char>(c))) {
      space = true;
      continue;
    }
    if (space && !out.empty() && out.back() != '[' && c != ']') out += ' ';
    space = false;
    out += c;
  }
  return out;
}

TEST(ControlFlowJax, EagerMatchesJax) {
  for (const Case& c : all_cases()) check_run(c.name + "#eager", [&] { return c.fn(c.args); });
}

TEST(ControlFlowJax, JitMatchesJax) {
  for (const Case& c : all_cases()) check_run(c.name + "#jit", [&] { return jit(c.fn)(c.args); });
}

TEST(ControlFlowJax, JaxprMatchesJax) {
  const auto& g = goldens();
  int compared = 0;
  for (const Case& c : all_cases()) {
    auto it = g.find(c.name + "#jaxpr");
    if (it == g.end()) continue;
    SCOPED_TRACE(c.name);
    std::string text;
    try {
      text = make_jaxpr(c.fn)(c.args).to_string();
    } catch (const Error& e) {
      text = testing::error_record(e);
    }
    EXPECT_EQ(collapse(text), collapse(it->second)) << text;
    ++compared;
  }
  EXPECT_GT(compared, 50);
}

}  // namespace
}  // namespace parax
