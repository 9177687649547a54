// The mesh context (sharding::use_mesh), and the bare PartitionSpec that is read on it: a
// Sharding kind with no devices of its own until an API resolves it.
#include <vector>

#include "parax/errors.h"
#include "sharding/named_sharding_impl.h"

namespace parax {
namespace detail {
namespace {

thread_local std::vector<Mesh> mesh_stack;

struct BareSpecImpl final : ShardingImpl {
  explicit BareSpecImpl(PartitionSpec s) : ShardingImpl(Kind::bare_spec, {}), spec(std::move(s)) {}
  std::string repr() const override { return spec.to_string(); }
  [[noreturn]] void unresolved() const {
    throw RuntimeError("the bare " + spec.to_string() +
                       " has no mesh: it is only read by jit's "
                       "in_shardings/out_shardings, device_put and with_sharding_constraint "
                       "inside a parax::sharding::use_mesh scope; use NamedSharding(mesh, spec) "
                       "elsewhere");
  }
  void check_rank(int64_t) const override { unresolved(); }
  TileLayout layout(int64_t) const override { unresolved(); }
  bool is_fully_replicated() const override { unresolved(); }
  bool equals(const ShardingImpl& other) const override {
    return other.kind == Kind::bare_spec && static_cast<const BareSpecImpl&>(other).spec == spec;
  }

  PartitionSpec spec;
};

}  // namespace

bool is_bare_spec(const Sharding& s) { return s.impl().kind == ShardingImpl::Kind::bare_spec; }

const PartitionSpec& bare_spec(const Sharding& s) {
  return static_cast<const BareSpecImpl&>(s.impl()).spec;
}

std::optional<Sharding> try_resolve_spec(const Sharding& s) {
  if (!is_bare_spec(s)) return s;
  if (mesh_stack.empty()) return std::nullopt;
  return NamedSharding(mesh_stack.back(), static_cast<const BareSpecImpl&>(s.impl()).spec);
}

}  // namespace detail

Sharding::Sharding(const PartitionSpec& spec)
    : impl_(std::make_shared<const detail::BareSpecImpl>(spec)) {}

namespace sharding {

MeshScope::MeshScope(const Mesh& mesh) { detail::mesh_stack.push_back(mesh); }
MeshScope::~MeshScope() { detail::mesh_stack.pop_back(); }

std::optional<Mesh> get_mesh() {
  if (detail::mesh_stack.empty()) return std::nullopt;
  return detail::mesh_stack.back();
}

}  // namespace sharding
}  // namespace parax
