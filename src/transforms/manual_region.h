// The manual region shard_map and pmap both bind: f traced on one device's blocks with the
// mesh axes bound as names, its results' specs checked (check_vma, or each result kept
// from the first instance along axes it may vary over but its spec leaves out), and one
// shard_map equation. Internal to src/transforms.
#pragma once

#include <memory>
#include <string>
#include <vector>

#include "core/aval.h"
#include "parax/shard_map.h"

namespace parax::detail {

struct Region {
  std::vector<std::string> axis_names;  // the manual axes
  std::vector<int64_t> axis_sizes;
  std::shared_ptr<const Sharding> mesh;  // null: a pmap nested in another
};

// Traces fn on the blocks (`local`), checks the results' specs against out_specs_given
// (against `mesh` when there is one: a pmap nested in another has none) and binds the
// shard_map. `vma` asks for check_vma's error instead of keeping one instance.
std::vector<Array> bind_region(const std::vector<Array>& args, std::vector<PartitionSpec> in_specs,
                               const std::vector<core::Aval>& local, const FlatFn& fn,
                               TreeDef* out_def, const Specs& out_specs_given, const Region& region,
                               const Mesh* mesh, bool vma, const std::string& fname);

}  // namespace parax::detail
