#include "runtime/collectives.h"

#include <algorithm>
#include <cstring>
#include <functional>
#include <map>
#include <string>

#include "base/box_copy.h"
#include "base/check.h"
#include "base/thread_pool.h"
#include "base/trace_events.h"
#include "parax/errors.h"
#include "runtime/engine.h"
#include "runtime/reduce.h"
#include "sharding/topology.h"

namespace parax::runtime {
namespace {

using core::Prim;

struct Groups {
  std::vector<std::vector<int64_t>> members;  // per group, positions ordered by rank
  std::vector<int64_t> group_of, rank_of;     // per position
};

Groups make_groups(const MeshLayout& mesh, const std::vector<int64_t>& axes) {
  Groups g;
  g.group_of.resize(size_t(mesh.size()));
  g.rank_of.resize(size_t(mesh.size()));
  std::map<std::vector<int64_t>, size_t> index;
  std::vector<std::vector<std::pair<int64_t, int64_t>>> ranked;
  for (int64_t p = 0; p < mesh.size(); ++p) {
    std::vector<int64_t> key = mesh.coords[size_t(p)];
    int64_t rank = 0;
    for (int64_t a : axes) {
      rank = rank * mesh.axis_sizes[size_t(a)] + key[size_t(a)];
      key[size_t(a)] = 0;
    }
    auto [it, fresh] = index.emplace(key, ranked.size());
    if (fresh) ranked.emplace_back();
    ranked[it->second].push_back({rank, p});
    g.group_of[size_t(p)] = int64_t(it->second);
    g.rank_of[size_t(p)] = rank;
  }
  for (auto& r : ranked) {
    std::sort(r.begin(), r.end());
    std::vector<int64_t> m;
    for (auto& [rank, p] : r) m.push_back(p);
    g.members.push_back(std::move(m));
  }
  return g;
}

Shape zeros_like_shape(const Shape& s) { return Shape(s.size(), 0); }

const uint8_t* bytes_of(const BufferRef& b) { return static_cast<const uint8_t*>(b->data()); }
uint8_t* bytes_of(Buffer& b) { return static_cast<uint8_t*>(b.data()); }

// Runs fn(begin, length) over [0, total) in chunks on the thread pool.
void for_chunks(int64_t total, const std::function<void(int64_t, int64_t)>& fn) {
  const int64_t chunk = std::max<int64_t>(1 << 14, (total + 63) / 64);
  const int64_t chunks = std::max<int64_t>(1, (total + chunk - 1) / chunk);
  base::parallel_for(chunks, [&](int64_t c) {
    const int64_t begin = c * chunk;
    const int64_t len = std::min(total, begin + chunk) - begin;
    if (len > 0) fn(begin, len);
  });
}

// ---------------------------------------------------------------------------------------
// The reduction order: node [l, r) of a group's ranks combines [l, mid) with [mid, r),
// mid = l + (r - l) / 2. A process holding a whole subtree computes it alone, so a group
// spread over processes exchanges only the largest subtrees each holds.

int64_t mid_of(int64_t l, int64_t r) { return l + (r - l) / 2; }

struct Node {
  int64_t l, r;
  bool operator<(const Node& o) const { return l != o.l ? l < o.l : r < o.r; }
};

// The largest tree nodes of [l, r) whose ranks are all on process `proc`, in rank order.
void owned_nodes(const std::vector<int>& proc_of_rank, int proc, int64_t l, int64_t r,
                 std::vector<Node>& out) {
  bool all = true;
  for (int64_t j = l; j < r && all; ++j) all = proc_of_rank[size_t(j)] == proc;
  if (all) {
    out.push_back({l, r});
  } else if (r - l > 1) {
    owned_nodes(proc_of_rank, proc, l, mid_of(l, r), out);
    owned_nodes(proc_of_rank, proc, mid_of(l, r), r, out);
  }
}

// Evaluates tree nodes over a range of elements. `known(l, r)` is the start of a node's
// value already at hand (a member's operand, a partial result from another process) or
// null; every single-rank node must be known.
class TreeReduce {
 public:
  using Known = std::function<const uint8_t*(int64_t l, int64_t r)>;
  TreeReduce(DType dtype, ReduceOp op, Known known)
      : dtype_(dtype), op_(op), item_(size_t(dtype_itemsize(dtype))), known_(std::move(known)) {}

  // dst receives elements [offset, offset + len) of node [l, r).
  void run(int64_t l, int64_t r, int64_t offset, int64_t len, uint8_t* dst) const {
    thread_local std::vector<std::vector<uint8_t>> scratch;
    const uint8_t* v = value(l, r, offset, len, dst, scratch, 0);
    if (v != dst) std::memcpy(dst, v, size_t(len) * item_);
  }

 private:
  const uint8_t* value(int64_t l, int64_t r, int64_t offset, int64_t len, uint8_t* dst,
                       std::vector<std::vector<uint8_t>>& scratch, size_t depth) const {
    if (const uint8_t* k = known_(l, r)) return k + size_t(offset) * item_;
    PARAX_CHECK(r - l > 1, "collective: no operand for rank " << l);
    const int64_t m = mid_of(l, r);
    const uint8_t* a = value(l, m, offset, len, dst, scratch, depth + 1);
    if (scratch.size() <= depth) scratch.resize(depth + 1);
    scratch[depth].resize(size_t(len) * item_);
    const uint8_t* b = value(m, r, offset, len, scratch[depth].data(), scratch, depth + 1);
    combine(dst, a, b, len, dtype_, op_);
    return dst;
  }

  DType dtype_;
  ReduceOp op_;
  size_t item_;
  Known known_;
};

// Time spent in engine calls on this thread, while a trace records: a collective's span
// reports its share (waiting for the other processes, and moving bytes to them).
thread_local int64_t t_engine_us = 0;

// The engine as a traced collective uses it: each call timed into t_engine_us and
// recorded as a span of its own on the calling thread's track.
class TimedEngine final : public Engine {
 public:
  explicit TimedEngine(Engine& e) : e_(e) {}
  std::string_view name() const override { return e_.name(); }
  int process_index() const override { return e_.process_index(); }
  int process_count() const override { return e_.process_count(); }
  void all_gather(std::span<const int> group, const void* in, size_t bytes, void* out,
                  std::string_view what) override {
    const Timer t("engine all_gather", bytes * group.size(), what);
    e_.all_gather(group, in, bytes, out, what);
  }
  void all_reduce(std::span<const int> group, void* data, int64_t count, DType dtype, ReduceOp op,
                  std::string_view what) override {
    const Timer t("engine all_reduce", size_t(count) * size_t(dtype_itemsize(dtype)), what);
    e_.all_reduce(group, data, count, dtype, op, what);
  }
  void broadcast(std::span<const int> group, int root, void* data, size_t bytes,
                 std::string_view what) override {
    const Timer t("engine broadcast", bytes, what);
    e_.broadcast(group, root, data, bytes, what);
  }
  void exchange(std::span<const Message> sends, std::span<const Message> recvs,
                std::string_view what) override {
    size_t bytes = 0;
    for (const Message& m : recvs) bytes += m.bytes;
    const Timer t("engine exchange", bytes, what);
    e_.exchange(sends, recvs, what);
  }
  void barrier(std::span<const int> group, std::string_view what) override {
    const Timer t("engine barrier", 0, what);
    e_.barrier(group, what);
  }

 private:
  struct Timer {
    Timer(const char* call, size_t bytes, std::string_view what)
        : call(call), bytes(bytes), what(what), t0(base::trace::now_us()) {}
    ~Timer() {
      const int64_t dur = base::trace::now_us() - t0;
      t_engine_us += dur;
      base::trace::complete(
          call, "engine", t0, dur, base::trace::thread_track(),
          "\"bytes\": " + std::to_string(bytes) + ", \"what\": " + base::trace::json_string(what));
    }
    const char* call;
    size_t bytes;
    std::string_view what;
    int64_t t0;
  };
  Engine& e_;
};

// One collective equation being run: its operands, groups, and the engine when a group
// crosses processes.
struct Collective {
  const core::Eqn& eqn;
  const core::Aval& in_aval;
  const core::Aval& out_aval;
  const MeshLayout& mesh;
  const std::vector<BufferRef>& in;
  Groups g;
  int me = detail::Topology::get().process_index();
  size_t item = size_t(dtype_itemsize(in_aval.dtype));
  mutable std::unique_ptr<TimedEngine> timed = nullptr;  // engine_for's, while tracing

  // The processes of group gi's members (ascending) and each rank's process.
  std::vector<int> processes(size_t gi) const {
    std::vector<int> procs;
    for (int64_t p : g.members[gi]) procs.push_back(mesh.process_of[size_t(p)]);
    std::sort(procs.begin(), procs.end());
    procs.erase(std::unique(procs.begin(), procs.end()), procs.end());
    return procs;
  }
  std::vector<int> process_of_rank(size_t gi) const {
    std::vector<int> out;
    for (int64_t p : g.members[gi]) out.push_back(mesh.process_of[size_t(p)]);
    return out;
  }
  bool involves_me(size_t gi) const {
    for (int64_t p : g.members[gi]) {
      if (mesh.local[size_t(p)]) return true;
    }
    return false;
  }
  bool all_mine(size_t gi) const {
    for (int64_t p : g.members[gi]) {
      if (!mesh.local[size_t(p)]) return false;
    }
    return true;
  }
  Engine& engine_for() const {
    Engine* e = engine();
    if (e == nullptr) {
      throw DistributedError(
          "a collective of this program (" + what() +
          ") spans several processes, but parax::distributed is not initialized (or was shut "
          "down)");
    }
    if (!base::trace::on()) return *e;
    if (!timed) timed = std::make_unique<TimedEngine>(*e);
    return *timed;
  }
  std::string what() const {
    std::string s = std::string(core::prim_name(eqn.prim));
    if (eqn.params.has("op")) s += "(" + eqn.params.get<std::string>("op") + ")";
    s += " of " + in_aval.short_str();
    if (eqn.params.has("mesh_axes")) {
      s += " over mesh axes [";
      const auto& axes = eqn.params.get<std::vector<int64_t>>("mesh_axes");
      for (size_t i = 0; i < axes.size(); ++i) s += (i ? ", " : "") + std::to_string(axes[i]);
      s += "]";
    }
    return s;
  }
  BufferRef allocate(size_t bytes) const {
    for (size_t p = 0; p < mesh.devices.size(); ++p) {
      if (mesh.local[p]) return Buffer::allocate(mesh.devices[p], bytes);
    }
    PARAX_UNREACHABLE();
  }

  // Group gi's operands by rank. Operands on other processes arrive through one engine
  // all-gather of every process's operands (`keep` holds them).
  std::vector<const uint8_t*> operands(size_t gi, BufferRef& keep) const {
    const auto& m = g.members[gi];
    std::vector<const uint8_t*> out(m.size(), nullptr);
    for (size_t j = 0; j < m.size(); ++j) {
      if (mesh.local[size_t(m[j])]) out[j] = bytes_of(in[size_t(m[j])]);
    }
    if (all_mine(gi)) return out;
    const std::vector<int> procs = processes(gi);
    const std::vector<int> owner = process_of_rank(gi);
    std::vector<std::vector<size_t>> ranks(procs.size());
    for (size_t j = 0; j < m.size(); ++j) {
      ranks[size_t(std::lower_bound(procs.begin(), procs.end(), owner[j]) - procs.begin())]
          .push_back(j);
    }
    size_t slots = 0;
    for (const auto& r : ranks) slots = std::max(slots, r.size());
    const size_t block = in_aval.nbytes();
    const size_t mine = size_t(std::lower_bound(procs.begin(), procs.end(), me) - procs.begin());
    BufferRef send = allocate(std::max<size_t>(1, slots * block));
    for (size_t s = 0; s < ranks[mine].size(); ++s) {
      std::memcpy(bytes_of(*send) + s * block, out[ranks[mine][s]], block);
    }
    keep = allocate(std::max<size_t>(1, procs.size() * slots * block));
    if (block > 0)
      engine_for().all_gather(procs, send->data(), slots * block, keep->data(), what());
    for (size_t k = 0; k < procs.size(); ++k) {
      for (size_t s = 0; s < ranks[k].size(); ++s) {
        out[ranks[k][s]] = bytes_of(*keep) + (k * slots + s) * block;
      }
    }
    return out;
  }

  // The reduction for two processes that each hold one half of the tree: each combines
  // half of the elements (the left subtree's value first, as the tree does) and they swap
  // the combined halves, as a ring all-reduce of two does, sending straight from the
  // operand. The engine's in-place all-reduce needed a copy of the operand first, which
  // with Gloo made a 64 MiB psum 1.5x gloo::allreduce's time (MPI's, polled as
  // MPI_Iallreduce for the timeout, was 2x MPI_Allreduce's); see benchmarks/README.md.
  BufferRef reduce_pair(int peer, Node node, const TreeReduce& local, size_t gi, ReduceOp op,
                        Engine& eng) const {
    const int64_t total = in_aval.size();
    const bool left = node.l == 0;
    const int64_t half = total / 2;
    const int64_t my_begin = left ? 0 : half, my_len = left ? half : total - half;
    const int64_t peer_begin = left ? half : 0, peer_len = total - my_len;
    BufferRef out = allocate(std::max<size_t>(1, in_aval.nbytes()));
    const uint8_t* value = bytes_of(*out);  // this process's subtree, all elements
    if (node.r - node.l == 1) {
      value = bytes_of(in[size_t(g.members[gi][size_t(node.l)])]);
    } else {
      for_chunks(total, [&](int64_t b, int64_t len) {
        local.run(node.l, node.r, b, len, bytes_of(*out) + size_t(b) * item);
      });
    }
    BufferRef theirs = allocate(std::max<size_t>(1, size_t(my_len) * item));
    swap_with(eng, peer, value + size_t(peer_begin) * item, size_t(peer_len) * item,
              bytes_of(*theirs), size_t(my_len) * item);
    for_chunks(my_len, [&](int64_t b, int64_t len) {
      const uint8_t* mine_part = value + size_t(my_begin + b) * item;
      const uint8_t* their_part = bytes_of(*theirs) + size_t(b) * item;
      combine(bytes_of(*out) + size_t(my_begin + b) * item, left ? mine_part : their_part,
              left ? their_part : mine_part, len, in_aval.dtype, op);
    });
    swap_with(eng, peer, bytes_of(*out) + size_t(my_begin) * item, size_t(my_len) * item,
              bytes_of(*out) + size_t(peer_begin) * item, size_t(peer_len) * item);
    return out;
  }

  // Sends `send_bytes` to `peer` while receiving `recv_bytes` from it (empty ones skipped:
  // both sides know the sizes).
  void swap_with(Engine& eng, int peer, const uint8_t* send, size_t send_bytes, uint8_t* recv,
                 size_t recv_bytes) const {
    std::vector<Engine::Message> sends, recvs;
    if (send_bytes) sends.push_back({peer, const_cast<uint8_t*>(send), send_bytes});
    if (recv_bytes) recvs.push_back({peer, recv, recv_bytes});
    eng.exchange(sends, recvs, what());
  }

  // The reduction of group gi's operands over all of it, for a group on several processes.
  BufferRef reduce_across(size_t gi, ReduceOp op) const {
    const auto& m = g.members[gi];
    const int64_t n = int64_t(m.size());
    const std::vector<int> procs = processes(gi);
    const std::vector<int> owner = process_of_rank(gi);
    std::vector<std::vector<Node>> nodes(procs.size());
    for (size_t k = 0; k < procs.size(); ++k) owned_nodes(owner, procs[k], 0, n, nodes[k]);
    const size_t mine = size_t(std::lower_bound(procs.begin(), procs.end(), me) - procs.begin());
    const TreeReduce local(in_aval.dtype, op, [&](int64_t l, int64_t r) -> const uint8_t* {
      return r - l == 1 && owner[size_t(l)] == me ? bytes_of(in[size_t(m[size_t(l)])]) : nullptr;
    });
    const int64_t total = in_aval.size();
    const size_t bytes = in_aval.nbytes();
    Engine& eng = engine_for();
    if (bytes == 0) return allocate(1);  // nothing to combine (every process skips alike)
    if (procs.size() == 2 && nodes[0].size() == 1 && nodes[1].size() == 1) {
      return reduce_pair(procs[1 - mine], nodes[mine][0], local, gi, op, eng);
    }
    size_t slots = 0;
    for (const auto& ns : nodes) slots = std::max(slots, ns.size());
    BufferRef send = allocate(std::max<size_t>(1, slots * bytes));
    for (size_t s = 0; s < nodes[mine].size(); ++s) {
      const Node node = nodes[mine][s];
      for_chunks(total, [&](int64_t b, int64_t len) {
        local.run(node.l, node.r, b, len, bytes_of(*send) + s * bytes + size_t(b) * item);
      });
    }
    BufferRef all = allocate(std::max<size_t>(1, procs.size() * slots * bytes));
    eng.all_gather(procs, send->data(), slots * bytes, all->data(), what());
    std::map<Node, const uint8_t*> partial;
    for (size_t k = 0; k < procs.size(); ++k) {
      for (size_t s = 0; s < nodes[k].size(); ++s) {
        partial[nodes[k][s]] = bytes_of(*all) + (k * slots + s) * bytes;
      }
    }
    const TreeReduce across(in_aval.dtype, op, [&](int64_t l, int64_t r) -> const uint8_t* {
      auto it = partial.find({l, r});
      return it == partial.end() ? nullptr : it->second;
    });
    BufferRef out = allocate(std::max<size_t>(1, bytes));
    for_chunks(total, [&](int64_t b, int64_t len) {
      across.run(0, n, b, len, bytes_of(*out) + size_t(b) * item);
    });
    return out;
  }
};

std::vector<BufferRef> collective_permute(const Collective& c) {
  const auto& pairs = c.eqn.params.get<std::vector<int64_t>>("source_target_pairs");
  const MeshLayout& mesh = c.mesh;
  const size_t bytes = c.out_aval.nbytes();
  // Devices named as no target keep their data (reshard: their tile is unchanged), or
  // get zeros (ppermute).
  std::vector<bool> target(c.in.size(), false);
  for (size_t k = 0; k < pairs.size(); k += 2) target[size_t(pairs[k + 1])] = true;
  const bool zero_rest = c.eqn.params.has("zero_others") && c.eqn.params.get<bool>("zero_others");
  std::vector<BufferRef> out = c.in;
  // Blocks crossing processes travel as one message per peer, packed in pair order.
  std::map<int, std::vector<size_t>> sends, recvs;  // peer -> pair indices
  for (size_t k = 0; k < pairs.size(); k += 2) {
    const size_t s = size_t(pairs[k]), t = size_t(pairs[k + 1]);
    if (mesh.local[s] && mesh.local[t]) {
      out[t] = c.in[s];
    } else if (mesh.local[s]) {
      sends[mesh.process_of[t]].push_back(k);
    } else if (mesh.local[t]) {
      recvs[mesh.process_of[s]].push_back(k);
    }
  }
  if (bytes > 0 && (!sends.empty() || !recvs.empty())) {
    std::vector<BufferRef> keep;
    std::vector<Engine::Message> out_msgs, in_msgs;
    for (auto& [peer, ks] : sends) {
      keep.push_back(c.allocate(std::max<size_t>(1, ks.size() * bytes)));
      for (size_t i = 0; i < ks.size(); ++i) {
        std::memcpy(bytes_of(*keep.back()) + i * bytes, bytes_of(c.in[size_t(pairs[ks[i]])]),
                    bytes);
      }
      out_msgs.push_back({peer, keep.back()->data(), ks.size() * bytes});
    }
    std::vector<BufferRef> landed;
    for (auto& [peer, ks] : recvs) {
      landed.push_back(c.allocate(std::max<size_t>(1, ks.size() * bytes)));
      in_msgs.push_back({peer, landed.back()->data(), ks.size() * bytes});
    }
    c.engine_for().exchange(out_msgs, in_msgs, c.what());
    size_t r = 0;
    for (auto& [peer, ks] : recvs) {
      for (size_t i = 0; i < ks.size(); ++i) {
        const size_t t = size_t(pairs[ks[i] + 1]);
        out[t] = Buffer::allocate(mesh.devices[t], bytes);
        std::memcpy(out[t]->data(), bytes_of(*landed[r]) + i * bytes, bytes);
      }
      ++r;
    }
  }
  if (bytes == 0) {
    for (auto& [peer, ks] : recvs) {
      for (size_t k : ks)
        out[size_t(pairs[k + 1])] = Buffer::allocate(mesh.devices[size_t(pairs[k + 1])], 0);
    }
  }
  for (size_t p = 0; p < out.size() && zero_rest; ++p) {
    if (target[p] || !mesh.local[p]) continue;
    out[p] = Buffer::allocate(mesh.devices[p], bytes);
    std::memset(out[p]->data(), 0, bytes);
  }
  for (size_t p = 0; p < out.size(); ++p) {
    if (!mesh.local[p]) out[p] = nullptr;
  }
  return out;
}

std::vector<BufferRef> all_gather(const Collective& c) {
  const int64_t d = c.eqn.params.get<int64_t>("dimension");
  std::vector<BufferRef> out(size_t(c.mesh.size()));
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    if (!c.involves_me(gi)) continue;
    BufferRef keep;
    const std::vector<const uint8_t*> from = c.operands(gi, keep);
    const int64_t n = int64_t(from.size());
    BufferRef result = c.allocate(c.out_aval.nbytes());
    base::parallel_for(n, [&](int64_t j) {
      Shape off = zeros_like_shape(c.out_aval.shape);
      off[size_t(d)] = j * c.in_aval.shape[size_t(d)];
      base::copy_box(from[size_t(j)], c.in_aval.shape, zeros_like_shape(c.in_aval.shape),
                     result->data(), c.out_aval.shape, off, c.in_aval.shape, c.item);
    });
    for (int64_t p : c.g.members[gi]) {
      if (c.mesh.local[size_t(p)]) out[size_t(p)] = result;
    }
  }
  return out;
}

std::vector<BufferRef> all_reduce(const Collective& c) {
  const ReduceOp op = reduce_op_of(c.eqn.params.get<std::string>("op"));
  std::vector<BufferRef> result(c.g.members.size());
  // Groups wholly on this process: all chunks of all of them run in parallel (one group
  // over all devices would otherwise keep a single thread busy).
  std::vector<size_t> mine;
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    if (c.all_mine(gi)) {
      mine.push_back(gi);
      result[gi] = c.allocate(c.out_aval.nbytes());
    }
  }
  const int64_t total = c.out_aval.size();
  const int64_t chunk = std::max<int64_t>(1 << 14, (total + 63) / 64);
  const int64_t chunks = std::max<int64_t>(1, (total + chunk - 1) / chunk);
  base::parallel_for(int64_t(mine.size()) * chunks, [&](int64_t t) {
    const size_t gi = mine[size_t(t / chunks)];
    const auto& m = c.g.members[gi];
    const int64_t begin = (t % chunks) * chunk;
    const int64_t len = std::min(total, begin + chunk) - begin;
    if (len <= 0) return;
    const TreeReduce tree(c.in_aval.dtype, op, [&](int64_t l, int64_t r) -> const uint8_t* {
      return r - l == 1 ? bytes_of(c.in[size_t(m[size_t(l)])]) : nullptr;
    });
    tree.run(0, int64_t(m.size()), begin, len, bytes_of(*result[gi]) + size_t(begin) * c.item);
  });
  // Groups across processes, one after another in group order (every process calls the
  // engine in the same order).
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    if (c.involves_me(gi) && !c.all_mine(gi)) result[gi] = c.reduce_across(gi, op);
  }
  std::vector<BufferRef> out(size_t(c.mesh.size()));
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    for (int64_t p : c.g.members[gi]) {
      if (c.mesh.local[size_t(p)]) out[size_t(p)] = result[gi];
    }
  }
  return out;
}

std::vector<BufferRef> reduce_scatter(const Collective& c) {
  const ReduceOp op = reduce_op_of(c.eqn.params.get<std::string>("op"));
  const int64_t d = c.eqn.params.get<int64_t>("dimension");
  const Shape& in_shape = c.in_aval.shape;
  // A device's block of every member is `outer` contiguous runs of `run` elements.
  int64_t outer = 1, inner = 1;
  for (size_t k = 0; k < size_t(d); ++k) outer *= in_shape[k];
  for (size_t k = size_t(d) + 1; k < in_shape.size(); ++k) inner *= in_shape[k];
  const int64_t run = c.out_aval.shape[size_t(d)] * inner;
  const int64_t row = in_shape[size_t(d)] * inner;
  // Groups across processes are reduced whole first; their members then take their block.
  std::vector<BufferRef> full(c.g.members.size());
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    if (c.involves_me(gi) && !c.all_mine(gi)) full[gi] = c.reduce_across(gi, op);
  }
  std::vector<BufferRef> out(size_t(c.mesh.size()));
  base::parallel_for(c.mesh.size(), [&](int64_t p) {
    if (!c.mesh.local[size_t(p)]) return;
    const size_t gi = size_t(c.g.group_of[size_t(p)]);
    const auto& m = c.g.members[gi];
    const int64_t start = c.g.rank_of[size_t(p)] * run;
    auto buf = Buffer::allocate(c.mesh.devices[size_t(p)], c.out_aval.nbytes());
    const TreeReduce tree(c.in_aval.dtype, op, [&](int64_t l, int64_t r) -> const uint8_t* {
      return r - l == 1 ? bytes_of(c.in[size_t(m[size_t(l)])]) : nullptr;
    });
    for (int64_t o = 0; o < outer; ++o) {
      uint8_t* to = bytes_of(*buf) + size_t(o * run) * c.item;
      const int64_t at = o * row + start;
      if (full[gi]) {
        std::memcpy(to, bytes_of(full[gi]) + size_t(at) * c.item, size_t(run) * c.item);
      } else {
        tree.run(0, int64_t(m.size()), at, run, to);
      }
    }
    out[size_t(p)] = buf;
  });
  return out;
}

// For a group across processes, member j's piece for member k (`pieces[j][k]`, a packed
// box) crosses processes only when j and k are on different ones: process P sends Q, in one
// message, the pieces of P's members (by rank) for Q's members (by rank), an order both
// derive alike.
std::vector<BufferRef> all_to_all(const Collective& c) {
  const int64_t split = c.eqn.params.get<int64_t>("split_dimension");
  const int64_t concat = c.eqn.params.get<int64_t>("concat_dimension");
  Shape box = c.in_aval.shape;
  box[size_t(split)] = c.out_aval.shape[size_t(split)];
  const size_t piece_bytes = size_t(shape_size(box)) * c.item;
  std::vector<BufferRef> out(size_t(c.mesh.size()));
  for (size_t gi = 0; gi < c.g.members.size(); ++gi) {
    if (!c.involves_me(gi)) continue;
    const auto& m = c.g.members[gi];
    const int64_t n = int64_t(m.size());
    const std::vector<int> owner = c.process_of_rank(gi);
    // received[j][k]: the piece member j (on another process) sent member k (on this one).
    std::vector<std::vector<const uint8_t*>> received(m.size(),
                                                      std::vector<const uint8_t*>(m.size()));
    std::vector<BufferRef> keep;
    if (!c.all_mine(gi) && piece_bytes > 0) {
      std::map<int, std::vector<std::pair<int64_t, int64_t>>> sends, recvs;  // peer -> (j, k)
      for (int64_t j = 0; j < n; ++j) {
        for (int64_t k = 0; k < n; ++k) {
          const int from = owner[size_t(j)], to = owner[size_t(k)];
          if (from == to) continue;
          if (from == c.me) sends[to].push_back({j, k});
          if (to == c.me) recvs[from].push_back({j, k});
        }
      }
      std::vector<Engine::Message> out_msgs, in_msgs;
      for (const auto& [peer, pairs] : sends) {
        keep.push_back(c.allocate(pairs.size() * piece_bytes));
        for (size_t i = 0; i < pairs.size(); ++i) {
          const auto [j, k] = pairs[i];
          Shape off = zeros_like_shape(c.in_aval.shape);
          off[size_t(split)] = k * box[size_t(split)];
          base::copy_box(bytes_of(c.in[size_t(m[size_t(j)])]), c.in_aval.shape, off,
                         bytes_of(*keep.back()) + i * piece_bytes, box, zeros_like_shape(box), box,
                         c.item);
        }
        out_msgs.push_back({peer, keep.back()->data(), pairs.size() * piece_bytes});
      }
      for (const auto& [peer, pairs] : recvs) {
        keep.push_back(c.allocate(pairs.size() * piece_bytes));
        for (size_t i = 0; i < pairs.size(); ++i) {
          received[size_t(pairs[i].first)][size_t(pairs[i].second)] =
              bytes_of(*keep.back()) + i * piece_bytes;
        }
        in_msgs.push_back({peer, keep.back()->data(), pairs.size() * piece_bytes});
      }
      c.engine_for().exchange(out_msgs, in_msgs, c.what());
    }
    base::parallel_for(n, [&](int64_t me) {
      const int64_t p = m[size_t(me)];
      if (!c.mesh.local[size_t(p)]) return;
      auto buf = Buffer::allocate(c.mesh.devices[size_t(p)], c.out_aval.nbytes());
      for (int64_t j = 0; j < n; ++j) {
        // Member j's piece `me` of its split dimension lands at block j of my concat
        // dimension.
        Shape dst_off = zeros_like_shape(c.out_aval.shape);
        dst_off[size_t(concat)] = j * c.in_aval.shape[size_t(concat)];
        if (const uint8_t* piece = received[size_t(j)][size_t(me)]) {
          base::copy_box(piece, box, zeros_like_shape(box), buf->data(), c.out_aval.shape, dst_off,
                         box, c.item);
        } else if (c.mesh.local[size_t(m[size_t(j)])]) {
          Shape src_off = zeros_like_shape(c.in_aval.shape);
          src_off[size_t(split)] = me * box[size_t(split)];
          base::copy_box(bytes_of(c.in[size_t(m[size_t(j)])]), c.in_aval.shape, src_off,
                         buf->data(), c.out_aval.shape, dst_off, box, c.item);
        }
      }
      out[size_t(p)] = buf;
    });
  }
  return out;
}

}  // namespace

MeshLayout::MeshLayout(Shape sizes, std::vector<Device> devs)
    : axis_sizes(std::move(sizes)), devices(std::move(devs)) {
  const int me = detail::Topology::get().process_index();
  for (int64_t p = 0; p < size(); ++p) {
    std::vector<int64_t> c(axis_sizes.size());
    int64_t rest = p;
    for (size_t a = axis_sizes.size(); a-- > 0;) {
      c[a] = rest % axis_sizes[a];
      rest /= axis_sizes[a];
    }
    coords.push_back(std::move(c));
    const int proc = devices[size_t(p)].process_index();
    process_of.push_back(proc);
    local.push_back(proc == me);
    processes.push_back(proc);
  }
  std::sort(processes.begin(), processes.end());
  processes.erase(std::unique(processes.begin(), processes.end()), processes.end());
}

namespace {

std::vector<BufferRef> run_one(const core::Eqn& eqn, const core::Aval& in_aval,
                               const core::Aval& out_aval, const MeshLayout& mesh,
                               const std::vector<BufferRef>& in) {
  const bool permute = eqn.prim == Prim::collective_permute;
  Collective c{
      eqn,
      in_aval,
      out_aval,
      mesh,
      in,
      permute ? Groups{} : make_groups(mesh, eqn.params.get<std::vector<int64_t>>("mesh_axes"))};
  switch (eqn.prim) {
    case Prim::collective_permute:
      return collective_permute(c);
    case Prim::all_gather:
      return all_gather(c);
    case Prim::all_reduce:
      return all_reduce(c);
    case Prim::reduce_scatter:
      return reduce_scatter(c);
    case Prim::all_to_all:
      return all_to_all(c);
    default:
      PARAX_CHECK(false, "not a collective: " << core::prim_name(eqn.prim));
  }
  PARAX_UNREACHABLE();
}

}  // namespace

std::vector<BufferRef> run_collective(const core::Eqn& eqn, const core::Aval& in_aval,
                                      const core::Aval& out_aval, const MeshLayout& mesh,
                                      const std::vector<BufferRef>& in) {
  if (!base::trace::on()) return run_one(eqn, in_aval, out_aval, mesh, in);
  // Traced: one span per local device of the collective, with its group and bytes, and the
  // time spent in the engine (waiting for the other processes and moving bytes to them).
  const int64_t engine_before = t_engine_us;
  const int64_t t0 = base::trace::now_us();
  std::vector<BufferRef> out = run_one(eqn, in_aval, out_aval, mesh, in);
  const int64_t dur = base::trace::now_us() - t0;
  std::string group;
  if (eqn.params.has("mesh_axes")) {
    for (int64_t a : eqn.params.get<std::vector<int64_t>>("mesh_axes")) {
      group += (group.empty() ? "" : ",") + std::to_string(a);
    }
  } else {
    group = "pairs";
  }
  const std::string args = "\"mesh_axes\": " + base::trace::json_string(group) +
                           ", \"operand\": " + base::trace::json_string(in_aval.short_str()) +
                           ", \"bytes\": " + std::to_string(out_aval.nbytes()) +
                           ", \"engine_us\": " + std::to_string(t_engine_us - engine_before);
  for (size_t p = 0; p < mesh.devices.size(); ++p) {
    if (!mesh.local[p]) continue;
    base::trace::complete(core::prim_name(eqn.prim), "collective", t0, dur,
                          base::trace::device_track(mesh.devices[p].id()), args);
  }
  return out;
}

}  // namespace parax::runtime
