#include "runtime/loaded_plan.h"

#include <algorithm>

#include "core/array_value.h"
#include "runtime/executor.h"
#include "runtime/transfer.h"

namespace parax::runtime {

LoadedPlan::LoadedPlan(std::shared_ptr<const compiler::Plan> plan) : plan_(std::move(plan)) {
  const compiler::MeshInfo& mesh = plan_->mesh;
  auto position_of = [&](const Device& d) {
    const auto& all = mesh.mesh.devices();
    return size_t(std::find(all.begin(), all.end(), d) - all.begin());
  };
  for (size_t i = 0; i < plan_->in_shardings.size(); ++i) {
    // An argument whose buffers already sit where the program reads them is passed as is.
    const std::optional<Sharding>& given = plan_->arg_shardings[i];
    const bool direct =
        given && compiler::same_placement(*given, plan_->in_shardings[i], plan_->in_avals[i].shape);
    std::vector<size_t> order(size_t(mesh.num_devices()));
    if (direct) {
      const auto& assignment = given->device_assignment();
      for (size_t b = 0; b < assignment.size(); ++b) order[position_of(assignment[b])] = b;
    }
    in_direct_.push_back(direct);
    in_order_.push_back(std::move(order));
  }
  for (const Sharding& s : plan_->out_shardings) {
    std::vector<size_t> order;
    for (const Device& d : s.device_assignment()) order.push_back(position_of(d));
    out_order_.push_back(std::move(order));
  }
  executor_ = std::make_shared<const Executor>(plan_->local,
                                               MeshLayout(mesh.axis_sizes, mesh.mesh.devices()));
}

LoadedPlan::~LoadedPlan() = default;

std::vector<Array> LoadedPlan::run(std::span<const Array> args) const {
  std::vector<std::vector<BufferRef>> inputs;
  for (size_t i = 0; i < args.size(); ++i) {
    const detail::ArrayImpl& x = detail::concrete_of(args[i], "jit");
    if (in_direct_[i]) {
      std::vector<BufferRef> bufs;
      for (size_t b : in_order_[i]) bufs.push_back(x.buffers[b]);
      inputs.push_back(std::move(bufs));
    } else {
      inputs.push_back(relayout(x.aval, *x.sharding, x.buffers, plan_->in_shardings[i]));
    }
  }
  auto outs = executor_->run(std::move(inputs));
  std::vector<Array> result;
  for (size_t o = 0; o < outs.size(); ++o) {
    std::vector<BufferRef> bufs;
    for (size_t p : out_order_[o]) bufs.push_back(outs[o][p]);
    result.push_back(detail::make_array(plan_->out_avals[o], plan_->out_shardings[o],
                                        plan_->committed, std::move(bufs)));
  }
  return result;
}

}  // namespace parax::runtime
