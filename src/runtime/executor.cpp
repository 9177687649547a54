#include "runtime/executor.h"

#include <algorithm>
#include <array>
#include <atomic>
#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <optional>

#include "base/check.h"
#include "base/thread_pool.h"
#include "base/trace_events.h"
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

// A kernel's name in traces: its primitive, a fusion's with the primitives it chains.
std::string trace_name(const core::Eqn& e) {
  std::string name(core::prim_name(e.prim));
  for (const auto& sub : core::sub_programs(e)) {
    name += "[";
    for (size_t i = 0; i < sub->eqns.size(); ++i) {
      name += (i ? "," : "") + std::string(core::prim_name(sub->eqns[i].prim));
    }
    name += "]";
  }
  return name;
}

// A kernel's args in traces: its shapes and the bytes it reads and writes per device.
std::string trace_args(const std::vector<core::Aval>& in, const std::vector<core::Aval>& out) {
  std::string shapes;
  size_t bytes = 0;
  for (const core::Aval& a : in) {
    shapes += (shapes.empty() ? "" : ", ") + a.short_str();
    bytes += a.nbytes();
  }
  shapes += " -> ";
  for (size_t i = 0; i < out.size(); ++i) {
    shapes += (i ? ", " : "") + out[i].short_str();
    bytes += out[i].nbytes();
  }
  return "\"shapes\": " + base::trace::json_string(shapes) +
         ", \"bytes\": " + std::to_string(bytes);
}

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
    if (const auto* list = std::get_if<core::ProgramList>(&value)) {
      for (const auto& body : *list) {
        for (const core::Eqn& inner : body->eqns) {
          if (reads_device(inner)) return true;
        }
      }
    }
  }
  return false;
}

}  // namespace

Executor::Executor(std::shared_ptr<const core::Program> program,
                   std::shared_ptr<const compiler::BufferPlan> buffers, MeshLayout mesh)
    : program_(std::move(program)), buffers_(std::move(buffers)), mesh_(std::move(mesh)) {
  const core::Program& p = *program_;
  PARAX_CHECK(buffers_ != nullptr && buffers_->steps.size() == p.eqns.size(),
              "executor: the buffer plan is not the program's");
  shareable_.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) shareable_[e] = !reads_device(p.eqns[e]);
  in_avals_.resize(p.eqns.size());
  out_avals_.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    for (const core::Atom& a : p.eqns[e].inputs) in_avals_[e].push_back(p.aval_of(a));
    for (int v : p.eqns[e].outputs) out_avals_[e].push_back(p.avals[size_t(v)]);
  }
  subs_.resize(p.eqns.size());
  for (size_t e = 0; e < p.eqns.size(); ++e) {
    if (!core::has_trait(p.eqns[e].prim, core::kControlFlow)) continue;
    for (const core::SubProgram& sub : core::program_roles(p.eqns[e]).programs) {
      subs_[e].push_back(std::make_shared<const Executor>(
          sub.program, compiler::sub_plan(p, *buffers_, e, *sub.program), mesh_));
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
    std::vector<std::vector<BufferRef>> inputs,
    const std::vector<std::vector<BufferRef>>* dests) const {
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
    if (core::has_trait(eqn.prim, core::kControlFlow)) {
      Values in;
      for (size_t i = 0; i < eqn.inputs.size(); ++i) {
        const core::Atom& a = eqn.inputs[i];
        if (a.is_literal()) {
          // The same literal buffer on every device: sub-programs only read it.
          in.emplace_back(n, literal_buffers_[e][i]);
        } else {
          in.push_back(env[size_t(a.var)]);
        }
      }
      Values out = run_control_flow(e, std::move(in));
      for (size_t r = 0; r < eqn.outputs.size(); ++r)
        env[size_t(eqn.outputs[r])] = std::move(out[r]);
    } else if (core::has_trait(eqn.prim, core::kCollective)) {
      const core::Atom& a = eqn.inputs[0];
      env[size_t(eqn.outputs[0])] = run_collective(
          eqn, p.aval_of(a), p.avals[size_t(eqn.outputs[0])], mesh_, env[size_t(a.var)]);
    } else {
      const bool tracing = base::trace::on();
      const std::string name = tracing ? trace_name(eqn) : std::string();
      const std::string args = tracing ? trace_args(in_avals_[e], out_avals_[e]) : std::string();
      const core::KernelFn kernel = core::rules(eqn.prim).kernel;
      PARAX_CHECK(kernel != nullptr, "no CPU kernel for " << core::prim_name(eqn.prim));
      const std::vector<core::Aval>& in_avals = in_avals_[e];
      const std::vector<core::Aval>& out_avals = out_avals_[e];
      for (int v : eqn.outputs) env[size_t(v)].resize(n);
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
          const compiler::ResultBuffer& where = buffers_->steps[e].results[r];
          BufferRef buf;
          if (const int o = where.result; dests != nullptr && o >= 0) {
            buf = (*dests)[size_t(o)][size_t(d)];
          }
          if (const int i = where.reuse; !buf && i >= 0) {
            // Only a buffer nothing else holds (not shared by a collective's group), over
            // memory of its own (not a view into a scan's xs).
            BufferRef& in = env[size_t(eqn.inputs[size_t(i)].var)][size_t(d)];
            if (in.use_count() == 1 && in->owns_memory()) buf = in;
          }
          if (!buf) buf = Buffer::allocate(mesh_.devices[size_t(d)], out_avals[r].nbytes());
          outs.push_back(buf->data());
          env[size_t(eqn.outputs[r])][size_t(d)] = std::move(buf);
        }
        const int threads = base::num_threads();
        core::DeviceContext ctx{
            mesh_.coords[size_t(d)], mesh_.axis_sizes,
            std::max(1, threads / int(std::min<size_t>(active, size_t(threads))))};
        const int64_t t0 = tracing ? base::trace::now_us() : 0;
        kernel(core::KernelCall{ins, in_avals, outs, out_avals, eqn.params, ctx});
        if (tracing) {
          // On the device's track, and on the track of the thread that ran it.
          const int64_t dur = base::trace::now_us() - t0;
          const int device = mesh_.devices[d].id();
          base::trace::complete(name, "kernel", t0, dur, base::trace::thread_track(),
                                args + ", \"device\": " + std::to_string(device));
          base::trace::complete(
              name, "kernel", t0, dur, base::trace::device_track(device),
              args + ", \"thread\": " + std::to_string(base::trace::thread_track()));
        }
      });
      for (size_t d = 0; d < n; ++d) {
        if (same_as[d] < 0) continue;
        for (int v : eqn.outputs) env[size_t(v)][d] = env[size_t(v)][size_t(same_as[d])];
      }
    }
    if (profile) profile->add(eqn.prim, std::chrono::steady_clock::now() - start);
    for (int v : buffers_->steps[e].frees) env[size_t(v)].clear();
  }
  std::vector<std::vector<BufferRef>> out;
  for (const core::Atom& a : p.outvars) {
    PARAX_CHECK(!a.is_literal(), "literal outputs are materialised by the partitioner");
    out.push_back(env[size_t(a.var)]);
  }
  return out;
}

Executor::Values Executor::run_control_flow(size_t e, Values in) const {
  const core::ProgramRoles roles = core::program_roles(program_->eqns[e]);
  const core::SubProgram* body = roles.find(core::ProgramRole::body);
  const core::SubProgram* predicate = roles.find(core::ProgramRole::predicate);
  if (roles.index) return run_cond(e, roles, std::move(in));
  if (body != nullptr && predicate != nullptr) return run_while(e, roles, std::move(in));
  if (body != nullptr && roles.trip_count) return run_scan(e, roles, std::move(in));
  PARAX_CHECK(false, "the compiler inlines " << core::prim_name(program_->eqns[e].prim));
  PARAX_UNREACHABLE();
}

std::vector<std::optional<int64_t>> Executor::read_scalars(const std::vector<BufferRef>& value,
                                                           DType dtype) const {
  std::vector<std::optional<int64_t>> out(value.size());
  for (size_t d = 0; d < value.size(); ++d) {
    if (!mesh_.local[d]) continue;
    if (dtype == DType::bool_) {
      out[d] = *static_cast<const uint8_t*>(value[d]->data()) != 0;
      continue;
    }
    PARAX_CHECK(dtype == DType::int32, "control flow reads bool or int32 scalars");
    int32_t x;
    std::memcpy(&x, value[d]->data(), sizeof x);
    out[d] = x;
  }
  return out;
}

// Inside a shard_map body each device may pick its own branch: every branch some device
// picks runs on all of them (in lockstep, as collectives inside need), and each device
// keeps the results of its own.
Executor::Values Executor::run_cond(size_t e, const core::ProgramRoles& roles, Values in) const {
  const auto& branches = subs_[e];
  const int64_t last = int64_t(branches.size()) - 1;
  std::vector<std::optional<int64_t>> index = read_scalars(in[*roles.index], DType::int32);
  std::vector<size_t> picked;  // each branch some local device takes, once
  for (auto& i : index) {
    if (!i) continue;
    i = std::clamp<int64_t>(*i, 0, last);
    if (std::find(picked.begin(), picked.end(), size_t(*i)) == picked.end()) {
      picked.push_back(size_t(*i));
    }
  }
  PARAX_CHECK(!picked.empty(), "no local device holds the cond index");
  // The branches share their operands.
  const core::SubProgram& first = roles.programs[0];
  const auto args = in.begin() + long(first.consts_begin);
  in =
      Values(std::make_move_iterator(args), std::make_move_iterator(args + long(first.num_consts)));
  if (picked.size() == 1) return branches[picked[0]]->run(std::move(in));
  Values out;
  for (size_t b : picked) {
    Values r = branches[b]->run(in);
    out.resize(r.size(), std::vector<BufferRef>(index.size()));
    for (size_t o = 0; o < r.size(); ++o) {
      for (size_t d = 0; d < index.size(); ++d) {
        if (index[d] == int64_t(b)) out[o][d] = std::move(r[o][d]);
      }
    }
  }
  return out;
}

// Inside a shard_map body each device may run its own number of steps: the body runs on
// all devices while any goes on, and the devices already done keep their carry (as a
// batched while's select does).
Executor::Values Executor::run_while(size_t e, const core::ProgramRoles& roles, Values in) const {
  const core::SubProgram& cond_role = *roles.find(core::ProgramRole::predicate);
  const core::SubProgram& body_role = *roles.find(core::ProgramRole::body);
  const Executor& cond = *subs_[e][size_t(&cond_role - roles.programs.data())];
  const Executor& body = *subs_[e][size_t(&body_role - roles.programs.data())];
  const auto cond_consts = in.begin() + long(cond_role.consts_begin);
  const auto body_consts = in.begin() + long(body_role.consts_begin);
  const auto carry_in = in.begin() + long(roles.carry_begin);
  Values carry(std::make_move_iterator(carry_in),
               std::make_move_iterator(carry_in + long(roles.num_carry)));
  for (;;) {
    Values cond_in(cond_consts, cond_consts + long(cond_role.num_consts));
    cond_in.insert(cond_in.end(), carry.begin(), carry.end());
    const auto go = read_scalars(cond.run(std::move(cond_in))[0], DType::bool_);
    const bool any = std::count(go.begin(), go.end(), std::optional<int64_t>(1)) > 0;
    const bool all = std::count(go.begin(), go.end(), std::optional<int64_t>(0)) == 0;
    if (!any) break;
    Values body_in(body_consts, body_consts + long(body_role.num_consts));
    if (all) {
      body_in.insert(body_in.end(), std::make_move_iterator(carry.begin()),
                     std::make_move_iterator(carry.end()));
      carry = body.run(std::move(body_in));
      continue;
    }
    body_in.insert(body_in.end(), carry.begin(), carry.end());
    Values next = body.run(std::move(body_in));
    for (size_t c = 0; c < next.size(); ++c) {
      for (size_t d = 0; d < go.size(); ++d) {
        if (go[d] == std::optional<int64_t>(0)) next[c][d] = carry[c][d];
      }
    }
    carry = std::move(next);
  }
  return carry;
}

Executor::Values Executor::run_scan(size_t e, const core::ProgramRoles& roles, Values in) const {
  const core::Eqn& eqn = program_->eqns[e];
  const core::Program& p = *program_;
  const core::SubProgram& body_role = *roles.find(core::ProgramRole::body);
  const size_t consts_begin = body_role.consts_begin;
  const size_t num_consts = body_role.num_consts;
  const size_t num_carry = roles.num_carry;
  const int64_t length = *roles.trip_count;
  const bool reverse = roles.reverse;
  const Executor& body = *subs_[e][size_t(&body_role - roles.programs.data())];
  const size_t n = in.empty() ? size_t(mesh_.size()) : in[0].size();
  const size_t num_xs = roles.num_xs;
  const size_t num_ys = eqn.outputs.size() - num_carry;
  // The stacked results, written step by step.
  Values ys(num_ys, std::vector<BufferRef>(n));
  std::vector<size_t> y_bytes(num_ys);
  for (size_t y = 0; y < num_ys; ++y) {
    const core::Aval& aval = p.avals[size_t(eqn.outputs[num_carry + y])];
    y_bytes[y] = length == 0 ? 0 : aval.nbytes() / size_t(length);
    for (size_t d = 0; d < n; ++d) {
      if (mesh_.local[d]) ys[y][d] = Buffer::allocate(mesh_.devices[d], aval.nbytes());
    }
  }
  std::vector<size_t> x_bytes(num_xs);
  for (size_t x = 0; x < num_xs; ++x) {
    const core::Atom& a = eqn.inputs[roles.xs_begin + x];
    x_bytes[x] = length == 0 ? 0 : p.aval_of(a).nbytes() / size_t(length);
  }
  Values carry(std::make_move_iterator(in.begin() + long(roles.carry_begin)),
               std::make_move_iterator(in.begin() + long(roles.carry_begin + num_carry)));
  for (int64_t step = 0; step < length; ++step) {
    const size_t t = size_t(reverse ? length - 1 - step : step);
    Values body_in(in.begin() + long(consts_begin), in.begin() + long(consts_begin + num_consts));
    body_in.insert(body_in.end(), std::make_move_iterator(carry.begin()),
                   std::make_move_iterator(carry.end()));
    for (size_t x = 0; x < num_xs; ++x) {
      const auto& xs = in[roles.xs_begin + x];
      std::vector<BufferRef> slice(n);
      for (size_t d = 0; d < n; ++d) {
        if (mesh_.local[d]) slice[d] = Buffer::view(xs[d], t * x_bytes[x], x_bytes[x]);
      }
      body_in.push_back(std::move(slice));
    }
    // Each y is written by its kernel into its slot of the stacked result; one made
    // otherwise (a collective's, one shared between devices) is copied there.
    Values slots(num_carry + num_ys, std::vector<BufferRef>(n));
    for (size_t y = 0; y < num_ys; ++y) {
      for (size_t d = 0; d < n; ++d) {
        if (mesh_.local[d])
          slots[num_carry + y][d] = Buffer::view(ys[y][d], t * y_bytes[y], y_bytes[y]);
      }
    }
    Values out = body.run(std::move(body_in), &slots);
    for (size_t y = 0; y < num_ys; ++y) {
      for (size_t d = 0; d < n; ++d) {
        if (!mesh_.local[d]) continue;
        void* slot = slots[num_carry + y][d]->data();
        if (out[num_carry + y][d]->data() != slot) {
          std::memcpy(slot, out[num_carry + y][d]->data(), y_bytes[y]);
        }
      }
    }
    out.resize(num_carry);
    carry = std::move(out);
  }
  for (auto& y : ys) carry.push_back(std::move(y));
  return carry;
}

}  // namespace parax::runtime
