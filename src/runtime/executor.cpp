#include "runtime/executor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>

#include "base/check.h"
#include "base/thread_pool.h"
#include "core/rules.h"

namespace parax::runtime {
namespace {

BufferRef literal_buffer(const core::Literal& l, const Device& device) {
  auto buf = Buffer::allocate(device, size_t(dtype_itemsize(l.aval.dtype)));
  core::write_literal(l, buf->data());
  return buf;
}

// PARAX_PROFILE=1: wall time spent per primitive (all devices of an equation together),
// printed to stderr at exit, most expensive first. For finding where a workload's time goes.
class Profile {
 public:
  static Profile* get() {
    static Profile* p = std::getenv("PARAX_PROFILE") != nullptr ? new Profile : nullptr;
    return p;
  }
  void add(core::Prim prim, std::chrono::nanoseconds t) {
    ns_[size_t(prim)] += t.count();
    calls_[size_t(prim)] += 1;
  }
  ~Profile() = default;

 private:
  Profile() {
    std::atexit([] {
      Profile* p = get();
      std::vector<size_t> order;
      int64_t total = 0;
      for (size_t i = 0; i < size_t(core::kNumPrims); ++i) {
        if (p->calls_[i] > 0) order.push_back(i);
        total += p->ns_[i];
      }
      std::sort(order.begin(), order.end(),
                [&](size_t a, size_t b) { return p->ns_[a] > p->ns_[b]; });
      std::fprintf(stderr, "parax profile: %.1f ms in kernels and collectives\n",
                   double(total) / 1e6);
      for (size_t i : order) {
        std::fprintf(stderr, "  %-22s %10.1f ms %5.1f%% %8lld calls\n",
                     std::string(core::prim_name(core::Prim(i))).c_str(), double(p->ns_[i]) / 1e6,
                     100.0 * double(p->ns_[i]) / double(std::max<int64_t>(total, 1)),
                     static_cast<long long>(p->calls_[i].load()));
      }
    });
  }
  std::array<std::atomic<int64_t>, core::kNumPrims> ns_{};
  std::array<std::atomic<int64_t>, core::kNumPrims> calls_{};
};

// True when a kernel reads where its device sits (iota over a sharded dimension, a
// shard-slice, axis_index, a sharded random draw), directly or inside a fusion.
bool reads_device(const core::Eqn& e) {
  if (core::has_trait(e.prim, core::kReadsDevice)) return true;
  for (const auto& [name, value] : e.params.items()) {
    if (const auto* body = std::get_if<std::shared_ptr<const core::Program>>(&value)) {
      for (const core::Eqn& inner : (*body)->eqns) {
        if (reads_device(inner)) return true;
      }
    }
  }
  return false;
}

}  // namespace

Executor::Executor(std::shared_ptr<const core::Program> program, MeshLayout mesh)
    : program_(std::move(program)), mesh_(std::move(mesh)) {
  const core::Program& p = *program_;
  // Last use of every variable; outputs live to the end.
  std::vector<int> last(p.avals.size(), -1);
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const core::Atom& a : p.eqns[e].inputs) {
      if (!a.is_literal()) last[size_t(a.var)] = int(e);
    }
  }
  for (const core::Atom& a : p.outvars) {
    if (!a.is_literal()) last[size_t(a.var)] = int(p.eqns.size());
  }
  release_after_.resize(p.eqns.size());
  for (size_t v = 0; v < last.size(); ++v) {
    if (last[v] >= 0 && last[v] < int(p.eqns.size()))
      release_after_[size_t(last[v])].push_back(int(v));
  }
  // Vars never used are released right after they are made (or at entry: see run).
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (int v : p.eqns[e].outputs) {
      if (last[size_t(v)] < 0) release_after_[e].push_back(v);
    }
  }
  // In-place updates: an elementwise result may overwrite an operand of the same size that
  // dies here and that the program does not hand back to the caller. Kernels read element
  // i before writing it; in a fusion only the last equation may write the donated buffer,
  // after every earlier equation of the tile has read it.
  std::vector<bool> pinned(p.avals.size(), false);
  for (int v : p.invars) pinned[size_t(v)] = true;
  for (const core::Atom& a : p.outvars) {
    if (!a.is_literal()) pinned[size_t(a.var)] = true;
  }
  shareable_.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) shareable_[e] = !reads_device(p.eqns[e]);
  donor_.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const core::Eqn& eqn = p.eqns[e];
    donor_[e].assign(eqn.outputs.size(), -1);
    const bool elementwise = core::has_trait(eqn.prim, core::kElementwise);
    const core::Program* body =
        eqn.prim == core::Prim::fusion
            ? eqn.params.get<std::shared_ptr<const core::Program>>("jaxpr").get()
            : nullptr;
    if (!elementwise && body == nullptr) continue;
    if (body != nullptr && core::has_trait(body->eqns.back().prim, core::kReduction)) continue;
    std::vector<bool> taken(eqn.inputs.size(), false);
    for (size_t r = 0; r < eqn.outputs.size(); ++r) {
      if (body != nullptr && body->outvars[r].var != body->eqns.back().outputs[0]) continue;
      const core::Aval& out = p.avals[size_t(eqn.outputs[r])];
      for (size_t i = 0; i < eqn.inputs.size(); ++i) {
        const core::Atom& a = eqn.inputs[i];
        if (taken[i] || a.is_literal() || pinned[size_t(a.var)] || last[size_t(a.var)] != int(e))
          continue;
        const core::Aval& in = p.avals[size_t(a.var)];
        if (in.nbytes() != out.nbytes() || in.shape != out.shape) continue;
        donor_[e][r] = int(i);
        taken[i] = true;
        break;
      }
    }
  }
  literal_buffers_.resize(p.eqns.size());
  const auto local = std::find(mesh_.local.begin(), mesh_.local.end(), true);
  const Device home = mesh_.devices[local == mesh_.local.end() ? 0 : local - mesh_.local.begin()];
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const core::Atom& a : p.eqns[e].inputs) {
      literal_buffers_[e].push_back(a.is_literal() ? literal_buffer(*a.literal, home) : nullptr);
    }
  }
}

std::vector<std::vector<BufferRef>> Executor::run(
    std::vector<std::vector<BufferRef>> inputs) const {
  const core::Program& p = *program_;
  const size_t n = size_t(mesh_.size());
  std::vector<std::vector<BufferRef>> env(p.avals.size());
  PARAX_CHECK(inputs.size() == p.invars.size(), "executor: wrong number of inputs");
  for (size_t i = 0; i < inputs.size(); ++i) env[size_t(p.invars[i])] = std::move(inputs[i]);
  Profile* const profile = Profile::get();
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    const core::Eqn& eqn = p.eqns[e];
    const auto start =
        profile ? std::chrono::steady_clock::now() : std::chrono::steady_clock::time_point();
    if (core::has_trait(eqn.prim, core::kCollective)) {
      const core::Atom& a = eqn.inputs[0];
      env[size_t(eqn.outputs[0])] = run_collective(
          eqn, p.aval_of(a), p.avals[size_t(eqn.outputs[0])], mesh_, env[size_t(a.var)]);
    } else {
      const core::KernelFn kernel = core::rules(eqn.prim).kernel;
      PARAX_CHECK(kernel != nullptr, "no CPU kernel for " << core::prim_name(eqn.prim));
      std::vector<core::Aval> in_avals, out_avals;
      for (const core::Atom& a : eqn.inputs) in_avals.push_back(p.aval_of(a));
      for (int v : eqn.outputs) {
        out_avals.push_back(p.avals[size_t(v)]);
        env[size_t(v)].resize(n);
      }
      // Devices holding the very same operand buffers (replicas that share them, e.g. after
      // a collective) compute once and share the result: on virtual devices replicated work
      // is then done once, not once per replica.
      std::vector<size_t> todo;
      std::vector<int> same_as(n, -1);
      for (size_t d = 0; d < n; ++d) {
        if (!mesh_.local[d]) continue;  // another process runs it
        if (shareable_[e]) {
          for (size_t t : todo) {
            bool same = true;
            for (const core::Atom& a : eqn.inputs) {
              same = same && (a.is_literal() || env[size_t(a.var)][d] == env[size_t(a.var)][t]);
            }
            if (same) {
              same_as[d] = int(t);
              break;
            }
          }
        }
        if (same_as[d] < 0) todo.push_back(d);
      }
      const size_t active = todo.size();
      base::parallel_for(int64_t(active), [&](int64_t k) {
        const size_t d = todo[size_t(k)];
        std::vector<const void*> ins;
        for (size_t i = 0; i < eqn.inputs.size(); ++i) {
          const core::Atom& a = eqn.inputs[i];
          ins.push_back(a.is_literal() ? literal_buffers_[e][i]->data()
                                       : env[size_t(a.var)][size_t(d)]->data());
        }
        std::vector<void*> outs;
        for (size_t r = 0; r < eqn.outputs.size(); ++r) {
          BufferRef buf;
          if (const int i = donor_[e][r]; i >= 0) {
            // Only a buffer nothing else holds (not shared by a collective's group).
            BufferRef& in = env[size_t(eqn.inputs[size_t(i)].var)][size_t(d)];
            if (in.use_count() == 1) buf = in;
          }
          if (!buf) buf = Buffer::allocate(mesh_.devices[size_t(d)], out_avals[r].nbytes());
          outs.push_back(buf->data());
          env[size_t(eqn.outputs[r])][size_t(d)] = std::move(buf);
        }
        const int threads = base::num_threads();
        core::DeviceContext ctx{
            mesh_.coords[size_t(d)], mesh_.axis_sizes,
            std::max(1, threads / int(std::min<size_t>(active, size_t(threads))))};
        kernel(core::KernelCall{ins, in_avals, outs, out_avals, eqn.params, ctx});
      });
      for (size_t d = 0; d < n; ++d) {
        if (same_as[d] < 0) continue;
        for (int v : eqn.outputs) env[size_t(v)][d] = env[size_t(v)][size_t(same_as[d])];
      }
    }
    if (profile) profile->add(eqn.prim, std::chrono::steady_clock::now() - start);
    for (int v : release_after_[e]) env[size_t(v)].clear();
  }
  std::vector<std::vector<BufferRef>> out;
  for (const core::Atom& a : p.outvars) {
    PARAX_CHECK(!a.is_literal(), "literal outputs are materialised by the partitioner");
    out.push_back(env[size_t(a.var)]);
  }
  return out;
}

}  // namespace parax::runtime
