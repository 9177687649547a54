// Arrays that span processes (include/parax/multihost.h). Every function here is called by
// every process in the same order, and each decides what crosses processes from data all
// of them share (the sharding, the process count), so their engine calls always match.
#include "parax/multihost.h"

#include <algorithm>
#include <atomic>
#include <csignal>
#include <cstring>
#include <map>
#include <set>

#include "api/array_impl.h"
#include "base/box_copy.h"
#include "base/sizes.h"
#include "runtime/buffer.h"
#include "runtime/engine.h"
#include "sharding/sharding_impl.h"
#include "sharding/topology.h"

namespace parax {
namespace {

// ----------------------------------------------------------------------------------------
// Talking to the other processes.

// multihost_utils calls span the whole run, as JAX's do.
std::vector<int> all_processes() {
  std::vector<int> group(static_cast<size_t>(process_count()));
  for (size_t p = 0; p < group.size(); ++p) group[p] = int(p);
  return group;
}

runtime::Engine& engine_for(const std::string& api) {
  runtime::Engine* engine = runtime::engine();
  if (engine == nullptr) {
    throw RuntimeError("[" + api + "] this process is one of " + std::to_string(process_count()) +
                       " but has no collective engine; call parax::distributed::initialize() "
                       "first");
  }
  return *engine;
}

// Returns every process's `bytes` bytes at `in`, process by process.
std::vector<uint8_t> all_gather(const void* in, size_t bytes, const std::string& api) {
  std::vector<uint8_t> out(bytes * size_t(process_count()));
  if (bytes == 0) return out;
  engine_for(api).all_gather(all_processes(), in, bytes, out.data(), api);
  return out;
}

// An array's type as fixed-size words, so that processes can compare theirs with one
// all-gather: dtype, rank, and the first kShownDims dimensions (a hash covers the rest).
constexpr size_t kShownDims = 16;
constexpr size_t kTypeWords = 3 + kShownDims;

std::vector<int64_t> type_words(const core::Aval& aval) {
  std::vector<int64_t> w(kTypeWords, 0);
  w[0] = int64_t(aval.dtype);
  w[1] = int64_t(aval.shape.size());
  uint64_t hash = 1469598103934665603ull;
  for (int64_t d : aval.shape) hash = (hash ^ uint64_t(d)) * 1099511628211ull;
  w[2] = int64_t(hash);
  for (size_t d = 0; d < std::min(kShownDims, aval.shape.size()); ++d) w[3 + d] = aval.shape[d];
  return w;
}

std::string type_text(const int64_t* w) {
  if (size_t(w[1]) > kShownDims) {
    return std::string(dtype_name(DType(w[0]))) + " of rank " + std::to_string(w[1]);
  }
  return core::Aval{Shape(w + 3, w + 3 + w[1]), DType(w[0]), false}.str();
}

// Raises ValueError unless every process passed an array of x's shape and dtype.
void check_same_type(const core::Aval& aval, const std::string& api) {
  std::vector<int64_t> mine = type_words(aval);
  const size_t bytes = kTypeWords * sizeof(int64_t);
  std::vector<uint8_t> all = all_gather(mine.data(), bytes, api + " (shape check)");
  const auto* words = reinterpret_cast<const int64_t*>(all.data());
  for (int p = 0; p < process_count(); ++p) {
    const int64_t* theirs = words + size_t(p) * kTypeWords;
    if (std::equal(mine.begin(), mine.end(), theirs)) continue;
    throw ValueError("[" + api + "] every process must pass an array of the same shape and " +
                     "dtype; process " + std::to_string(process_index()) + " has " + aval.str() +
                     ", process " + std::to_string(p) + " has " + type_text(theirs));
  }
}

// A fresh host-local array, as JAX's multihost_utils return numpy arrays.
Array host_array(const std::vector<uint8_t>& bytes, Shape shape, DType dtype) {
  return detail::array_from_host(bytes.data(), core::Aval{std::move(shape), dtype, false});
}

// ----------------------------------------------------------------------------------------
// The distinct blocks of a global array and who sends each.

struct Block {
  Shape lo, shape;
  int owner = 0;               // the process of the first device holding it
  const void* data = nullptr;  // its bytes, where the owner is this process
  size_t nbytes = 0;
};

struct BlockPlan {
  std::vector<Block> blocks;     // in device-assignment order of first holders
  bool everyone_has_all = true;  // every process holds every block: nothing to move
};

BlockPlan plan_blocks(const detail::ArrayImpl& x) {
  BlockPlan plan;
  std::map<std::vector<int64_t>, size_t> seen;
  std::vector<std::set<size_t>> held(static_cast<size_t>(process_count()));
  const size_t itemsize = size_t(dtype_itemsize(x.aval.dtype));
  size_t next_buffer = 0;
  for (const auto& [device, index] : x.sharding->devices_indices_map(x.aval.shape)) {
    Block b;
    std::vector<int64_t> key;
    for (size_t d = 0; d < index.size(); ++d) {
      b.lo.push_back(index[d].begin(x.aval.shape[d]));
      b.shape.push_back(index[d].end(x.aval.shape[d]) - b.lo.back());
      key.push_back(b.lo.back());
      key.push_back(b.shape.back());
    }
    const void* data = detail::is_local(device) ? x.buffers[next_buffer++]->data() : nullptr;
    auto [it, fresh] = seen.emplace(std::move(key), plan.blocks.size());
    held[size_t(device.process_index())].insert(it->second);
    if (!fresh) continue;
    b.owner = device.process_index();
    b.data = data;
    b.nbytes = size_t(shape_size(b.shape)) * itemsize;
    plan.blocks.push_back(std::move(b));
  }
  for (const auto& h : held) plan.everyone_has_all &= h.size() == plan.blocks.size();
  return plan;
}

// Every process packs the blocks it owns (padded to the largest process's share), one
// all-gather moves them, and every process assembles the whole array.
std::vector<uint8_t> gather_global(const detail::ArrayImpl& x, const std::string& api) {
  const BlockPlan plan = plan_blocks(x);
  if (plan.everyone_has_all) return detail::host_bytes(x);
  std::vector<size_t> share(size_t(process_count()), 0);
  for (const Block& b : plan.blocks) share[size_t(b.owner)] += b.nbytes;
  const size_t slot = *std::max_element(share.begin(), share.end());
  std::vector<uint8_t> packed(slot);
  size_t offset = 0;
  for (const Block& b : plan.blocks) {
    if (b.owner != process_index()) continue;
    std::memcpy(packed.data() + offset, b.data, b.nbytes);
    offset += b.nbytes;
  }
  const std::vector<uint8_t> all = all_gather(packed.data(), slot, api);
  std::vector<uint8_t> out(x.aval.nbytes());
  std::vector<size_t> read(share.size(), 0);
  const size_t itemsize = size_t(dtype_itemsize(x.aval.dtype));
  for (const Block& b : plan.blocks) {
    const uint8_t* src = all.data() + size_t(b.owner) * slot + read[size_t(b.owner)];
    read[size_t(b.owner)] += b.nbytes;
    base::copy_box(src, b.shape, Shape(b.shape.size(), 0), out.data(), x.aval.shape, b.lo, b.shape,
                   itemsize);
  }
  return out;
}

// ----------------------------------------------------------------------------------------
// make_array_from_process_local_data: JAX's rules for which slab a process holds.

std::string dims_text(const std::vector<std::optional<int64_t>>& dims) {
  std::string s = "(";
  for (size_t i = 0; i < dims.size(); ++i) {
    s += (i ? ", " : "") + (dims[i] ? std::to_string(*dims[i]) : std::string("None"));
  }
  return s + (dims.size() == 1 ? ",)" : ")");
}

// The distinct (start, stop) slices of dimension `dim` that `process`'s devices hold.
using SliceSet = std::set<std::pair<int64_t, int64_t>>;

// How many distinct slabs the processes hold along `dim` (JAX's
// get_process_index_and_count); nullopt where processes hold overlapping or unequal parts.
std::optional<int64_t> process_slab_count(const Sharding& sharding, size_t dim, size_t ndim) {
  if (detail::is_fully_addressable(sharding) || sharding.is_fully_replicated()) return 1;
  const int64_t n = sharding.num_devices();
  const Shape probe(ndim, n);  // divisible by every dimension's tile count
  std::map<int, SliceSet> by_process;
  SliceSet all;
  for (const auto& [device, index] : sharding.devices_indices_map(probe)) {
    std::pair<int64_t, int64_t> s{index[dim].begin(n), index[dim].end(n)};
    by_process[device.process_index()].insert(s);
    all.insert(s);
  }
  const size_t per_process = by_process.begin()->second.size();
  std::set<SliceSet> unique;
  for (const auto& [p, slices] : by_process) {
    if (slices.size() != per_process) return std::nullopt;
    unique.insert(slices);
  }
  size_t covered = 0;
  for (const SliceSet& u : unique) covered += u.size();
  if (covered != all.size()) return std::nullopt;
  return int64_t(unique.size());
}

// The sorted distinct starts of this process's shards along each dimension.
std::vector<std::vector<int64_t>> local_starts(const Sharding& sharding, const Shape& shape) {
  std::vector<std::set<int64_t>> starts(shape.size());
  for (const auto& [device, index] : sharding.devices_indices_map(shape)) {
    if (!detail::is_local(device)) continue;
    for (size_t d = 0; d < shape.size(); ++d) starts[d].insert(index[d].begin(shape[d]));
  }
  std::vector<std::vector<int64_t>> out;
  for (const auto& s : starts) out.emplace_back(s.begin(), s.end());
  return out;
}

Shape resolve_global_shape(const Sharding& sharding, const Shape& local,
                           const std::optional<Shape>& global_shape) {
  if (global_shape) {
    if (global_shape->size() != local.size()) {
      throw ValueError("[make_array_from_process_local_data] global_shape " +
                       shape_str(*global_shape) + " and local_data's shape " + shape_str(local) +
                       " must have the same rank");
    }
    return *global_shape;
  }
  std::vector<std::optional<int64_t>> dims;
  bool complete = true;
  for (size_t d = 0; d < local.size(); ++d) {
    std::optional<int64_t> count = process_slab_count(sharding, d, local.size());
    dims.push_back(count ? std::optional<int64_t>(local[d] * *count) : std::nullopt);
    complete = complete && count.has_value();
  }
  if (!complete) {
    throw ValueError(
        "Unable to compute global_shape due to non-uniform sharding. Specify global shape "
        "directly. Partially computed global_shape=" +
        dims_text(dims) + ".");
  }
  Shape out;
  for (const auto& d : dims) out.push_back(*d);
  return out;
}

Array from_process_slab(const Sharding& sharding, const detail::ArrayImpl& local,
                        const Shape& global) {
  const Shape& local_shape = local.aval.shape;
  sharding.impl().check_rank(int64_t(global.size()));
  const Shape block = sharding.shard_shape(global);
  const std::vector<std::vector<int64_t>> starts = local_starts(sharding, global);
  for (size_t d = 0; d < global.size(); ++d) {
    const int64_t addressed = int64_t(starts[d].size()) * block[d];
    if (local_shape[d] == global[d] || local_shape[d] == addressed) continue;
    throw ValueError(
        "Invalid host data, each dimension should match either global or process shape. In "
        "dimension " +
        std::to_string(d) + ", the process data has " + std::to_string(local_shape[d]) +
        " elements. Process addresses " + std::to_string(addressed) +
        " elements and global_shape=" + shape_str(global) + ".");
  }
  const std::vector<uint8_t> host = detail::host_bytes(local);
  const size_t itemsize = size_t(dtype_itemsize(local.aval.dtype));
  auto slab_block = [&](const Index& index) {
    Shape offset(global.size());
    for (size_t d = 0; d < global.size(); ++d) {
      const int64_t start = index[d].begin(global[d]);
      offset[d] = local_shape[d] == global[d]
                      ? start
                      : int64_t(std::lower_bound(starts[d].begin(), starts[d].end(), start) -
                                starts[d].begin()) *
                            block[d];
    }
    std::vector<uint8_t> bytes(size_t(shape_size(block)) * itemsize);
    base::copy_box(host.data(), local_shape, offset, bytes.data(), block, Shape(block.size(), 0),
                   block, itemsize);
    return host_array(bytes, block, local.aval.dtype);
  };
  return make_array_from_callback(global, sharding, slab_block, local.aval.dtype);
}

std::string python_set(const std::set<int>& ids) {
  std::string s = "{";
  for (int id : ids) s += (s.size() > 1 ? ", " : "") + std::to_string(id);
  return s + "}";
}

std::string python_list(const std::vector<int>& ids) {
  std::string s = "[";
  for (int id : ids) s += (s.size() > 1 ? ", " : "") + std::to_string(id);
  return s + "]";
}

// JAX's ArrayImpl._check_and_rearrange: the arrays' devices are exactly the sharding's
// addressable ones.
void check_devices(const std::vector<int>& ids, const std::vector<Device>& addressable) {
  if (ids.size() != addressable.size()) {
    throw ValueError("Expected " + std::to_string(addressable.size()) +
                     " per-device arrays (this is how many devices are addressable by the "
                     "sharding), but got " +
                     std::to_string(ids.size()));
  }
  const std::set<int> given(ids.begin(), ids.end());
  if (given.size() != ids.size()) {
    throw ValueError(
        "When making an array from single-device arrays, the input arrays must be from "
        "distinct devices, but got device IDs " +
        python_list(ids));
  }
  std::set<int> wanted;
  for (const Device& d : addressable) wanted.insert(d.id());
  std::set<int> missing, extra;
  std::set_difference(wanted.begin(), wanted.end(), given.begin(), given.end(),
                      std::inserter(missing, missing.end()));
  std::set_difference(given.begin(), given.end(), wanted.begin(), wanted.end(),
                      std::inserter(extra, extra.end()));
  if (missing.empty() && extra.empty()) return;
  std::string msg = "Addressable devices and per-device arrays devices do not match.";
  if (!missing.empty()) {
    msg += " Sharding contains devices " + python_set(missing) +
           " that are not present in per-device arrays.";
  }
  if (!extra.empty()) {
    msg += " Per-device arrays contain devices " + python_set(extra) +
           " that are not present in the sharding.";
  }
  throw ValueError(msg);
}

}  // namespace

Array make_array_from_single_device_arrays(const Shape& shape, const Sharding& sharding,
                                           const std::vector<Array>& arrays,
                                           std::optional<DType> dtype) {
  for (const Array& a : arrays) {
    if (detail::impl_of(a).tracer) {
      throw ValueError(
          "parax::make_array_from_single_device_arrays requires a list of concrete arrays as "
          "input, but got a traced array");
    }
    detail::concrete_of(a, "make_array_from_single_device_arrays");
  }
  const core::Aval aval{
      shape, detail::shards_dtype(arrays, dtype, "make_array_from_single_device_arrays"), false};
  std::vector<int> ids;
  for (const Array& a : arrays) {
    const int64_t n = a.sharding().num_devices();
    if (n != 1) {
      throw ValueError(
          "When making an array from single-device arrays the input arrays must have one "
          "shard each. An argument array had " +
          std::to_string(n) + " shard(s).");
    }
    ids.push_back(a.sharding().device_assignment().front().id());
  }
  std::vector<Device> addressable;
  for (const Device& d : sharding.device_assignment()) {
    if (detail::is_local(d)) addressable.push_back(d);
  }
  check_devices(ids, addressable);
  detail::validate_shards(arrays, aval, sharding, sharding.shard_shape(shape));
  std::vector<runtime::BufferRef> buffers;
  for (const Device& d : addressable) {
    const size_t i = size_t(std::find(ids.begin(), ids.end(), d.id()) - ids.begin());
    buffers.push_back(detail::impl_of(arrays[i]).buffers.at(0));
  }
  return detail::make_array(aval, sharding, true, std::move(buffers));
}

Array make_array_from_process_local_data(const Sharding& sharding, const Array& local_data,
                                         OptionalShape global_shape) {
  const detail::ArrayImpl& local =
      detail::concrete_of(local_data, "make_array_from_process_local_data");
  const std::optional<Sharding> resolved = detail::try_resolve_spec(sharding);
  if (!resolved) {
    throw ValueError(
        "[make_array_from_process_local_data] a bare PartitionSpec needs an enclosing "
        "parax::sharding::use_mesh scope; got " +
        sharding.to_string());
  }
  if (process_count() == 1) {
    if (global_shape && *global_shape != local.aval.shape) {
      throw ValueError(
          "When calling `make_array_from_process_local_data` on a single process, "
          "global_shape should be None or equal to local_data.shape.Got global_shape=" +
          shape_str(*global_shape) + " and local_data.shape=" + shape_str(local.aval.shape) + ".");
    }
    return device_put(local_data, *resolved);
  }
  const Shape global = resolve_global_shape(*resolved, local.aval.shape, global_shape);
  return from_process_slab(*resolved, local, global);
}

namespace multihost_utils {

Array process_allgather(const Array& x, bool tiled) {
  const detail::ArrayImpl& impl = detail::concrete_of(x, "process_allgather");
  if (!detail::is_fully_addressable(*impl.sharding)) {
    // JAX raises for tiled=false here; the global value is the only answer that means
    // anything, so parax gives it either way.
    return host_array(gather_global(impl, "process_allgather"), impl.aval.shape, impl.aval.dtype);
  }
  const int n = process_count();
  std::vector<uint8_t> value = detail::host_bytes(impl);
  Shape shape = impl.aval.shape;
  const bool stack = !tiled || shape.empty();
  if (n == 1) {
    // JAX keeps a 0-d value 0-d when tiled in a run of one process.
    if (!tiled) shape.insert(shape.begin(), 1);
    return host_array(value, std::move(shape), impl.aval.dtype);
  }
  check_same_type(impl.aval, "process_allgather");
  std::vector<uint8_t> all = all_gather(value.data(), value.size(), "process_allgather");
  if (stack) {
    shape.insert(shape.begin(), n);
  } else {
    shape[0] *= n;
  }
  return host_array(all, std::move(shape), impl.aval.dtype);
}

Array broadcast_one_to_all(const Array& x) {
  const detail::ArrayImpl& impl = detail::concrete_of(x, "broadcast_one_to_all");
  std::vector<uint8_t> value = detail::host_bytes(impl);
  if (process_count() > 1) {
    check_same_type(impl.aval, "broadcast_one_to_all");
    if (!value.empty()) {
      engine_for("broadcast_one_to_all")
          .broadcast(all_processes(), 0, value.data(), value.size(), "broadcast_one_to_all");
    }
  }
  return host_array(value, impl.aval.shape, impl.aval.dtype);
}

void sync_global_devices(const std::string& name) {
  if (process_count() == 1) return;
  uint64_t hash = 1469598103934665603ull;
  for (unsigned char c : name) hash = (hash ^ c) * 1099511628211ull;
  const std::string api = "sync_global_devices('" + name + "')";
  const std::vector<uint8_t> all = all_gather(&hash, sizeof hash, api);
  std::vector<int> others;
  for (int p = 0; p < process_count(); ++p) {
    if (std::memcmp(all.data() + size_t(p) * sizeof hash, &hash, sizeof hash) != 0) {
      others.push_back(p);
    }
  }
  if (others.empty()) return;
  throw DistributedError("sync_global_devices name mismatch ('" + name + "'): process " +
                         std::to_string(process_index()) + " called it with this name, processes " +
                         python_list(others) + " with another");
}

void assert_equal(const Array& x, const std::string& fail_message) {
  const detail::ArrayImpl& impl = detail::concrete_of(x, "assert_equal");
  if (process_count() == 1) return;
  const Array gathered = process_allgather(x, true);
  const std::vector<uint8_t> all = detail::host_bytes(detail::impl_of(gathered));
  bool same = true;
  if (detail::is_fully_addressable(*impl.sharding)) {
    // Every process's slab of the concatenation equals this process's x.
    const std::vector<uint8_t> mine = detail::host_bytes(impl);
    for (size_t p = 0; p < size_t(process_count()); ++p) {
      same = same &&
             std::equal(mine.begin(), mine.end(), all.begin() + std::ptrdiff_t(p * mine.size()));
    }
  } else {
    // As JAX: the first local shard equals the global value (x is replicated).
    const std::vector<Shard> shards = x.addressable_shards();
    same = !shards.empty() && shards.front().data.shape() == impl.aval.shape &&
           detail::host_bytes(detail::impl_of(shards.front().data)) == all;
  }
  if (same) return;
  throw DistributedError(fail_message + ". Expected: " + gathered.str() + "; got: " + x.str() +
                         ".");
}

}  // namespace multihost_utils
namespace {

std::atomic<bool> preempted{false};  // set by the SIGTERM handler
static_assert(std::atomic<bool>::is_always_lock_free);

extern "C" void on_preemption_notice(int) { preempted.store(true); }

}  // namespace

namespace multihost_utils {

bool reached_preemption_sync_point(int64_t step) {
  static const bool installed = [] {
    struct sigaction action = {};
    action.sa_handler = on_preemption_notice;
    sigemptyset(&action.sa_mask);
    action.sa_flags = SA_RESTART;
    return sigaction(SIGTERM, &action, nullptr) == 0;
  }();
  static bool reported = false;  // the sync point comes once
  if (!installed) throw RuntimeError("reached_preemption_sync_point: cannot handle SIGTERM");
  if (reported) return false;
  bool reached = preempted.load();
  if (process_count() > 1) {
    const std::string api = "reached_preemption_sync_point(" + std::to_string(step) + ")";
    const int64_t mine[2] = {step, reached ? 1 : 0};
    const std::vector<uint8_t> all = all_gather(mine, sizeof mine, api);
    std::vector<int> others;
    reached = false;
    for (int p = 0; p < process_count(); ++p) {
      int64_t theirs[2];
      std::memcpy(theirs, all.data() + size_t(p) * sizeof mine, sizeof mine);
      if (theirs[0] != step) others.push_back(p);
      reached = reached || theirs[1] != 0;
    }
    if (!others.empty()) {
      throw DistributedError("reached_preemption_sync_point: process " +
                             std::to_string(process_index()) + " is at step " +
                             std::to_string(step) + ", processes " + python_list(others) +
                             " at another");
    }
  }
  reported = reached;
  return reached;
}

}  // namespace multihost_utils
}  // namespace parax
