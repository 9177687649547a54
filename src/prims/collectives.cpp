// The collectives of per-device programs, made only by the partitioner's reshard and run
// by the executor over all devices at once (runtime/collectives.cpp); params: `mesh_axes`
// (the device groups), plus `dimension`, `op`, `split_dimension`/`concat_dimension` or
// `source_target_pairs`. They have no global shape rule and no per-device kernel. Their
// cost is the bytes each device receives (collective-permute: its result's, the default).
#include "prims/prim_util.h"

namespace parax::prims {
namespace {

// Devices in each group of the collective (the product of its mesh axes' sizes).
double group_size(const Params& params, std::span<const int64_t> axis_sizes) {
  int64_t n = 1;
  for (int64_t a : params.get<std::vector<int64_t>>("mesh_axes")) n *= axis_sizes[size_t(a)];
  return double(n);
}

// The other devices' blocks arrive.
core::Cost all_gather_cost(std::span<const Aval> in, std::span<const Aval> out, const Params&,
                           std::span<const int64_t>) {
  return {.collective_bytes = double(out[0].nbytes() - in[0].nbytes())};
}

core::Cost reduce_scatter_cost(std::span<const Aval> in, std::span<const Aval> out,
                               const Params&, std::span<const int64_t>) {
  return {.collective_bytes = double(in[0].nbytes() - out[0].nbytes())};
}

// A ring all-reduce: a reduce-scatter then an all-gather, each moving (n-1)/n of the data.
core::Cost all_reduce_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                           std::span<const int64_t> axis_sizes) {
  const double n = group_size(params, axis_sizes);
  return {.collective_bytes = double(in[0].nbytes()) * (n - 1) / n * 2};
}

core::Cost all_to_all_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                           std::span<const int64_t> axis_sizes) {
  const double n = group_size(params, axis_sizes);
  return {.collective_bytes = double(in[0].nbytes()) * (n - 1) / n};
}

}  // namespace

extern const PrimRules all_gather_rules = {.cost = all_gather_cost};
extern const PrimRules all_reduce_rules = {.cost = all_reduce_cost};
extern const PrimRules reduce_scatter_rules = {.cost = reduce_scatter_cost};
extern const PrimRules all_to_all_rules = {.cost = all_to_all_cost};
extern const PrimRules collective_permute_rules = {};

}  // namespace parax::prims
