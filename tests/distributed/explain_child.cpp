// The explainer across processes, run as 2 processes x 4 devices (parax-run, or mpirun): a
// contraction over a mesh axis that spans the processes moves all its bytes between them,
// one over an axis within each process none; CommLog sees the eager ones. Prints `ok` or
// `FAIL` lines and exits 1 if any check failed.
#include <iostream>
#include <string>
#include <vector>

#include <parax/distributed.h>
#include <parax/parax.h>

#include "support/worker.h"

namespace px = parax;
namespace jnp = parax::numpy;

namespace {

using parax::test_support::check;

// dot over the contracting dimension sharded on `axis` of a 2 x 4 mesh whose 'p' axis
// spans the two processes and 'd' the devices of each.
void contraction_over(const px::Mesh& mesh, const std::string& axis, bool across) {
  const px::Array a =
      px::device_put(jnp::ones({8, 16}), px::NamedSharding(mesh, px::P(px::None, axis)));
  const px::Array b =
      px::device_put(jnp::ones({16, 8}), px::NamedSharding(mesh, px::P(axis, px::None)));
  auto f = px::jit([](const px::Array& l, const px::Array& r) { return jnp::dot(l, r); });
  const px::Compiled compiled = f.lower(a, b).compile();
  const px::Explanation report = compiled.explain();
  const std::string what = "contraction over '" + axis + "'";
  check(report.collectives().size() == 1, what + ": one collective", report.to_string());
  if (report.collectives().size() != 1) return;
  const px::CollectiveInfo& c = report.collectives()[0];
  check(c.primitive == "all-reduce" && c.why == "contraction", what + ": an all-reduce", c.str());
  check(c.bytes_received == compiled.cost_analysis().collective_bytes, what + ": bytes",
        std::to_string(c.bytes_received));
  const double want = across ? c.bytes_received : 0.0;
  check(c.bytes_across_processes == want, what + ": bytes across processes",
        std::to_string(c.bytes_across_processes) + " want " + std::to_string(want));
  check(report.est_seconds() > 0, what + ": an estimate");
  const std::vector<float> got = f(a, b).addressable_shards()[0].data.to_vector<float>();
  check(got == std::vector<float>(got.size(), 16.0f), what + ": values");

  px::debug::CommLog log;
  jnp::dot(a, b).block_until_ready();
  const std::vector<px::CollectiveInfo> rows = log.collectives();
  check(rows.size() == 1 && rows[0].bytes_across_processes == want,
        what + ": CommLog sees it with its bytes across processes", log.table());
}

}  // namespace

int main() {
  px::distributed::initialize();
  try {
    const px::Mesh mesh = px::make_mesh({2, 4}, {"p", "d"});
    contraction_over(mesh, "p", true);
    contraction_over(mesh, "d", false);
  } catch (const std::exception& e) {
    check(false, "unexpected exception", e.what());
  }
  px::distributed::shutdown();
  return parax::test_support::worker_failures() == 0 ? 0 : 1;
}
