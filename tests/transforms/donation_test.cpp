// jit's donate_argnums against JAX 0.10.2 (tests/golden/donation_cases.txt, made by
// tools/make_donation_goldens.py from the cases of jax's tests/api_test.py): donated
// arguments are deleted, reading them raises JAX's texts, an argument no output can take
// stays with JAX's warning, aliased buffers raise; and what donation is for: the program
// writes its outputs over the donated buffers, so a step's peak memory drops.
#include <gtest/gtest.h>

#include <algorithm>
#include <fstream>
#include <map>
#include <string>

#include "parax/parax.h"
#include "runtime/buffer.h"
#include "support/errors.h"

namespace parax {
namespace {

namespace jnp = numpy;

// The golden file's cases: name -> value, with "\n" escapes turned back into newlines.
const std::map<std::string, std::string>& goldens() {
  static const std::map<std::string, std::string> cases = [] {
    std::map<std::string, std::string> out;
    std::ifstream in(PARAX_GOLDEN_DIR "/donation_cases.txt");
    EXPECT_TRUE(in.good()) << "cannot open donation_cases.txt";
    std::string line;
    while (std::getline(in, line)) {
      if (line.empty() || line[0] == '#') continue;
      const size_t tab = line.find('\t');
      std::string value = line.substr(tab + 1);
      for (size_t at = value.find("\\n"); at != std::string::npos; at = value.find("\\n", at)) {
        value.replace(at, 2, "\n");
      }
      out[line.substr(0, tab)] = value;
    }
    return out;
  }();
  return cases;
}

std::string golden(const std::string& name) {
  auto it = goldens().find(name);
  EXPECT_NE(it, goldens().end()) << name;
  return it == goldens().end() ? "" : it->second;
}

std::string bools(std::initializer_list<bool> v) {
  std::string s = "[";
  for (bool b : v) s += (s.size() > 1 ? ", " : "") + std::string(b ? "True" : "False");
  return s + "]";
}

// The first line of what `stmt` writes to stderr.
template <class F>
std::string stderr_of(F&& stmt) {
  testing::internal::CaptureStderr();
  stmt();
  return testing::internal::GetCapturedStderr();
}

TEST(Donation, TheDonatedArgumentIsDeletedTheOtherStays) {
  auto f = jit([](const Array& x, const Array& y) { return x * 2.0f + y; },
               JitOptions{.donate_argnums = {0}});
  Array x = jnp::arange(8.0f);
  Array y = jnp::ones({8});
  Array out = f(x, y);
  EXPECT_EQ(bools({x.is_deleted(), y.is_deleted()}), golden("invalidates_input"));
  EXPECT_EQ(out.to_vector<float>(), (std::vector<float>{1, 3, 5, 7, 9, 11, 13, 15}));
  // Copies of the handle share the deletion; type and layout stay readable.
  Array copy = x;
  EXPECT_TRUE(copy.is_deleted());
  EXPECT_EQ(shape_str(x.shape()), golden("deleted_shape"));
  EXPECT_EQ(x.dtype(), DType::float32);
  EXPECT_EQ(x.sharding(), y.sharding());
}

// From jax's tests/api_test.py: a scalar (test_jit_donate_invalidates_input), a weakly
// typed argument whose output is not weak (test_jit_donate_weak_type), a copy made before
// the donation (test_jnp_array_copy).
TEST(Donation, ScalarsWeakTypesAndCopiesAsInJaxsTests) {
  auto move = jit([](const Array& x) { return x + x - x; }, JitOptions{.donate_argnums = {0}});
  Array one = jnp::ones({});
  EXPECT_EQ(move(one).item<float>(), 1.0f);
  EXPECT_TRUE(one.is_deleted());

  auto as_int =
      jit([](const Array& x) { return x.astype(DType::int32); }, JitOptions{.donate_argnums = {0}});
  Array weak = jnp::broadcast_to(2, {3});
  ASSERT_TRUE(weak.weak_type());
  EXPECT_FALSE(as_int(weak).weak_type());
  EXPECT_TRUE(weak.is_deleted());

  auto set = jit([](const Array& a) { return a.at(0).set(77); }, JitOptions{.donate_argnums = {0}});
  Array x = jnp::array(std::vector<int32_t>{0, 1});
  Array copy = jnp::copy(x);
  EXPECT_EQ(set(x).to_vector<int32_t>(), (std::vector<int32_t>{77, 1}));
  EXPECT_EQ(copy.to_vector<int32_t>(), (std::vector<int32_t>{0, 1}));
  // Another handle to the same array is the same array: deleted with it.
  Array y = jnp::array(std::vector<int32_t>{0, 1});
  Array alias = y;
  set(y);
  EXPECT_TRUE(alias.is_deleted());
}

// test_device_put_on_multi_device_donated_buffer_fails.
TEST(Donation, ADonatedShardedArrayCannotBePutAnywhere) {
  auto f = jit([](const Array& v) { return v * 2.0f; }, JitOptions{.donate_argnums = {0}});
  Mesh forward = make_mesh({8}, {"x"});
  std::vector<Device> reversed = devices();
  std::reverse(reversed.begin(), reversed.end());
  Mesh backward(reversed, std::vector<std::string>{"x"});
  Array x = device_put(jnp::arange(8.0f), NamedSharding(forward, P("x")));
  f(x);
  EXPECT_THROW(device_put(x, NamedSharding(forward, P("x"))), RuntimeError);
  EXPECT_THROW(device_put(x, NamedSharding(backward, P("x"))), RuntimeError);
  EXPECT_THROW(device_put(x, devices()[0]), RuntimeError);
}

TEST(Donation, ReadingADeletedArrayRaisesJaxsTexts) {
  auto f = jit([](const Array& x, const Array& y) { return x * 2.0f + y; },
               JitOptions{.donate_argnums = {0}});
  Array x = jnp::arange(8.0f);
  Array y = jnp::ones({8});
  f(x, y);
  EXPECT_THROW_MSG(x + 1.0f, RuntimeError, golden("deleted_add"));
  EXPECT_THROW_MSG(device_get(x), RuntimeError, golden("deleted_device_get"));
  EXPECT_THROW_MSG(device_put(x, devices()[0]), RuntimeError, golden("deleted_device_put"));
  EXPECT_THROW_MSG(x.to_vector<float>(), RuntimeError, golden("deleted_device_get"));
  EXPECT_THROW_MSG(x.block_until_ready(), RuntimeError, golden("deleted_block_until_ready"));
  EXPECT_THROW_MSG(f(y, x), ValueError, golden("deleted_jit_argument"));
  EXPECT_FALSE(y.is_deleted());  // the failed call donated nothing
}

TEST(Donation, DeleteByHand) {
  Array z = jnp::ones({4, 2});
  z.delete_();
  z.delete_();
  EXPECT_EQ(bools({z.is_deleted()}), "[" + golden("delete_twice") + "]");
  EXPECT_THROW_MSG(z.to_string(), RuntimeError, golden("deleted_print"));
  Array empty;
  EXPECT_THROW(empty.delete_(), ValueError);
}

TEST(Donation, EveryLeafOfADonatedPytree) {
  auto g = jit(
      [](const std::map<std::string, Array>& t) {
        std::map<std::string, Array> out;
        for (const auto& [k, v] : t) out[k] = v * 2;
        return out;
      },
      JitOptions{.donate_argnums = {0}});
  std::map<std::string, Array> t{{"a", jnp::ones({3})}, {"b", jnp::ones({2}, DType::int32)}};
  auto out = g(t);
  EXPECT_EQ(bools({t["a"].is_deleted(), t["b"].is_deleted()}), golden("pytree"));
  EXPECT_EQ(out["b"].to_vector<int32_t>(), (std::vector<int32_t>{2, 2}));
}

TEST(Donation, AnArgumentNoOutputCanTakeStaysWithJaxsWarning) {
  auto h = jit([](const Array& x) { return jnp::sum(x); }, JitOptions{.donate_argnums = {0}});
  Array x = jnp::arange(8.0f);
  const std::string err = stderr_of([&] { EXPECT_EQ(h(x).item<float>(), 28.0f); });
  EXPECT_EQ(bools({x.is_deleted()}), "[" + golden("unusable_kept") + "]");
  EXPECT_EQ(err, "parax: UserWarning: " + golden("unusable_warning") + "\n");
  // Warned once, when the call compiled.
  EXPECT_EQ(stderr_of([&] { h(x); }), "");
  // Each output takes one donated argument of its type.
  auto k = jit([](const Array& a, const Array& b) { return a + b; },
               JitOptions{.donate_argnums = {0, 1}});
  Array a = jnp::ones({4}), b = jnp::ones({4});
  const std::string err2 = stderr_of([&] { k(a, b); });
  EXPECT_EQ(bools({a.is_deleted(), b.is_deleted()}), golden("one_output_two_donated"));
  EXPECT_EQ(err2, "parax: UserWarning: " + golden("one_output_two_donated_warning") + "\n");
}

TEST(Donation, ABufferDonatedAndPassedAgainRaises) {
  Array x = jnp::arange(8.0f);
  auto f = [](const Array& a, const Array& b) { return a * 2.0f + b; };
  EXPECT_THROW_MSG(jit(f, JitOptions{.donate_argnums = {0}})(x, x), RuntimeError,
                   golden("donate_then_use"));
  EXPECT_THROW_MSG(jit(f, JitOptions{.donate_argnums = {1}})(x, x), RuntimeError,
                   golden("use_then_donate"));
  EXPECT_EQ(bools({x.is_deleted()}), "[" + golden("aliased_not_deleted") + "]");
  // Another array over the same buffers (device_put to the layout it has) is the same.
  Array same = device_put(x, x.sharding());
  EXPECT_THROW_MSG(jit(f, JitOptions{.donate_argnums = {0}})(x, same), RuntimeError,
                   golden("donate_then_use"));
}

TEST(Donation, ArgnumsTheFunctionLacksRaise) {
  auto twice = [](const Array& x) { return x * 2.0f; };
  EXPECT_THROW_MSG(jit(twice, JitOptions{.donate_argnums = {3}})(jnp::ones({3})), ValueError,
                   golden("argnum_out_of_range"));
  EXPECT_THROW_MSG(jit(twice, JitOptions{.donate_argnums = {0, 3}})(jnp::ones({3})), ValueError,
                   golden("argnums_out_of_range"));
  EXPECT_THROW_MSG(jit(twice, JitOptions{.donate_argnums = {-1}})(jnp::ones({3})), ValueError,
                   "Jitted function has donate_argnums=(-1,), but only accepts 1 positional "
                   "arguments.");
}

TEST(Donation, AnInnerCallOfAnotherTraceDonatesNothing) {
  auto inner = jit([](const Array& v) { return v * 2.0f; }, JitOptions{.donate_argnums = {0}});
  Array x = jnp::arange(4.0f);
  Array y = jit([&](const Array& v) { return inner(v) + 1.0f; })(x);
  EXPECT_EQ(bools({x.is_deleted()}), "[" + golden("inner_call_keeps") + "]");
  EXPECT_EQ(y.to_vector<float>(), (std::vector<float>{1, 3, 5, 7}));
  // vmap traces too.
  Array z = vmap([&](const Array& v) { return inner(v); })(jnp::ones({2, 4}));
  EXPECT_EQ(z.to_vector<float>()[0], 2.0f);
  // A difference from JAX, which deletes x here (golden "grad_keeps"): under grad the call
  // is transformed, and parax donates only the arguments of a call that runs as it is.
  EXPECT_EQ(golden("grad_keeps"), "True");
  Array g = grad([&](const Array& v) { return jnp::sum(inner(v)); })(x);
  EXPECT_FALSE(x.is_deleted());
  EXPECT_EQ(g.to_vector<float>(), (std::vector<float>{2, 2, 2, 2}));
  // Nor a concrete array the transformed function captures.
  Array c = jnp::ones({4});
  grad([&](const Array& v) { return jnp::sum(inner(c) * v); })(x);
  EXPECT_FALSE(c.is_deleted());
}

TEST(Donation, ShardedArgumentsAreDonatedShardByShard) {
  Mesh mesh = make_mesh({4, 2}, {"a", "b"});
  const NamedSharding s(mesh, P("a", "b"));
  Array x = device_put(jnp::arange(64.0f).reshape({8, 8}), s);
  auto f =
      jit([](const Array& v) { return jnp::sin(v) * 2.0f; }, JitOptions{.donate_argnums = {0}});
  Array want = jnp::sin(jnp::arange(64.0f).reshape({8, 8})) * 2.0f;
  Array y = f(x);
  EXPECT_TRUE(x.is_deleted());
  EXPECT_EQ(y.sharding(), Sharding(s));
  EXPECT_EQ(y.to_vector<float>(), want.to_vector<float>());
  // An uncommitted argument that moves to in_shardings' layout is donated too.
  auto g = jit([](const Array& v) { return v + 1.0f; },
               JitOptions{.in_shardings = {s}, .donate_argnums = {0}});
  Array u = jnp::arange(64.0f).reshape({8, 8});
  Array z = g(u);
  EXPECT_TRUE(u.is_deleted());
  EXPECT_EQ(z.to_vector<float>()[63], 64.0f);
}

// What donation is for: the program writes over the donated buffers, so the step holds
// one copy of the state, not two. The plan shows it.
TEST(Donation, TheProgramWritesOverTheDonatedBuffers) {
  auto step = [](const Array& w, const Array& g) { return w - g * 0.5f; };
  auto donating = jit(step, JitOptions{.donate_argnums = {0}});
  auto keeping = jit(step);
  const Shape shape{1024, 1024};  // 4 MiB
  Array g = jnp::ones(shape);
  const std::string text = donating.lower(jnp::ones(shape), g).compile().as_text();
  EXPECT_NE(text.find("#   donated: a"), std::string::npos) << text;
  EXPECT_NE(text.find("reuses a"), std::string::npos) << text;
  EXPECT_EQ(keeping.lower(jnp::ones(shape), g).compile().as_text().find("donated"),
            std::string::npos);

  auto peak_of = [&](auto& f) {
    Array w = jnp::ones(shape) * 3.0f;
    w.block_until_ready();
    const int64_t before = runtime::memory_stats().live_bytes;
    runtime::reset_peak_memory();
    Array out = f(w, g);
    out.block_until_ready();
    EXPECT_EQ(out.to_vector<float>()[7], 2.5f);
    return runtime::memory_stats().peak_bytes - before;
  };
  peak_of(donating);  // compiled outside the measurement
  peak_of(keeping);
  const int64_t bytes = shape_size(shape) * 4;
  EXPECT_EQ(peak_of(donating), 0);     // the result is written over w
  EXPECT_EQ(peak_of(keeping), bytes);  // a new buffer for the result
}

}  // namespace
}  // namespace parax
