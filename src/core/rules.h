// The rule table: what the system knows about each primitive, built from the X-macro list.
// Each primitive's rules are defined together in one place under src/prims/; passes and
// interpreters only read this table. Slots that later transforms fill (jvp, transpose,
// batching) are null until then; a null slot means "use the correct slow default".
#pragma once

#include <cstdint>
#include <functional>
#include <memory>
#include <optional>
#include <span>
#include <string>
#include <utility>
#include <vector>

#include "core/aval.h"
#include "core/program.h"
#include "parax/array.h"

namespace parax::core {

// How partial results over a sharded operand-only factor combine (an all-reduce's op).
enum class ReduceOp : uint8_t { none, sum, max, min, prod, and_, or_ };
std::string_view reduce_op_name(ReduceOp op);

// A sharding rule as data (Shardy's OpShardingRule): every array dimension of the
// operands and results is labelled with a factor; dimensions with the same factor are
// sharded the same way. For `dot_general` of [b,i,k]·[b,k,j] it reads
// `b i k, b k j -> b i j`. A factor that appears only in operands is a reduction: the
// result holds partial sums over its mesh axes until they are combined with `reduction`
// (`none` means such factors must stay unsharded). A factor only in results (a broadcast
// dimension, iota's dimension) may be sharded freely: each device computes its part.
struct ShardingRule {
  static constexpr int kNone = -1;  // the dimension must be replicated
  std::vector<std::vector<int>> operands;
  std::vector<std::vector<int>> results;
  std::vector<int64_t> factor_sizes;
  ReduceOp reduction = ReduceOp::none;
  // The primitive computes along dimensions it needs whole (kNone), yet its results keep
  // the operand's layout there, as JAX's do: each device then slices its part locally.
  bool keeps_operand_layout = false;
  // The primitive runs on shards of dimensions that do not divide (padded at the end):
  // its kernel or lower_local takes care of where the padding goes. Elementwise
  // primitives and reductions run padded without saying so; others see such a dimension
  // gathered first.
  bool runs_padded = false;
  // Operands (bit i: operand i) whose padding along a reduced factor is filled with the
  // reduction's identity before the primitive runs, so it adds nothing. A product needs
  // only one factor zeroed: dot_general masks its lhs.
  uint32_t masked_operands = ~0u;

  int num_factors() const { return int(factor_sizes.size()); }
  // True when factor f names a dimension of some result (else the primitive reduces it).
  bool in_results(int f) const;
  // Returns the rule in Shardy's notation, e.g. `([i, k], [k, j]) -> ([i, j]) {k: sum}`.
  std::string str() const;
};

// Where a device sits in the program's mesh; kernels of per-device programs that depend
// on it (iota over a sharded dimension, shard-slice) read their offsets from here, and
// their primitives carry the trait kReadsDevice (the executor shares the work of devices
// with the same operands only for primitives without it).
struct DeviceContext {
  std::span<const int64_t> coords;      // per mesh axis
  std::span<const int64_t> axis_sizes;  // per mesh axis
  // How many threads this kernel should keep busy: the pool's size divided among the
  // devices running at once (0: unknown, use the pool). Kernels whose parallel pieces cost
  // extra work (a GEMM panel repacks its right operand) split no finer than this.
  int parallelism = 0;
  // Returns the device's linear index over `axes` (major to minor), e.g. its shard number
  // along a dimension sharded by those axes.
  int64_t linear_index(std::span<const int64_t> axes) const;
};

// The most operands or results a fusion passes to one equation's kernel (the compiler
// leaves wider elementwise equations, a select_n of many cases, out of fusions).
inline constexpr size_t kMaxFusedOperands = 16;

// One kernel invocation on one device: dense row-major local buffers. A rank-0 input of
// an elementwise primitive broadcasts against the others (lax's scalar broadcasting).
struct KernelCall {
  std::span<const void* const> inputs;
  std::span<const Aval> in_avals;
  std::span<void* const> outputs;
  std::span<const Aval> out_avals;
  const Params& params;
  const DeviceContext& device;
};

// What the partitioner knows when it turns a global equation into a per-device one.
struct LocalizeInfo {
  std::span<const Aval> in_avals;   // local (per-device) operand types
  std::span<const Aval> out_avals;  // local result types
  // Mesh axes sharding each result dimension, major to minor.
  std::span<const std::vector<int64_t>> out_dim_axes;
};

// Autodiff rules work on Arrays and bind primitives, so they run eagerly or staged alike.
// A default-constructed (invalid) Array stands for a symbolic zero.
//
// jvp: given the primal operands, their tangents and the primal results, returns the
// result tangents. It must be linear in the tangents: every primitive it binds on a
// tangent is linear in that operand (mul by a primal value, add, dot_general, ...).
using JvpFn = std::vector<Array> (*)(std::span<const Array> primals,
                                     std::span<const Array> tangents, std::span<const Array> outs,
                                     const Params& params);
// transpose (linear primitives only): given the cotangents of the results and the
// operands — `linear[i]` marks the ones the equation is linear in; those are placeholders
// that carry only their type (aval_of / shape() / dtype() work, their data does not) —
// returns a cotangent per operand (invalid where not linear or zero).
using TransposeFn = std::vector<Array> (*)(std::span<const Array> cts,
                                           std::span<const Array> operands,
                                           std::span<const bool> linear, const Params& params);

// The batch axis a vmap adds: its size and, when the vmap names it, the name collectives
// over it use.
struct BatchAxis {
  int64_t size = 0;
  std::string name;
};
// The batch dimension of an operand that has none (the same value for every batch element).
inline constexpr int kNotMapped = -1;
// What a batching rule returns: the results and where each has its batch dimension.
struct Batched {
  std::vector<Array> outs;
  std::vector<int> dims;
};
// batch: applies the primitive to operands carrying a batch dimension at `dims[i]`
// (kNotMapped where not batched; at least one is, unless the primitive is a collective
// over `axis.name`) by binding primitives on the batched arrays.
using BatchFn = Batched (*)(std::span<const Array> in, std::span<const int> dims,
                            const Params& params, const BatchAxis& axis);

// joint_jvp: returns the results and their tangents from one application (JAX's form of a
// jvp rule), so a primitive holding a program runs it once for both; when set, it is used
// instead of binding the primitive and then its jvp.
using JointJvpFn = std::pair<std::vector<Array>, std::vector<Array>> (*)(
    std::span<const Array> primals, std::span<const Array> tangents, const Params& params);

// How an application with some operands unknown (not computable yet: linearize's tangents)
// splits in two (JAX's partial_eval_jaxpr_custom rule). The known application takes the
// known operands and returns the known results, then the residuals; the unknown one takes
// the operands listed in `forwarded` (known operands it needs as they are), the residuals,
// then the unknown operands, and returns the unknown results.
struct PartialEval {
  Params known;
  Params unknown;
  std::vector<bool> out_unknown;  // per result of the original application
  std::vector<int> forwarded;     // operand indices
  // When set, the known application's operands are the known operands (numbered in order)
  // picked: operand j is entry known_order[j] (a scan's carry whose initial value is known
  // yet made unknown by its body goes to the unknown application alone).
  std::optional<std::vector<int>> known_order;
  // When not empty, the unknown application's operands are those above (forwarded,
  // residuals, unknown operands, numbered in that order) rearranged: operand j is entry
  // unknown_order[j] (a scan needs its residuals among its xs, after its carry).
  std::vector<int> unknown_order;
  // The unknown application returns every result, the known ones recomputed and dropped
  // (a while loop's carry is all its results).
  bool unknown_returns_all = false;
  // The known application's program (param `jaxpr`) runs inline, its equations in place of
  // the call, as JAX's remat_partial_eval evaluates the known jaxpr into the enclosing trace.
  bool inline_known = false;
};
// partial_eval: returns the split, or nullopt when nothing is gained (all of it unknown).
using PartialEvalFn = std::optional<PartialEval> (*)(std::span<const bool> unknown,
                                                     const Params& params);

using AbstractEvalFn = std::vector<Aval> (*)(std::span<const Aval> in, const Params& params);
using ShardingRuleFn = ShardingRule (*)(std::span<const Aval> in, std::span<const Aval> out,
                                        const Params& params);
using KernelFn = void (*)(const KernelCall& call);
// eager: runs the primitive on concrete arrays itself, instead of through a compiled
// one-equation program (device_put moves data between any devices, which one program,
// laid out over one mesh, cannot).
using EagerFn = std::vector<Array> (*)(std::span<const Array> in, const Params& params);

// What a primitive that lowers itself to several per-device equations sees (lower_local).
struct LowerContext {
  std::span<const Aval> global_in;  // global operand types
  std::span<const Aval> in_avals;   // per-device operand types
  std::span<const Aval> out_avals;  // per-device result types
  // Mesh axes sharding each dimension of each operand, major to minor.
  std::span<const std::vector<std::vector<int64_t>>> in_dim_axes;
  std::span<const int64_t> axis_sizes;  // the mesh's, in its axis order
  // Appends an equation to the per-device program; returns its (single) result.
  std::function<Atom(Prim, std::vector<Atom>, Params, Aval)> emit;
  // Moves blocks between devices (the partitioner makes the collective, as reshard does):
  // the block `x` (type `local`) of the device at tile t over `axes` goes to the device
  // at tile to(t), all other coordinates equal; to(t) < 0 sends nothing, and a device
  // that receives nothing holds zeros.
  std::function<Atom(Atom x, const Aval& local, const std::vector<int64_t>& axes,
                     const std::function<int64_t(int64_t)>& to)>
      move_blocks;
  // For a named-axis collective (kNamedAxes): the mesh axes its `axes` names stand for,
  // major to minor.
  std::span<const int64_t> named_axes;
};
// lower_local: emits the per-device equations of one global equation whose sharded form
// needs more than its kernel on each block (rev of a sharded dimension trades blocks
// between mirror devices, through move_blocks; psum becomes an all-reduce over the mesh
// axes of its names); returns the results, laid out as the sharding rule says. It asks
// the context for every equation, so the partitioner stays the one maker of collectives.
using LowerLocalFn = std::vector<Atom> (*)(std::span<const Atom> in, const Params& params,
                                           const LowerContext& ctx);
using LocalizeFn = Params (*)(const Params& params, const LocalizeInfo& info);

// What one equation of a per-device program costs its device (cost_analysis).
struct Cost {
  double flops = 0;
  double collective_bytes = 0;  // bytes each device receives through collectives
};
// cost: given the per-device operand and result types and the mesh's axis sizes (in its
// axis order).
using CostFn = Cost (*)(std::span<const Aval> in, std::span<const Aval> out, const Params& params,
                        std::span<const int64_t> axis_sizes);

// vma (JAX's check_vma inside shard_map): given, per operand, the manual axes it varies
// over (bit a: `axis_names[a]`), returns each result's.
using VaryingFn = std::vector<uint64_t> (*)(std::span<const uint64_t> in, const Params& params,
                                            std::span<const std::string> axis_names);

// One tile of a fusion for a primitive that joins fusions without being elementwise
// (broadcast_in_dim reads its smaller operand in place).
struct TileCall {
  // The operand's elements of this tile when it has the result's shape, else all of it.
  const void* operand;
  const Aval& in;
  const Shape& out_shape;
  int64_t begin = 0;  // the tile is elements [begin, begin + len) of the result
  int64_t len = 0;
  void* out;
  const Params& params;
};
using TileKernelFn = void (*)(const TileCall& call);

// print_params: the params as JAX prints them, in its order, where that is not simply
// the params sorted by name: a record as one param (gather's dimension_numbers, a string
// `GatherDimensionNumbers(offset_dims=(1,), ...)`), defaults JAX writes out, programs JAX
// holds (a scatter-add's update_jaxpr). parse_params is its inverse, from what the
// parser read (a record as its text).
using PrintParamsFn = std::vector<std::pair<std::string, ParamValue>> (*)(std::span<const Aval> in,
                                                                          const Params& params);
using ParseParamsFn = Params (*)(const Params& printed);

// What a sub-program is for, in the primitive that holds it: how its inputs come from the
// equation's operands and its outputs become the equation's results. Passes and the executor
// read these roles instead of the primitive or its params (a cond's `branches`, a scan's
// `num_carry`).
enum class ProgramRole : uint8_t {
  call,       // runs once where the equation stands: its operands -> its results (pjit, remat2)
  manual,     // the same on each device's blocks of the operands (shard_map)
  branch,     // one of several runs, the one the index operand picks (cond)
  body,       // a loop's step: (consts, carry, a slice of each xs) -> (carry, a slice of each ys)
  predicate,  // (consts, carry) -> a bool scalar: whether the loop runs its body again (while)
  tiles,      // runs on each tile of the results (fusion's elementwise chain)
  rule,       // a derivative rule, run by autodiff only (custom_jvp's jvp, custom_vjp's fwd, bwd)
};
std::string_view program_role_name(ProgramRole role);

struct SubProgram {
  std::shared_ptr<const Program> program;
  ProgramRole role = ProgramRole::call;
  // The operands it takes first, as they are: [consts_begin, consts_begin + num_consts). A
  // call's, a branch's or a fusion's are all it takes; a predicate then takes the carry, a
  // body the carry and a slice of each xs. A rule's inputs are not the equation's operands.
  size_t consts_begin = 0;
  size_t num_consts = 0;
};

// The roles of a primitive's sub-programs and of the operands and results they share. The
// index, the carry and the xs are disjoint, and no program's consts are among them (the
// branches of a cond share theirs). Results [0, num_carry) are the carry's final value;
// those after it are a call's or a branch's results as they are, or the ys a body makes,
// stacked along a new leading dimension of trip_count.
struct ProgramRoles {
  std::vector<SubProgram> programs;  // in the order of core::sub_programs (param order)
  // The operand (an int32 scalar) that picks the branch that runs, clamped into range.
  std::optional<size_t> index = std::nullopt;
  // A loop's carry: operands [carry_begin, carry_begin + num_carry) on entry, a body's
  // first num_carry outputs after each step.
  size_t carry_begin = 0;
  size_t num_carry = 0;
  // Operands a body sees one slice of per step, slices along their leading dimension.
  size_t xs_begin = 0;
  size_t num_xs = 0;
  // How many times the programs run: a scan's length; nullopt where only running tells (a
  // while: cost analysis counts it once, as XLA's does).
  std::optional<int64_t> trip_count = 1;
  bool reverse = false;  // a body steps through the xs and ys from last to first

  // Returns the first program of `role`, or null.
  const SubProgram* find(ProgramRole role) const;
};

// program_roles: the roles, given the equation's params and operand count.
using ProgramRolesFn = ProgramRoles (*)(const Params& params, size_t num_operands);

struct PrimRules {
  // Checks operand types (throwing TypeError/ValueError with the api's message) and
  // returns the result types.
  AbstractEvalFn abstract_eval = nullptr;
  // Null: every dimension must be replicated (the slow default).
  ShardingRuleFn sharding_rule = nullptr;
  KernelFn kernel = nullptr;
  // Rewrites shape-carrying params for per-device shapes. Null: params unchanged.
  LocalizeFn localize = nullptr;
  // Null: the kernel runs on each device's blocks.
  LowerLocalFn lower_local = nullptr;
  // Null: eager calls compile a one-equation program.
  EagerFn eager = nullptr;
  JvpFn jvp = nullptr;
  TransposeFn transpose = nullptr;
  // Null: a loop over the batch, one application per element (correct and slow).
  BatchFn batch = nullptr;
  // Null: by traits: an elementwise primitive costs a flop per result element, a
  // reduction one per operand element, a collective moves its result's bytes.
  CostFn cost = nullptr;
  // Null: every result varies over the axes any operand varies over.
  VaryingFn vma = nullptr;
  // Null: the primitive joins a fusion only if it is elementwise (its kernel runs on
  // each tile).
  TileKernelFn tile_kernel = nullptr;
  // Null: bind, then jvp.
  JointJvpFn joint_jvp = nullptr;
  // Null: an application with an unknown operand is unknown as a whole.
  PartialEvalFn partial_eval = nullptr;
  // Null: the params print sorted by name, and parse as they print.
  PrintParamsFn print_params = nullptr;
  ParseParamsFn parse_params = nullptr;
  // Null: the primitive holds no programs. Every primitive that holds one declares what
  // each is for (the verifier checks the roles against the programs' types).
  ProgramRolesFn program_roles = nullptr;
};

// Returns the rules of `p`.
const PrimRules& rules(Prim p);

// Returns the result types of applying `p`; throws the primitive's error for bad operands.
std::vector<Aval> abstract_eval(Prim p, std::span<const Aval> in, const Params& params);

// Returns the roles of the programs `e` holds (none when its primitive holds none).
ProgramRoles program_roles(const Eqn& e);
// Returns the first program of `role` that `e` holds, or null.
std::shared_ptr<const Program> program_of(const Eqn& e, ProgramRole role);

// Returns the primitive's sharding rule, or the all-replicated default.
ShardingRule sharding_rule(Prim p, std::span<const Aval> in, std::span<const Aval> out,
                           const Params& params);

}  // namespace parax::core
