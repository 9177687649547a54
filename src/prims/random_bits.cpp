// random_bits: JAX's threefry2x32 random bits, e.g. random_bits(key, bit_width=32,
// shape=(3,)) -> u32[3]. The key operand is a u32[2] key's data. `partitionable` (the
// config flag jax_threefry_partitionable, read when binding) picks the counter layout:
// ORIGINAL hashes one flat counter list whose halves pair up, so every value depends on
// the total size and the result must be computed whole (replicated); PARTITIONABLE hashes
// each element's own row-major index, so each device computes its shard with no
// communication, and every mesh gives the same values. Layouts: reference/jax-random.md §4-5.
#include "prims/kernels/random_bits.h"

#include "core/batching.h"
#include "prims/structural.h"
#include "prims/structural_grad.h"

namespace parax::prims {
namespace {
namespace random_bits_impl {

DType uint_dtype(int64_t bit_width) {
  switch (bit_width) {
    case 8:
      return DType::uint8;
    case 16:
      return DType::uint16;
    case 32:
      return DType::uint32;
    case 64:
      return DType::uint64;
  }
  throw ValueError("[random_bits] bit_width must be 8, 16, 32 or 64, got " +
                   std::to_string(bit_width) + ".");
}

std::vector<Aval> random_bits_abstract_eval(std::span<const Aval> in, const Params& params) {
  PARAX_CHECK(in.size() == 1, "random_bits got " << in.size() << " operands");
  const Shape& shape = param_ints(params, "shape");
  check_shapelike("random_bits", "shape", shape);
  const DType dtype = uint_dtype(param_int(params, "bit_width"));
  if (in[0].dtype != DType::uint32 || in[0].shape.empty() || in[0].shape.back() != 2) {
    throw TypeError("[random_bits] the key must be threefry2x32 key data, uint32[..., 2]; got " +
                    in[0].str() + ".");
  }
  // A batch of keys (key data uint32[*batch, 2]) draws `shape` per key: [*batch, *shape].
  Shape out(in[0].shape.begin(), in[0].shape.end() - 1);
  out.insert(out.end(), shape.begin(), shape.end());
  return {Aval{out, dtype, false}};
}

// A batch dimension of the keys and the result's are one factor (each device draws for its
// keys). PARTITIONABLE: each drawn dimension is its own result-only factor, so any sharding
// of the output is computed locally. ORIGINAL: the halves of one flat hash pair up across
// a key's whole draw, so those dimensions are replicated, as JAX's non-partitionable RNG is.
ShardingRule random_bits_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params& params) {
  ShardingRule rule;
  const size_t batch = in[0].shape.size() - 1;
  rule.operands.push_back(std::vector<int>(in[0].shape.size(), ShardingRule::kNone));
  std::vector<int> dims;
  const bool partitionable = params.get<bool>("partitionable");
  for (size_t d = 0; d < out[0].shape.size(); ++d) {
    const int64_t size = out[0].shape[d];
    if (d < batch) {
      const int f = add_factor(rule, size);
      rule.operands[0][d] = f;
      dims.push_back(f);
    } else {
      dims.push_back(partitionable ? add_factor(rule, size) : ShardingRule::kNone);
    }
  }
  rule.results.push_back(dims);
  return rule;
}

// Per device: the local shape, the global one (for row-major strides), and for each
// sharded dimension the mesh axes whose shard number gives its offset (as iota).
Params random_bits_localize(const Params& params, const core::LocalizeInfo& info) {
  Params local = params;
  // `shape` is each key's draw: the result's dimensions after the keys' batch ones.
  const size_t batch = info.in_avals[0].shape.size() - 1;
  const Shape& out = info.out_avals[0].shape;
  local.set("shape", Shape(out.begin() + long(batch), out.end()));
  if (!params.get<bool>("partitionable")) return local;
  local.set("global_shape", param_ints(params, "shape"));
  for (size_t d = 0; d < info.out_dim_axes.size(); ++d) {
    if (info.out_dim_axes[d].empty()) continue;
    local.set("offset_axes_" + std::to_string(d), info.out_dim_axes[d]);
  }
  return local;
}

// vmap over keys: the batch becomes the keys' leading batch dimension, drawn in one call.
core::Batched random_bits_batch(std::span<const Array> in, std::span<const int> dims,
                                const Params& params, const core::BatchAxis& axis) {
  return core::batched_at_front({core::bind1(
      core::Prim::random_bits, {core::batch_first(in[0], dims[0], axis.size)}, params)});
}

}  // namespace random_bits_impl
}  // namespace

extern const core::PrimRules random_bits_rules = {
    .abstract_eval = random_bits_impl::random_bits_abstract_eval,
    .sharding_rule = random_bits_impl::random_bits_sharding_rule,
    .kernel = kernels::random_bits,
    .localize = random_bits_impl::random_bits_localize,
    .jvp = zero_jvp,
    .batch = random_bits_impl::random_bits_batch,
};

}  // namespace parax::prims
