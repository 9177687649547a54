// "Computation follows data sharding", "When explicit shardings disagree, JAX errors" and
// "Constraining shardings of intermediates in jitted code" from the distributed-arrays
// tutorial (seeds/jax-distributed-arrays.txt) on 8 virtual CPU devices.
#include <parax/parax.h>

#include <chrono>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <iostream>

#include "print_exception.h"

namespace px = parax;
namespace jnp = parax::numpy;
using px::P;

namespace {

using tutorial::print_exception;

// numpy.allclose on the host, as the tutorial compares results.
bool host_allclose(const px::Array& a, const px::Array& b) {
  auto x = a.to_vector<float>();
  auto y = b.to_vector<float>();
  if (x.size() != y.size()) return false;
  for (size_t i = 0; i < x.size(); ++i) {
    if (std::abs(x[i] - y[i]) > 1e-8 + 1e-5 * std::abs(y[i])) return false;
  }
  return true;
}

template <class F>
double best_ms(F&& f, int reps = 3) {
  double best = 1e30;
  for (int r = 0; r < reps; ++r) {
    auto t0 = std::chrono::steady_clock::now();
    f();
    std::chrono::duration<double, std::milli> dt = std::chrono::steady_clock::now() - t0;
    best = std::min(best, dt.count());
  }
  return best;
}

}  // namespace

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  // --small: 16x16 (layouts do not depend on the size); --size N: NxN; default 8192x8192.
  int64_t n = 8192;
  if (argc > 1 && std::strcmp(argv[1], "--small") == 0) n = 16;
  if (argc > 2 && std::strcmp(argv[1], "--size") == 0) n = std::atoll(argv[2]);
  if (n <= 0 || n % 8 != 0) {
    std::cerr << "size must be a positive multiple of 8\n";
    return 2;
  }
  auto vis = [](const px::Array& a) { px::debug::visualize_array_sharding(a); };

  // The tutorial draws jax.random.normal values; layouts and allclose do not depend on them.
  auto x = jnp::arange(n * n, px::DType::float32).reshape({n, n}) / float(n * n);
  auto mesh = px::make_mesh({4, 2}, {"a", "b"});
  x = px::device_put(x, px::NamedSharding(mesh, P("a", "b")));
  std::cout << "input sharding:\n";
  vis(x);
  auto y = jnp::sin(x);
  std::cout << "output sharding:\n";
  vis(y);

  y = px::device_put(x, px::NamedSharding(mesh, P("a", px::None)));
  auto z = px::device_put(x, px::NamedSharding(mesh, P(px::None, "b")));
  std::cout << "lhs sharding:\n";
  vis(y);
  std::cout << "rhs sharding:\n";
  vis(z);
  auto w = jnp::dot(y, z);
  std::cout << "out sharding:\n";
  vis(w);

  auto x_single = px::device_put(x, px::devices()[0]);
  vis(x_single);
  std::cout << (host_allclose(jnp::dot(x_single, x_single), jnp::dot(y, z)) ? "True" : "False")
            << "\n";
  // %timeit in the tutorial; timings go to stderr so the output stays comparable.
  double single = best_ms([&] { jnp::dot(x_single, x_single).block_until_ready(); });
  double sharded = best_ms([&] { jnp::dot(y, z).block_until_ready(); });
  std::cerr << "dot single device: " << single << " ms, sharded over 8: " << sharded
            << " ms (ratio " << sharded / single << ")\n";

  auto w_copy = jnp::copy(w);
  vis(w_copy);

  // When explicit shardings disagree, parax errors as JAX does.
  auto x24 = jnp::arange(24);
  auto all = px::devices();
  px::NamedSharding sharding1(px::Mesh({all.begin(), all.begin() + 4}, "x"), P("x"));
  px::NamedSharding sharding2(px::Mesh({all.begin() + 4, all.end()}, "x"), P("x"));
  auto add_placed = [&](const px::Sharding& s1, const px::Sharding& s2) {
    try {
      px::device_put(x24, s1) + px::device_put(x24, s2);
    } catch (const px::ValueError& e) {
      print_exception(e);
    }
  };
  add_placed(sharding1, sharding2);
  std::vector<px::Device> permuted;
  for (int i : {0, 1, 2, 3, 6, 7, 4, 5}) permuted.push_back(all[size_t(i)]);
  sharding1 = px::NamedSharding(px::Mesh(all, "x"), P("x"));
  sharding2 = px::NamedSharding(px::Mesh(permuted, "x"), P("x"));
  add_placed(sharding1, sharding2);
  // Uncommitted arrays move to where the committed ones are.
  y = px::device_put(x24, sharding1);
  y + jnp::ones_like(y);
  y + jnp::arange(y.size()).reshape(y.shape());
  std::cout << "no error!\n";

  // Constraining shardings of intermediates in jitted code.
  auto mesh_xy = px::make_mesh({4, 2}, {"x", "y"});
  x = jnp::arange(n * n, px::DType::float32).reshape({n, n}) / float(n * n);
  x = px::device_put(x, px::NamedSharding(mesh_xy, P("x", "y")));
  auto f = px::jit([&](px::Array v) {
    v = v + 1;
    return px::lax::with_sharding_constraint(v, px::NamedSharding(mesh_xy, P("y", "x")));
  });
  vis(x);
  y = f(x);
  vis(y);
  std::cerr << f.lower(x).compile().as_text();

  auto g = px::jit([&](px::Array v) {
    v = v + 1;
    return px::lax::with_sharding_constraint(v, px::NamedSharding(mesh_xy, P()));
  });
  vis(x);
  y = g(x);
  vis(y);
  std::cerr << g.lower(x).compile().as_text();
  return 0;
}
