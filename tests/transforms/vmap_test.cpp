// parax::vmap's public behaviour: in_axes and out_axes (negative, None, per argument, over
// pytrees), composition with jit, grad and itself, named axes, and JAX's error texts.
#include <gtest/gtest.h>

#include <parax/parax.h>

#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

std::vector<float> values(const Array& x) { return x.to_vector<float>(); }

// The reference: f applied to each slice along `axis` of x, stacked along `out`.
template <class F>
Array loop(const F& f, const Array& x, int64_t axis, int64_t out = 0) {
  std::vector<Array> parts;
  const int64_t n = x.shape()[size_t(axis)];
  for (int64_t i = 0; i < n; ++i) {
    Index idx(size_t(axis) + 1);
    idx[size_t(axis)] = Slice{i, i + 1};
    Array slice = x.slice(idx);
    parts.push_back(f(lax::squeeze(slice, {axis})));
  }
  return jnp::stack(parts, out);
}

TEST(Vmap, MapsEveryAxisPlacement) {
  Array x = jnp::arange(24.0f).reshape({2, 3, 4});
  auto f = [](const Array& v) { return jnp::sin(v) * jnp::sum(v) + jnp::cumsum(v, -1); };
  for (int axis : {0, 1, 2, -1, -2}) {
    const int64_t a = axis < 0 ? axis + 3 : axis;
    Array got = vmap(f, {.in_axes = axis})(x);
    EXPECT_EQ(values(got), values(loop(f, x, a))) << "axis " << axis;
  }
  // out_axes moves the mapped axis in the result.
  Array got = vmap(f, {.in_axes = 1, .out_axes = -1})(x);
  EXPECT_EQ(got.shape(), (Shape{2, 4, 3}));
  EXPECT_EQ(values(got), values(loop(f, x, 1, 2)));
}

TEST(Vmap, NoneBroadcastsAnArgument) {
  Array xs = jnp::arange(12.0f).reshape({3, 4});
  Array w = jnp::array({1.0f, 2.0f, 3.0f, 4.0f});
  auto f = [](const Array& x, const Array& v) { return jnp::dot(x, v); };
  Array got = vmap(f, {.in_axes = {0, None}})(xs, w);
  EXPECT_EQ(values(got), (std::vector<float>{20, 60, 100}));
  // A result that does not depend on the mapped argument is broadcast along the batch.
  Array same =
      vmap([](const Array&, const Array& v) { return v * 2.0f; }, {.in_axes = {0, None}})(xs, w);
  EXPECT_EQ(same.shape(), (Shape{3, 4}));
  Array unmapped = vmap([](const Array&, const Array& v) { return v * 2.0f; },
                        {.in_axes = {0, None}, .out_axes = None})(xs, w);
  EXPECT_EQ(values(unmapped), (std::vector<float>{2, 4, 6, 8}));
}

TEST(Vmap, Pytrees) {
  std::pair<Array, Array> p{jnp::arange(6.0f).reshape({3, 2}), jnp::arange(3.0f)};
  auto f = [](const std::pair<Array, Array>& q) {
    return std::vector<Array>{q.first * q.second, jnp::sum(q.first)};
  };
  std::vector<Array> out = vmap(f)(p);
  ASSERT_EQ(out.size(), 2u);
  EXPECT_EQ(values(out[0]), (std::vector<float>{0, 0, 2, 3, 8, 10}));
  EXPECT_EQ(values(out[1]), (std::vector<float>{1, 5, 9}));
}

TEST(Vmap, AxesArePrefixesOfTheArgumentTrees) {
  Array xs = jnp::arange(12.0f).reshape({3, 4});
  std::pair<Array, Array> pair{jnp::array({1.0f, 2.0f, 3.0f, 4.0f}),
                               jnp::arange(6.0f).reshape({2, 3})};
  // Inside the pair: the first leaf is shared, the second mapped along its axis 1.
  auto f = [](const Array& x, const std::pair<Array, Array>& p) {
    return std::make_tuple(x * p.first, jnp::sum(p.second), p.first * 2.0f);
  };
  auto [a, b, c] = vmap(f, {.in_axes = {0, {None, 1}}, .out_axes = {0, 0, None}})(xs, pair);
  EXPECT_EQ(values(a), values(xs * pair.first));
  EXPECT_EQ(values(b), (std::vector<float>{3, 5, 7}));
  EXPECT_EQ(values(c), (std::vector<float>{2, 4, 6, 8}));
  EXPECT_THROW_MSG(vmap(f, {.in_axes = {0, {None, 1, 0}}})(xs, pair), ValueError,
                   "vmap in_axes specification must be a tree prefix of the corresponding "
                   "value, got specification (0, [None, 1, 0]) for value tree "
                   "PyTreeDef((*, (*, *))).");
}

TEST(Vmap, ComposesWithJitGradAndItself) {
  Array x = jnp::arange(12.0f).reshape({3, 4}) / 10.0f;
  auto f = [](const Array& v) { return jnp::sum(jnp::sin(v) * v); };
  // vmap(grad(f)) is the per-row gradient.
  Array per_row = vmap(grad(f))(x);
  Array ref = jnp::cos(x) * x + jnp::sin(x);
  EXPECT_LT(jnp::max(jnp::abs(per_row - ref)).item<float>(), 1e-6f);
  // jit(vmap(f)) and vmap(jit(f)) agree with the loop.
  Array a = jit(vmap(f))(x);
  Array b = vmap(jit(f))(x);
  Array expected = loop(f, x, 0);
  EXPECT_EQ(values(a), values(expected));
  EXPECT_EQ(values(b), values(expected));
  // grad(sum of vmap(f)) equals the gradient of the sum.
  Array g = grad([&](const Array& v) { return jnp::sum(vmap(f)(v)); })(x);
  EXPECT_LT(jnp::max(jnp::abs(g - ref)).item<float>(), 1e-6f);
  // vmap(vmap(f)) maps two axes.
  Array cube = jnp::arange(24.0f).reshape({2, 3, 4});
  Array twice = vmap(vmap(f))(cube);
  EXPECT_EQ(twice.shape(), (Shape{2, 3}));
  Array flat = vmap(f)(cube.reshape({6, 4}));
  EXPECT_EQ(values(twice), values(flat));
  // The vmapped program carries the batch: no per-element loop of slices is left.
  std::string text = make_jaxpr(vmap(f))(x).to_string();
  EXPECT_EQ(text.find("concatenate"), std::string::npos) << text;
}

TEST(Vmap, NamedAxisCollectives) {
  Array x = jnp::arange(12.0f).reshape({3, 4});
  Array s = vmap([](const Array& v) { return lax::psum(v, "i"); }, {.axis_name = "i"})(x);
  EXPECT_EQ(values(s), (std::vector<float>{12, 15, 18, 21, 12, 15, 18, 21, 12, 15, 18, 21}));
  Array idx = vmap([](const Array&) { return lax::axis_index("i"); }, {.axis_name = "i"})(x);
  EXPECT_EQ(idx.to_vector<int32_t>(), (std::vector<int32_t>{0, 1, 2}));
  Array g = vmap([](const Array& v) { return lax::all_gather(v, "i"); }, {.axis_name = "i"})(x);
  EXPECT_EQ(g.shape(), (Shape{3, 3, 4}));
  EXPECT_EQ(values(g[1]), values(x));
  // Nested maps: each name refers to its own map; a tuple of names spans both.
  Array cube = jnp::arange(24.0f).reshape({2, 3, 4});
  auto both = vmap(vmap(
                       [](const Array& v) {
                         return lax::psum(v, {"i", "j"});
                       },
                       {.axis_name = "j"}),
                   {.axis_name = "i"});
  Array total = both(cube);
  EXPECT_EQ(total.shape(), (Shape{2, 3, 4}));
  EXPECT_EQ(values(total[1][2]), values(jnp::sum(cube.reshape({6, 4}), 0)));
}

TEST(Vmap, Errors) {
  auto id = [](const Array& v, const Array& w) { return v + w; };
  EXPECT_THROW_MSG(vmap(id)(jnp::ones({3, 2}), jnp::ones({4, 2})), ValueError,
                   "vmap got inconsistent sizes for array axes to be mapped:\n"
                   "  * one axis had size 3: axis 0 of argument args[0] of type float32[3,2];\n"
                   "  * one axis had size 4: axis 0 of argument args[1] of type float32[4,2]");
  auto one = [](const Array& v) { return v; };
  EXPECT_THROW_MSG(vmap(one, {.in_axes = 2})(jnp::ones({3})), ValueError,
                   "vmap was requested to map its argument along axis 2, which implies that its "
                   "rank should be at least 3, but is only 1 (its shape is (3,))");
  EXPECT_THROW_MSG(vmap(one, {.in_axes = None})(jnp::ones({3})), ValueError,
                   "vmap must have at least one non-None value in in_axes");
  EXPECT_THROW_MSG(vmap(one, {.out_axes = None})(jnp::ones({3})), ValueError,
                   "at vmap out_axes, got axis spec None but output was batched on axis 0");
  EXPECT_THROW_MSG(vmap(one, {.out_axes = None, .axis_name = "i"})(jnp::ones({3})), ValueError,
                   "vmap has mapped output (axis_name='i') but out_axes is None");
  EXPECT_THROW_MSG(
      vmap([](const Array& v) { return lax::psum(v, "j"); }, {.axis_name = "i"})(jnp::ones({3})),
      NameError,
      "unbound axis name: j. The following axis names (e.g. defined by pmap) are "
      "available to collective operations: ['i']");
  // A jitted function traced under a named axis is traced again where the name is unbound.
  auto jitted = jit([](const Array& v) { return lax::psum(v, "i"); });
  EXPECT_EQ(values(vmap(jitted, {.axis_name = "i"})(jnp::arange(4.0f))),
            (std::vector<float>{6, 6, 6, 6}));
  EXPECT_THROW(jitted(jnp::arange(4.0f)), NameError);
  EXPECT_THROW_MSG(lax::psum(jnp::ones({3}), "i"), NameError,
                   "unbound axis name: i. The following axis names (e.g. defined by pmap) are "
                   "available to collective operations: []");
}

}  // namespace
}  // namespace parax
