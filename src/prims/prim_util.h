// Building blocks shared by the primitive files: common shape and sharding rules, and
// loops for kernels. Internal to src/prims.
#pragma once

#include <cstdint>
#include <functional>
#include <span>
#include <string>
#include <vector>

#include "base/check.h"
#include "base/dtype_dispatch.h"
#include "core/rules.h"
#include "parax/errors.h"

namespace parax::prims {

using core::Aval;
using core::KernelCall;
using core::Params;
using core::PrimRules;
using core::ShardingRule;

// Shape rule of n-ary elementwise primitives: operands have equal shapes, except that
// rank-0 operands broadcast. Returns the common shape; throws TypeError naming `name`
// (JAX's "add got incompatible shapes for broadcasting: (3,), (4,)").
Shape elementwise_shape(std::string_view name, std::span<const Aval> in);
// Throws TypeError unless all operands share one dtype (JAX's
// "lax.add requires arguments to have the same dtypes, got float32, int32.").
void check_same_dtypes(std::string_view name, std::span<const Aval> in);

// Throws TypeError unless `in` matches `expected` (a body program's input types) in count,
// shapes and dtypes, naming `name` and the first position that differs. Weak types are not
// compared: a weak operand may feed a strong input, as JAX's jaxpr checker allows.
void check_body_inputs(std::string_view name, std::span<const Aval> in,
                       std::span<const Aval> expected);

// Throws JAX's TypeErrors unless `preferred` is a preferred_element_type that dot_general
// and conv_general_dilated accept for operands of `input` (lax._validate_preferred_element_type):
// integers may widen or become floats, floats stay floats.
void check_preferred(DType input, DType preferred);

// Sharding rule of elementwise primitives: every non-scalar operand and the result share
// one factor per dimension.
ShardingRule elementwise_sharding_rule(std::span<const Aval> in, std::span<const Aval> out,
                                       const Params& params);

// Row-major strides of `shape`, in elements.
std::vector<int64_t> strides_of(const Shape& shape);

void parallel_chunks_split(int64_t n, int64_t grain,
                           const std::function<void(int64_t, int64_t)>& body);
// Runs body(begin, end) over [0, n) in parallel chunks of at least `grain` elements. A
// range of one chunk (a fusion's tile) runs inline, with no std::function made.
template <class F>
void parallel_chunks(int64_t n, int64_t grain, F&& body) {
  if (n <= grain) {
    if (n > 0) body(int64_t{0}, n);
    return;
  }
  parallel_chunks_split(n, grain, std::function<void(int64_t, int64_t)>(std::forward<F>(body)));
}
inline constexpr int64_t kElementGrain = 1 << 15;
// Elementwise outputs of this many bytes or more are written around the caches
// (simd::Store::stream): larger than a CPU's last-level cache share, they would reach memory
// before anything read them back, and streaming saves reading each line before writing it.
inline constexpr int64_t kStreamBytes = int64_t(32) << 20;

// Returns a Params value by name with a default.
inline int64_t param_int(const Params& p, std::string_view name) { return p.get<int64_t>(name); }
inline const std::vector<int64_t>& param_ints(const Params& p, std::string_view name) {
  return p.get<std::vector<int64_t>>(name);
}

// Typed view of a call's buffers.
template <class T>
const T* in_ptr(const KernelCall& c, size_t i) {
  return static_cast<const T*>(c.inputs[i]);
}
template <class T>
T* out_ptr(const KernelCall& c, size_t i) {
  return static_cast<T*>(c.outputs[i]);
}

}  // namespace parax::prims
