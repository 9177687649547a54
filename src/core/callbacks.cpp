#include "core/callbacks.h"

#include <deque>
#include <mutex>

#include "base/check.h"

namespace parax::core {
namespace {

struct Registry {
  std::mutex mu;
  std::deque<ShardingCallback> functions;  // a deque: references stay valid as it grows
};

Registry& registry() {
  static auto* r = new Registry;
  return *r;
}

}  // namespace

int64_t register_sharding_callback(ShardingCallback f) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  r.functions.push_back(std::move(f));
  return int64_t(r.functions.size()) - 1;
}

const ShardingCallback& sharding_callback(int64_t id) {
  Registry& r = registry();
  std::lock_guard<std::mutex> lock(r.mu);
  PARAX_CHECK(id >= 0 && id < int64_t(r.functions.size()), "no sharding callback " << id);
  return r.functions[size_t(id)];
}

}  // namespace parax::core
