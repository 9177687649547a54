#include <parax/parax.h>

#include <iostream>

int main() {
  parax::config::set_num_cpu_devices(4);
  auto mesh = parax::make_mesh({2, 2}, {"a", "b"});
  auto x = parax::device_put(parax::numpy::arange(8), parax::NamedSharding(mesh, parax::P("a")));
  std::cout << x << "\n" << x.sharding() << "\n";
  return x.sharding().is_fully_replicated() ? 1 : 0;
}
