// Multi-process failures that must become errors, never hangs: run by
// multiprocess_test.cpp through parax-run as 2 processes of 2 devices, with a short
// distributed timeout. argv[1] names the case; each process prints `caught <type>: <what>`
// for the error it raised, or `ok`. A process that caught what the case expects exits 3
// where a test needs the launcher to end a stalled peer.
#include <parax/parax.h>

#include <csignal>
#include <cstring>
#include <iostream>
#include <string>

#include <unistd.h>

namespace px = parax;
namespace jnp = parax::numpy;
using px::Array;
using px::P;

namespace {

// A psum over every process's devices, as a jitted shard_map (one object: a second call
// runs the compiled, checked program again).
Array global_psum(const Array& x, const px::Mesh& mesh) {
  static auto f =
      px::shard_map([](const Array& a) { return px::lax::psum(a, "i"); }, mesh, P("i"), P());
  return f(x);
}

int run(const std::string& which) {
  const px::Mesh mesh = px::make_mesh({px::device_count()}, {"i"});
  const Array x = px::device_put(jnp::arange(px::device_count() * 4, px::DType::float32),
                                 px::NamedSharding(mesh, P("i")));
  if (which == "different_programs") {
    // Process 1 calls another function at the same point of the program.
    auto f = px::jit([](const Array& a) { return jnp::sum(jnp::sin(a)); });
    auto g = px::jit([](const Array& a) { return jnp::sum(jnp::cos(a)); });
    (px::process_index() == 0 ? f(x) : g(x)).block_until_ready();
  } else if (which == "after_shutdown") {
    px::distributed::shutdown();
    global_psum(x, mesh).block_until_ready();
  } else if (which == "peer_exits") {
    global_psum(x, mesh).block_until_ready();  // compiled and checked on both
    if (px::process_index() == 1) _exit(7);    // dies before the next all-reduce
    global_psum(x, mesh).block_until_ready();
  } else if (which == "peer_stalls") {
    global_psum(x, mesh).block_until_ready();
    if (px::process_index() == 1) raise(SIGSTOP);  // stops before the next one, forever
    global_psum(x, mesh).block_until_ready();
  } else if (which == "read_non_addressable") {
    std::cout << x << "\n";
    (void)x.to_vector<float>();
  }
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  const std::string which = argc > 1 ? argv[1] : "";
  px::distributed::initialize();
  try {
    run(which);
    std::cout << "ok" << std::endl;
  } catch (const px::DistributedError& e) {
    std::cout << "caught DistributedError: " << e.what() << std::endl;
    return which == "peer_stalls" || which == "peer_exits" ? 3 : 0;
  } catch (const px::Error& e) {
    std::cout << "caught Error: " << e.what() << std::endl;
  }
  return 0;
}
