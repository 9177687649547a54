#include "support/first_calls.h"

#include <cstdio>
#include <exception>
#include <sstream>
#include <stdexcept>

#include "parax/parax.h"

namespace parax::testing {
namespace {

namespace jnp = parax::numpy;

int64_t draw(std::mt19937_64& rng, int64_t lo, int64_t hi) {
  return std::uniform_int_distribution<int64_t>(lo, hi)(rng);
}

// A 2-D mesh over the first 1, 4 or 8 devices, axes "i" and "j".
Mesh draw_mesh(std::mt19937_64& rng) {
  const std::vector<std::pair<int64_t, int64_t>> shapes = {{4, 2}, {2, 4}, {8, 1},
                                                           {1, 8}, {2, 2}, {1, 1}};
  const auto [ni, nj] = shapes[size_t(draw(rng, 0, int64_t(shapes.size()) - 1))];
  return make_mesh({ni, nj}, {"i", "j"});
}

bool contains(const std::string& s, const std::string& part) {
  return s.find(part) != std::string::npos;
}

// A body of axis indices and a reshape only: the program has no argument and no constant.
bool shard_map_of_axis_indices(std::mt19937_64& rng, bool jitted) {
  const Mesh mesh = draw_mesh(rng);
  const int64_t ni = mesh.axis_size("i");
  const int64_t nj = mesh.axis_size("j");
  // No C++ scalar either: a scalar would be made on the host before the body runs.
  auto body = [] { return (lax::axis_index("i") + lax::axis_index({"i", "j"})).reshape({1, 1}); };
  auto mapped = shard_map(body, mesh, P(), P("i", "j"));
  const Array out = jitted ? jit([&] { return mapped(); })() : mapped();
  std::vector<int32_t> want;
  for (int64_t i = 0; i < ni; ++i) {
    for (int64_t j = 0; j < nj; ++j) want.push_back(int32_t(i + i * nj + j));
  }
  return out.shape() == Shape{ni, nj} && out.to_vector<int32_t>() == want;
}

std::vector<FirstCall> make_first_calls() {
  std::vector<FirstCall> calls;
  auto add = [&](std::string name, std::function<bool(std::mt19937_64&)> run,
                 FirstCallOutcome expected = kValue) {
    calls.push_back({std::move(name), std::move(run), expected});
  };
  add("shard_map_of_no_arguments",
      [](std::mt19937_64& rng) { return shard_map_of_axis_indices(rng, false); });
  add("jit_of_a_shard_map_of_no_arguments",
      [](std::mt19937_64& rng) { return shard_map_of_axis_indices(rng, true); });
  // JAX: "pmap wrapped function must be passed at least one argument containing an array".
  add(
      "pmap_of_no_arguments",
      [](std::mt19937_64&) {
        (void)pmap([] { return lax::axis_index("i"); }, {.axis_name = "i"})();
        return false;
      },
      kParaxError);
  add("pmap_of_an_arange", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 8);
    auto f = [](const Array& x) { return x * 10 + lax::axis_index("i"); };
    const Array out = pmap(f, {.axis_name = "i"})(jnp::arange(n));
    std::vector<int32_t> want;
    for (int64_t k = 0; k < n; ++k) want.push_back(int32_t(11 * k));
    return out.to_vector<int32_t>() == want;
  });
  add("vmap_of_no_arguments", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 5);
    const Array out =
        vmap([] { return lax::axis_index("i"); }, {.axis_name = "i", .axis_size = n})();
    std::vector<int32_t> want;
    for (int64_t k = 0; k < n; ++k) want.push_back(int32_t(k));
    return out.to_vector<int32_t>() == want;
  });
  add("jit_of_no_arguments", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 0, 6);
    const Array out =
        jit([n] { return lax::iota(DType::int32, n) + lax::iota(DType::int32, n); })();
    std::vector<int32_t> want;
    for (int64_t k = 0; k < n; ++k) want.push_back(int32_t(2 * k));
    return out.to_vector<int32_t>() == want;
  });
  add("jit_lower_and_compile_of_no_arguments", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 6);
    const Lowered lowered = jit([n] { return jnp::ones({n}) + 1.0f; }).lower();
    return !lowered.compile().as_text().empty() &&
           contains(lowered.as_text(), "f32[" + std::to_string(n) + "]");
  });
  add("make_jaxpr_of_no_arguments", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 6);
    const Jaxpr j =
        make_jaxpr([n] { return lax::iota(DType::float32, n) * lax::iota(DType::float32, n); })();
    return contains(j.to_string(), "iota") && contains(j.to_string(), "mul");
  });
  add("eval_shape_of_no_arguments", [](std::mt19937_64& rng) {
    const Shape s = {draw(rng, 0, 4), draw(rng, 1, 4)};
    const Array out = eval_shape([&] { return jnp::zeros(s, DType::float16) + 1; });
    return out.shape() == s && out.dtype() == DType::float16;
  });
  // A gradient's seed is a constant core makes while tracing on a ShapeDtypeStruct.
  add("eval_shape_of_a_gradient", [](std::mt19937_64& rng) {
    const Shape s = {draw(rng, 1, 5)};
    auto f = [](const Array& x) { return jnp::sum(jnp::sin(x)); };
    const Array out = eval_shape(grad(f), ShapeDtypeStruct(s, DType::float32));
    return out.shape() == s && out.dtype() == DType::float32;
  });
  add("lower_a_gradient_on_a_shape_dtype_struct", [](std::mt19937_64& rng) {
    const Shape s = {draw(rng, 1, 5)};
    auto f = [](const Array& x) { return jnp::sum(jnp::sin(x)); };
    const Compiled c = jit(grad(f)).lower(ShapeDtypeStruct(s, DType::float32)).compile();
    return contains(c.as_text(), "cos");
  });
  add("random_key", [](std::mt19937_64& rng) {
    const int64_t seed = draw(rng, 0, 1 << 30);
    return random::key_data(random::key(seed)).to_vector<uint32_t>() ==
           std::vector<uint32_t>{0, uint32_t(seed)};
  });
  add("random_prng_key", [](std::mt19937_64& rng) {
    const int64_t seed = draw(rng, 0, 1 << 30);
    return random::PRNGKey(seed).to_vector<uint32_t>() == std::vector<uint32_t>{0, uint32_t(seed)};
  });
  // JAX 0.4.35's bits of key(1701) (reference/jax-random.md), the classic threefry mode.
  add("random_bits", [](std::mt19937_64&) {
    config::update("jax_threefry_partitionable", false);
    const Array b = random::bits(random::key(1701), {3}, DType::uint32);
    return b.to_vector<uint32_t>() == std::vector<uint32_t>{56197195, 4200222568, 961309823};
  });
  add("random_normal_is_finite", [](std::mt19937_64& rng) {
    const Array x = random::normal(random::key(draw(rng, 0, 99)), {draw(rng, 1, 16)});
    return bool(jnp::all(jnp::isfinite(x)).item<bool>()) && x.dtype() == DType::float32;
  });
  add("print_an_array", [](std::mt19937_64&) {
    std::ostringstream os;
    os << jnp::arange(3);
    return os.str() == "Array([0, 1, 2], dtype=int32)";
  });
  add("print_a_cpp_scalar", [](std::mt19937_64&) {
    std::ostringstream os;
    os << ArrayLike(2.5f).array();
    return os.str() == "Array(2.5, dtype=float32, weak_type=True)";
  });
  add("print_a_shape_dtype_struct_and_a_mesh", [](std::mt19937_64& rng) {
    std::ostringstream os;
    const Mesh mesh = draw_mesh(rng);
    os << ShapeDtypeStruct({2, 3}, DType::int8) << " " << mesh << " "
       << NamedSharding(mesh, P("i"));
    return contains(os.str(), "int8") && contains(os.str(), "'i'");
  });
  add("device_put_of_a_scalar_on_a_device", [](std::mt19937_64& rng) {
    const Device d = devices()[size_t(draw(rng, 0, device_count() - 1))];
    const Array x = device_put(ArrayLike(3.5f).array(), d);
    return x.is_committed() && x.device() == d && x.item<float>() == 3.5f;
  });
  add("device_put_of_a_scalar_replicated", [](std::mt19937_64& rng) {
    const Mesh mesh = draw_mesh(rng);
    const Array x = device_put(ArrayLike(7).array(), NamedSharding(mesh, P()));
    return x.devices().size() == size_t(mesh.size()) && x.item<int32_t>() == 7;
  });
  add("to_device", [](std::mt19937_64& rng) {
    const Device d = devices()[size_t(draw(rng, 0, device_count() - 1))];
    const Array x = jnp::full({2}, 1.5f).to_device(d);
    return x.device() == d && x.to_vector<float>() == std::vector<float>{1.5f, 1.5f};
  });
  add("numpy_creation", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 5);
    switch (draw(rng, 0, 4)) {
      case 0:
        return jnp::zeros({n}).to_vector<float>() == std::vector<float>(size_t(n), 0.0f);
      case 1:
        return jnp::ones({n}).to_vector<float>() == std::vector<float>(size_t(n), 1.0f);
      case 2:
        return jnp::sum(jnp::eye(n)).item<float>() == float(n);
      case 3:
        return jnp::linspace(0, double(n), n + 1).to_vector<float>().back() == float(n);
      default:
        return jnp::array({1.0f, 2.0f}).to_vector<float>() == std::vector<float>{1, 2};
    }
  });
  add("broadcasted_iota", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 1, 4);
    const Array x = lax::broadcasted_iota(DType::int32, {2, n}, 1);
    return jnp::sum(x).item<int32_t>() == int32_t(n * (n - 1));
  });
  add("fori_loop_on_a_cpp_scalar", [](std::mt19937_64& rng) {
    const int64_t n = draw(rng, 0, 9);
    auto body = [](const Array& i, const Array& c) { return c + i; };
    const Array out = lax::fori_loop(0, n, body, ArrayLike(0).array());
    return out.item<int32_t>() == int32_t(n * (n - 1) / 2);
  });
  add("cond_of_no_operands", [](std::mt19937_64& rng) {
    const bool pred = draw(rng, 0, 1) == 1;
    const Array out = lax::cond(
        pred, [] { return jnp::ones({2}); }, [] { return jnp::zeros({2}); });
    return out.to_vector<float>() == std::vector<float>(2, pred ? 1.0f : 0.0f);
  });
  add("grad_at_a_cpp_scalar", [](std::mt19937_64&) {
    auto f = [](const Array& x) { return x * x * x; };
    return grad(f)(ArrayLike(2.0f).array()).item<float>() == 12.0f;
  });
  add("make_array_from_callback", [](std::mt19937_64& rng) {
    const Mesh mesh = draw_mesh(rng);
    const NamedSharding rows(mesh, P("i"));
    auto block = [](const Index& index) {
      std::vector<float> v;
      for (int64_t r = index[0].begin(8); r < index[0].end(8); ++r) v.push_back(float(r));
      return v;
    };
    const Array x = make_array_from_callback({8}, rows, block);
    return jnp::sum(x).item<float>() == 28.0f && x.sharding() == Sharding(rows);
  });
  add("visualize_sharding", [](std::mt19937_64& rng) {
    std::ostringstream os;
    debug::visualize_sharding({8}, NamedSharding(draw_mesh(rng), P("i")), {}, os);
    return contains(os.str(), "CPU 0");
  });
  add("debug_caches", [](std::mt19937_64&) {
    debug::clear_caches();
    return debug::cache_info("eager").size == 0;
  });
  add("x64_creation", [](std::mt19937_64& rng) {
    config::update("jax_enable_x64", true);
    return jnp::zeros({draw(rng, 1, 3)}).dtype() == DType::float64;
  });
  // JAX: NameError "unbound axis name: i".
  add(
      "axis_index_outside_a_transform",
      [](std::mt19937_64&) {
        (void)lax::axis_index("i");
        return false;
      },
      kParaxError);
  add(
      "an_empty_handle",
      [](std::mt19937_64&) {
        (void)Array().shape();
        return false;
      },
      kParaxError);
  return calls;
}

}  // namespace

const std::vector<FirstCall>& first_calls() {
  static const std::vector<FirstCall> calls = make_first_calls();
  return calls;
}

const FirstCall& first_call(const std::string& name) {
  for (const FirstCall& c : first_calls()) {
    if (c.name == name) return c;
  }
  throw std::out_of_range("no first call named " + name);
}

FirstCallOutcome run_first_call(const FirstCall& call, uint64_t seed) {
  std::mt19937_64 rng(seed);
  try {
    return call.run(rng) ? kValue : kWrongValue;
  } catch (const Error& e) {
    std::fprintf(stderr, "%s: parax::Error: %s\n", call.name.c_str(), e.what());
    return kParaxError;
  } catch (const std::exception& e) {
    std::fprintf(stderr, "%s: %s\n", call.name.c_str(), e.what());
    return kOtherThrow;
  } catch (...) {
    return kOtherThrow;
  }
}

}  // namespace parax::testing
