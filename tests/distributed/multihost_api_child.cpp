// A worker exercising the multi-host array API, run as 2 processes x 4 devices (parax-run
// -n 2 --devices-per-process 4, or mpirun -n 2 with PARAX_NUM_CPU_DEVICES=4). Each process
// prints `ok <what>` or `FAIL <what>: <detail>` lines and exits 1 if any check failed.
// CTest runs it through parax-run (parax_multihost_api) and, on MPI, through mpirun.
#include <cstdio>
#include <iostream>
#include <sstream>
#include <string>
#include <vector>

#include <parax/distributed.h>
#include <parax/parax.h>

#include "support/worker.h"

namespace px = parax;
namespace jnp = parax::numpy;

namespace {

using parax::test_support::check;
using parax::test_support::error_of;
using parax::test_support::iota;
using parax::test_support::text;

// The (8, 4) array whose element (i, j) is i * 4 + j.
std::vector<float> block_of(const px::Index& index) {
  std::vector<float> block;
  for (int64_t i = index[0].begin(8); i < index[0].end(8); ++i) {
    for (int64_t j = index[1].begin(4); j < index[1].end(4); ++j) block.push_back(float(i * 4 + j));
  }
  return block;
}

void global_arrays(int me) {
  px::Mesh mesh = px::make_mesh({4, 2}, {"x", "y"});
  const px::NamedSharding s(mesh, px::P("x", "y"));
  px::Array x = px::make_array_from_callback(px::Shape{8, 4}, s, block_of);
  check(!x.is_fully_addressable(), "sharded array is not fully addressable");
  const std::vector<px::Shard> shards = x.addressable_shards();
  bool local = shards.size() == 4;
  for (const px::Shard& sh : shards) {
    local = local && sh.device.process_index() == me &&
            sh.data.to_vector<float>() == block_of(sh.index);
    std::cout << "shard " << sh.device << " " << px::index_str(sh.index) << std::endl;
  }
  check(local, "addressable shards are this process's");
  std::ostringstream printed;
  printed << x;
  check(printed.str() == "Array(shape=(8, 4), dtype=float32)", "prints its type", printed.str());
  check(error_of([&] { x.to_vector<float>(); }).rfind("Fetching value for `parax::Array`", 0) == 0,
        "to_vector raises");
  px::Array g = px::multihost_utils::process_allgather(x);
  check(
      g.is_fully_addressable() && g.shape() == px::Shape{8, 4} && g.to_vector<float>() == iota(32),
      "process_allgather gives the global value", g.str());

  // Process 0 first holds three row blocks, process 1 one: unequal shares of the gather.
  const std::vector<px::Device> d = px::devices();
  px::Mesh odd(px::DeviceGrid({d[0], d[4], d[1], d[5], d[2], d[3], d[6], d[7]}, {4, 2}),
               {"x", "y"});
  px::Array u =
      px::make_array_from_callback(px::Shape{8, 4}, px::NamedSharding(odd, px::P("x")), block_of);
  check(px::multihost_utils::process_allgather(u).to_vector<float>() == iota(32),
        "process_allgather with unequal shares");

  px::Array r =
      px::make_array_from_callback(px::Shape{8, 4}, px::NamedSharding(mesh, px::P()), block_of);
  check(r.to_vector<float>() == iota(32), "a replicated array reads its local replica");
  std::cout << "replicated " << r << std::endl;
}

void process_local(int me, int n) {
  px::Array a = jnp::arange(3.0f) + float(me);
  px::Array stacked = px::multihost_utils::process_allgather(a);
  check(stacked.shape() == px::Shape{n, 3}, "stacked shape", px::shape_str(stacked.shape()));
  std::vector<float> want;
  for (int p = 0; p < n; ++p) {
    for (float v : iota(3, float(p))) want.push_back(v);
  }
  check(stacked.to_vector<float>() == want, "stacked values", text(stacked.to_vector<float>()));
  px::Array tiled = px::multihost_utils::process_allgather(a, true);
  check(tiled.shape() == px::Shape{3 * n} && tiled.to_vector<float>() == want, "tiled values");
  px::Array b = px::multihost_utils::broadcast_one_to_all(a);
  check(b.to_vector<float>() == iota(3), "broadcast_one_to_all gives process 0's value");
  px::multihost_utils::assert_equal(b, "broadcast results agree");
  check(!error_of([&] { px::multihost_utils::assert_equal(a, "differs"); }).empty(),
        "assert_equal raises for values that differ");
  px::multihost_utils::sync_global_devices("after broadcast");
  check(!error_of([&] { px::multihost_utils::sync_global_devices(me == 0 ? "a" : "b"); }).empty(),
        "sync_global_devices raises for different names");
}

void building(int me) {
  px::Mesh mesh = px::make_mesh({4, 2}, {"x", "y"});
  const px::NamedSharding s(mesh, px::P("x", "y"));
  // Process p holds rows [4p, 4p + 4) of the global array.
  px::Array slab = jnp::arange(16.0f).reshape({4, 4}) + float(16 * me);
  px::Array x = px::make_array_from_process_local_data(s, slab);
  px::Array g = px::multihost_utils::process_allgather(x);
  check(g.shape() == px::Shape{8, 4} && g.to_vector<float>() == iota(32),
        "make_array_from_process_local_data", g.str());
  std::vector<px::Array> pieces;
  for (const auto& [device, index] : s.devices_indices_map({8, 4})) {
    if (device.process_index() != me) continue;
    pieces.push_back(px::device_put(jnp::array(block_of(index)).reshape({2, 2}), device));
  }
  px::Array y = px::make_array_from_single_device_arrays({8, 4}, s, pieces);
  check(px::multihost_utils::process_allgather(y).to_vector<float>() == iota(32),
        "make_array_from_single_device_arrays");
  px::DeviceGrid hybrid = px::mesh_utils::create_hybrid_device_mesh({2, 2}, {2, 1});
  std::vector<int> ids;
  for (const px::Device& d : hybrid.flat()) ids.push_back(d.id());
  check(ids == std::vector<int>{0, 1, 2, 3, 2048, 2049, 2050, 2051}, "hybrid mesh", text(ids));
}

}  // namespace

int main() {
  px::distributed::initialize();
  const int me = px::process_index();
  const int n = px::process_count();
  std::cout << "process " << me << " of " << n << ", devices " << px::devices() << ", local "
            << px::local_devices() << std::endl;
  try {
    global_arrays(me);
    process_local(me, n);
    building(me);
  } catch (const std::exception& e) {
    check(false, "unexpected exception", e.what());
  }
  px::distributed::shutdown();
  return parax::test_support::worker_failures() == 0 ? 0 : 1;
}
