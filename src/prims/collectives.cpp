// The collectives of per-device programs, made only by the partitioner's reshard and run
// by the executor over all devices at once (runtime/collectives.cpp); params: `mesh_axes`
// (the device groups), plus `dimension`, `op`, `split_dimension`/`concat_dimension` or
// `source_target_pairs`. They have no global shape rule and no per-device kernel.
#include "prims/prim_util.h"

namespace parax::prims {

extern const PrimRules all_gather_rules = {};
extern const PrimRules all_reduce_rules = {};
extern const PrimRules reduce_scatter_rules = {};
extern const PrimRules all_to_all_rules = {};
extern const PrimRules collective_permute_rules = {};

}  // namespace parax::prims
