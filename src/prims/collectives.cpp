// The collectives of per-device programs, made only by the partitioner's reshard and run
// by the executor over all devices at once (runtime/collectives.cpp); params: `mesh_axes`
// (the device groups), plus `dimension`, `op`, `split_dimension`/`concat_dimension` or
// `source_target_pairs`. They have no global shape rule and no per-device kernel; their
// shape rules give per-device types, reading the group sizes from the mesh the verifier
// binds (core/verify.h), since the sizes belong to the program's mesh. Their cost is the
// bytes each device receives (collective-permute: its result's, the default).
#include "core/verify.h"
#include "prims/prim_util.h"

namespace parax::prims {
namespace {
namespace collectives_impl {

// Returns the group size of a collective equation over its `mesh_axes`.
int64_t group_size(const Params& p, std::string_view prim) {
  return core::mesh_group_size(p.get<std::vector<int64_t>>("mesh_axes"), prim);
}

// Returns param `name` checked to be a dimension of `a`.
size_t dimension(const Params& p, std::string_view name, const Aval& a, std::string_view prim) {
  const int64_t d = p.get<int64_t>(name);
  if (d < 0 || d >= int64_t(a.shape.size())) {
    throw TypeError(std::string(prim) + ": " + std::string(name) + " " + std::to_string(d) +
                    " is not a dimension of " + a.short_str());
  }
  return size_t(d);
}

// Returns `a` with dimension d split into n blocks (one per device of a group).
Aval split(Aval a, size_t d, int64_t n, std::string_view prim) {
  if (a.shape[d] % n != 0) {
    throw TypeError(std::string(prim) + ": dimension " + std::to_string(d) + " of " +
                    a.short_str() + " does not split into " + std::to_string(n) + " blocks");
  }
  a.shape[d] /= n;
  return a;
}

// Each device's block of dimension `dimension` is concatenated with its group's.
std::vector<Aval> all_gather_eval(std::span<const Aval> in, const Params& p) {
  Aval out = in[0];
  out.shape[dimension(p, "dimension", out, "all-gather")] *= group_size(p, "all-gather");
  return {out};
}

// Combines the group's values elementwise: the type is the operand's.
std::vector<Aval> all_reduce_eval(std::span<const Aval> in, const Params& p) {
  group_size(p, "all-reduce");  // checks the axes
  return {in[0]};
}

// Combines the group's values, each device keeping its block of `dimension`.
std::vector<Aval> reduce_scatter_eval(std::span<const Aval> in, const Params& p) {
  const size_t d = dimension(p, "dimension", in[0], "reduce-scatter");
  return {split(in[0], d, group_size(p, "reduce-scatter"), "reduce-scatter")};
}

// Splits `split_dimension` into blocks sent one to each group member, which concatenates
// what it receives along `concat_dimension`.
std::vector<Aval> all_to_all_eval(std::span<const Aval> in, const Params& p) {
  const int64_t n = group_size(p, "all-to-all");
  const size_t s = dimension(p, "split_dimension", in[0], "all-to-all");
  const size_t c = dimension(p, "concat_dimension", in[0], "all-to-all");
  Aval out = split(in[0], s, n, "all-to-all");
  out.shape[c] *= n;
  return {out};
}

// Sends each block to another device: the type is the operand's.
std::vector<Aval> collective_permute_eval(std::span<const Aval> in, const Params&) {
  return {in[0]};
}

// Devices in each group of the collective (the product of its mesh axes' sizes).
double group_devices(const Params& params, std::span<const int64_t> axis_sizes) {
  int64_t n = 1;
  for (int64_t a : params.get<std::vector<int64_t>>("mesh_axes")) n *= axis_sizes[size_t(a)];
  return double(n);
}

// The other devices' blocks arrive.
core::Cost all_gather_cost(std::span<const Aval> in, std::span<const Aval> out, const Params&,
                           std::span<const int64_t>) {
  return {.collective_bytes = double(out[0].nbytes() - in[0].nbytes())};
}

core::Cost reduce_scatter_cost(std::span<const Aval> in, std::span<const Aval> out, const Params&,
                               std::span<const int64_t>) {
  return {.collective_bytes = double(in[0].nbytes() - out[0].nbytes())};
}

// A ring all-reduce: a reduce-scatter then an all-gather, each moving (n-1)/n of the data.
core::Cost all_reduce_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                           std::span<const int64_t> axis_sizes) {
  const double n = group_devices(params, axis_sizes);
  return {.collective_bytes = double(in[0].nbytes()) * (n - 1) / n * 2};
}

core::Cost all_to_all_cost(std::span<const Aval> in, std::span<const Aval>, const Params& params,
                           std::span<const int64_t> axis_sizes) {
  const double n = group_devices(params, axis_sizes);
  return {.collective_bytes = double(in[0].nbytes()) * (n - 1) / n};
}

}  // namespace collectives_impl
}  // namespace

extern const PrimRules all_gather_rules = {.abstract_eval = collectives_impl::all_gather_eval,
                                           .cost = collectives_impl::all_gather_cost};
extern const PrimRules all_reduce_rules = {.abstract_eval = collectives_impl::all_reduce_eval,
                                           .cost = collectives_impl::all_reduce_cost};
extern const PrimRules reduce_scatter_rules = {
    .abstract_eval = collectives_impl::reduce_scatter_eval,
    .cost = collectives_impl::reduce_scatter_cost};
extern const PrimRules all_to_all_rules = {.abstract_eval = collectives_impl::all_to_all_eval,
                                           .cost = collectives_impl::all_to_all_cost};
extern const PrimRules collective_permute_rules = {.abstract_eval =
                                                       collectives_impl::collective_permute_eval};

}  // namespace parax::prims
