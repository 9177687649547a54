// "Sharding basics" from the distributed-arrays tutorial (seeds/jax-distributed-arrays*.txt)
// on 8 virtual CPU devices: lay an 8192x8192 array out with PositionalSharding and
// NamedSharding and draw each layout as JAX does.
#include <parax/parax.h>

#include <cstring>
#include <iostream>
#include <optional>

namespace px = parax;
namespace jnp = parax::numpy;
using px::None;
using px::P;

int main(int argc, char** argv) {
  px::config::set_num_cpu_devices(8);
  // --small draws a 16x16 array instead: the layout depends only on shard fractions.
  const int64_t n = argc > 1 && std::strcmp(argv[1], "--small") == 0 ? 16 : 8192;

  // The tutorial draws jax.random.normal values; only the shape matters for layouts.
  auto x = jnp::zeros({n, n});
  std::cout << "# x on a single device\n";
  px::debug::visualize_array_sharding(x);

  // PositionalSharding, as in the CPU notebook.
  auto devices = px::mesh_utils::create_device_mesh({8});
  px::PositionalSharding sharding(devices);
  std::cout << "# PositionalSharding(devices)\n" << sharding << "\n";
  std::cout << "# sharding.reshape(8, 1)\n" << sharding.reshape(8, 1) << "\n";
  x = px::device_put(x, sharding.reshape(8, 1));
  px::debug::visualize_array_sharding(x);

  auto s42 = sharding.reshape(4, 2);
  std::cout << "# sharding.reshape(4, 2)\n" << s42 << "\n";
  auto y = px::device_put(x, s42);
  px::debug::visualize_array_sharding(y);

  std::cout << "# sharding.reshape(1, 8)\n";
  y = px::device_put(x, sharding.reshape(1, 8));
  px::debug::visualize_array_sharding(y);

  std::cout << "# before and after replicate(axis=0, keepdims=True)\n";
  std::cout << s42 << "\n" << s42.replicate(0, true) << "\n";
  y = px::device_put(x, s42.replicate(0, true));
  px::debug::visualize_array_sharding(y);

  // NamedSharding over a 4x2 mesh with axes 'a' and 'b'.
  px::Mesh mesh(px::mesh_utils::create_device_mesh({4, 2}), {"a", "b"});
  auto mesh_sharding = [&](P spec) { return px::NamedSharding(mesh, spec); };
  for (auto [text, spec] :
       {std::pair{"P('a', 'b')", P("a", "b")}, std::pair{"P('b', 'a')", P("b", "a")},
        std::pair{"P('a', None)", P("a", None)}, std::pair{"P(None, 'b')", P(None, "b")},
        std::pair{"P(None, 'a')", P(None, "a")},
        std::pair{"P(('a', 'b'), None)", P({"a", "b"}, None)}}) {
    std::cout << "# " << text << "\n";
    y = px::device_put(x, mesh_sharding(spec));
    px::debug::visualize_array_sharding(y);
  }

  // The same layouts through jax.make_mesh, which orders CPU devices row-major.
  auto made = px::make_mesh({4, 2}, {"a", "b"});
  std::cout << "# make_mesh((4, 2), ('a', 'b')): " << made << "\n";
  y = px::device_put(x, px::NamedSharding(made, P("a", "b")));
  std::cout << y.sharding() << "\n";
  px::debug::visualize_array_sharding(y);
  return 0;
}
