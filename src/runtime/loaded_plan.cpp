#include "runtime/loaded_plan.h"

#include <algorithm>
#include <sstream>

#include "base/trace_events.h"
#include "core/array_value.h"
#include "parax/errors.h"
#include "runtime/engine.h"
#include "runtime/executor.h"
#include "runtime/transfer.h"
#include "sharding/topology.h"

namespace parax::runtime {

LoadedPlan::LoadedPlan(std::shared_ptr<const compiler::Plan> plan) : plan_(std::move(plan)) {
  const compiler::MeshInfo& mesh = plan_->mesh;
  auto position_of = [&](const Device& d) {
    const auto& all = mesh.mesh.devices();
    return size_t(std::find(all.begin(), all.end(), d) - all.begin());
  };
  // A value's buffers are those of this process's devices, in its sharding's device order;
  // position p's buffer is the given index, or none on another process's device.
  auto local_order = [&](const Sharding& s) {
    std::vector<size_t> order(size_t(mesh.num_devices()), kNone);
    size_t b = 0;
    for (const Device& d : s.device_assignment()) {
      if (detail::is_local(d)) order[position_of(d)] = b++;
    }
    return order;
  };
  for (size_t i = 0; i < plan_->in_shardings.size(); ++i) {
    // An argument whose buffers already sit where the program reads them is passed as is.
    const std::optional<Sharding>& given = plan_->arg_shardings[i];
    const bool direct =
        given && compiler::same_placement(*given, plan_->in_shardings[i], plan_->in_avals[i].shape);
    in_direct_.push_back(direct);
    in_order_.push_back(local_order(direct ? *given : plan_->in_shardings[i]));
  }
  for (const Sharding& s : plan_->out_shardings) {
    std::vector<size_t> order;
    for (const Device& d : s.device_assignment()) {
      if (detail::is_local(d)) order.push_back(position_of(d));
    }
    out_order_.push_back(std::move(order));
  }
  executor_ = std::make_shared<const Executor>(plan_->local, plan_->buffers,
                                               MeshLayout(mesh.axis_sizes, mesh.mesh.devices()));
}

LoadedPlan::~LoadedPlan() = default;

void LoadedPlan::check_same_program() const {
  const MeshLayout& mesh = executor_->mesh();
  if (!mesh.spans_processes() || checked_.load()) return;
  Engine* e = engine();
  if (e == nullptr) {
    throw DistributedError("'" + plan_->name + "' runs on devices of " +
                           std::to_string(mesh.processes.size()) +
                           " processes, but parax::distributed is not initialized (or was shut "
                           "down)");
  }
  const uint64_t mine = plan_->spmd_fingerprint();
  std::vector<uint64_t> all(mesh.processes.size());
  e->all_gather(mesh.processes, &mine, sizeof mine, all.data(),
                "the program check of '" + plan_->name + "'");
  for (size_t k = 0; k < all.size(); ++k) {
    if (all[k] == all[0]) continue;
    std::ostringstream os;
    os << "processes traced different programs for the same call of '" << plan_->name
       << "': process " << mesh.processes[0] << " has plan fingerprint " << std::hex << all[0]
       << ", process " << std::dec << mesh.processes[k] << " has " << std::hex << all[k] << std::dec
       << ". Every process must call the same functions with arguments of the same shapes, "
          "dtypes and shardings, in the same order.";
    throw DistributedError(os.str());
  }
  checked_ = true;
}

std::vector<Array> LoadedPlan::run(std::span<const Array> args) const {
  const base::trace::Span span("execute", "execute", plan_->name);
  check_same_program();
  std::vector<std::vector<BufferRef>> inputs;
  const std::vector<bool>& donated = plan_->buffers->donated;
  for (size_t i = 0; i < args.size(); ++i) {
    const detail::ArrayImpl& x = detail::concrete_of(args[i], "jit");
    std::vector<BufferRef> local;
    if (i < donated.size() && donated[i]) {
      // The caller's array gives its buffers up and is deleted: once the program has read
      // them for the last time, nothing else holds them and they can be written over.
      detail::ArrayImpl& given = *args[i].impl();
      std::vector<BufferRef> buffers = std::move(given.buffers);
      given.buffers.clear();
      given.deleted = true;
      local = in_direct_[i] ? std::move(buffers)
                            : relayout(x.aval, *x.sharding, buffers, plan_->in_shardings[i]);
    } else {
      local = in_direct_[i] ? x.buffers
                            : relayout(x.aval, *x.sharding, x.buffers, plan_->in_shardings[i]);
    }
    std::vector<BufferRef> bufs;
    for (size_t b : in_order_[i]) bufs.push_back(b == kNone ? nullptr : local[b]);
    inputs.push_back(std::move(bufs));
  }
  std::vector<std::vector<BufferRef>> outs;
  if (std::find(executor_->mesh().local.begin(), executor_->mesh().local.end(), true) !=
      executor_->mesh().local.end()) {
    outs = executor_->run(std::move(inputs));
  } else {
    outs.resize(plan_->out_shardings.size());  // none of its devices is on this process
  }
  std::vector<Array> result;
  for (size_t o = 0; o < plan_->out_shardings.size(); ++o) {
    std::vector<BufferRef> bufs;
    for (size_t p : out_order_[o]) bufs.push_back(outs[o][p]);
    result.push_back(detail::make_array(plan_->out_avals[o], plan_->out_shardings[o],
                                        plan_->committed, std::move(bufs)));
  }
  return result;
}

}  // namespace parax::runtime
